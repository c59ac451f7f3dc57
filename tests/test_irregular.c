/* test_irregular.c -- the irregular force over neighbour lists from resident
 * records (gpunb_irr_open, gpunb_set_list, gpunb_firr_start/done/finish) against a
 * double-precision reference computed here from the documented prediction.
 *
 * Fresh random Plummer clusters (tight pairs, merger ghosts), records with
 * random f_half, fdot_sixth and epochs in [-0.01, 0]; lists built here: the
 * tight-pair partner, a few particles near in x, random members; some empty,
 * some never set, some of exactly lmax - 1 members; two pairs with r = 0
 * (identical ghosts, a ghost on top of a massive particle).  Blocks of 1, 31,
 * 64, 1000 and all particles; then a few records and lists changed, and half
 * of them, with no new gpunb_predict (the forces must see the new data); an
 * irregular force in flight together with a regular one (neither may disturb
 * the other, and the regular force must match the legacy path on the
 * records as changed); records changed and then predicted (20, half) before
 * a force; changes pushed (gpunb_push) and changed again before the next
 * prediction and forces; gpunb_firr_done polled after each start until it
 * says done;
 * the call-order and argument rules; the statistics.
 *
 * Built twice from this source: tests/test_irregular (the CPU and reference
 * back-ends) and, with -DTEST_IRREGULAR_CUDA, tests/gpu/test_gpunb_irregular_cuda
 * (the CUDA back-end with one GPU, which computes on the device, and with
 * GPU_LIST="0 0", two shares of one GPU, which computes on the host; exit 77
 * with "SKIP: ..." without a usable GPU). */
#include "config.h"
#include "gpunb.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Everything is double and the library predicts with the same Horner form
 * (no contraction), so the only differences are the order of the sums and
 * the rounding of each term: at most ~L eps of the sum of the terms' sizes.
 * The floor (FLOOR_FRAC of that sum) keeps a sum that cancels from turning
 * summation-order rounding into a large relative error: 199 terms x 1.1e-16
 * / 0.05 = 4.4e-13 < TOL_ACC. */
/* The CUDA variant uses the same tolerances: the header promises the
 * device predicts "as gpunb_predict does", bit-identically to the host
 * (no FMA contraction).  A contracted device prediction moves x by an ulp,
 * which at the closest pairs (r ~ 1e-4) is ~1e-12 of dx: acc errors of
 * several 1e-12 there would be the sign of it. */
#define TOL_ACC 1e-12
#define TOL_JRK 1e-10
#define FLOOR_FRAC 0.05

#if defined(__GNUC__) && !defined(__clang__)
#define NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACT
#endif

#ifdef TEST_IRREGULAR_CUDA
#define TEST_NAME "test_gpunb_irregular_cuda"
#else
#define TEST_NAME "test_irregular"
#endif

/* Records, the test's own prediction and the lists (lmax - 1 slots per j). */
typedef struct jset {
    int n, lmax, ghost0; /* ghosts are ghost0..n-1 */
    double *m, *t0, (*x0)[3], (*v0)[3], (*fh)[3], (*fd)[3];
    double (*xp)[3], (*vp)[3];
    int *len, *mem, *stamp, *order, *pos, stamp_gen;
} jset;

/* What a handle's statistics must say. */
typedef struct expect_stats {
    long long calls;
    double pairs;
} expect_stats;

static double worst_acc, worst_jrk;
static long n_checked, n_empty;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int *slots(const jset *s, int j) { return s->mem + (size_t)j * (size_t)(s->lmax - 1); }

static void new_record(jset *s, int j)
{
    for (int k = 0; k < 3; k++) {
        s->fh[j][k] = 0.5 * tl_normal();
        s->fd[j][k] = tl_normal() / 6.0;
    }
    s->t0[j] = -0.01 * tl_uniform();
}

static const jset *sort_set; /* for qsort's comparison */
static int cmp_x_plain(const void *a, const void *b)
{
    double xa = sort_set->x0[*(const int *)a][0], xb = sort_set->x0[*(const int *)b][0];
    return (xa > xb) - (xa < xb);
}

/* List of j: length 0 (5%), lmax - 1 (5%) or 1..lmax-2; members the tight
 * partner j^1, up to 6 particles next in x, then random ones; distinct,
 * never j, shuffled. */
static void make_list(jset *s, int j)
{
    const int room = s->lmax - 1;
    double u = tl_uniform();
    int L = u < 0.05 ? 0 : u < 0.10 ? room : room >= 2 ? tl_int(1, room - 1) : room;
    int *mm = slots(s, j), c = 0;
    if (++s->stamp_gen == 0) { /* wrapped: clear the stamps */
        memset(s->stamp, 0, sizeof(int) * (size_t)s->n);
        s->stamp_gen = 1;
    }
    s->stamp[j] = s->stamp_gen;
#define ADD(k)                                                                                                 \
    do {                                                                                                       \
        int k_ = (k);                                                                                          \
        if (c < L && k_ >= 0 && k_ < s->n && s->stamp[k_] != s->stamp_gen) {                                  \
            s->stamp[k_] = s->stamp_gen;                                                                       \
            mm[c++] = k_;                                                                                      \
        }                                                                                                      \
    } while (0)
    ADD(j ^ 1);
    for (int d = 1; d <= 3; d++) {
        int p = s->pos[j];
        if (p - d >= 0)
            ADD(s->order[p - d]);
        if (p + d < s->n)
            ADD(s->order[p + d]);
    }
    while (c < L)
        ADD(tl_int(0, s->n - 1));
#undef ADD
    for (int a = c - 1; a > 0; a--) {
        int b = tl_int(0, a), t = mm[a];
        mm[a] = mm[b];
        mm[b] = t;
    }
    s->len[j] = c;
}

/* A list that must exist: add k to j's list (replacing a member if full). */
static void force_member(jset *s, int j, int k)
{
    int *mm = slots(s, j);
    for (int e = 0; e < s->len[j]; e++)
        if (mm[e] == k)
            return;
    if (s->len[j] < s->lmax - 1)
        mm[s->len[j]++] = k;
    else
        mm[0] = k;
}

static void jset_make(jset *s, int n, int lmax)
{
    tl_cluster c;
    int nghost = n / 100 + 4;
    tl_cluster_make(&c, n, nghost, 0.0, 0.2);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->lmax = lmax;
    s->ghost0 = n - nghost;
    s->m = c.m;
    s->x0 = c.x;
    s->v0 = c.v;
    s->t0 = malloc(sizeof(double) * (size_t)n);
    s->fh = malloc(sizeof(double[3]) * (size_t)n);
    s->fd = malloc(sizeof(double[3]) * (size_t)n);
    s->xp = malloc(sizeof(double[3]) * (size_t)n);
    s->vp = malloc(sizeof(double[3]) * (size_t)n);
    s->len = calloc((size_t)n, sizeof(int));
    s->mem = malloc(sizeof(int) * (size_t)n * (size_t)(lmax - 1 > 0 ? lmax - 1 : 1));
    s->stamp = calloc((size_t)n, sizeof(int));
    s->order = malloc(sizeof(int) * (size_t)n);
    s->pos = malloc(sizeof(int) * (size_t)n);
    for (int j = 0; j < n; j++)
        new_record(s, j);
    /* r = 0 pairs: ghost g+1 a copy of ghost g; ghost g+2 a massless copy
     * of particle 0.  Never changed later. */
    const int g = s->ghost0;
    memcpy(s->x0[g + 1], s->x0[g], sizeof s->x0[g]);
    memcpy(s->v0[g + 1], s->v0[g], sizeof s->v0[g]);
    memcpy(s->fh[g + 1], s->fh[g], sizeof s->fh[g]);
    memcpy(s->fd[g + 1], s->fd[g], sizeof s->fd[g]);
    s->t0[g + 1] = s->t0[g];
    memcpy(s->x0[g + 2], s->x0[0], sizeof s->x0[0]);
    memcpy(s->v0[g + 2], s->v0[0], sizeof s->v0[0]);
    memcpy(s->fh[g + 2], s->fh[0], sizeof s->fh[0]);
    memcpy(s->fd[g + 2], s->fd[0], sizeof s->fd[0]);
    s->t0[g + 2] = s->t0[0];
    for (int j = 0; j < n; j++)
        s->order[j] = j;
    sort_set = s;
    qsort(s->order, (size_t)n, sizeof(int), cmp_x_plain);
    for (int p = 0; p < n; p++)
        s->pos[s->order[p]] = p;
    for (int j = 0; j < n; j++)
        make_list(s, j);
    if (lmax >= 3) {
        force_member(s, g, g + 1);
        force_member(s, g + 1, g);
        force_member(s, g + 2, 0);
        force_member(s, 0, g + 2);
    }
}

static void jset_free(jset *s)
{
    free(s->m);
    free(s->x0);
    free(s->v0);
    free(s->t0);
    free(s->fh);
    free(s->fd);
    free(s->xp);
    free(s->vp);
    free(s->len);
    free(s->mem);
    free(s->stamp);
    free(s->order);
    free(s->pos);
}

static int is_special(const jset *s, int j) { return j == 0 || (j >= s->ghost0 && j <= s->ghost0 + 2); }

static int set_record(gpunb *nb, const jset *s, int j)
{
    return gpunb_set_jparticle(nb, j, s->x0[j], s->v0[j], s->fh[j], s->fd[j], s->m[j], s->t0[j]);
}

/* The documented prediction, in the same Horner form and without
 * contraction, as gpunb_predict states it. */
static void predict_all(jset *s, double t)
{
    for (int j = 0; j < s->n; j++)
        tl_predict(s->x0[j], s->v0[j], s->fh[j], s->fd[j], t - s->t0[j], s->xp[j], s->vp[j]);
}

/* Correct a record as NBODY6 does after a step: new epoch tc, x0/v0 the
 * prediction there, new force derivatives. */
static void correct(jset *s, int j, double tc)
{
    tl_predict(s->x0[j], s->v0[j], s->fh[j], s->fd[j], tc - s->t0[j], s->x0[j], s->v0[j]);
    for (int k = 0; k < 3; k++) {
        s->fh[j][k] = 0.5 * tl_normal();
        s->fd[j][k] = tl_normal() / 6.0;
    }
    s->t0[j] = tc;
}

/* Reference of particle i over its list, with the sizes of the terms (for
 * the floor of the relative error). */
NO_CONTRACT static void reference(const jset *s, int i, double acc[3], double jrk[3], double *sa, double *sj)
{
    const int *mm = slots(s, i);
    acc[0] = acc[1] = acc[2] = jrk[0] = jrk[1] = jrk[2] = *sa = *sj = 0.0;
    for (int e = 0; e < s->len[i]; e++) {
        int k = mm[e];
        double dx[3], dv[3], r2 = 0, rv = 0, v2 = 0;
        for (int d = 0; d < 3; d++) {
            dx[d] = s->xp[k][d] - s->xp[i][d];
            dv[d] = s->vp[k][d] - s->vp[i][d];
            r2 += dx[d] * dx[d];
            rv += dx[d] * dv[d];
            v2 += dv[d] * dv[d];
        }
        if (r2 == 0.0)
            continue;
        double r = sqrt(r2), mr3 = s->m[k] / (r2 * r);
        for (int d = 0; d < 3; d++) {
            acc[d] += mr3 * dx[d];
            jrk[d] += mr3 * (dv[d] - 3.0 * rv / r2 * dx[d]);
        }
        *sa += mr3 * r;
        *sj += 4.0 * mr3 * sqrt(v2);
    }
}

/* ni distinct random particles, the ones in `first` (if any) in front. */
static void pick(const jset *s, int *idx, int ni, const int *first, int nfirst)
{
    int *perm = malloc(sizeof(int) * (size_t)s->n);
    for (int j = 0; j < s->n; j++)
        perm[j] = j;
    for (int q = 0; q < nfirst && q < ni; q++) {
        int p = q;
        while (perm[p] != first[q])
            p++;
        perm[p] = perm[q];
        perm[q] = first[q];
    }
    for (int a = nfirst < ni ? nfirst : ni; a < ni; a++) {
        int b = tl_int(a, s->n - 1), t = perm[a];
        perm[a] = perm[b];
        perm[b] = t;
    }
    memcpy(idx, perm, sizeof(int) * (size_t)ni);
    free(perm);
}

/* Compare rows of acc/jrk for idx[0..ni-1] with the reference at the time
 * the test last predicted to. */
static void compare(const jset *s, int ni, const int *idx, double (*acc)[3], double (*jrk)[3], const char *label)
{
    double wa = 0.0, wj = 0.0;
    int bad = 0;
    for (int q = 0; q < ni; q++) {
        int i = idx[q];
        double ra[3], rj[3], sa, sj;
        reference(s, i, ra, rj, &sa, &sj);
        if (s->len[i] == 0) {
            n_empty++;
            int zero = acc[q][0] == 0.0 && acc[q][1] == 0.0 && acc[q][2] == 0.0 && jrk[q][0] == 0.0 &&
                       jrk[q][1] == 0.0 && jrk[q][2] == 0.0;
            if (!zero && bad++ < 5)
                printf("    %s: row %d (j %d) has an empty list but acc (%g %g %g) jrk (%g %g %g)\n", label, q,
                       i, acc[q][0], acc[q][1], acc[q][2], jrk[q][0], jrk[q][1], jrk[q][2]);
            continue;
        }
        double ea = tl_relerr3(acc[q], ra, FLOOR_FRAC * sa), ej = tl_relerr3(jrk[q], rj, FLOOR_FRAC * sj);
        if (!(ea <= TOL_ACC && ej <= TOL_JRK) && bad++ < 5)
            printf("    %s: row %d (j %d, %d members): relative errors acc %.2e jrk %.2e (acc.x %.17g, "
                   "reference %.17g)\n",
                   label, q, i, s->len[i], ea, ej, acc[q][0], ra[0]);
        wa = fmax(wa, ea);
        wj = fmax(wj, ej);
        n_checked++;
    }
    TL_CHECK(bad == 0, "%s: %d of %d rows wrong", label, bad, ni);
    worst_acc = fmax(worst_acc, wa);
    worst_jrk = fmax(worst_jrk, wj);
    printf("    %-36s ni %6d: worst relative error acc %.2e jrk %.2e\n", label, ni, wa, wj);
}

/* gpunb_firr_done answers 0 or 1 without waiting, and 1 within a few seconds
 * of a start; at once where the host computes the force (not the GPU). */
static void poll_until_done(gpunb *nb, const char *label, int ni)
{
    const int host_path = strcmp(gpunb_backend_name(nb), "cuda") != 0;
    const double give_up = now() + 20.0;
    long polls = 0;
    int done = -1;
    for (;;) {
        done = -1;
        if (!TL_CHECK(gpunb_firr_done(nb, &done) == GPUNB_OK, "%s: firr_done(ni %d): %s", label, ni,
                      gpunb_last_error()))
            return;
        polls++;
        if (!TL_CHECK(done == 0 || done == 1, "%s: firr_done(ni %d) set done = %d", label, ni, done))
            return;
        if (done || now() > give_up)
            break;
    }
    TL_CHECK(done == 1, "%s: firr_done(ni %d) still 0 after 20 s (%ld polls)", label, ni, polls);
    if (host_path)
        TL_CHECK(polls == 1, "%s: firr_done(ni %d) on the host path answered 0 first", label, ni);
}

/* One irregular force: start, (poll,) finish, compare. */
static void firr(gpunb *nb, jset *s, expect_stats *ex, int ni, const int *first, int nfirst, double t,
                 const char *label)
{
    int *idx = malloc(sizeof(int) * (size_t)ni);
    double(*acc)[3] = malloc(sizeof(double[3]) * (size_t)ni), (*jrk)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    pick(s, idx, ni, first, nfirst);
    for (int q = 0; q < ni; q++)
        acc[q][0] = acc[q][1] = acc[q][2] = jrk[q][0] = jrk[q][1] = jrk[q][2] = NAN;
    double t1 = now();
    int st = gpunb_firr_start(nb, ni, idx, t);
    double t2 = now();
    if (TL_CHECK(st == GPUNB_OK, "%s: firr_start(ni %d): %s", label, ni, gpunb_last_error())) {
        poll_until_done(nb, label, ni);
        st = gpunb_firr_finish(nb, acc, jrk);
        double t3 = now();
        if (TL_CHECK(st == GPUNB_OK, "%s: firr_finish(ni %d): %s", label, ni, gpunb_last_error())) {
            ex->calls++;
            for (int q = 0; q < ni; q++)
                ex->pairs += s->len[idx[q]];
            predict_all(s, t);
            compare(s, ni, idx, acc, jrk, label);
            printf("    %-36s ni %6d: start %8.1f us, finish %8.1f us\n", "", ni, 1e6 * (t2 - t1),
                   1e6 * (t3 - t2));
        }
    }
    free(idx);
    free(acc);
    free(jrk);
}

static int set_list(gpunb *nb, const jset *s, int j) { return gpunb_set_list(nb, j, s->len[j], slots(s, j)); }

/* A particle 1..hi-1, not special, not among got[0..ngot-1]. */
static int pick_new(const jset *s, const int *got, int ngot, int hi)
{
    for (;;) {
        int j = tl_int(1, hi - 1), fresh = !is_special(s, j);
        for (int q = 0; q < ngot && fresh; q++)
            fresh = got[q] != j;
        if (fresh)
            return j;
    }
}

/* predict + regf_start + firr_start + firr_finish + regf_finish, then the
 * same regular force alone: equal; and the irregular force right. */
static void interleaved(gpunb *nb, gpunb *leg, jset *s, expect_stats *ex, double t, const char *label)
{
    enum { NR = 8, LM = 300 };
    int jr[NR], list1[NR * LM], list2[NR * LM], ni = s->n < 1000 ? s->n : 1000;
    double h2[NR], dtr[NR], a1[NR][3], j1[NR][3], p1[NR], a2[NR][3], j2[NR][3], p2[NR], mean = 0.0;
    int *idx = malloc(sizeof(int) * (size_t)ni);
    double(*acc)[3] = malloc(sizeof(double[3]) * (size_t)ni), (*jrk)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    for (int j = 0; j < s->ghost0; j++)
        mean += s->m[j];
    mean /= s->ghost0;
    for (int q = 0; q < NR; q++) /* massive i only: the regular force of ghosts is not what this tests */
        jr[q] = pick_new(s, jr, q, s->ghost0);
    for (int q = 0; q < NR; q++) {
        h2[q] = 0.02 * 0.02 / mean;
        dtr[q] = 0.001 * q;
    }
    pick(s, idx, ni, jr, NR); /* the regular force's i among the irregular ones */
    int ok = TL_CHECK(gpunb_predict(nb, s->n, t) == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error()) &&
             TL_CHECK(gpunb_regf_start(nb, NR, jr, h2, dtr, LM, LM - 1) == GPUNB_OK, "%s: regf_start: %s", label,
                      gpunb_last_error());
    if (ok && TL_CHECK(gpunb_firr_start(nb, ni, idx, t) == GPUNB_OK, "%s: firr_start with a regular force in "
                                                                      "flight: %s",
                       label, gpunb_last_error())) {
        if (TL_CHECK(gpunb_firr_finish(nb, acc, jrk) == GPUNB_OK, "%s: firr_finish: %s", label,
                     gpunb_last_error())) {
            ex->calls++;
            for (int q = 0; q < ni; q++)
                ex->pairs += s->len[idx[q]];
            predict_all(s, t);
            compare(s, ni, idx, acc, jrk, label);
        }
    }
    if (ok && TL_CHECK(gpunb_regf_finish(nb, a1, j1, p1, list1) == GPUNB_OK, "%s: regf_finish: %s", label,
                       gpunb_last_error()) &&
        TL_CHECK(gpunb_regf_start(nb, NR, jr, h2, dtr, LM, LM - 1) == GPUNB_OK &&
                     gpunb_regf_finish(nb, a2, j2, p2, list2) == GPUNB_OK,
                 "%s: regular force alone: %s", label, gpunb_last_error())) {
        double w = 0.0;
        int same_lists = 1;
        for (int q = 0; q < NR; q++) {
            w = fmax(w, tl_relerr3(a1[q], a2[q], 0.0));
            w = fmax(w, tl_relerr3(j1[q], j2[q], 0.0));
            w = fmax(w, p1[q] == p2[q] ? 0.0 : fabs(p1[q] - p2[q]) / fabs(p2[q]));
            const int *c1 = list1 + q * LM, *c2 = list2 + q * LM;
            same_lists &= c1[0] == c2[0];
            for (int e = 1; same_lists && e <= c1[0] && e < LM; e++)
                same_lists &= c1[e] == c2[e];
        }
        TL_CHECK(w <= 1e-12 && same_lists,
                 "%s: the regular force with an irregular one in flight differs from the one alone: %.2e, "
                 "lists %s",
                 label, w, same_lists ? "equal" : "differ");
        printf("    %-36s regular force with firr in flight vs alone: %.2e, lists %s\n", label, w,
               same_lists ? "equal" : "differ");
        /* And both from the records as they are now: the firr calls before
         * took the changed records to the device; gpunb_predict must still
         * have seen them.  Legacy path on the test's own prediction. */
        double xi[NR][3], vi[NR][3];
        int differ = 0;
        predict_all(s, t);
        for (int q = 0; q < NR; q++) {
            memcpy(xi[q], s->xp[jr[q]], sizeof xi[q]);
            memcpy(vi[q], s->vp[jr[q]], sizeof vi[q]);
        }
        if (TL_CHECK(gpunb_send(leg, s->n, s->m, (const double(*)[3])s->xp, (const double(*)[3])s->vp) ==
                             GPUNB_OK &&
                         gpunb_regf(leg, NR, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, a2, j2, p2,
                                    LM, LM - 1, list2) == GPUNB_OK,
                     "%s: legacy regf: %s", label, gpunb_last_error())) {
            w = 0.0;
            for (int q = 0; q < NR; q++) {
                const int *c1 = list1 + q * LM, *c2 = list2 + q * LM;
                int same = c1[0] == c2[0];
                for (int e = 1; same && e <= c1[0] && e < LM; e++)
                    same = c1[e] == c2[e];
                if (!same) {
                    differ++;
                    continue;
                }
                w = fmax(w, tl_relerr3(a1[q], a2[q], 0.0));
                w = fmax(w, tl_relerr3(j1[q], j2[q], 0.0));
            }
            /* as test_resident: float pair arithmetic, same j-set up to rounding */
            TL_CHECK(differ <= 1 && w < 1e-6,
                     "%s: regular force after changed records vs the legacy path: %d of %d lists differ, forces "
                     "%.2e (did gpunb_predict miss records that gpunb_firr_start had uploaded?)",
                     label, differ, NR, w);
            printf("    %-36s regular force vs legacy path on the new records: %d lists differ, %.2e\n", label,
                   differ, w);
        }
    }
    free(idx);
    free(acc);
    free(jrk);
}

/* A whole set on one handle: first blocks, changes without a prediction,
 * the interleaved forces, statistics. */
/* The GPUs a CUDA handle uses, from its description ("CUDA, 2 GPUs: ..."); 0 otherwise. */
static int gpus_of(const gpunb *nb)
{
    const char *d = strstr(gpunb_backend_description(nb), "CUDA, ");
    int n = 0;
    return d && sscanf(d + 6, "%d GPU", &n) == 1 ? n : 0;
}

static void run_set(enum gpunb_backend_kind kind, const char *label, int n, int lmax, const char *gpu_list)
{
    jset s;
    gpunb *nb = NULL, *leg = NULL;
    expect_stats ex = {0, 0.0};
    char lab[96];
    const int g = n - (n / 100 + 4);

    if (gpu_list)
        setenv("GPU_LIST", gpu_list, 1);
    jset_make(&s, n, lmax);
    if (!TL_CHECK(gpunb_open(&nb, n + 100, kind) == GPUNB_OK && gpunb_open(&leg, n + 100, kind) == GPUNB_OK,
                  "%s: open: %s", label, gpunb_last_error()))
        goto done;
    printf("  %s, N %d, lmax %d%s%s: %s\n", label, n, lmax, gpu_list ? ", GPU_LIST=" : "", gpu_list ? gpu_list : "",
           gpunb_backend_description(nb));
    int fails = 0;
    for (int j = 0; j < n; j++)
        fails += set_record(nb, &s, j) != GPUNB_OK;
    fails += gpunb_irr_open(nb, lmax) != GPUNB_OK;
    int ondev = -1;
    fails += gpunb_irr_on_device(nb, &ondev) != GPUNB_OK;
    /* with GPU_LIST naming a GPU twice, the j-set is split: the host computes */
    TL_CHECK(ondev == (kind == GPUNB_BACKEND_CUDA && gpus_of(nb) == 1),
             "%s%s%s: irr_on_device says %d", label, gpu_list ? ", GPU_LIST=" : "", gpu_list ? gpu_list : "", ondev);
    /* 1% of the lists are never set: the particle has none. */
    for (int j = 0; j < n; j++) {
        if (!is_special(&s, j) && tl_uniform() < 0.01)
            s.len[j] = 0;
        else
            fails += set_list(nb, &s, j) != GPUNB_OK;
    }
    if (!TL_CHECK(fails == 0, "%s: %d of the set_jparticle/irr_open/set_list calls failed: %s", label, fails,
                  gpunb_last_error()))
        goto done;
    /* Predicted at 0, forced at 0.003: firr must predict for itself. */
    if (!TL_CHECK(gpunb_predict(nb, n, 0.0) == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error()))
        goto done;

    /* The special particles (r = 0 pairs, ghosts) and an empty list up front. */
    int empty = -1;
    for (int j = 1; j < g && empty < 0; j++)
        if (s.len[j] == 0)
            empty = j;
    int first[5] = {0, g, g + 1, g + 2, empty < 0 ? 1 : empty};
    const int nis[] = {1, 31, 64, 1000, n};
    for (int k = 0; k < 5; k++) {
        int ni = nis[k] < n ? nis[k] : n;
        snprintf(lab, sizeof lab, "%s N %d t 0.003", label, n);
        firr(nb, &s, &ex, ni, first, ni >= 31 ? 5 : 0, 0.003, lab);
    }

    /* A large block's pattern: after the call of all n above, lists
     * changed and a small call at the same time (the GPU may read the
     * prediction of that call again, with the new lists); then records
     * changed at the same time, the epoch moved so that their prediction
     * moves: the next call must not read the old one. */
    int renewed[20];
    for (int q = 0; q < 20; q++) {
        renewed[q] = pick_new(&s, renewed, q, g);
        make_list(&s, renewed[q]);
        fails += set_list(nb, &s, renewed[q]) != GPUNB_OK;
    }
    snprintf(lab, sizeof lab, "%s N %d t 0.003 (20 new lists)", label, n);
    firr(nb, &s, &ex, n < 64 ? n : 64, renewed, 20, 0.003, lab);
    for (int q = 0; q < 20; q++) {
        new_record(&s, renewed[q]);
        fails += set_record(nb, &s, renewed[q]) != GPUNB_OK;
    }
    /* each also in the next one's list: the new records are read as members, not only as i */
    for (int q = 0; q < 20; q++)
        force_member(&s, renewed[(q + 1) % 20], renewed[q]);
    for (int q = 0; q < 20; q++)
        fails += set_list(nb, &s, renewed[q]) != GPUNB_OK;
    TL_CHECK(fails == 0, "%s: set_jparticle/set_list at the time of the last force failed: %s", label,
             gpunb_last_error());
    snprintf(lab, sizeof lab, "%s N %d t 0.003 (20 new records)", label, n);
    firr(nb, &s, &ex, n < 64 ? n : 64, renewed, 20, 0.003, lab);
    /* The same once more, the records copied to the GPU by gpunb_push
     * before the call. */
    for (int q = 0; q < 20; q++) {
        new_record(&s, renewed[q]);
        fails += set_record(nb, &s, renewed[q]) != GPUNB_OK;
    }
    TL_CHECK(fails == 0 && gpunb_push(nb) == GPUNB_OK, "%s: set_jparticle/push at the time of the last force: %s",
             label, gpunb_last_error());
    snprintf(lab, sizeof lab, "%s N %d t 0.003 (20 new records, pushed)", label, n);
    firr(nb, &s, &ex, n < 64 ? n : 64, renewed, 20, 0.003, lab);

    /* A few records and lists changed, no gpunb_predict: the next force must
     * use the new ones.  The changed particles lead the block, and every
     * particle is forced once. */
    int changed[40];
    for (int q = 0; q < 20; q++) {
        int j = pick_new(&s, changed, q, g);
        changed[q] = j;
        correct(&s, j, 0.003);
        fails += set_record(nb, &s, j) != GPUNB_OK;
    }
    for (int q = 20; q < 40; q++) {
        int j = pick_new(&s, changed, q, n);
        changed[q] = j;
        make_list(&s, j);
        fails += set_list(nb, &s, j) != GPUNB_OK;
    }
    TL_CHECK(fails == 0, "%s: set_jparticle/set_list after a force failed: %s", label, gpunb_last_error());
    snprintf(lab, sizeof lab, "%s N %d t 0.004 (40 changed)", label, n);
    firr(nb, &s, &ex, n < 64 ? n : 64, changed, 40, 0.004, lab);
    firr(nb, &s, &ex, n, changed, 40, 0.0041, lab);

    /* Half the records and half the lists changed. */
    for (int j = 1; j < g; j++)
        if (!is_special(&s, j) && tl_uniform() < 0.5) {
            correct(&s, j, 0.004);
            fails += set_record(nb, &s, j) != GPUNB_OK;
        }
    for (int j = 1; j < n; j++)
        if (!is_special(&s, j) && tl_uniform() < 0.5) {
            make_list(&s, j);
            fails += set_list(nb, &s, j) != GPUNB_OK;
        }
    TL_CHECK(fails == 0, "%s: set_jparticle/set_list of half failed: %s", label, gpunb_last_error());
    /* Pushed, and the force at once: it must wait for the push's copies. */
    TL_CHECK(gpunb_push(nb) == GPUNB_OK, "%s: push of half: %s", label, gpunb_last_error());
    snprintf(lab, sizeof lab, "%s N %d t 0.005 (half changed, pushed)", label, n);
    firr(nb, &s, &ex, n, NULL, 0, 0.005, lab);

    /* Records and lists changed, pushed, and some changed again while the
     * push may still copy them; then a prediction, a regular and an
     * irregular force: all must see the last versions. */
    for (int q = 0; q < 30; q++) {
        changed[q] = pick_new(&s, changed, q, g);
        correct(&s, changed[q], 0.0055);
        fails += set_record(nb, &s, changed[q]) != GPUNB_OK;
        make_list(&s, changed[q]);
        fails += set_list(nb, &s, changed[q]) != GPUNB_OK;
    }
    TL_CHECK(gpunb_push(nb) == GPUNB_OK, "%s: push of 30: %s", label, gpunb_last_error());
    for (int q = 0; q < 10; q++) {
        correct(&s, changed[q], 0.0056);
        fails += set_record(nb, &s, changed[q]) != GPUNB_OK;
        make_list(&s, changed[q + 10]);
        fails += set_list(nb, &s, changed[q + 10]) != GPUNB_OK;
    }
    TL_CHECK(fails == 0, "%s: set_jparticle/set_list around a push failed: %s", label, gpunb_last_error());
    snprintf(lab, sizeof lab, "%s N %d t 0.006 (with regf)", label, n);
    interleaved(nb, leg, &s, &ex, 0.006, lab);

    /* Records changed, then gpunb_predict (which takes them, a list of 20 or
     * a copy of half), then the irregular force: it must see them too.  The
     * third round changes 15 % (a list, with most groups of eight flags
     * holding some) and pushes them before the prediction. */
    static const double share[3] = {0.0, 0.5, 0.15};
    static const char *const what[3] = {"20 changed", "half changed", "15% changed, pushed"};
    for (int round = 0; round < 3; round++) {
        double tc = 0.006 + 0.001 * round;
        int nchg = 0;
        for (int q = 0; q < 20; q++) {
            changed[q] = pick_new(&s, changed, q, g);
            correct(&s, changed[q], tc);
            fails += set_record(nb, &s, changed[q]) != GPUNB_OK;
            nchg++;
        }
        for (int j = 1; round > 0 && j < g; j++)
            if (!is_special(&s, j) && tl_uniform() < share[round]) {
                correct(&s, j, tc);
                fails += set_record(nb, &s, j) != GPUNB_OK;
            }
        if (round == 2)
            TL_CHECK(gpunb_push(nb) == GPUNB_OK, "%s: push of 15%%: %s", label, gpunb_last_error());
        TL_CHECK(fails == 0 && gpunb_predict(nb, n, tc + 0.0005) == GPUNB_OK, "%s: set/predict: %s", label,
                 gpunb_last_error());
        snprintf(lab, sizeof lab, "%s N %d t %.4f (%s, predict)", label, n, tc + 0.0005, what[round]);
        firr(nb, &s, &ex, round ? n : (n < 64 ? n : 64), changed, nchg, tc + 0.0005, lab);
    }

    gpunb_stats st;
    gpunb_get_stats(nb, &st);
    TL_CHECK(st.firr_calls == ex.calls && st.irr_pairs == ex.pairs,
             "%s: stats say %lld irregular forces, %.0f pairs; expected %lld, %.0f", label, st.firr_calls,
             st.irr_pairs, ex.calls, ex.pairs);
    TL_CHECK(st.time_irregular >= 0.0, "%s: time_irregular = %g", label, st.time_irregular);
#ifdef TEST_IRREGULAR_CUDA
    /* (not GPU_LIST alone: without it a machine with two GPUs uses both) */
    if (gpus_of(nb) != 1)
        TL_CHECK(st.firr_on_device == 0, "%s GPU_LIST=\"%s\": %lld of %lld irregular forces on the device, "
                 "expected none (several GPUs compute on the host)",
                 label, gpu_list ? gpu_list : "(all)", st.firr_on_device, st.firr_calls);
    else
        TL_CHECK(st.firr_on_device > 0 && st.firr_on_device <= st.firr_calls,
                 "%s: %lld of %lld irregular forces on the device with one GPU", label, st.firr_on_device,
                 st.firr_calls);
#else
    TL_CHECK(st.firr_on_device == 0, "%s: %lld irregular forces on a device", label, st.firr_on_device);
#endif
    printf("    stats: %lld irregular forces (%lld on the device), %.0f pairs, %.3f s\n", st.firr_calls,
           st.firr_on_device, st.irr_pairs, st.time_irregular);
done:
    gpunb_close(nb);
    gpunb_close(leg);
    jset_free(&s);
    if (gpu_list)
        unsetenv("GPU_LIST");
}

/* ---- call order and arguments ------------------------------------------- */

/* A usage error whose message holds both needles (argument, value). */
static void expect(int st, const char *needle1, const char *needle2, const char *what)
{
    const char *msg = gpunb_last_error();
    if (TL_CHECK(st == GPUNB_EUSAGE, "%s: status %d, expected a usage error (%s)", what, st, msg)) {
        TL_CHECK(strstr(msg, needle1) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, needle1);
        if (needle2)
            TL_CHECK(strstr(msg, needle2) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, needle2);
    }
}

static void rules(enum gpunb_backend_kind kind, const char *label)
{
    enum { CAP = 500, NSET = 400, LMAX = 8, HOLE = 123 };
    jset s;
    gpunb *nb = NULL, *nb2 = NULL;
    double acc[4][3], jrk[4][3];
    int mem[LMAX], idx[4] = {5, 6, 7, 8};

    jset_make(&s, NSET, LMAX);
    if (!TL_CHECK(gpunb_open(&nb, CAP, kind) == GPUNB_OK && gpunb_open(&nb2, CAP, kind) == GPUNB_OK,
                  "%s: open: %s", label, gpunb_last_error()))
        goto done;
    for (int j = 0; j < NSET; j++)
        if (j != HOLE)
            set_record(nb, &s, j);
    mem[0] = 1;
    mem[1] = 2;
    expect(gpunb_set_list(nb, 5, 2, mem), "gpunb_irr_open", NULL, "set_list before irr_open");
    expect(gpunb_firr_start(nb, 1, idx, 0.0), "gpunb_irr_open", NULL, "firr_start before irr_open");
    TL_CHECK(gpunb_push(nb) == GPUNB_OK, "%s: push before irr_open (nothing to do) refused: %s", label,
             gpunb_last_error());
    int ondev = 7;
    expect(gpunb_irr_on_device(nb, &ondev), "gpunb_irr_open", NULL, "irr_on_device before irr_open");
    TL_CHECK(ondev == 7, "%s: a refused irr_on_device wrote %d", label, ondev);
    expect(gpunb_irr_open(nb, 0), "lmax = 0", NULL, "irr_open lmax 0");
    expect(gpunb_irr_open(nb, -3), "lmax = -3", NULL, "irr_open lmax -3");
    TL_CHECK(gpunb_irr_open(nb, LMAX) == GPUNB_OK, "%s: irr_open: %s", label, gpunb_last_error());
    expect(gpunb_irr_open(nb, LMAX), "gpunb_irr_open", NULL, "irr_open twice");
    expect(gpunb_irr_on_device(nb, NULL), "on_device", "NULL", "irr_on_device NULL on_device");
    /* On the GPU exactly with the CUDA back-end and one GPU. */
    if (TL_CHECK(gpunb_irr_on_device(nb, &ondev) == GPUNB_OK, "%s: irr_on_device: %s", label, gpunb_last_error()))
        TL_CHECK(ondev == (kind == GPUNB_BACKEND_CUDA && gpus_of(nb) == 1), "%s: irr_on_device says %d", label, ondev);

    expect(gpunb_set_list(nb, CAP, 2, mem), "j = 500", NULL, "set_list j = capacity");
    expect(gpunb_set_list(nb, -1, 2, mem), "j = -1", NULL, "set_list j = -1");
    expect(gpunb_set_list(nb, 5, -1, mem), "n = -1", NULL, "set_list n = -1");
    for (int e = 0; e < LMAX; e++)
        mem[e] = 10 + e;
    expect(gpunb_set_list(nb, 5, LMAX, mem), "n = 8", NULL, "set_list n = lmax");
    mem[1] = 5;
    expect(gpunb_set_list(nb, 5, 3, mem), "members[1]", "5", "set_list member == j");
    mem[1] = -1;
    expect(gpunb_set_list(nb, 5, 3, mem), "members[1]", "-1", "set_list member -1");
    mem[1] = CAP;
    expect(gpunb_set_list(nb, 5, 3, mem), "members[1]", "500", "set_list member = capacity");
    mem[1] = HOLE;
    expect(gpunb_set_list(nb, 5, 3, mem), "members[1]", "123", "set_list member never set");
    mem[1] = 11;
    expect(gpunb_set_list(nb, 5, 3, NULL), "gpunb_set_list", "NULL", "set_list NULL members");
    TL_CHECK(gpunb_set_list(nb, 5, LMAX - 1, mem) == GPUNB_OK, "%s: set_list of lmax - 1: %s", label,
             gpunb_last_error());
    TL_CHECK(gpunb_set_list(nb, 6, 0, mem) == GPUNB_OK, "%s: empty set_list: %s", label, gpunb_last_error());
    s.len[5] = LMAX - 1;
    memcpy(slots(&s, 5), mem, sizeof(int) * (LMAX - 1));
    s.len[6] = 0;
    s.len[7] = s.len[8] = 0; /* never set */

    expect(gpunb_firr_start(nb, 2, idx, 0.001), "gpunb_predict", NULL, "firr_start before predict");
    expect(gpunb_firr_finish(nb, acc, jrk), "gpunb_firr_start", NULL, "firr_finish with nothing started");
    int done = 7;
    expect(gpunb_firr_done(nb, &done), "gpunb_firr_start", NULL, "firr_done with nothing started");
    TL_CHECK(done == 7, "%s: a refused firr_done wrote done = %d", label, done);
    expect(gpunb_predict(nb, NSET, 0.0), "123", NULL, "predict with a hole");
    set_record(nb, &s, HOLE);
    TL_CHECK(gpunb_predict(nb, NSET, 0.0) == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error());
    expect(gpunb_firr_start(nb, -1, idx, 0.001), "ni = -1", NULL, "firr_start ni -1");
    idx[1] = CAP;
    expect(gpunb_firr_start(nb, 2, idx, 0.001), "j_index[1]", "500", "firr_start index = capacity");
    idx[1] = -1;
    expect(gpunb_firr_start(nb, 2, idx, 0.001), "j_index[1]", "-1", "firr_start index -1");
    idx[1] = 6;
    expect(gpunb_firr_start(nb, 2, idx, NAN), "gpunb_firr_start", "nan", "firr_start t NaN");
    expect(gpunb_firr_start(nb, 2, NULL, 0.001), "gpunb_firr_start", "NULL", "firr_start NULL j_index");

    if (TL_CHECK(gpunb_firr_start(nb, 4, idx, 0.001) == GPUNB_OK, "%s: firr_start: %s", label,
                 gpunb_last_error())) {
        expect(gpunb_firr_start(nb, 4, idx, 0.001), "in flight", NULL, "firr_start twice");
        expect(gpunb_predict(nb, NSET, 0.001), "in flight", NULL, "predict while firr in flight");
        expect(gpunb_firr_done(nb, NULL), "gpunb_firr_done", "NULL", "firr_done NULL done");
        expect(gpunb_push(nb), "in flight", NULL, "push while firr in flight");
        expect(gpunb_firr_finish(nb, NULL, jrk), "gpunb_firr_finish", "NULL", "firr_finish NULL acc");
        expect(gpunb_firr_finish(nb, acc, NULL), "gpunb_firr_finish", "NULL", "firr_finish NULL jrk");
        if (TL_CHECK(gpunb_firr_finish(nb, acc, jrk) == GPUNB_OK,
                     "%s: firr_finish after refused calls: %s", label, gpunb_last_error())) {
            predict_all(&s, 0.001);
            compare(&s, 4, idx, acc, jrk, "rules: lmax - 1, empty, never set");
        }
        expect(gpunb_firr_finish(nb, acc, jrk), "gpunb_firr_start", NULL, "firr_finish twice");
        expect(gpunb_firr_done(nb, &done), "gpunb_firr_start", NULL, "firr_done after finish");
    }
    gpunb_stats st;
    gpunb_get_stats(nb, &st);
    TL_CHECK(st.firr_calls == 1 && st.irr_pairs == LMAX - 1,
             "%s: after one force and refused calls the stats say %lld forces, %.0f pairs (expected 1, %d)",
             label, st.firr_calls, st.irr_pairs, LMAX - 1);

    /* "At least one gpunb_predict since gpunb_irr_open": one before is not
     * enough. */
    for (int j = 0; j < NSET; j++)
        set_record(nb2, &s, j);
    TL_CHECK(gpunb_predict(nb2, NSET, 0.0) == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error());
    TL_CHECK(gpunb_irr_open(nb2, LMAX) == GPUNB_OK, "%s: irr_open: %s", label, gpunb_last_error());
    int st2 = gpunb_firr_start(nb2, 2, idx, 0.001);
    expect(st2, "gpunb_predict", NULL, "firr_start with a predict before gpunb_irr_open only");
    if (st2 == GPUNB_OK) /* accepted after all: take it back */
        gpunb_firr_finish(nb2, acc, jrk);
    TL_CHECK(gpunb_predict(nb2, NSET, 0.0) == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error());
    if (TL_CHECK(gpunb_firr_start(nb2, 2, idx, 0.001) == GPUNB_OK, "%s: firr_start: %s", label,
                 gpunb_last_error()))
        TL_CHECK(gpunb_firr_finish(nb2, acc, jrk) == GPUNB_OK, "%s: firr_finish: %s", label, gpunb_last_error());

    expect(gpunb_irr_open(NULL, LMAX), "NULL", NULL, "irr_open NULL handle");
    expect(gpunb_set_list(NULL, 5, 2, mem), "NULL", NULL, "set_list NULL handle");
    expect(gpunb_firr_start(NULL, 2, idx, 0.0), "NULL", NULL, "firr_start NULL handle");
    expect(gpunb_firr_finish(NULL, acc, jrk), "NULL", NULL, "firr_finish NULL handle");
    expect(gpunb_firr_done(NULL, &done), "NULL", NULL, "firr_done NULL handle");
    expect(gpunb_push(NULL), "NULL", NULL, "push NULL handle");
    expect(gpunb_irr_on_device(NULL, &ondev), "NULL", NULL, "irr_on_device NULL handle");
    printf("  %s: call-order and argument rules hold\n", label);
done:
    gpunb_close(nb);
    gpunb_close(nb2);
    jset_free(&s);
}

int main(int argc, char **argv)
{
    unsetenv("NB6ACCEL_GPUNB");
    unsetenv("GPU_LIST");
#ifdef TEST_IRREGULAR_CUDA
    /* quick: the smallest set in each mode, for compute-sanitizer (whose
     * tools run the kernels tens of times slower) */
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
#ifndef NB6ACCEL_HAVE_CUDA
    tl_skip("no usable CUDA device (this build has no CUDA back-end: configure found no nvcc or "
            "was run --without-cuda)");
#endif
    if (!gpunb_backend_usable(GPUNB_BACKEND_CUDA))
        tl_skip("no usable CUDA device (%s)", gpunb_last_error());
    tl_seed_from_env();
    rules(GPUNB_BACKEND_CUDA, "cuda");
    run_set(GPUNB_BACKEND_CUDA, "cuda", 3000, 200, NULL);
    if (!quick) {
        run_set(GPUNB_BACKEND_CUDA, "cuda", 40000, 200, NULL);
        run_set(GPUNB_BACKEND_CUDA, "cuda", 200000, 128, NULL);
    }
    run_set(GPUNB_BACKEND_CUDA, "cuda", quick ? 3000 : 40000, 200, "0 0");
    /* Both ways of predicting the members, at every block size of run_set
     * (auto picks by the block's size), and a value that is neither. */
    static const char *const modes[2] = {"always", "never"};
    for (int k = 0; k < 2; k++) {
        char lab[64];
        snprintf(lab, sizeof lab, "cuda, NB6ACCEL_CUDA_IRR_PREDICT=%s", modes[k]);
        setenv("NB6ACCEL_CUDA_IRR_PREDICT", modes[k], 1);
        run_set(GPUNB_BACKEND_CUDA, lab, 3000, 200, NULL);
    }
    {
        gpunb *bad = NULL;
        setenv("NB6ACCEL_CUDA_IRR_PREDICT", "sometimes", 1);
        TL_CHECK(gpunb_open(&bad, 100, GPUNB_BACKEND_CUDA) == GPUNB_EUSAGE &&
                     strstr(gpunb_last_error(), "NB6ACCEL_CUDA_IRR_PREDICT") != NULL,
                 "NB6ACCEL_CUDA_IRR_PREDICT=sometimes: open gave \"%s\"", bad ? "success" : gpunb_last_error());
        gpunb_close(bad);
        unsetenv("NB6ACCEL_CUDA_IRR_PREDICT");
    }
#else
    (void)argc;
    (void)argv;
    tl_seed_from_env();
    const struct {
        enum gpunb_backend_kind kind;
        const char *label;
    } kinds[] = {{GPUNB_BACKEND_CPU, "cpu"}, {GPUNB_BACKEND_REFERENCE, "reference"}};
    for (int k = 0; k < 2; k++) {
        rules(kinds[k].kind, kinds[k].label);
        run_set(kinds[k].kind, kinds[k].label, 3000, 200, NULL);
        run_set(kinds[k].kind, kinds[k].label, 40000, 200, NULL);
    }
#endif
    printf("worst relative errors over %ld checked rows (%ld empty lists, exactly 0): acc %.3e (tolerance %.0e), "
           "jrk %.3e (tolerance %.0e)\n",
           n_checked, n_empty, worst_acc, TOL_ACC, worst_jrk, TOL_JRK);
    return tl_finish(TEST_NAME);
}
