# Tests: `make check`.  Each program exits 0 (pass), 77 (skip, with the
# reason on stdout) or 1 (fail).
include tests/gpu/local.mk
include tests/simd/local.mk
include tests/plummer/local.mk
