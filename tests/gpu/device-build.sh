# device-build.sh -- sourced by the GPU machine scripts (run-on-device.sh,
# run-variants.sh) from the repository root: sets up the device's toolchain
# (tests/device-setup.sh), starts $OUT/summary.txt with the device and
# defines note() (echo + append to it), builds with CUDA in $B (configure,
# make, the check programs; log in $OUT/build.log), reports the force
# kernels' registers and spills, and leaves the shell in $B.  Needs SRC, OUT
# and B set; exits on a failed build.
mkdir -p "$OUT" "$B"
. tests/device-setup.sh >/dev/null 2>&1
S=$OUT/summary.txt
: >"$S"
note() { echo "$*" | tee -a "$S"; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader 2>&1 | head -4 | tr '\n' ';')"
note "nvcc: $(nvcc --version | tail -1)"

t0=$(date +%s)
# The GPU machine has autoconf/automake but no libtool (or, on some, a
# libtoolize without its aclocal macros): there the generated build system
# is carried from a checkout that ran ./bootstrap (carry configure,
# Makefile.in, aclocal.m4, config.h.in, build-aux, m4) and kept.
if [ ! -x configure ]; then boot=./bootstrap; else boot=true; fi
{ $boot && cd "$B" && "$SRC/configure" --with-cuda NVCCFLAGS="-O3 -Xptxas -v" &&
  make -j16 && make -j16 check TESTS= ; } >"$OUT/build.log" 2>&1
build=$?
cd "$B" || exit 1
note "build (configure --with-cuda, make, check programs): rc=$build in $(( $(date +%s) - t0 )) s"
grep -A2 -E "Compiling entry function '_Z[0-9]+gpunb_force_kernelILb" "$OUT/build.log" |
  grep -E "Compiling|registers|spill" | sed 's/ptxas info *: //; s/^/  ptxas: /' | tee -a "$S"
[ $build = 0 ] || { tail -30 "$OUT/build.log"; exit 1; }
