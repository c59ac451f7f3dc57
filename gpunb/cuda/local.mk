# CUDA back-end of GPUNB (only when configure found nvcc), a convenience
# library inside libgpunb: host dispatch in C (it needs the CUDA runtime
# headers; a file per concern, sharing gpunb_cuda_state.h), kernels in .cu
# files through the .cu.lo rule of Makefile.am, behind the plain-C launch
# API of gpunb_cuda_kernels.h.
if HAVE_CUDA
noinst_LTLIBRARIES += libgpunb_cuda.la
libgpunb_cuda_la_SOURCES = gpunb/cuda/gpunb_cuda.c gpunb/cuda/gpunb_cuda_regf.c \
	gpunb/cuda/gpunb_cuda_resident.c gpunb/cuda/gpunb_cuda_irr.c gpunb/cuda/gpunb_cuda_state.h \
	gpunb/cuda/gpunb_cuda_devices.c \
	gpunb/cuda/gpunb_cuda_devices.h gpunb/cuda/gpunb_cuda_kernels.h gpunb/cuda/gpunb_cuda_const.h \
	gpunb/cuda/gpunb_cuda_force.cu gpunb/cuda/gpunb_cuda_reduce.cu \
	gpunb/cuda/gpunb_cuda_gather.cu gpunb/cuda/gpunb_cuda_gather.cuh gpunb/cuda/gpunb_cuda_potential.cu \
	gpunb/cuda/gpunb_cuda_predict.cu gpunb/cuda/gpunb_cuda_irregular.cu gpunb/cuda/gpunb_cuda_boxes.cu \
	gpunb/cuda/gpunb_cuda_box.cuh gpunb/cuda/gpunb_cuda_spatial.cu
libgpunb_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
# nvcc's host code for a launch uses the C++ runtime (guarded statics).
libgpunb_la_LIBADD += libgpunb_cuda.la $(CUDA_LIBS) -lstdc++
# ... and where only the static libstdc++ is found, its symbols stay hidden.
libgpunb_la_LDFLAGS += -Wl,--exclude-libs,libstdc++.a
endif

# Automake tracks the headers of C sources only; the .cu objects name theirs
# here, so that a change of a layout or constant rebuilds the kernels too.
if HAVE_CUDA
gpunb_cuda_kernel_includes = gpunb/cuda/gpunb_cuda_kernels.h gpunb/cuda/gpunb_cuda_const.h common/nb6_common.h
gpunb/cuda/gpunb_cuda_reduce.lo gpunb/cuda/gpunb_cuda_potential.lo \
	gpunb/cuda/gpunb_cuda_irregular.lo gpunb/cuda/gpunb_cuda_spatial.lo: \
	$(gpunb_cuda_kernel_includes)
gpunb/cuda/gpunb_cuda_predict.lo gpunb/cuda/gpunb_cuda_boxes.lo: $(gpunb_cuda_kernel_includes) \
	gpunb/cuda/gpunb_cuda_box.cuh
gpunb/cuda/gpunb_cuda_force.lo gpunb/cuda/gpunb_cuda_gather.lo: $(gpunb_cuda_kernel_includes) \
	gpunb/cuda/gpunb_cuda_gather.cuh
endif
