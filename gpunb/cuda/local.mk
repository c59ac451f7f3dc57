# CUDA back-end of GPUNB (only when configure found nvcc).
if HAVE_CUDA
libgpunb_la_SOURCES += gpunb/cuda/gpunb_cuda.c
libgpunb_la_LIBADD += $(CUDA_LIBS)
endif
