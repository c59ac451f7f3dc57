# GPU tests and benchmarks (skip without a GPU).
