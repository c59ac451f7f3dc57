# NB6_CHECK_CUDA: --with-cuda[=PATH], --with-cuda-arch=LIST.
# Sets NVCC, NVCCFLAGS, CUDA_CPPFLAGS, CUDA_LIBS, defines NB6ACCEL_HAVE_CUDA,
# the conditional HAVE_CUDA, and nb6_cuda_summary for the final report.
AC_DEFUN([NB6_CHECK_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=PATH@:>@],
    [build the CUDA back-end of GPUNB (default: when nvcc is found in PATH, PATH/bin or /usr/local/cuda/bin)])],
  [], [with_cuda=check])
AC_ARG_WITH([cuda-arch],
  [AS_HELP_STRING([--with-cuda-arch=LIST],
    [compute capabilities to build machine code for, e.g. "90" or "80 90"; PTX of the highest is embedded too so newer GPUs run (default: 90)])],
  [], [with_cuda_arch=90])
NVCC=
CUDA_CPPFLAGS=
CUDA_LIBS=
CUDA_LIBS_PRIVATE=
nb6_cuda_summary="no (not asked for)"
AS_IF([test "x$with_cuda" != xno], [
  nb6_cuda_path=$PATH
  AS_CASE([$with_cuda],
    [yes|check], [nb6_cuda_path="$PATH:/usr/local/cuda/bin"],
    [nb6_cuda_path="$with_cuda/bin"])
  AC_PATH_PROG([NVCC], [nvcc], [], [$nb6_cuda_path])
  AS_IF([test -z "$NVCC"], [
    AS_IF([test "x$with_cuda" != xcheck], [AC_MSG_ERROR([--with-cuda was given but no nvcc was found in $nb6_cuda_path])])
    nb6_cuda_summary="no (nvcc not found)"
  ], [
    nb6_cuda_root=`AS_DIRNAME(["$NVCC"])`
    nb6_cuda_root=`AS_DIRNAME(["$nb6_cuda_root"])`
    nb6_cuda_version=`"$NVCC" --version | sed -n 's/.*release \(@<:@0-9.@:>@*\).*/\1/p'`
    NVCC_GENCODE=
    nb6_cuda_ptx=
    for nb6_arch in $with_cuda_arch; do
      NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$nb6_arch,code=sm_$nb6_arch"
      nb6_cuda_ptx=$nb6_arch
    done
    NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$nb6_cuda_ptx,code=compute_$nb6_cuda_ptx"
    AC_MSG_CHECKING([whether $NVCC builds for sm_$with_cuda_arch])
    cat > conftest.cu <<_NB6EOF
__global__ void k(float *p) { p[[threadIdx.x]] *= 2.0f; }
int main(void) { k<<<1, 1>>>(0); return 0; }
_NB6EOF
    AS_IF(["$NVCC" $NVCC_GENCODE -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1], [
      AC_MSG_RESULT([yes])
      CUDA_CPPFLAGS="-I$nb6_cuda_root/include"
      nb6_cuda_libdir="$nb6_cuda_root/lib64"
      test -d "$nb6_cuda_libdir" || nb6_cuda_libdir="$nb6_cuda_root/lib"
      CUDA_LIBS="-L$nb6_cuda_libdir -Wl,-rpath,$nb6_cuda_libdir -lcudart"
      # nvcc's host code for kernel launches needs the C++ runtime
      CUDA_LIBS_PRIVATE="-lstdc++"
      AC_DEFINE([NB6ACCEL_HAVE_CUDA], [1], [Define if the CUDA back-end of GPUNB is built.])
      nb6_cuda_summary="yes (nvcc $nb6_cuda_version, sm_`echo $with_cuda_arch | sed 's/ /, sm_/g'` + PTX compute_$nb6_cuda_ptx)"
    ], [
      AC_MSG_RESULT([no])
      AS_IF([test "x$with_cuda" != xcheck], [AC_MSG_ERROR([$NVCC cannot build for sm_$with_cuda_arch; see config.log])])
      nb6_cuda_summary="no ($NVCC $nb6_cuda_version cannot build for sm_$with_cuda_arch)"
      NVCC=
    ])
    rm -f conftest.cu conftest.$OBJEXT
  ])
])
AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc (default: -O3)])
test -n "$NVCCFLAGS" || NVCCFLAGS="-O3"
AC_SUBST([NVCC_GENCODE])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LIBS])
AC_SUBST([CUDA_LIBS_PRIVATE])
AM_CONDITIONAL([HAVE_CUDA], [test -n "$NVCC"])
])
