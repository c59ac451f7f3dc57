/* gpunb_simd.c -- the SIMD + OpenMP host back-end of GPUNB ("cpu"): keeps the
 * j-set as padded two-float columns and runs the regular-force kernel of the
 * best SIMD level that is compiled in and that this CPU supports (CPUID +
 * XGETBV; this file is compiled without SIMD flags).  NB6ACCEL_SIMD=
 * scalar|sse2|avx|avx2|avx512 forces a level, as for GPUIRR; "scalar" is the
 * portable float path. */
#include "config.h"
#include "gpunb_simd.h"
#include "simd/nb6_simd_cpu.h"

#include <string.h>

typedef struct simd_state {
    int capacity;
    gpunb_simd_jset js;
    gpunb_simd_regf_fn *regf;
} simd_state;

static gpunb_simd_regf_fn *regf_of(int level)
{
    switch (level) {
    case NB6_SIMD_SCALAR:
        return gpunb_simd_regf_scalar;
#ifdef NB6ACCEL_HAVE_SSE2
    case NB6_SIMD_SSE2:
        return gpunb_simd_regf_sse2;
#endif
#ifdef NB6ACCEL_HAVE_AVX
    case NB6_SIMD_AVX:
        return gpunb_simd_regf_avx;
#endif
#ifdef NB6ACCEL_HAVE_AVX2
    case NB6_SIMD_AVX2:
        return gpunb_simd_regf_avx2;
#endif
#ifdef NB6ACCEL_HAVE_AVX512
    case NB6_SIMD_AVX512:
        return gpunb_simd_regf_avx512;
#endif
    default:
        return NULL;
    }
}

/* The level to run: NB6ACCEL_SIMD if set (an error if it cannot run here),
 * else the best one built that the CPU has. */
static int choose_level(const char *routine, int *level)
{
    const char *want = nb6_getenv("NB6ACCEL_SIMD");
    const int cpu = nb6_simd_cpu_level();
    if (!want) {
        int l = cpu;
        while (l > 0 && !regf_of(l))
            l--;
        *level = l;
        return GPUNB_OK;
    }
    int l = nb6_simd_level_from_name(want);
    if (l < 0)
        return gpunb_fail(GPUNB_EUSAGE,
                          "%s: NB6ACCEL_SIMD=\"%s\" is not a SIMD level "
                          "(scalar, sse2, avx, avx2, avx512)", routine, want);
    if (!regf_of(l))
        return gpunb_fail(GPUNB_EUSAGE,
                          "%s: NB6ACCEL_SIMD=\"%s\" is not compiled into this build",
                          routine, want);
    if (l > cpu)
        return gpunb_fail(GPUNB_EUSAGE,
                          "%s: NB6ACCEL_SIMD=\"%s\" is not supported by this CPU "
                          "(it runs up to %s)", routine, want, nb6_simd_level_names[cpu]);
    *level = l;
    return GPUNB_OK;
}

static void simd_close(void *state)
{
    simd_state *s = state;
    if (!s)
        return;
    for (int k = 0; k < 3; k++) {
        nb6_free(s->js.xhi[k]);
        nb6_free(s->js.xlo[k]);
        nb6_free(s->js.v[k]);
    }
    nb6_free(s->js.m);
    nb6_free(s);
}

static int simd_open(void **state, int capacity, char *desc)
{
    int level, st;
    if ((st = choose_level("gpunb_open", &level)) != GPUNB_OK)
        return st;
    simd_state *s = nb6_alloc(sizeof *s);
    if (!s)
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_open: out of host memory");
    s->capacity = capacity;
    s->regf = regf_of(level);
    s->js.trace = nb6_getenv("NB6ACCEL_TEAM_TRACE") != NULL;
    size_t n = ((size_t)capacity + GPUNB_SIMD_PAD - 1) / GPUNB_SIMD_PAD * GPUNB_SIMD_PAD;
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        ok &= (s->js.xhi[k] = nb6_alloc(n * sizeof(float))) != NULL;
        ok &= (s->js.xlo[k] = nb6_alloc(n * sizeof(float))) != NULL;
        ok &= (s->js.v[k] = nb6_alloc(n * sizeof(float))) != NULL;
    }
    ok &= (s->js.m = nb6_alloc(n * sizeof(float))) != NULL;
    if (!ok) {
        simd_close(s);
        return gpunb_fail(GPUNB_ERESOURCE,
                          "gpunb_open: out of host memory for capacity = %d j-particles", capacity);
    }
    nb6_format(desc, "CPU SIMD back-end (%s, float pair arithmetic on two-float positions), "
               "%d OpenMP threads", nb6_simd_level_names[level], nb6_max_threads());
    *state = s;
    return GPUNB_OK;
}

static int simd_send(void *state, int nj, const double *m, const double (*x)[3],
                     const double (*v)[3])
{
    simd_state *s = state;
    gpunb_simd_jset *js = &s->js;
    int njpad = (nj + GPUNB_SIMD_PAD - 1) / GPUNB_SIMD_PAD * GPUNB_SIMD_PAD;
#pragma omp parallel for schedule(static) if (nj > 4096)
    for (int j = 0; j < njpad; j++) {
        int real = j < nj;
        for (int k = 0; k < 3; k++) {
            float hi = 0.0f, lo = 0.0f;
            if (real)
                nb6_split(x[j][k], &hi, &lo);
            js->xhi[k][j] = hi;
            js->xlo[k][j] = lo;
            js->v[k][j] = real ? (float)v[j][k] : 0.0f;
        }
        js->m[j] = real ? (float)m[j] : 0.0f;
    }
    js->nj = nj;
    js->njpad = njpad;
    return GPUNB_OK;
}

static int simd_regf(void *state, int ni, const double *h2, const double *dtr,
                     const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                     double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                     double *t_force, double *t_gather)
{
    const simd_state *s = state;
    double t0 = nb6_clock();
    s->regf(&s->js, ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
    *t_force = nb6_clock() - t0;
    *t_gather = 0.0;
    return GPUNB_OK;
}

static gpunb_simd_pot_fn *potential_of(int level)
{
    switch (level) {
#ifdef NB6ACCEL_HAVE_SSE2
    case NB6_SIMD_SSE2:
        return gpunb_simd_potential_sse2;
#endif
#ifdef NB6ACCEL_HAVE_AVX
    case NB6_SIMD_AVX:
        return gpunb_simd_potential_avx;
#endif
#ifdef NB6ACCEL_HAVE_AVX2
    case NB6_SIMD_AVX2:
        return gpunb_simd_potential_avx2;
#endif
#ifdef NB6ACCEL_HAVE_AVX512
    case NB6_SIMD_AVX512:
        return gpunb_simd_potential_avx512;
#endif
    default:
        return gpunb_simd_potential_scalar;
    }
}

int gpunb_simd_potential(int n, const double *m, const double (*x)[3], double *pot)
{
    int level, st;
    if ((st = choose_level("gpupot", &level)) != GPUNB_OK)
        return st;
    double *c = nb6_alloc(sizeof(double) * 3 * (size_t)n);
    if (!c)
        return gpunb_fail(GPUNB_ERESOURCE, "gpupot: out of host memory for n = %d particles", n);
    for (int k = 0; k < n; k++) {
        c[k] = x[k][0];
        c[n + k] = x[k][1];
        c[2 * (size_t)n + k] = x[k][2];
    }
    potential_of(level)(n, m, c, c + n, c + 2 * (size_t)n, pot);
    nb6_free(c);
    return GPUNB_OK;
}

const gpunb_backend_ops gpunb_backend_simd = {
    .name = "cpu",
    .open = simd_open,
    .close = simd_close,
    .send = simd_send,
    .regf = simd_regf,
};
