# SIMD + OpenMP host back-end of GPUNB.
