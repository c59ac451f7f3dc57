# SIMD kernels of GPUIRR, one convenience library per instruction set.
