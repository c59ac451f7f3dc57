/* gpunb_simd.h -- the SIMD + OpenMP host back-end of GPUNB: the j-set as the
 * kernels read it, and one regular-force kernel per SIMD level
 * (gpunb_simd_kernel.c compiled per level, chosen by gpunb_simd.c).  Internal. */
#ifndef GPUNB_SIMD_H
#define GPUNB_SIMD_H

#include "gpunb_backend.h"

/* j-particles as float columns, padded with massless particles at the origin
 * to a multiple of GPUNB_SIMD_PAD (a padded j is never a neighbour and adds
 * exactly 0).  Positions are two-float pairs (hi = float(x), lo =
 * float(x - hi)) so that dx = (hi_j - hi_i) + (lo_j - lo_i) keeps float
 * precision wherever the cluster sits. */
enum { GPUNB_SIMD_PAD = 16 };

typedef struct gpunb_simd_jset {
    int nj, njpad;
    /* NB6ACCEL_TEAM_TRACE=1: each regf prints, per thread, its CPU, the
     * i-particles it took and its busy time (to find why a team is slow in
     * a host program: late threads, shared CPUs, uneven shares). */
    int trace;
    float *xhi[3], *xlo[3], *v[3], *m; /* [njpad] each, 64-byte aligned */
} gpunb_simd_jset;

/* Regular force, jerk, potential and lists exactly as gpunb_backend_ops.regf
 * documents (limit = min(nbmax, lmax-1)). */
typedef void gpunb_simd_regf_fn(const gpunb_simd_jset *js, int ni, const double *h2,
                                const double *dtr, const double (*xi)[3],
                                const double (*vi)[3], double (*acc)[3], double (*jrk)[3],
                                double *pot, int lmax, int limit, int *list);

NB6_INTERNAL gpunb_simd_regf_fn gpunb_simd_regf_scalar;
NB6_INTERNAL gpunb_simd_regf_fn gpunb_simd_regf_sse2;
NB6_INTERNAL gpunb_simd_regf_fn gpunb_simd_regf_avx;
NB6_INTERNAL gpunb_simd_regf_fn gpunb_simd_regf_avx2;
NB6_INTERNAL gpunb_simd_regf_fn gpunb_simd_regf_avx512;

/* Potential of every particle from all others in double precision, as
 * gpunb_potential documents, on SoA coordinates; SIMD over l, OpenMP over k. */
typedef void gpunb_simd_pot_fn(int n, const double *m, const double *x, const double *y,
                               const double *z, double *pot);

NB6_INTERNAL gpunb_simd_pot_fn gpunb_simd_potential_scalar;
NB6_INTERNAL gpunb_simd_pot_fn gpunb_simd_potential_sse2;
NB6_INTERNAL gpunb_simd_pot_fn gpunb_simd_potential_avx;
NB6_INTERNAL gpunb_simd_pot_fn gpunb_simd_potential_avx2;
NB6_INTERNAL gpunb_simd_pot_fn gpunb_simd_potential_avx512;

/* gpunb_potential on the host's SIMD units and cores, double precision
 * throughout (the energy check): same contract as gpunb_cpu_potential. */
NB6_INTERNAL int gpunb_simd_potential(int n, const double *m, const double (*x)[3], double *pot);

#endif
