# Tests of every SIMD kernel; benchmarks.
