/* gpuirr_simd_kernel.c -- the GPUIRR kernel for one instruction set.
 *
 * This one source is compiled once per SIMD level (gpuirr/simd/local.mk),
 * each time with that level's -m flags and -DNB6_SIMD_BUILD_<LEVEL>, which
 * selects the vector vocabulary nb6_simd_<level>.h (FFTW's way).  Each build
 * defines gpuirr_kernel_<level>; gpuirr_dispatch.c picks one at run time.
 *
 * Precision: prediction in double as gpuirr.h states, stored as a two-float
 * position (hi + lo), float velocity and mass.  The force forms
 * dx = (x_j,hi - x_i,hi) + (x_j,lo - x_i,lo): the hi difference is exact for
 * neighbours (Sterbenz), so dx is good to a float ulp wherever the pair is.
 * Pair arithmetic in float; per-lane float sums of at most FLUSH_GROUPS
 * terms, then summed in double, so lists of any length lose nothing that
 * matters. */
#include "config.h"
#include "gpuirr_internal.h"
#include "nb6_simd_select.h"

#include <stddef.h>

/* ---- prediction ------------------------------------------------------------ */

/* x = x0 + dt (v0 + dt (F + dt FDOT)), v = v0 + 2 dt (F + 1.5 dt FDOT), in
 * double, written as a record (GPUIRR_REC_*). */
static inline void predict_slot(const gpuirr *restrict g, float *restrict rec, int s, double t)
{
    const double dt = t - g->t0[s];
    float *r = rec + (size_t)s * GPUIRR_REC;
    for (int k = 0; k < 3; k++) {
        double a2 = g->f_half[s][k], j6 = g->fdot_sixth[s][k];
        double x = g->x0[s][k] + dt * (g->v0[s][k] + dt * (a2 + dt * j6));
        double v = g->v0[s][k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
        nb6_split(x, &r[GPUIRR_REC_XHI + k], &r[GPUIRR_REC_XLO + k]);
        r[GPUIRR_REC_V + k] = (float)v;
    }
    r[GPUIRR_REC_MASS] = (float)g->mass[s];
}

static void SIMD_SUFFIX(predict_range)(gpuirr *g, int first, int last, double t)
{
    float *rec = g->rec;
    /* Small ranges are not worth waking the thread team. */
#pragma omp parallel for simd schedule(static) if (last - first >= 4096)
    for (int s = first; s <= last; s++)
        predict_slot(g, rec, s, t);
}

static void SIMD_SUFFIX(predict_slots)(gpuirr *g, int n, const int *slot, double t)
{
    float *rec = g->rec;
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int k = 0; k < n; k++)
        predict_slot(g, rec, slot[k], t);
}

/* ---- irregular force -------------------------------------------------------- */

/* Accumulators of one i and its predicted values, broadcast. */
typedef struct i_sums {
    simd_f xh, yh, zh, xl, yl, zl, vx, vy, vz;
    simd_f ax, ay, az, jx, jy, jz;
} i_sums;

/* Adds SIMD_VL pairs; f[] holds the records' fields (GPUIRR_REC_*).  About
 * 45 flops per pair.  r = 0 gives 1/r = 0 and so adds exactly 0, and so does
 * a lane with mass 0. */
static inline __attribute__((always_inline)) void add_pairs(i_sums *q, const simd_f f[12])
{
    simd_f dx = simd_add(simd_sub(f[GPUIRR_REC_XHI], q->xh), simd_sub(f[GPUIRR_REC_XLO], q->xl));
    simd_f dy = simd_add(simd_sub(f[GPUIRR_REC_XHI + 1], q->yh), simd_sub(f[GPUIRR_REC_XLO + 1], q->yl));
    simd_f dz = simd_add(simd_sub(f[GPUIRR_REC_XHI + 2], q->zh), simd_sub(f[GPUIRR_REC_XLO + 2], q->zl));
    simd_f dvx = simd_sub(f[GPUIRR_REC_V], q->vx);
    simd_f dvy = simd_sub(f[GPUIRR_REC_V + 1], q->vy);
    simd_f dvz = simd_sub(f[GPUIRR_REC_V + 2], q->vz);
    simd_f r2 = simd_fmadd(dz, dz, simd_fmadd(dy, dy, simd_mul(dx, dx)));
    simd_f rinv = simd_rsqrt_nz(r2);
    simd_f rinv2 = simd_mul(rinv, rinv);
    simd_f mr3 = simd_mul(simd_mul(f[GPUIRR_REC_MASS], rinv), rinv2);
    simd_f rv = simd_mul(simd_mul(simd_set1(3.0f), rinv2),
                         simd_fmadd(dz, dvz, simd_fmadd(dy, dvy, simd_mul(dx, dvx))));
    q->ax = simd_fmadd(mr3, dx, q->ax);
    q->ay = simd_fmadd(mr3, dy, q->ay);
    q->az = simd_fmadd(mr3, dz, q->az);
    q->jx = simd_fmadd(mr3, simd_fnmadd(rv, dx, dvx), q->jx);
    q->jy = simd_fmadd(mr3, simd_fnmadd(rv, dy, dvy), q->jy);
    q->jz = simd_fmadd(mr3, simd_fnmadd(rv, dz, dvz), q->jz);
}

/* Per-lane float sums are moved into double after this many groups of
 * SIMD_VL pairs: at most 16 terms per lane in float, so that lists of any
 * length (and the 4-lane levels) lose nothing that matters. */
enum { FLUSH_GROUPS = 16 };

/* Adds the lanes of the float sums to a, jk (double) and clears them. */
static inline void flush(i_sums *q, double a[3], double jk[3])
{
    a[0] += simd_hsum(q->ax);
    a[1] += simd_hsum(q->ay);
    a[2] += simd_hsum(q->az);
    jk[0] += simd_hsum(q->jx);
    jk[1] += simd_hsum(q->jy);
    jk[2] += simd_hsum(q->jz);
    q->ax = q->ay = q->az = q->jx = q->jy = q->jz = simd_zero();
}

/* One cache line into L1.  An asm statement, because GCC deletes a loop
 * whose body is only __builtin_prefetch (it has no side effect for it). */
static inline void prefetch_line(const void *p)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p);
#endif
}

/* Prefetches of the records of the next list, spread over the groups of
 * this one: members are scattered over all N, so without them every pair
 * waits for a cache miss, and a burst of ~90 misses at once queues on the
 * core's few line-fill buffers and stalls it; a few per group keep the
 * misses in flight while the arithmetic goes on. */
typedef struct next_list {
    const float *rec;   /* the records                                */
    const int *members; /* next list's members (record offsets)       */
    int done, len;      /* members prefetched so far, list length     */
} next_list;

enum { PREFETCH_PER_GROUP = SIMD_VL < 16 ? SIMD_VL : 16 };

/* The next PREFETCH_PER_GROUP members (unrolled, where the list has them),
 * or, with all set, every member left. */
static inline __attribute__((always_inline)) void prefetch_some(next_list *nx, int all)
{
    if (nx->done >= nx->len) /* nothing (left) to fetch; members may be NULL */
        return;
    const int *m = nx->members + nx->done;
    if (!all && nx->done + PREFETCH_PER_GROUP <= nx->len) {
#pragma GCC unroll 16
        for (int e = 0; e < PREFETCH_PER_GROUP; e++)
            prefetch_line(nx->rec + (unsigned)m[e]);
        nx->done += PREFETCH_PER_GROUP;
        return;
    }
    for (int e = 0; e < nx->len - nx->done; e++)
        prefetch_line(nx->rec + (unsigned)m[e]);
    nx->done = nx->len;
}

/* Sum over the list of slot s, SIMD over the members, each group of
 * SIMD_VL loaded as whole records and transposed.  The tail is the same with
 * the missing lanes pointing at the first member of the tail (a record
 * already being loaded) and masked off by giving them mass 0, so they add
 * exactly 0; gathers would cost more there than a full group. */
static inline __attribute__((always_inline)) void force_one(const float *restrict rec,
                                                            const int *restrict col, int s,
                                                            next_list *nx, double acc[3],
                                                            double jrk[3])
{
    const float *ri = rec + (size_t)s * GPUIRR_REC;
    const int len = col[0];
    const int *members = col + 1;
    i_sums q = {
        .xh = simd_set1(ri[GPUIRR_REC_XHI]), .yh = simd_set1(ri[GPUIRR_REC_XHI + 1]),
        .zh = simd_set1(ri[GPUIRR_REC_XHI + 2]), .xl = simd_set1(ri[GPUIRR_REC_XLO]),
        .yl = simd_set1(ri[GPUIRR_REC_XLO + 1]), .zl = simd_set1(ri[GPUIRR_REC_XLO + 2]),
        .vx = simd_set1(ri[GPUIRR_REC_V]), .vy = simd_set1(ri[GPUIRR_REC_V + 1]),
        .vz = simd_set1(ri[GPUIRR_REC_V + 2]),
        .ax = simd_zero(), .ay = simd_zero(), .az = simd_zero(),
        .jx = simd_zero(), .jy = simd_zero(), .jz = simd_zero(),
    };
    simd_f f[12];
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
    int e = 0, groups = 0;
    for (; e + SIMD_VL <= len; e += SIMD_VL) {
        prefetch_some(nx, 0);
        simd_load_records(rec, members + e, f);
        add_pairs(&q, f);
        if (++groups == FLUSH_GROUPS) /* long lists: keep the float sums short */
            flush(&q, a, jk), groups = 0;
    }
    prefetch_some(nx, 1);
    if (e < len) {
        const int left = len - e;
        int idx[SIMD_VL];
        simd_tail_offsets(members + e, left, idx);
        simd_load_records(rec, idx, f);
        f[GPUIRR_REC_MASS] = simd_keep(f[GPUIRR_REC_MASS], simd_first(left));
        add_pairs(&q, f);
    }
    flush(&q, a, jk);
    for (int k = 0; k < 3; k++) {
        acc[k] = a[k];
        jrk[k] = jk[k];
    }
}

/* The list of slot s's lines (at most the first 10: the rest follow in
 * sequence, where the hardware prefetcher finds them). */
static inline void prefetch_list_lines(const int *col, size_t lmax)
{
    size_t lines = (lmax * sizeof(int) + 63) / 64 + 1;
    lines = lines < 10 ? lines : 10;
    for (size_t k = 0; k < lines; k++)
        prefetch_line((const char *)col + 64 * k);
}

/* How many particles ahead the records of a list are prefetched, and the
 * list itself LIST_AHEAD more (its members must be in cache to prefetch
 * their records).  One particle is ~100 pairs, 0.1-0.4 us: enough for the
 * records from the L3; a list of a particle forced in no particular order
 * comes from memory, which needed the second particle (64k, shuffled order:
 * 6.1e8 -> 7.1e8 pairs/s on one core of the development EPYC). */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 1
#endif
#ifndef LIST_AHEAD
#define LIST_AHEAD 2
#endif

/* The positions n of addr that one thread forces, in order: chunks taken
 * from a shared counter (dynamic scheduling), the next one taken before
 * this one ends, so that the prefetches of the next particles run on across
 * chunk boundaries (with `omp for schedule(dynamic)` the first particle of
 * every chunk would wait for all its misses). */
typedef struct chunk_stream {
    int *counter;           /* shared: the first position not yet taken */
    int ni, chunk;
    int begin[2], end[2];   /* this chunk and the next ([1] empty if none) */
} chunk_stream;

static inline void take_chunk(chunk_stream *cs, int k)
{
    int first;
#pragma omp atomic capture
    {
        first = *cs->counter;
        *cs->counter += cs->chunk;
    }
    cs->begin[k] = first < cs->ni ? first : cs->ni;
    cs->end[k] = first + cs->chunk < cs->ni ? first + cs->chunk : cs->ni;
}

/* Position `ahead` steps after n (n in the current chunk), or -1. */
static inline int stream_peek(const chunk_stream *cs, int n, int ahead)
{
    if (n + ahead < cs->end[0])
        return n + ahead;
    int k = n + ahead - cs->end[0];
    return cs->begin[1] + k < cs->end[1] ? cs->begin[1] + k : -1;
}

static double SIMD_SUFFIX(force)(const gpuirr *g, int ni, const int *addr, double (*acc)[3],
                                 double (*jrk)[3], gpuirr_team *team)
{
    const float *rec = g->rec;
    const int *lists = g->lists;
    const size_t lmax = (size_t)g->lmax;
    /* Chunks of about 1/8 of a thread's share (2..32 particles): small blocks
     * still spread over every thread, large ones do not queue on the shared
     * counter.  A block of a few particles costs less than waking the team. */
    int chunk = ni / (8 * nb6_max_threads());
    chunk = chunk < 2 ? 2 : chunk > 32 ? 32 : chunk;
    int counter = 0;
    double pairs = 0.0;
    const double t_call = nb6_clock();
    double lag = 0.0, busy = 0.0;
    int threads = 0;
#pragma omp parallel if (ni >= 32) reduction(+ : pairs, busy, threads) reduction(max : lag)
    {
        const double t_start = nb6_clock();
        chunk_stream cs = {&counter, ni, chunk, {0, 0}, {0, 0}};
        take_chunk(&cs, 0);
        take_chunk(&cs, 1);
        /* The first particles' records: nothing prefetched them. */
        for (int k = 0; k < PREFETCH_AHEAD; k++) {
            const int n = stream_peek(&cs, cs.begin[0], k);
            if (n < 0)
                break;
            const int *first = lists + (size_t)(addr[n] - 1) * lmax;
            next_list nx = {rec, first + 1, 0, first[0]};
            prefetch_some(&nx, 1);
        }
        while (cs.begin[0] < cs.end[0]) {
            for (int n = cs.begin[0]; n < cs.end[0]; n++) {
                const int s = addr[n] - 1;
                /* Two stages ahead: the members and own record of the
                 * particle PREFETCH_AHEAD on, spread over this one's groups,
                 * and the list of a later particle (its lines come from
                 * memory while the records of the ones before it come). */
                const int n1 = stream_peek(&cs, n, PREFETCH_AHEAD),
                          n2 = stream_peek(&cs, n, PREFETCH_AHEAD + LIST_AHEAD);
                if (n2 >= 0)
                    prefetch_list_lines(lists + (size_t)(addr[n2] - 1) * lmax, lmax);
                next_list nx = {rec, NULL, 0, 0};
                if (n1 >= 0) {
                    const int *next = lists + (size_t)(addr[n1] - 1) * lmax;
                    nx.members = next + 1;
                    nx.len = next[0];
                    prefetch_line(rec + (size_t)(addr[n1] - 1) * GPUIRR_REC);
                }
                const int *col = lists + (size_t)s * lmax;
                pairs += col[0];
                force_one(rec, col, s, &nx, acc[n], jrk[n]);
            }
            cs.begin[0] = cs.begin[1];
            cs.end[0] = cs.end[1];
            if (cs.begin[0] < cs.end[0])
                take_chunk(&cs, 1);
        }
        lag = t_start - t_call;
        busy = nb6_clock() - t_start;
        threads = 1;
    }
    *team = (gpuirr_team){lag, busy, threads};
    return pairs;
}

const gpuirr_kernel SIMD_SUFFIX(gpuirr_kernel) = {
    .name = SIMD_LEVEL_NAME,
    .predict_range = SIMD_SUFFIX(predict_range),
    .predict_slots = SIMD_SUFFIX(predict_slots),
    .force = SIMD_SUFFIX(force),
};
