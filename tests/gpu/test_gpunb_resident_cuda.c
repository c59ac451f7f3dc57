/* test_gpunb_resident_cuda.c -- the CUDA back-end's native extended path
 * (records resident on the GPU, prediction on the GPU, i gathered on the GPU,
 * asynchronous regular force) on fresh random clusters: NJ 3000, 128k and 1M,
 * NI 1 .. 2048, a few records or half of them changed between predictions
 * (the back-end sends a list of records, or copies the whole set), records
 * changed right after a prediction (they must not reach the force it
 * starts), host work between gpunb_regf_start and gpunb_regf_finish.  Checked on a sample of each block
 * against a double-precision reference computed here from the test's own
 * prediction of the records (lists up to boundary-ambiguous members, whose
 * terms are moved before the forces are compared), and against the legacy
 * path on the same GPU (host prediction + gpunb_send + gpunb_regf: the same
 * lists and forces within 1e-6, since the GPU predicts bit-identically).
 * Also the several-GPU path (GPU_LIST="0 0 0": i predicted on the host), a
 * block larger than one launch, and blocks split in two halves that are in
 * flight together (the second started before the first is collected, as
 * the Plummer driver keeps a large block's chunks).  Without a usable GPU:
 * "SKIP: ...", exit 77. */
#include "config.h"
#include "gpunb.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOL_ACC 1e-5
#define TOL_JRK 1e-4
#define TOL_POT 1e-5
#define SAMPLE 48 /* i per block checked against the double reference */

typedef struct jset {
    int n;
    double *m, *t0, (*x0)[3], (*v0)[3], (*f_half)[3], (*fdot_sixth)[3];
    double (*xp)[3], (*vp)[3]; /* the test's own prediction */
} jset;

static double worst_acc, worst_jrk, worst_pot, worst_legacy;
/* Blocks as two halves in flight together (see run_block). */
static int two_in_flight;
static long n_checked, n_ambiguous, n_legacy_differ, n_legacy_cols;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void jset_make(jset *s, int n)
{
    tl_cluster c;
    tl_cluster_make(&c, n, n / 100 + 2, -3.0, 0.2);
    s->n = n;
    s->m = c.m;
    s->x0 = c.x;
    s->v0 = c.v;
    s->t0 = malloc(sizeof(double) * (size_t)n);
    s->f_half = malloc(sizeof(double[3]) * (size_t)n);
    s->fdot_sixth = malloc(sizeof(double[3]) * (size_t)n);
    s->xp = malloc(sizeof(double[3]) * (size_t)n);
    s->vp = malloc(sizeof(double[3]) * (size_t)n);
    for (int j = 0; j < n; j++) {
        const int ghost = s->m[j] == 0.0;
        for (int k = 0; k < 3; k++) {
            s->f_half[j][k] = ghost ? 0.0 : 0.5 * tl_normal();
            s->fdot_sixth[j][k] = ghost ? 0.0 : tl_normal() / 6.0;
            if (ghost)
                s->v0[j][k] = 0.0;
        }
        s->t0[j] = ghost ? 1.0e6 : -0.002 * tl_int(0, 4);
    }
}

static void jset_free(jset *s)
{
    free(s->m);
    free(s->x0);
    free(s->v0);
    free(s->t0);
    free(s->f_half);
    free(s->fdot_sixth);
    free(s->xp);
    free(s->vp);
}

static void predict_all(jset *s, double t)
{
    for (int j = 0; j < s->n; j++)
        tl_predict(s->x0[j], s->v0[j], s->f_half[j], s->fdot_sixth[j], t - s->t0[j], s->xp[j], s->vp[j]);
}

static void set_record(gpunb *nb, const jset *s, int j)
{
    gpunb_set_jparticle(nb, j, s->x0[j], s->v0[j], s->f_half[j], s->fdot_sixth[j], s->m[j], s->t0[j]);
}

/* Correct `count` random records as NBODY6 does after a step: new epoch t,
 * x0/v0 the prediction, new force derivatives; then hand them to the
 * library from an OpenMP team, as a corrector loop does (right after
 * gpunb_predict the whole team meets the copy that may still read them). */
static void correct_some(jset *s, gpunb *nb, int count, double t)
{
    int *js = malloc(sizeof(int) * (size_t)count), nj = 0;
    unsigned char *seen = calloc((size_t)s->n, 1);
    for (int q = 0; q < count; q++) {
        int j;
        do
            j = tl_int(0, s->n - 1);
        while (s->m[j] == 0.0);
        tl_predict(s->x0[j], s->v0[j], s->f_half[j], s->fdot_sixth[j], t - s->t0[j], s->x0[j], s->v0[j]);
        for (int k = 0; k < 3; k++) {
            s->f_half[j][k] = 0.5 * tl_normal();
            s->fdot_sixth[j][k] = tl_normal() / 6.0;
        }
        s->t0[j] = t;
        if (!seen[j]) { /* concurrent calls only for distinct j */
            seen[j] = 1;
            js[nj++] = j;
        }
    }
#pragma omp parallel for schedule(static, 1)
    for (int q = 0; q < nj; q++)
        set_record(nb, s, js[q]);
    free(seen);
    free(js);
}

typedef struct block {
    int ni, lmax, nbmax;
    int *ji, *list;
    double *h2, *dtr, (*acc)[3], (*jrk)[3], *pot;
} block;

static void block_make(block *b, const jset *s, int ni, double nb_target)
{
    double mt = 0, mean;
    int nm = 0;
    for (int j = 0; j < s->n; j++)
        if (s->m[j] > 0) {
            mt += s->m[j];
            nm++;
        }
    mean = mt / nm;
    b->ni = ni;
    b->lmax = 500;
    b->nbmax = 450;
    b->ji = malloc(sizeof(int) * (size_t)ni);
    b->list = malloc(sizeof(int) * (size_t)ni * (size_t)b->lmax);
    b->h2 = malloc(sizeof(double) * (size_t)ni);
    b->dtr = malloc(sizeof(double) * (size_t)ni);
    b->acc = malloc(sizeof(double[3]) * (size_t)ni);
    b->jrk = malloc(sizeof(double[3]) * (size_t)ni);
    b->pot = malloc(sizeof(double) * (size_t)ni);
    for (int i = 0; i < ni; i++) {
        int j;
        do
            j = tl_int(0, s->n - 1);
        while (s->m[j] == 0.0);
        b->ji[i] = j; /* NBODY6's blocks hold distinct particles */
        for (int q = 0; q < i; q++)
            if (b->ji[q] == j) {
                i--;
                break;
            }
    }
    for (int i = 0; i < ni; i++) {
        double rr2 = 0;
        for (int k = 0; k < 3; k++)
            rr2 += (s->x0[b->ji[i]][k] + 3.0) * (s->x0[b->ji[i]][k] + 3.0);
        double r = cbrt(nb_target / nm) * pow(1.0 + rr2, 5.0 / 6.0) * (0.5 + tl_uniform());
        b->h2[i] = r * r / mean;
        b->dtr[i] = 1e-3 * tl_int(0, 16);
    }
}

static void block_free(block *b)
{
    free(b->ji);
    free(b->list);
    free(b->h2);
    free(b->dtr);
    free(b->acc);
    free(b->jrk);
    free(b->pot);
}

/* Reference of sampled i in double, from the test's prediction xp/vp. */
typedef struct ref {
    double acc[SAMPLE][3], jrk[SAMPLE][3], pot[SAMPLE];
    int count[SAMPLE];
} ref;

static int is_member(const int *col, int j)
{
    int lo = 1, hi = col[0];
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (col[mid] == j)
            return 1;
        if (col[mid] < j)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return 0;
}

/* Term of j on i and whether j is a neighbour; *ambiguous when q is within
 * float rounding of the boundary. */
static int pair(const jset *s, int ii, double h2, double dtr, int j, double a[3], double jk[3], double *p,
                int *ambiguous)
{
    double dx[3], dv[3], r2 = 0, rp2 = 0, rv = 0;
    for (int k = 0; k < 3; k++) {
        dx[k] = s->xp[j][k] - s->xp[ii][k];
        dv[k] = s->vp[j][k] - s->vp[ii][k];
        double d = dx[k] + dtr * dv[k];
        r2 += dx[k] * dx[k];
        rp2 += d * d;
        rv += dx[k] * dv[k];
    }
    double lim = s->m[j] * h2, q = lim > 0 ? fmin(r2, rp2) / lim : INFINITY;
    *ambiguous = lim > 0 && fabs(q - 1.0) < 2e-5;
    a[0] = a[1] = a[2] = jk[0] = jk[1] = jk[2] = *p = 0.0;
    if (r2 > 0) {
        double r = sqrt(r2), mr3 = s->m[j] / (r2 * r);
        for (int k = 0; k < 3; k++) {
            a[k] = mr3 * dx[k];
            jk[k] = mr3 * (dv[k] - 3.0 * rv / r2 * dx[k]);
        }
        *p = s->m[j] / r;
    }
    return q < 1.0;
}

static int sample_of(const block *b, int q) { return (int)((long)q * b->ni / SAMPLE); }

static int nsamples(const block *b) { return b->ni < SAMPLE ? b->ni : SAMPLE; }

/* The "host work" between start and finish: the reference itself. */
static void reference(const jset *s, const block *b, ref *r)
{
    const int ns = nsamples(b);
#pragma omp parallel for schedule(dynamic)
    for (int q = 0; q < ns; q++) {
        int i = b->ni < SAMPLE ? q : sample_of(b, q), ii = b->ji[i], amb, count = 0;
        double a[3], jk[3], p, A[3] = {0, 0, 0}, J[3] = {0, 0, 0}, P = 0;
        for (int j = 0; j < s->n; j++) {
            if (pair(s, ii, b->h2[i], b->dtr[i], j, a, jk, &p, &amb)) {
                count++;
                continue;
            }
            for (int k = 0; k < 3; k++) {
                A[k] += a[k];
                J[k] += jk[k];
            }
            P += p;
        }
        memcpy(r->acc[q], A, sizeof A);
        memcpy(r->jrk[q], J, sizeof J);
        r->pot[q] = P;
        r->count[q] = count;
    }
}

static void compare_reference(const jset *s, const block *b, ref *r, const char *label)
{
    const int ns = nsamples(b);
    for (int q = 0; q < ns; q++) {
        int i = b->ni < SAMPLE ? q : sample_of(b, q), ii = b->ji[i], amb, ok = 1;
        const int *col = b->list + (size_t)i * b->lmax;
        if (col[0] < 0) /* overflow: the true count at least */
            continue;
        if (!TL_CHECK(col[0] >= 1 && is_member(col, ii), "%s: i %d (j %d) is not in its own list", label, i, ii))
            continue;
        for (int e = 2; e <= col[0]; e++)
            ok &= col[e] > col[e - 1];
        if (!TL_CHECK(ok, "%s: list of i %d not ascending", label, i))
            continue;
        /* members that differ must be ambiguous; move their terms */
        double a[3], jk[3], p;
        int gpu_only = 0, ref_only = 0;
        for (int e = 1; e <= col[0] && ok; e++) {
            int j = col[e];
            if (!pair(s, ii, b->h2[i], b->dtr[i], j, a, jk, &p, &amb)) { /* the GPU calls it a neighbour */
                ok = TL_CHECK(amb, "%s: i %d: j %d in the list is no neighbour", label, i, j);
                gpu_only++;
                for (int k = 0; k < 3; k++) {
                    r->acc[q][k] -= a[k];
                    r->jrk[q][k] -= jk[k];
                }
                r->pot[q] -= p;
            }
        }
        if (ok && col[0] - gpu_only != r->count[q]) { /* some neighbours are missing: find them */
            for (int j = 0; j < s->n && ok; j++)
                if (pair(s, ii, b->h2[i], b->dtr[i], j, a, jk, &p, &amb) && !is_member(col, j)) {
                    ok = TL_CHECK(amb, "%s: i %d: neighbour j %d missing from the list", label, i, j);
                    ref_only++;
                    for (int k = 0; k < 3; k++) {
                        r->acc[q][k] += a[k];
                        r->jrk[q][k] += jk[k];
                    }
                    r->pot[q] += p;
                }
        }
        if (!ok)
            continue;
        n_ambiguous += gpu_only + ref_only;
        double ea = tl_relerr3(b->acc[i], r->acc[q], 0.0), ej = tl_relerr3(b->jrk[i], r->jrk[q], 0.0);
        double ep = fabs(b->pot[i] - r->pot[q]) / fabs(r->pot[q]);
        worst_acc = fmax(worst_acc, ea);
        worst_jrk = fmax(worst_jrk, ej);
        worst_pot = fmax(worst_pot, ep);
        n_checked++;
        TL_CHECK(ea < TOL_ACC && ej < TOL_JRK && ep < TOL_POT,
                 "%s: i %d (j %d): relative errors acc %.2e jrk %.2e pot %.2e", label, i, ii, ea, ej, ep);
    }
}

/* The legacy path on the same GPU and data: same lists, forces within 1e-6.
 * Two halves in flight: the legacy path takes the same halves, since the
 * float kernel's sums depend on how a call splits the j range, which
 * depends on its ni (each within 1e-6 of the truth, see gpunb_cuda_regf.c;
 * 40000 i at NJ = 131072 in spatial order came out 1.3e-6 apart). */
static void compare_legacy(gpunb *leg, const jset *s, const block *b, const char *label)
{
    double(*xi)[3] = malloc(sizeof(double[3]) * (size_t)b->ni), (*vi)[3] = malloc(sizeof(double[3]) * (size_t)b->ni);
    double(*acc)[3] = malloc(sizeof(double[3]) * (size_t)b->ni), (*jrk)[3] = malloc(sizeof(double[3]) * (size_t)b->ni);
    double *pot = malloc(sizeof(double) * (size_t)b->ni);
    int *list = malloc(sizeof(int) * (size_t)b->ni * b->lmax), differ = 0;
    double worst = 0.0;
    for (int i = 0; i < b->ni; i++) {
        memcpy(xi[i], s->xp[b->ji[i]], sizeof xi[i]);
        memcpy(vi[i], s->vp[b->ji[i]], sizeof vi[i]);
    }
    const int n1 = two_in_flight ? b->ni / 2 : b->ni, n2 = b->ni - n1;
    TL_CHECK(gpunb_send(leg, s->n, s->m, (const double(*)[3])s->xp, (const double(*)[3])s->vp) == GPUNB_OK &&
                 gpunb_regf(leg, n1, b->h2, b->dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc, jrk,
                            pot, b->lmax, b->nbmax, list) == GPUNB_OK &&
                 gpunb_regf(leg, n2, b->h2 + n1, b->dtr + n1, (const double(*)[3])xi + n1,
                            (const double(*)[3])vi + n1, acc + n1, jrk + n1, pot + n1, b->lmax, b->nbmax,
                            list + (size_t)n1 * b->lmax) == GPUNB_OK,
             "%s: legacy path failed: %s", label, gpunb_last_error());
    for (int i = 0; i < b->ni; i++) {
        const int *c1 = list + (size_t)i * b->lmax, *c2 = b->list + (size_t)i * b->lmax;
        int same = c1[0] == c2[0];
        for (int e = 1; same && e <= c1[0]; e++)
            same = c1[e] == c2[e];
        if (!same) {
            differ++;
            continue;
        }
        if (c1[0] < 0)
            continue;
        worst = fmax(worst, tl_relerr3(acc[i], b->acc[i], 0.0));
        worst = fmax(worst, tl_relerr3(jrk[i], b->jrk[i], 0.0));
    }
    n_legacy_differ += differ;
    n_legacy_cols += b->ni;
    worst_legacy = fmax(worst_legacy, worst);
    TL_CHECK(differ <= b->ni / 100 + 1, "%s: %d of %d lists differ from the legacy path", label, differ, b->ni);
    TL_CHECK(worst < 1e-6, "%s: forces differ from the legacy path by %.2e", label, worst);
    free(xi);
    free(vi);
    free(acc);
    free(jrk);
    free(pot);
    free(list);
}

/* One block: predict (after `changed` corrected records), start, host work
 * (the reference), finish, compare. */
/* `late` records are corrected between gpunb_predict and gpunb_regf_start
 * (as a caller may while the records are still being copied): the test's
 * prediction xp, which the checks use, stays that of the earlier records.
 * halves: the block as two forces in flight together (rows 0..ni/2-1 and
 * the rest), collected in the order they were started. */
static int start_block(gpunb *nb, const block *b)
{
    if (!two_in_flight)
        return gpunb_regf_start(nb, b->ni, b->ji, b->h2, b->dtr, b->lmax, b->nbmax);
    const int n1 = b->ni / 2;
    int st = gpunb_regf_start(nb, n1, b->ji, b->h2, b->dtr, b->lmax, b->nbmax);
    if (st == GPUNB_OK)
        st = gpunb_regf_start(nb, b->ni - n1, b->ji + n1, b->h2 + n1, b->dtr + n1, b->lmax, b->nbmax);
    return st;
}

static int finish_block(gpunb *nb, block *b)
{
    if (!two_in_flight)
        return gpunb_regf_finish(nb, b->acc, b->jrk, b->pot, b->list);
    const int n1 = b->ni / 2;
    int st = gpunb_regf_finish(nb, b->acc, b->jrk, b->pot, b->list);
    if (st == GPUNB_OK)
        st = gpunb_regf_finish(nb, b->acc + n1, b->jrk + n1, b->pot + n1, b->list + (size_t)n1 * b->lmax);
    return st;
}

static void run_block(gpunb *nb, gpunb *leg, jset *s, double t, int ni, int changed, int late)
{
    char label[160];
    const char *halves = two_in_flight ? ", two halves in flight" : "";
    block b;
    static ref r;
    if (!changed)
        snprintf(label, sizeof label, "NJ=%d NI=%d (all records new%s)", s->n, ni, halves);
    else
        snprintf(label, sizeof label, "NJ=%d NI=%d (%d changes%s%s)", s->n, ni, changed,
                 late ? ", more after predict" : "", halves);
    if (changed)
        correct_some(s, nb, changed, t - 0.001);
    predict_all(s, t);
    block_make(&b, s, ni, 50.0);
    double t0 = now();
    int st = gpunb_predict(nb, s->n, t);
    if (late)
        correct_some(s, nb, late, t - 0.0005);
    double t1 = now();
    if (TL_CHECK(st == GPUNB_OK, "%s: predict: %s", label, gpunb_last_error()) &&
        TL_CHECK(start_block(nb, &b) == GPUNB_OK, "%s: start: %s", label, gpunb_last_error())) {
        double t2 = now();
        reference(s, &b, &r);
        double t3 = now();
        st = finish_block(nb, &b);
        double t4 = now();
        if (TL_CHECK(st == GPUNB_OK, "%s: finish: %s", label, gpunb_last_error())) {
            compare_reference(s, &b, &r, label);
            if (leg)
                compare_legacy(leg, s, &b, label);
        }
        printf("  %-44s predict %7.1f us, start %6.1f us, host work %8.1f us, finish %7.1f us\n", label,
               1e6 * (t1 - t0), 1e6 * (t2 - t1), 1e6 * (t3 - t2), 1e6 * (t4 - t3));
    }
    block_free(&b);
}

static void run_set(int n, const int *nis, int nni, int with_legacy, const char *gpu_list)
{
    jset s;
    gpunb *nb = NULL, *leg = NULL;
    if (gpu_list)
        setenv("GPU_LIST", gpu_list, 1);
    jset_make(&s, n);
    if (!TL_CHECK(gpunb_open(&nb, n + 100, GPUNB_BACKEND_CUDA) == GPUNB_OK, "open: %s", gpunb_last_error()) ||
        (with_legacy &&
         !TL_CHECK(gpunb_open(&leg, n + 100, GPUNB_BACKEND_CUDA) == GPUNB_OK, "open: %s", gpunb_last_error())))
        goto done;
    if (gpu_list)
        printf(" GPU_LIST=\"%s\": %s\n", gpu_list, gpunb_backend_description(nb));
    for (int j = 0; j < n; j++)
        set_record(nb, &s, j);
    /* Block 2 changes half the records (a copy of all, no list); block 1
     * changes records right after its prediction, on one GPU (with several
     * the i are predicted on the host from the records at start). */
    double t = 0.004;
    for (int k = 0; k < nni; k++, t += 0.002)
        run_block(nb, leg, &s, t, nis[k], k == 0 ? 0 : k == 2 ? n / 2 : 20, k == 1 && !gpu_list ? 50 : 0);
done:
    gpunb_close(nb);
    gpunb_close(leg);
    jset_free(&s);
    if (gpu_list)
        unsetenv("GPU_LIST");
}

/* A cluster drifting at 1 unit per unit time and expanding at 3 through
 * `blocks` predicts of a few changes each: the origin of the float
 * coordinates and the cube of the spatial order are chosen again every 64
 * predicts, from the moments the GPU made of its records at the predict
 * before (the back-end's ORIGIN_REFRESH), and each block's forces must
 * still match the double reference (gpu_list: as in run_set, the moments
 * of several GPUs' ranges summed).  Not the legacy path within 1e-6: that
 * chooses its origin at every send, and forces of two origins (and, in
 * spatial order, two orders of the sums) differ by more (session 64, 140
 * blocks of 3000: acc up to 1.1e-6 apart, jerk 1.4e-6; drifting at 2 and
 * not expanding, jerk 6.5e-6 already before the first new origin). */
static void run_drift(int n, int blocks, const char *gpu_list)
{
    jset s;
    gpunb *nb = NULL;
    if (gpu_list)
        setenv("GPU_LIST", gpu_list, 1);
    jset_make(&s, n);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 3 && s.m[j] > 0.0; k++)
            s.v0[j][k] += 3.0 * s.x0[j][k] + (k == 0 ? 1.0 : 0.0);
    if (TL_CHECK(gpunb_open(&nb, n, GPUNB_BACKEND_CUDA) == GPUNB_OK, "open: %s", gpunb_last_error())) {
        for (int j = 0; j < n; j++)
            set_record(nb, &s, j);
        double t = 0.004;
        for (int k = 0; k < blocks; k++, t += 0.002)
            run_block(nb, NULL, &s, t, k % 3 ? 64 : n / 4, 20, 0);
    }
    gpunb_close(nb);
    jset_free(&s);
    if (gpu_list)
        unsetenv("GPU_LIST");
}

int main(int argc, char **argv)
{
    unsetenv("NB6ACCEL_GPUNB");
    unsetenv("GPU_LIST");
#ifndef NB6ACCEL_HAVE_CUDA
    tl_skip("no usable CUDA device (this build has no CUDA back-end: configure found no nvcc or "
            "was run --without-cuda)");
#endif
    if (!gpunb_backend_usable(GPUNB_BACKEND_CUDA))
        tl_skip("no usable CUDA device (%s)", gpunb_last_error());
    tl_seed_from_env();
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0; /* for compute-sanitizer */

    const int small[] = {1, 64, 700, 2048, 31};
    run_set(3000, small, quick ? 2 : 5, 1, NULL);
    if (!quick) {
        const int mid[] = {64, 1024, 2048, 64};
        run_set(131072, mid, 4, 1, NULL);
        const int big[] = {2048, 64};
        run_set(1000000, big, 2, 1, NULL);
        const int split[] = {20000, 17000}; /* larger than one launch: computed at finish */
        run_set(40000, split, 2, 1, NULL);
    }
    const int shares[] = {64, 1000};
    run_set(quick ? 2000 : 40000, shares, quick ? 1 : 2, 1, "0 0 0");
    run_drift(quick ? 1000 : 3000, quick ? 66 : 140, NULL); /* (the sanitizers: past one new origin) */
    if (!quick)
        run_drift(3000, 140, "0 0 0");

    /* Two forces in flight: small (stamped) halves, the Plummer driver's
     * 16k chunks (the second one's force runs while the first one's lists
     * are gathered), halves larger than one launch, several GPUs. */
    two_in_flight = 1;
    const int pairs[] = {64, 32768, 700, 40000};
    run_set(quick ? 3000 : 131072, pairs, quick ? 1 : 4, 1, NULL);
    run_set(quick ? 2000 : 40000, shares, quick ? 1 : 2, 1, "0 0 0");
    two_in_flight = 0;

    printf("relative errors vs double over %ld sampled columns: acc %.3e, jerk %.3e, pot %.3e (%ld ambiguous "
           "members moved); vs the legacy path: %ld of %ld lists differ, forces %.3e\n",
           n_checked, worst_acc, worst_jrk, worst_pot, n_ambiguous, n_legacy_differ, n_legacy_cols, worst_legacy);
    return tl_finish("test_gpunb_resident_cuda");
}
