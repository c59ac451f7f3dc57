/* gpuirr_api.c -- the GPUIRR handle: particle records, lists, argument
 * checks and statistics; prediction and force go to the chosen kernel. */
#include "config.h"
#include "gpuirr_dispatch.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static _Thread_local char last_error[NB6_ERRMSG_LEN];

const char *gpuirr_last_error(void) { return last_error; }

int gpuirr_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void gpuirr_close(gpuirr *g)
{
    if (!g)
        return;
    if (g->dev)
        gpuirr_device_close(g);
    nb6_free(g->x0);
    nb6_free(g->v0);
    nb6_free(g->f_half);
    nb6_free(g->fdot_sixth);
    nb6_free(g->mass);
    nb6_free(g->t0);
    nb6_free(g->rec);
    nb6_free(g->lists);
    free(g);
}

int gpuirr_open(gpuirr **out, int nmax, int lmax)
{
    gpuirr *g;
    size_t n;
    int st;

    if (!out)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_open: out is NULL");
    *out = NULL;
    if (nmax < 1)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_open: nmax = %d, must be at least 1", nmax);
    if (nmax > GPUIRR_NMAX)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_open: nmax = %d, must be at most %d", nmax,
                           (int)GPUIRR_NMAX);
    if (lmax < 1)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_open: lmax = %d, must be at least 1", lmax);
    nb6_check_openmp_runtime("libgpuirr");
    g = calloc(1, sizeof *g);
    if (!g)
        return gpuirr_fail(GPUIRR_ERESOURCE, "gpuirr_open: out of host memory");
    if ((st = gpuirr_choose_kernel(&g->kernel)) != GPUIRR_OK) {
        free(g);
        return st;
    }
    g->nmax = nmax;
    g->lmax = lmax;
    g->t_pred = NAN;
    n = (size_t)nmax;
    int records_ok;
    if (g->kernel->float_records) {
        g->rec = nb6_alloc_aligned(64, n * GPUIRR_REC * sizeof(float));
        records_ok = g->rec != NULL;
    } else {
        g->x0 = nb6_alloc(n * sizeof(double[3]));
        g->v0 = nb6_alloc(n * sizeof(double[3]));
        g->f_half = nb6_alloc(n * sizeof(double[3]));
        g->fdot_sixth = nb6_alloc(n * sizeof(double[3]));
        g->mass = nb6_alloc(n * sizeof(double));
        g->t0 = nb6_alloc(n * sizeof(double));
        records_ok = g->x0 && g->v0 && g->f_half && g->fdot_sixth && g->mass && g->t0;
    }
    g->lists = nb6_alloc(n * (size_t)lmax * sizeof(int));
    if (!records_ok || !g->lists) {
        gpuirr_close(g);
        return gpuirr_fail(GPUIRR_ERESOURCE,
                           "gpuirr_open: out of host memory for nmax = %d, lmax = %d (%.1f MB of lists)",
                           nmax, lmax, (double)n * (double)lmax * sizeof(int) / 1e6);
    }
    *out = g;
    return GPUIRR_OK;
}

int gpuirr_capacity(const gpuirr *g) { return g ? g->nmax : 0; }

const char *gpuirr_kernel_name(const gpuirr *g) { return g ? g->kernel->name : "none"; }

void gpuirr_get_stats(const gpuirr *g, gpuirr_stats *out)
{
    if (g && out)
        *out = g->stats;
}

static int check_addr(const gpuirr *g, const char *routine, const char *arg, int addr)
{
    if (!g)
        return gpuirr_fail(GPUIRR_EUSAGE, "%s: called before gpuirr_open (handle is NULL)", routine);
    if (addr < 1 || addr > g->nmax)
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "%s: %s = %d is outside 1..%d (the capacity given to gpuirr_open)",
                           routine, arg, addr, g->nmax);
    return GPUIRR_OK;
}

static int check_vec(const char *routine, const char *arg, int addr, const double v[3])
{
    long k = nb6_first_nonfinite(v, 3);
    if (k >= 0)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_%s: %s[%ld] = %g of particle %d is not finite",
                           routine, arg, k, v[k], addr);
    return GPUIRR_OK;
}

/* The lo part of x beside hi = (float)x: (x - hi) in units of
 * 2^-16 ulp(hi) = 2^(e - 166) (e: hi's biased exponent), rounded, so that
 * x = hi + lo 2^(e - 166) to 2^-40 of |x|; 0 where e < 40 (|x| < 2^-87).
 * The kernels rebuild that product exactly in float (simd_lo_unit).  Four
 * per record, 10^8 records per run at 64k: no libm calls (ldexp and
 * nearbyint cost the Plummer driver 0.3 s of t = 2..4 there). */
static int gpuirr_lo16(double x, float hi)
{
    uint32_t bits;
    memcpy(&bits, &hi, sizeof bits);
    const int e = (int)(bits >> 23 & 0xff);
    if (e < 40 || e == 0xff)
        return 0;
    /* 2^(166 - e), and x - hi times it: both exact */
    const uint64_t scale_bits = (uint64_t)(166 - e + 1023) << 52;
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    const double d = (x - (double)hi) * scale;
#if defined(__SSE2__)
    const int n = _mm_cvtsd_si32(_mm_set_sd(d)); /* to nearest, ties to even */
#else
    const int n = (int)lrint(d);
#endif
    /* |n| <= 2^15: +2^15 (a tie rounded down to hi) is kept as 2^15 - 1 */
    return n > INT16_MAX ? INT16_MAX : n;
}

/* Two lo parts in one float field, a in the low half. */
static float pack_lo16(int a, int b)
{
    const uint32_t w = (uint32_t)(uint16_t)a | (uint32_t)(uint16_t)b << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* A record's cache line written whole with streaming stores.  Plain stores
 * first fetch the line, although the call overwrites it, and then leave it
 * in the writer's cache, where it displaces the caller's own data (NBODY6
 * and the Plummer driver set one record per irregular step, 10^8 per run at
 * 64k); GPUNB's records are written the same way (gpunb_resident.c).
 * Streaming stores are ordered only by a locked instruction or a fence:
 * hence the rule in gpuirr.h, and nb6_stream_fence before gpuirr_force
 * reads records. */
static void store_record(float *dst, const float r[GPUIRR_REC])
{
#if defined(__SSE2__)
    for (int k = 0; k < GPUIRR_REC; k += 4)
        _mm_stream_ps(dst + k, _mm_loadu_ps(r + k));
#else
    memcpy(dst, r, GPUIRR_REC * sizeof(float));
#endif
}

int gpuirr_set_particle(gpuirr *g, int addr, const double x0[3], const double v0[3],
                        const double f_half[3], const double fdot_sixth[3], double mass, double t0)
{
    int st, s = addr - 1;
    if ((st = check_addr(g, "gpuirr_set_particle", "addr", addr)))
        return st;
    if (!x0 || !v0 || !f_half || !fdot_sixth)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_set_particle: a NULL array for particle %d", addr);
    if (!nb6_state_finite(x0, v0, f_half, fdot_sixth, mass, t0) || mass < 0.0) {
        if ((st = check_vec("set_particle", "x0", addr, x0)) || (st = check_vec("set_particle", "v0", addr, v0)) ||
            (st = check_vec("set_particle", "f_half", addr, f_half)) ||
            (st = check_vec("set_particle", "fdot_sixth", addr, fdot_sixth)))
            return st;
        if (!isfinite(mass) || mass < 0.0)
            return gpuirr_fail(GPUIRR_EUSAGE,
                               "gpuirr_set_particle: mass = %g of particle %d is not a finite non-negative number",
                               mass, addr);
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_set_particle: t0 = %g of particle %d is not finite", t0, addr);
    }
    /* (a load first: the flag's line stays shared in every thread's cache) */
    if (!atomic_load_explicit(&g->any_set, memory_order_relaxed))
        atomic_store_explicit(&g->any_set, 1, memory_order_relaxed);
    if (g->dev && (st = gpuirr_device_set_particle(g, addr, x0, v0, f_half, fdot_sixth, mass, t0)))
        return st;
    if (g->rec) {
        float r[GPUIRR_REC], unused;
        int lo[3];
        for (int k = 0; k < 3; k++) {
            nb6_split(x0[k], &r[GPUIRR_REC_XHI + k], &unused);
            lo[k] = gpuirr_lo16(x0[k], r[GPUIRR_REC_XHI + k]);
            r[GPUIRR_REC_V + k] = (float)v0[k];
            r[GPUIRR_REC_F + k] = (float)f_half[k];
            r[GPUIRR_REC_FDOT + k] = (float)fdot_sixth[k];
        }
        r[GPUIRR_REC_MASS] = (float)mass;
        nb6_split(t0, &r[GPUIRR_REC_T0HI], &unused);
        r[GPUIRR_REC_LO_TX] = pack_lo16(gpuirr_lo16(t0, r[GPUIRR_REC_T0HI]), lo[0]);
        r[GPUIRR_REC_LO_YZ] = pack_lo16(lo[1], lo[2]);
        store_record(g->rec + (size_t)s * GPUIRR_REC, r);
        return GPUIRR_OK;
    }
    for (int k = 0; k < 3; k++) {
        g->x0[s][k] = x0[k];
        g->v0[s][k] = v0[k];
        g->f_half[s][k] = f_half[k];
        g->fdot_sixth[s][k] = fdot_sixth[k];
    }
    g->mass[s] = mass;
    g->t0[s] = t0;
    return GPUIRR_OK;
}

int gpuirr_set_list(gpuirr *g, int addr, int n, const int *members)
{
    int st;
    if ((st = check_addr(g, "gpuirr_set_list", "addr", addr)))
        return st;
    if (n < 0 || n > g->lmax - 1)
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "gpuirr_set_list: list length %d of particle %d is outside 0..%d (lmax-1)",
                           n, addr, g->lmax - 1);
    if (n > 0 && !members)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_set_list: members is NULL for particle %d", addr);
    /* One pass that vectorises (10^7 lists a run, of ~100 members); the
     * culprit is looked for only when it finds one. */
    int bad = 0;
    for (int e = 0; e < n; e++)
        bad |= (members[e] == addr) | (members[e] < 1) | (members[e] > g->nmax);
    for (int e = 0; bad && e < n; e++) {
        int j = members[e];
        if (j == addr)
            return gpuirr_fail(GPUIRR_EUSAGE,
                               "gpuirr_set_list: member %d of particle %d's list is %d, the particle itself",
                               e + 1, addr, j);
        if (j < 1 || j > g->nmax)
            return gpuirr_fail(GPUIRR_EUSAGE,
                               "gpuirr_set_list: member %d of particle %d's list is %d, outside 1..%d "
                               "(the capacity given to gpuirr_open)",
                               e + 1, addr, j, g->nmax);
    }
    if (g->dev && (st = gpuirr_device_set_list(g, addr, n, members)))
        return st;
    int *col = g->lists + (size_t)(addr - 1) * (size_t)g->lmax;
    col[0] = n;
    for (int e = 0; e < n; e++)
        col[1 + e] = GPUIRR_REC * (members[e] - 1);
    return GPUIRR_OK;
}

int gpuirr_predict_all(gpuirr *g, int first, int last, double t)
{
    double t0 = nb6_clock();
    int st;
    if ((st = check_addr(g, "gpuirr_predict_all", "first", first)) ||
        (st = check_addr(g, "gpuirr_predict_all", "last", last)))
        return st;
    if (!isfinite(t))
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_predict_all: time = %g is not finite", t);
    if (first > last)
        return GPUIRR_OK;
    g->t_pred = t; /* the force predicts (gpuirr_internal.h) */
    g->dev_block = -1;
    g->stats.particles_predicted += last - first + 1;
    g->stats.time_predict_all += nb6_clock() - t0;
    return GPUIRR_OK;
}

int gpuirr_predict_active(gpuirr *g, int ni, const int *addr, double t)
{
    double t0 = nb6_clock();
    int st;
    if (!g)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_predict_active: called before gpuirr_open (handle is NULL)");
    if (ni < 0 || (ni > 0 && !addr))
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_predict_active: ni = %d with addr %s", ni,
                           addr ? "given" : "NULL");
    if (!isfinite(t))
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_predict_active: time = %g is not finite", t);
    for (int n = 0; n < ni; n++)
        if ((st = check_addr(g, "gpuirr_predict_active", "addr[n]", addr[n])))
            return st;
    g->t_pred = t; /* the force predicts (gpuirr_internal.h) */
    g->dev_block = -1;
    g->stats.particles_predicted += ni;
    g->stats.time_predict_active += nb6_clock() - t0;
    return GPUIRR_OK;
}

int gpuirr_force(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3])
{
    double t0 = nb6_clock();
    int st;
    if (!g)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_force: called before gpuirr_open (handle is NULL)");
    if (ni < 0)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_force: ni = %d is negative", ni);
    if (ni == 0)
        return GPUIRR_OK;
    if (!addr || !acc || !jrk)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_force: a NULL array (addr, acc or jrk)");
    /* One pass that reads only addr (it vectorises); the lists are read
     * once, by the kernel, in parallel. */
    int lo = addr[0], hi = addr[0];
    for (int n = 1; n < ni; n++) {
        lo = addr[n] < lo ? addr[n] : lo;
        hi = addr[n] > hi ? addr[n] : hi;
    }
    if (lo < 1 || hi > g->nmax)
        for (int n = 0; n < ni; n++)
            if ((st = check_addr(g, "gpuirr_force", "addr[n]", addr[n])))
                return st;
    if (isnan(g->t_pred))
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_force: called before any prediction "
                                          "(gpuirr_predict_all or gpuirr_predict_active gives the time)");
    /* The block's first call decides for all of its calls (gpuirr.h). */
    if (g->dev && g->dev_block < 0) {
        g->dev_block = ni >= g->dev_min_ni;
        g->dev_unsent += g->dev_last_ni;
        g->dev_last_ni = ni;
        if (g->dev_block) {
            g->dev_unsent = 0; /* the GPU takes every change now */
        } else if (g->dev_unsent >= GPUIRR_DEVICE_PUSH_MIN) {
            if ((st = gpuirr_device_push(g)))
                return st;
            g->dev_unsent = 0;
            g->stats.device_pushes++;
        }
    }
    if (g->dev && g->dev_block) {
        double pairs;
        if ((st = gpuirr_device_force(g, ni, addr, acc, jrk, &pairs)))
            return st;
        const double call = nb6_clock() - t0;
        g->stats.force_calls++;
        g->stats.particles_forced += ni;
        g->stats.interactions += pairs;
        g->stats.time_force += call;
        g->stats.device_calls++;
        g->stats.device_particles += ni;
        g->stats.time_device += call;
        return GPUIRR_OK;
    }
    nb6_stream_fence();
    gpuirr_team team = {0.0, 0.0, 0};
    double interactions = g->kernel->force(g, ni, addr, acc, jrk, &team);
    g->stats.force_calls++;
    g->stats.time_force_start_lag += team.start_lag;
    g->stats.time_force_thread_busy += team.busy;
    g->stats.force_team_threads += team.threads;
    g->stats.particles_forced += ni;
    g->stats.interactions += interactions;
    const double call = nb6_clock() - t0;
    g->stats.time_force += call;
    g->stats.time_force_thread_held += team.threads * call;
    return GPUIRR_OK;
}
