/* gpuirr_simd_kernel.c -- the GPUIRR kernel for one instruction set.
 *
 * This one source is compiled once per SIMD level (gpuirr/simd/local.mk),
 * each time with that level's -m flags and -DNB6_SIMD_BUILD_<LEVEL>, which
 * selects the vector vocabulary nb6_simd_<level>.h (FFTW's way).  Each build
 * defines gpuirr_kernel_<level>; gpuirr_dispatch.c picks one at run time.
 *
 * Prediction happens here, per pair: each member's record (one cache line:
 * x0 and t0 as a float hi and a 16-bit lo, v0, F, FDOT, mass in float;
 * gpuirr_internal.h) is loaded once and predicted to t in float, as the
 * displacement d = dt (v0 + dt (F + dt FDOT)) and
 * v = v0 + 2 dt (F + 1.5 dt FDOT), with dt = (t_hi - t0_hi) + (t_lo - t0_lo)
 * (t as a two-float pair, t0_lo rebuilt from its 16 bits exactly in float,
 * as x0_lo).  The pair's separation is
 *   dx = (x0_j,hi - x0_i,hi) + ((x0_j,lo + d_j) - (x0_i,lo + d_i)):
 * the hi difference is exact for neighbours (Sterbenz), and d is small
 * beside it, so dx is good to about a float ulp of itself wherever the pair
 * is, down to separations of about 2^-16 |x0| (the stored lo's 16 bits).  The
 * i is predicted by the same vector operations on its broadcast record, so
 * a particle gets the same prediction as i and as a member (identical
 * records give r = 0 exactly).  Pair arithmetic in float; per-lane float
 * sums of at most FLUSH_GROUPS terms, then summed in double, so lists of
 * any length lose nothing that matters. */
#include "config.h"
#include "gpuirr_internal.h"
#include "nb6_simd_select.h"

#include <stddef.h>

/* ---- prediction ------------------------------------------------------------ */

/* The prediction time as a two-float pair, broadcast. */
typedef struct t_pair {
    simd_f hi, lo;
} t_pair;

/* Predicted state of SIMD_VL particles: the low part of the position
 * (x0_lo + d; the hi part is the record's) and the velocity. */
typedef struct predicted {
    simd_f lo[3], v[3];
} predicted;

/* The lo part of x0_k beside its hi part (gpuirr_lo16): the 16-bit integer
 * as a float times the unit that hi's exponent gives, exact in float. */
static inline __attribute__((always_inline)) simd_f rebuild_lo(simd_f n, simd_f hi)
{
    return simd_mul(n, simd_lo_unit(hi));
}

/* Prediction to t from the record's fields 0..7 (epoch, F, FDOT) and
 * 8..15 (v0, x0_hi, mass), in two stages so that a member's first group of
 * fields is used up before its second is loaded (but x0_lo's integer, which
 * shares a field with t0_lo's).  The loops over x, y, z are unrolled by
 * request: GCC -O2 otherwise kept these arrays of vectors on the stack (271
 * instructions per group of pairs instead of 233). */
typedef struct partial_prediction {
    simd_f dt, dt2, pos[3], vel[3]; /* F + dt FDOT, F + 1.5 dt FDOT */
    simd_f x_lo16;                  /* x0_lo's integer, as a float */
} partial_prediction;

static inline __attribute__((always_inline)) partial_prediction predict_first(const simd_f f[8], t_pair t)
{
    partial_prediction p;
    const simd_f lo_tx = f[GPUIRR_REC_LO_TX];
    const simd_f t0_lo = rebuild_lo(simd_int16_lo(lo_tx), f[GPUIRR_REC_T0HI]);
    p.x_lo16 = simd_int16_hi(lo_tx);
    p.dt = simd_add(simd_sub(t.hi, f[GPUIRR_REC_T0HI]), simd_sub(t.lo, t0_lo));
    p.dt2 = simd_add(p.dt, p.dt);
    const simd_f dt15 = simd_mul(simd_set1(1.5f), p.dt);
#pragma GCC unroll 3
    for (int k = 0; k < 3; k++) {
        p.pos[k] = simd_fmadd(p.dt, f[GPUIRR_REC_FDOT + k], f[GPUIRR_REC_F + k]);
        p.vel[k] = simd_fmadd(dt15, f[GPUIRR_REC_FDOT + k], f[GPUIRR_REC_F + k]);
    }
    return p;
}

/* f: fields 8..15, so f[GPUIRR_REC_V - 8 + k] is v0[k]. */
static inline __attribute__((always_inline)) predicted predict_second(const partial_prediction *p,
                                                                      const simd_f f[8])
{
    const simd_f lo_yz = f[GPUIRR_REC_LO_YZ - 8];
    const simd_f lo16[3] = {p->x_lo16, simd_int16_lo(lo_yz), simd_int16_hi(lo_yz)};
    predicted q;
#pragma GCC unroll 3
    for (int k = 0; k < 3; k++) {
        const simd_f v0 = f[GPUIRR_REC_V - 8 + k];
        const simd_f x0_lo = rebuild_lo(lo16[k], f[GPUIRR_REC_XHI - 8 + k]);
        q.lo[k] = simd_fmadd(p->dt, simd_fmadd(p->dt, p->pos[k], v0), x0_lo);
        q.v[k] = simd_fmadd(p->dt2, p->vel[k], v0);
    }
    return q;
}

/* ---- irregular force -------------------------------------------------------- */

/* Accumulators of one i, and its predicted values as scalars: broadcast
 * from memory where they are used (an operand of the subtraction on
 * AVX-512), they leave the registers to the record transposes, which
 * otherwise spill. */
typedef struct i_sums {
    float xh[3], xl[3], v[3];
    simd_f ax, ay, az, jx, jy, jz;
} i_sums;

/* Adds SIMD_VL pairs, the members' records at rec + idx[l], predicted to t
 * here; lanes outside keep get mass 0 (a list's tail).  About 45 flops per pair for the
 * force, 20 for the prediction.  r = 0 gives 1/r = 0 and so adds exactly 0,
 * and so does a lane with mass 0. */
static inline __attribute__((always_inline)) void add_pairs(i_sums *q, const float *rec, const int *idx,
                                                            t_pair t, simd_mask keep)
{
    simd_f f[8];
    simd_load_fields8(rec, idx, 0, f);
    const partial_prediction pp = predict_first(f, t);
    simd_load_fields8(rec, idx, 8, f);
    const predicted p = predict_second(&pp, f);
    const simd_f mass = simd_keep(f[GPUIRR_REC_MASS - 8], keep);
    const simd_f *xh = f + (GPUIRR_REC_XHI - 8);
    simd_f dvx = simd_sub(p.v[0], simd_set1(q->v[0]));
    simd_f dvy = simd_sub(p.v[1], simd_set1(q->v[1]));
    simd_f dvz = simd_sub(p.v[2], simd_set1(q->v[2]));
    simd_f dx = simd_add(simd_sub(xh[0], simd_set1(q->xh[0])), simd_sub(p.lo[0], simd_set1(q->xl[0])));
    simd_f dy = simd_add(simd_sub(xh[1], simd_set1(q->xh[1])), simd_sub(p.lo[1], simd_set1(q->xl[1])));
    simd_f dz = simd_add(simd_sub(xh[2], simd_set1(q->xh[2])), simd_sub(p.lo[2], simd_set1(q->xl[2])));
    simd_f r2 = simd_fmadd(dz, dz, simd_fmadd(dy, dy, simd_mul(dx, dx)));
    simd_f rinv = simd_rsqrt_nz(r2);
    simd_f rinv2 = simd_mul(rinv, rinv);
    simd_f mr3 = simd_mul(simd_mul(mass, rinv), rinv2);
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

/* A record: one line. */
static inline void prefetch_record(const float *r) { prefetch_line(r); }

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
            prefetch_record(nx->rec + (unsigned)m[e]);
        nx->done += PREFETCH_PER_GROUP;
        return;
    }
    for (int e = 0; e < nx->len - nx->done; e++)
        prefetch_record(nx->rec + (unsigned)m[e]);
    nx->done = nx->len;
}

/* Sum over the list of slot s, SIMD over the members, each group of
 * SIMD_VL loaded as whole records and transposed.  The tail is the same with
 * the missing lanes pointing at the first member of the tail (a record
 * already being loaded) and masked off by giving them mass 0, so they add
 * exactly 0; gathers would cost more there than a full group. */
static inline __attribute__((always_inline)) void force_one(const float *restrict rec,
                                                            const int *restrict col, int s,
                                                            t_pair t, next_list *nx,
                                                            double acc[3], double jrk[3])
{
    const float *ri = rec + (size_t)s * GPUIRR_REC;
    const int len = col[0];
    const int *members = col + 1;
    /* The i in every lane, predicted by the same operations as a member. */
    simd_f f[16];
    for (int k = 0; k < 16; k++)
        f[k] = simd_set1(ri[k]);
    const partial_prediction ppi = predict_first(f, t);
    const predicted pi = predict_second(&ppi, f + 8);
    i_sums q = {
        .ax = simd_zero(), .ay = simd_zero(), .az = simd_zero(),
        .jx = simd_zero(), .jy = simd_zero(), .jz = simd_zero(),
    };
    for (int k = 0; k < 3; k++) {
        q.xh[k] = ri[GPUIRR_REC_XHI + k];
        q.xl[k] = simd_lane0(pi.lo[k]);
        q.v[k] = simd_lane0(pi.v[k]);
    }
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
    int e = 0, groups = 0;
    for (; e + SIMD_VL <= len; e += SIMD_VL) {
        prefetch_some(nx, 0);
        add_pairs(&q, rec, members + e, t, simd_first(SIMD_VL));
        if (++groups == FLUSH_GROUPS) /* long lists: keep the float sums short */
            flush(&q, a, jk), groups = 0;
    }
    prefetch_some(nx, 1);
    if (e < len) {
        const int left = len - e;
        int idx[SIMD_VL];
        simd_tail_offsets(members + e, left, idx);
        add_pairs(&q, rec, idx, t, simd_first(left));
    }
    flush(&q, a, jk);
    for (int k = 0; k < 3; k++) {
        acc[k] = a[k];
        jrk[k] = jk[k];
    }
}

/* The list of slot s's lines (at most the first 10: the rest follow in
 * sequence, where the hardware prefetcher finds them).  Unrolled by
 * request: at most ten iterations, and GCC -O2 kept the loop (64k on the
 * development EPYC: 3.8e8 against 4.3e8 interactions/s on one thread). */
static inline void prefetch_list_lines(const int *col, size_t lmax)
{
    size_t lines = (lmax * sizeof(int) + 63) / 64 + 1;
    lines = lines < 10 ? lines : 10;
#pragma GCC unroll 10
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
    float t_hi, t_lo;
    nb6_split(g->t_pred, &t_hi, &t_lo);
    const t_pair tp = {simd_set1(t_hi), simd_set1(t_lo)};
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
                    prefetch_record(rec + (size_t)(addr[n1] - 1) * GPUIRR_REC);
                }
                const int *col = lists + (size_t)s * lmax;
                pairs += col[0];
                force_one(rec, col, s, tp, &nx, acc[n], jrk[n]);
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
    .float_records = 1,
    .force = SIMD_SUFFIX(force),
};
