/* test_gpunb_cuda.c -- the CUDA back-end of GPUNB against the double-precision
 * reference back-end, on fresh random clusters: Plummer spheres offset from
 * the origin, masses spread over a factor 100, tight pairs, zero-mass ghosts
 * at 1e6 (one of them on top of a real particle), NI in {1, 31, 64, 1000,
 * 2048}, NJ up to 1M.  Checked per column: count, members (ascending, self
 * included), overflow (negative count, true size), nothing written past the
 * count or the last column, force/jerk/potential relative errors; repeat calls
 * give bit-identical results; gpunb_potential on the GPU against double;
 * GPU_LIST, NB6ACCEL_CUDA_WAVES, _SINGLE_LAUNCH, _PDL and _INLINE_I handling;
 * a j-set and blocks in spatial order, where neighbours crowd into few words,
 * and NB6ACCEL_CUDA_SPATIAL (the library's own spatial order).
 * Without a usable GPU it prints "SKIP: ..." and exits 77.
 *
 * Lists may differ from the reference only in boundary-ambiguous members:
 * q = min(r^2, rp^2) / (m_j h2) within 1e-5 of 1, widened by what float
 * coordinates about the centre of mass can move q (2^-24 of the distance
 * from that centre, per coordinate).  Such a member's force term is moved
 * between the reference sums before forces are compared. */
#include "config.h"
#include "gpunb.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 0x5a5a5a5a

/* Tolerances (relative to the vector's norm): float pair arithmetic with
 * double sums gives ~1e-7 typically. */
#define TOL_ACC 1e-5
#define TOL_JRK 1e-4
#define TOL_POT 1e-5

static double worst_acc, worst_jrk, worst_pot, sum2_acc, sum2_jrk;
static long n_err, n_ambiguous_members, n_overflow_cols;

typedef struct problem {
    const tl_cluster *c;
    double com[3], vcom[3]; /* centre of mass: the origin of the GPU's float coordinates */
    double *rad, *vrad;     /* distance of each particle from com, speed relative to vcom */
} problem;

static void problem_init(problem *p, const tl_cluster *c)
{
    double mt = 0;
    p->c = c;
    memset(p->com, 0, sizeof p->com);
    memset(p->vcom, 0, sizeof p->vcom);
    for (int j = 0; j < c->n; j++) {
        mt += c->m[j];
        for (int k = 0; k < 3; k++) {
            p->com[k] += c->m[j] * c->x[j][k];
            p->vcom[k] += c->m[j] * c->v[j][k];
        }
    }
    for (int k = 0; k < 3; k++) {
        p->com[k] /= mt;
        p->vcom[k] /= mt;
    }
    p->rad = malloc(sizeof(double) * (size_t)c->n);
    p->vrad = malloc(sizeof(double) * (size_t)c->n);
    for (int j = 0; j < c->n; j++) {
        double r2 = 0, v2 = 0;
        for (int k = 0; k < 3; k++) {
            r2 += (c->x[j][k] - p->com[k]) * (c->x[j][k] - p->com[k]);
            v2 += (c->v[j][k] - p->vcom[k]) * (c->v[j][k] - p->vcom[k]);
        }
        p->rad[j] = sqrt(r2);
        p->vrad[j] = sqrt(v2);
    }
}

static void problem_free(problem *p)
{
    free(p->rad);
    free(p->vrad);
}

/* Pair (i, j) in double: criterion ratio, ambiguity, and the force terms. */
typedef struct pair {
    double q;      /* min(r^2, rp^2) / (m_j h2) */
    int ambiguous; /* float arithmetic may decide it either way */
    double acc[3], jrk[3], pot;
} pair;

static void pair_eval(const problem *p, int ii, const double xi[3], const double vi[3], double h2,
                      double dtr, int j, pair *out)
{
    const tl_cluster *c = p->c;
    double dx[3], dv[3], dp[3], r2 = 0, rp2 = 0, rv = 0;
    for (int k = 0; k < 3; k++) {
        dx[k] = c->x[j][k] - xi[k];
        dv[k] = c->v[j][k] - vi[k];
        dp[k] = dx[k] + dtr * dv[k];
        r2 += dx[k] * dx[k];
        rp2 += dp[k] * dp[k];
        rv += dx[k] * dv[k];
    }
    double lim = c->m[j] * h2, rmin2 = fmin(r2, rp2);
    out->q = lim > 0 ? rmin2 / lim : INFINITY;
    double spread = p->rad[ii] + p->rad[j] + fabs(dtr) * (p->vrad[ii] + p->vrad[j]);
    double band = 1e-5 + (lim > 0 ? 4.0 * 6e-8 * sqrt(rmin2) * spread / lim : 0.0);
    out->ambiguous = lim > 0 && fabs(out->q - 1.0) <= band;
    memset(out->acc, 0, sizeof out->acc);
    memset(out->jrk, 0, sizeof out->jrk);
    out->pot = 0;
    if (r2 > 0) {
        double r = sqrt(r2), mr3 = c->m[j] / (r2 * r);
        for (int k = 0; k < 3; k++) {
            out->acc[k] = mr3 * dx[k];
            out->jrk[k] = mr3 * (dv[k] - 3.0 * rv / r2 * dx[k]);
        }
        out->pot = c->m[j] / r;
    }
}

typedef struct block {
    int ni, lmax, nbmax;
    int *pick;
    double *h2, *dtr, (*xi)[3], (*vi)[3], (*acc)[3], (*jrk)[3], *pot;
    int *list;
} block;

static void block_make(block *b, const problem *p, int ni, double nb_target, int lmax, int nbmax)
{
    const tl_cluster *c = p->c;
    double bodym = tl_cluster_mean_mass(c);
    int nmassive = 0;
    for (int j = 0; j < c->n; j++)
        nmassive += c->m[j] > 0.0;
    b->ni = ni;
    b->lmax = lmax;
    b->nbmax = nbmax;
    b->pick = malloc(sizeof(int) * (size_t)ni);
    b->h2 = malloc(sizeof(double) * (size_t)ni);
    b->dtr = malloc(sizeof(double) * (size_t)ni);
    b->xi = malloc(sizeof(double[3]) * (size_t)ni);
    b->vi = malloc(sizeof(double[3]) * (size_t)ni);
    b->acc = malloc(sizeof(double[3]) * (size_t)ni);
    b->jrk = malloc(sizeof(double[3]) * (size_t)ni);
    b->pot = malloc(sizeof(double) * (size_t)ni);
    b->list = malloc(sizeof(int) * ((size_t)ni * (size_t)lmax + 64));
    for (int i = 0; i < ni; i++) {
        int j;
        do
            j = tl_int(0, c->n - 1);
        while (c->m[j] == 0.0);
        b->pick[i] = j;
        memcpy(b->xi[i], c->x[j], sizeof b->xi[i]);
        memcpy(b->vi[i], c->v[j], sizeof b->vi[i]);
        /* RS for about nb_target neighbours at the local Plummer density. */
        double rr = p->rad[j];
        double r = cbrt(nb_target / (double)nmassive) * pow(1.0 + rr * rr, 5.0 / 6.0) *
                   (0.5 + tl_uniform());
        b->h2[i] = nb_target > 0 ? r * r / bodym : 0.0;
        b->dtr[i] = 1e-3 * tl_int(0, 16);
    }
}

static void block_free(block *b)
{
    free(b->pick);
    free(b->h2);
    free(b->dtr);
    free(b->xi);
    free(b->vi);
    free(b->acc);
    free(b->jrk);
    free(b->pot);
    free(b->list);
}

static int block_run(gpunb *h, block *b)
{
    size_t len = (size_t)b->ni * (size_t)b->lmax;
    for (size_t k = 0; k < len + 64; k++)
        b->list[k] = CANARY;
    for (int i = 0; i < b->ni; i++)
        b->acc[i][0] = b->jrk[i][0] = b->pot[i] = NAN;
    int st = gpunb_regf(h, b->ni, b->h2, b->dtr, (const double(*)[3])b->xi,
                        (const double(*)[3])b->vi, b->acc, b->jrk, b->pot, b->lmax, b->nbmax,
                        b->list);
    return TL_CHECK(st == GPUNB_OK, "gpunb_regf failed: %s", gpunb_last_error());
}

/* Compare one column of the GPU result (g) with the reference (r). */
static int compare_column(const problem *p, const block *g, const block *r, int i, const char *label)
{
    const tl_cluster *c = p->c;
    const int limit = g->nbmax < g->lmax - 1 ? g->nbmax : g->lmax - 1;
    const int *cg = g->list + (size_t)i * (size_t)g->lmax, *cr = r->list + (size_t)i * (size_t)r->lmax;
    double acc[3], jrk[3], pot = r->pot[i];
    pair pr;
    int ok = 1;

    memcpy(acc, r->acc[i], sizeof acc);
    memcpy(jrk, r->jrk[i], sizeof jrk);
    if (cg[0] < 0 || cr[0] < 0) {
        /* Overflow: the true sizes may differ only by ambiguous members, and
         * the sign only where that straddles the limit. */
        int namb = 0, sg = abs(cg[0]), sr = abs(cr[0]);
        n_overflow_cols++;
        if (cg[0] != cr[0]) /* count the ambiguous j only when it matters: O(NJ) */
            for (int j = 0; j < c->n; j++) {
                pair_eval(p, g->pick[i], g->xi[i], g->vi[i], g->h2[i], g->dtr[i], j, &pr);
                namb += pr.ambiguous;
            }
        ok &= TL_CHECK(abs(sg - sr) <= namb, "%s: column %d: overflow sizes %d (GPU) vs %d (reference), "
                       "%d ambiguous", label, i, cg[0], cr[0], namb);
        if ((cg[0] < 0) != (cr[0] < 0))
            ok &= TL_CHECK(abs(sr - limit) <= namb || abs(sg - limit) <= namb,
                           "%s: column %d: GPU count %d, reference %d (limit %d): only one overflowed",
                           label, i, cg[0], cr[0], limit);
        if (cg[0] < 0)
            ok &= TL_CHECK(-cg[0] > limit, "%s: column %d: negative count %d but |count| <= limit %d",
                           label, i, cg[0], limit);
        return ok;
    }
    /* Members: walk both ascending lists; every difference must be ambiguous. */
    int a = 0, b = 0, prev = -1;
    while (ok && (a < cg[0] || b < cr[0])) {
        int jg = a < cg[0] ? cg[1 + a] : c->n, jr = b < cr[0] ? cr[1 + b] : c->n;
        int j = jg < jr ? jg : jr;
        ok &= TL_CHECK(jg < c->n || a >= cg[0], "%s: column %d entry %d = %d out of range", label, i, a, jg);
        if (!ok)
            break;
        if (a < cg[0])
            ok &= TL_CHECK(jg > prev || jg == jr, "%s: column %d not ascending at entry %d", label, i, a);
        if (jg == jr) {
            prev = jg;
            a++;
            b++;
            continue;
        }
        pair_eval(p, g->pick[i], g->xi[i], g->vi[i], g->h2[i], g->dtr[i], j, &pr);
        ok &= TL_CHECK(pr.ambiguous, "%s: column %d: j = %d is %s only (q - 1 = %.3e)", label, i, j,
                       jg < jr ? "a GPU neighbour" : "a reference neighbour", pr.q - 1.0);
        n_ambiguous_members++;
        double sgn = jg < jr ? -1.0 : 1.0; /* GPU left j out of / put j into the sums */
        for (int k = 0; k < 3; k++) {
            acc[k] += sgn * pr.acc[k];
            jrk[k] += sgn * pr.jrk[k];
        }
        pot += sgn * pr.pot;
        if (jg < jr) {
            prev = jg;
            a++;
        } else {
            b++;
        }
    }
    if (!ok)
        return 0;
    int self = 0;
    for (int e = 0; e < cg[0]; e++) {
        self |= cg[1 + e] == g->pick[i];
        ok &= TL_CHECK(c->m[cg[1 + e]] > 0.0, "%s: column %d lists zero-mass j %d", label, i, cg[1 + e]);
    }
    ok &= TL_CHECK(self || g->h2[i] == 0.0, "%s: column %d lacks self %d", label, i, g->pick[i]);
    double ea = tl_relerr3(g->acc[i], acc, 0.0), ej = tl_relerr3(g->jrk[i], jrk, 0.0);
    double ep = pot > 0 ? fabs(g->pot[i] - pot) / pot : fabs(g->pot[i]);
    worst_acc = fmax(worst_acc, ea);
    worst_jrk = fmax(worst_jrk, ej);
    worst_pot = fmax(worst_pot, ep);
    sum2_acc += ea * ea;
    sum2_jrk += ej * ej;
    n_err++;
    ok &= TL_CHECK(ea < TOL_ACC && ej < TOL_JRK && ep < TOL_POT,
                   "%s: column %d (%d neighbours) relative errors acc %.2e jrk %.2e pot %.2e", label,
                   i, cg[0], ea, ej, ep);
    return ok;
}

/* check_case puts each block's i in spatial order (check_spatial). */
static int spatial_blocks;

/* The rows of block b in the order perm. */
static void block_permute(block *b, const int *perm)
{
    int *pick = malloc(sizeof(int) * (size_t)b->ni);
    for (int i = 0; i < b->ni; i++)
        pick[i] = b->pick[perm[i]];
    memcpy(b->pick, pick, sizeof(int) * (size_t)b->ni);
    free(pick);
    tl_permute_rows(b->h2, b->ni, 1, perm);
    tl_permute_rows(b->dtr, b->ni, 1, perm);
    tl_permute_rows(&b->xi[0][0], b->ni, 3, perm);
    tl_permute_rows(&b->vi[0][0], b->ni, 3, perm);
}

static void check_case(gpunb *gpu, gpunb *ref, const problem *p, int ni, double nb_target, int lmax,
                       int nbmax, const char *label)
{
    block g, r;
    block_make(&g, p, ni, nb_target, lmax, nbmax);
    if (spatial_blocks) {
        int *perm = malloc(sizeof(int) * (size_t)ni);
        tl_spatial_order(ni, (const double(*)[3])g.xi, p->com, 4.0, 1, perm);
        block_permute(&g, perm);
        free(perm);
    }
    r = g; /* same inputs, own outputs */
    r.acc = malloc(sizeof(double[3]) * (size_t)ni);
    r.jrk = malloc(sizeof(double[3]) * (size_t)ni);
    r.pot = malloc(sizeof(double) * (size_t)ni);
    r.list = malloc(sizeof(int) * ((size_t)ni * (size_t)lmax + 64));
    int ok = block_run(gpu, &g) && block_run(ref, &r);
    if (ok) {
        int canary = 1, bad = 0, overflowed = 0;
        for (int k = 0; k < 64; k++)
            canary &= g.list[(size_t)ni * (size_t)lmax + k] == CANARY;
        TL_CHECK(canary, "%s: wrote past the last column (ni=%d, lmax=%d)", label, ni, lmax);
        for (int i = 0; i < ni && bad < 5; i++) {
            overflowed += g.list[(size_t)i * (size_t)lmax] < 0;
            bad += !compare_column(p, &g, &r, i, label);
        }
        /* The same call again: bit-identical (fixed-order reductions). */
        block again = g;
        again.acc = malloc(sizeof(double[3]) * (size_t)ni);
        again.jrk = malloc(sizeof(double[3]) * (size_t)ni);
        again.pot = malloc(sizeof(double) * (size_t)ni);
        again.list = malloc(sizeof(int) * ((size_t)ni * (size_t)lmax + 64));
        if (block_run(gpu, &again))
            TL_CHECK(memcmp(again.acc, g.acc, sizeof(double[3]) * (size_t)ni) == 0 &&
                         memcmp(again.jrk, g.jrk, sizeof(double[3]) * (size_t)ni) == 0 &&
                         memcmp(again.list, g.list, sizeof(int) * (size_t)ni * (size_t)lmax) == 0,
                     "%s: a repeated call gave different results", label);
        free(again.acc);
        free(again.jrk);
        free(again.pot);
        free(again.list);
        printf("  %-28s nj=%7d ni=%5d lmax=%4d nbmax=%4d: %s, %d overflowed\n", label, p->c->n, ni,
               lmax, nbmax, bad ? "FAILED" : "ok", overflowed);
    }
    free(r.acc);
    free(r.jrk);
    free(r.pot);
    free(r.list);
    block_free(&g);
}

static void check_potential(int n)
{
    tl_cluster c;
    tl_cluster_make(&c, n, 8, 37.0, 0.2);
    /* a zero-mass and a massive particle on top of real ones: r = 0 pairs */
    memcpy(c.x[n - 1], c.x[0], sizeof c.x[0]);
    memcpy(c.x[n - 10], c.x[1], sizeof c.x[1]);
    double *pot = malloc(sizeof(double) * (size_t)n), worst = 0;
    int st = gpunb_potential(n, c.m, (const double(*)[3])c.x, pot);
    if (TL_CHECK(st == GPUNB_OK, "gpunb_potential failed: %s", gpunb_last_error())) {
        int bad = 0;
#pragma omp parallel for reduction(max : worst) reduction(+ : bad)
        for (int k = 0; k < n; k++) {
            double phi = 0;
            for (int l = 0; l < n; l++) {
                double dx = c.x[l][0] - c.x[k][0], dy = c.x[l][1] - c.x[k][1], dz = c.x[l][2] - c.x[k][2];
                double r2 = dx * dx + dy * dy + dz * dz;
                if (r2 > 0)
                    phi += c.m[l] / sqrt(r2);
            }
            double e = fabs(pot[k] - phi) / phi;
            worst = fmax(worst, e);
            bad += !(e < 1e-12);
        }
        TL_CHECK(bad == 0, "gpunb_potential: %d of %d values off by more than 1e-12 (worst %.2e)", bad, n,
                 worst);
        printf("  gpunb_potential on the GPU, n=%d: worst relative error %.2e vs double\n", n, worst);
    }
    free(pot);
    tl_cluster_free(&c);
}

static void check_gpu_list(void)
{
    gpunb *h = NULL;
    setenv("GPU_LIST", "0", 1);
    TL_CHECK(gpunb_open(&h, 1000, GPUNB_BACKEND_CUDA) == GPUNB_OK, "GPU_LIST=0: open failed: %s",
             gpunb_last_error());
    gpunb_close(h);
    h = NULL;
    setenv("GPU_LIST", "9999", 1);
    int st = gpunb_open(&h, 1000, GPUNB_BACKEND_CUDA);
    TL_CHECK(st != GPUNB_OK && strstr(gpunb_last_error(), "GPU_LIST"),
             "GPU_LIST=9999: expected a failure naming GPU_LIST, got %d \"%s\"", st, gpunb_last_error());
    if (st == GPUNB_OK)
        gpunb_close(h);
    printf("  GPU_LIST=9999 refused: %s\n", gpunb_last_error());
    unsetenv("GPU_LIST");
}

/* Each value of bad in environment variable var makes gpunb_open refuse
 * with a message naming var; var is unset after. */
static void check_refused(const char *var, const char *const *bad, int nbad)
{
    for (int k = 0; k < nbad; k++) {
        gpunb *h = NULL;
        setenv(var, bad[k], 1);
        TL_CHECK(gpunb_open(&h, 100, GPUNB_BACKEND_CUDA) == GPUNB_EUSAGE && strstr(gpunb_last_error(), var) != NULL,
                 "%s=\"%s\": open gave \"%s\"", var, bad[k], h ? "success" : gpunb_last_error());
        gpunb_close(h);
    }
    unsetenv(var);
}

/* NB6ACCEL_CUDA_WAVES: values outside 1..GPUNB_CUDA_MAX_WAVES are refused
 * with a message naming the variable; one wave and many waves of force
 * blocks (more slices, so more partial sums to reduce) give the same answers
 * within single precision. */
static void check_waves(int quick)
{
    const char *const bad[] = {"0", "17", "many", "3x"};
    check_refused("NB6ACCEL_CUDA_WAVES", bad, (int)(sizeof bad / sizeof bad[0]));
    const char *good[] = {"1", "7"};
    const int nj = quick ? 3000 : 100000;
    tl_cluster c;
    problem p;
    tl_cluster_make(&c, nj, nj / 100 + 2, 1.5, 0.2);
    problem_init(&p, &c);
    for (unsigned k = 0; k < sizeof good / sizeof good[0]; k++) {
        gpunb *gpu = NULL, *ref = NULL;
        char label[64];
        setenv("NB6ACCEL_CUDA_WAVES", good[k], 1);
        if (TL_CHECK(gpunb_open(&gpu, nj, GPUNB_BACKEND_CUDA) == GPUNB_OK &&
                         gpunb_open(&ref, nj, GPUNB_BACKEND_REFERENCE) == GPUNB_OK,
                     "open with NB6ACCEL_CUDA_WAVES=%s failed: %s", good[k], gpunb_last_error())) {
            gpunb_send(gpu, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            gpunb_send(ref, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            snprintf(label, sizeof label, "%s waves, NI=%d", good[k], quick ? 300 : 2048);
            check_case(gpu, ref, &p, quick ? 300 : 2048, 50.0, 500, 450, label);
        }
        gpunb_close(gpu);
        gpunb_close(ref);
    }
    unsetenv("NB6ACCEL_CUDA_WAVES");
    problem_free(&p);
    tl_cluster_free(&c);
}

/* check_case for each NI of nis[0..n-1] up to quick_max (0: all), lmax 500,
 * nbmax 450, labelled prefix + "NI=...". */
static void check_sizes(gpunb *gpu, gpunb *ref, const problem *p, const int *nis, int n, int quick_max,
                        double nb_target, const char *prefix)
{
    for (int k = 0; k < n; k++) {
        if (quick_max && nis[k] > quick_max)
            continue;
        char label[64];
        snprintf(label, sizeof label, "%sNI=%d", prefix, nis[k]);
        check_case(gpu, ref, p, nis[k], nb_target, 500, 450, label);
    }
}

/* Spatial order, two ways.  First a j-set and blocks of i that come in
 * Morton order (the j-tiles spread apart): each i's neighbours crowd into a
 * few 32-j words, which the force kernel records as one entry each.  Then
 * NB6ACCEL_CUDA_SPATIAL=1 on inputs in no spatial order (NBODY6's): the
 * library sorts the j-set and each call's i itself and runs the far test
 * (at any NJ and NI: auto does so only from 128k j and 2^26 interactions
 * per GPU), and a call whose lists could outgrow the gathering's shared
 * memory (lmax 5000) reads the j-set unsorted.  Refused values first. */
static void check_spatial(int quick)
{
    const char *const bad[] = {"2", "yes", "01", "auto "};
    check_refused("NB6ACCEL_CUDA_SPATIAL", bad, (int)(sizeof bad / sizeof bad[0]));
    for (int library = 0; library < 2; library++) {
        const int nj = library ? (quick ? 3000 : 40000) : (quick ? 3000 : 131072);
        gpunb *gpu = NULL, *ref = NULL;
        tl_cluster c;
        tl_cluster_make(&c, nj, nj / 200, 0.0, 0.1);
        if (!library) {
            int *perm = malloc(sizeof(int) * (size_t)nj);
            const double centre[3] = {0.0, 0.0, 0.0};
            tl_spatial_order(nj, (const double(*)[3])c.x, centre, 4.0, 256, perm);
            tl_permute_rows(&c.x[0][0], nj, 3, perm);
            tl_permute_rows(&c.v[0][0], nj, 3, perm);
            tl_permute_rows(c.m, nj, 1, perm);
            free(perm);
        } else {
            setenv("NB6ACCEL_CUDA_SPATIAL", "1", 1);
        }
        problem p;
        problem_init(&p, &c);
        if (TL_CHECK(gpunb_open(&gpu, nj, GPUNB_BACKEND_CUDA) == GPUNB_OK &&
                         gpunb_open(&ref, nj, GPUNB_BACKEND_REFERENCE) == GPUNB_OK &&
                         gpunb_send(gpu, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK &&
                         gpunb_send(ref, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK,
                     "spatial order: open or send failed: %s", gpunb_last_error())) {
            const char *prefix = library ? "SPATIAL=1, " : "spatial input, ";
            char label[64];
            const int nis[] = {64, 300, 1000, 2048};
            spatial_blocks = !library;
            check_sizes(gpu, ref, &p, nis, 4, quick ? 300 : 0, 80.0, prefix);
            snprintf(label, sizeof label, "%soverflow", prefix);
            check_case(gpu, ref, &p, quick ? 40 : 300, 80.0, 20, 400, label);
            if (library) {
                check_case(gpu, ref, &p, 40, 80.0, 5000, 4500, "SPATIAL=1, lmax 5000");
                if (!quick)
                    check_case(gpu, ref, &p, 5000, 50.0, 300, 250, "SPATIAL=1, NI=5000 (split)");
            }
            spatial_blocks = 0;
        }
        unsetenv("NB6ACCEL_CUDA_SPATIAL");
        gpunb_close(gpu);
        gpunb_close(ref);
        problem_free(&p);
        tl_cluster_free(&c);
    }
}

/* NB6ACCEL_CUDA_SINGLE_LAUNCH, NB6ACCEL_CUDA_PDL and NB6ACCEL_CUDA_INLINE_I:
 * anything but 0 or 1 is refused with a message naming the variable; two
 * kernels, the single launch, the gathering kernel as a dependent launch,
 * and the i of a one-tile call copied or passed with the launch, against the
 * reference for calls of up to 256 i (where they differ): one and four i-tiles,
 * a j-set of fewer force blocks than i (each block then gathers several i),
 * overflow and empty lists, each call repeated (the grid barrier's counters
 * must be back at zero for the next launch). */
static void check_single_launch(int quick)
{
    const char *const bad[] = {"2", "yes", "on", "01", "1 "},
                      *var[] = {"NB6ACCEL_CUDA_SINGLE_LAUNCH", "NB6ACCEL_CUDA_PDL", "NB6ACCEL_CUDA_INLINE_I"};
    for (unsigned v = 0; v < sizeof var / sizeof var[0]; v++)
        check_refused(var[v], bad, (int)(sizeof bad / sizeof bad[0]));
    /* (single launch, dependent launch, i with the launch) */
    const char *good[][3] = {{"0", "0", "1"}, {"1", "0", "1"}, {"0", "1", "1"}, {"0", "1", "0"}};
    /* 3000: fewer blocks than i; 17000 (quick, for the sanitizers: NI <= 64
     * only) or 131072: a block per i */
    const int njs[] = {3000, quick ? 17000 : 131072};
    for (unsigned q = 0; q < sizeof njs / sizeof njs[0]; q++) {
        const int nj = njs[q];
        tl_cluster c;
        problem p;
        tl_cluster_make(&c, nj, nj / 100 + 2, -7.5, 0.2);
        problem_init(&p, &c);
        for (unsigned k = 0; k < sizeof good / sizeof good[0]; k++) {
            gpunb *gpu = NULL, *ref = NULL;
            char label[128], tag[64];
            setenv("NB6ACCEL_CUDA_SINGLE_LAUNCH", good[k][0], 1);
            setenv("NB6ACCEL_CUDA_PDL", good[k][1], 1);
            setenv("NB6ACCEL_CUDA_INLINE_I", good[k][2], 1);
            snprintf(tag, sizeof tag, "SINGLE_LAUNCH=%s PDL=%s INLINE_I=%s", good[k][0], good[k][1], good[k][2]);
            if (!TL_CHECK(gpunb_open(&gpu, nj, GPUNB_BACKEND_CUDA) == GPUNB_OK &&
                              gpunb_open(&ref, nj, GPUNB_BACKEND_REFERENCE) == GPUNB_OK,
                          "open with %s failed: %s", tag, gpunb_last_error())) {
                gpunb_close(gpu);
                gpunb_close(ref);
                continue;
            }
            if (q == 0)
                printf("%s: %s\n", tag, gpunb_backend_description(gpu));
            gpunb_send(gpu, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            gpunb_send(ref, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            const int nis[] = {1, 64, 200, 256};
            for (unsigned n = 0; n < sizeof nis / sizeof nis[0]; n++) {
                if (quick && q > 0 && nis[n] > 64)
                    continue;
                snprintf(label, sizeof label, "%s, NJ=%d, NI=%d", tag, nj, nis[n]);
                check_case(gpu, ref, &p, nis[n], 50.0, 500, 450, label);
            }
            snprintf(label, sizeof label, "%s, NJ=%d, overflow", tag, nj);
            check_case(gpu, ref, &p, quick ? 64 : 100, 80.0, 200, 30, label);
            snprintf(label, sizeof label, "%s, NJ=%d, h2 = 0", tag, nj);
            check_case(gpu, ref, &p, 64, 0.0, 10, 8, label);
            snprintf(label, sizeof label, "%s, NJ=%d, NI > 256 (two kernels)", tag, nj);
            if (!quick || q == 0)
                check_case(gpu, ref, &p, quick ? 300 : 1000, 50.0, 500, 450, label);
            gpunb_close(gpu);
            gpunb_close(ref);
        }
        problem_free(&p);
        tl_cluster_free(&c);
    }
    unsetenv("NB6ACCEL_CUDA_SINGLE_LAUNCH");
    unsetenv("NB6ACCEL_CUDA_PDL");
    unsetenv("NB6ACCEL_CUDA_INLINE_I");
}

int main(int argc, char **argv)
{
    unsetenv("NB6ACCEL_GPUNB");
#ifndef NB6ACCEL_HAVE_CUDA
    tl_skip("no usable CUDA device (this build has no CUDA back-end: configure found no nvcc or "
            "was run --without-cuda)");
#endif
    gpunb *probe = NULL;
    if (gpunb_open(&probe, 16, GPUNB_BACKEND_DEFAULT) != GPUNB_OK)
        tl_skip("no usable CUDA device (%s)", gpunb_last_error());
    if (strcmp(gpunb_backend_name(probe), "cuda") != 0) {
        char why[600];
        snprintf(why, sizeof why, "%s", gpunb_backend_description(probe));
        gpunb_close(probe);
        tl_skip("no usable CUDA device (%s)", why);
    }
    printf("CUDA back-end: %s\n", gpunb_backend_description(probe));
    gpunb_close(probe);
    tl_seed_from_env();

    /* The quick variant (argument "quick") is for compute-sanitizer. */
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const int njs_full[] = {3000, 40000, 262144, 1000000}, njs_quick[] = {3000};
    const int *njs = quick ? njs_quick : njs_full;
    const int nnj = quick ? 1 : 4;
    const int nis[] = {1, 31, 64, 1000, 2048};

    for (int q = 0; q < nnj; q++) {
        tl_cluster c;
        problem p;
        gpunb *gpu = NULL, *ref = NULL;
        int nj = njs[q];
        double offset = q % 2 ? -250.0 : 3.7;
        tl_cluster_make(&c, nj, nj / 100 + 2, offset, 0.2);
        /* a ghost on top of a real particle: an r = 0 pair that is no neighbour */
        memcpy(c.x[nj - 1], c.x[2], sizeof c.x[2]);
        memcpy(c.v[nj - 1], c.v[2], sizeof c.v[2]);
        problem_init(&p, &c);
        if (!TL_CHECK(gpunb_open(&gpu, nj + 100, GPUNB_BACKEND_CUDA) == GPUNB_OK &&
                          gpunb_open(&ref, nj + 100, GPUNB_BACKEND_REFERENCE) == GPUNB_OK,
                      "open failed: %s", gpunb_last_error()))
            break;
        TL_CHECK(gpunb_send(gpu, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK &&
                     gpunb_send(ref, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK,
                 "send failed: %s", gpunb_last_error());
        check_sizes(gpu, ref, &p, nis, (int)(sizeof nis / sizeof nis[0]), quick ? 64 : 0, 50.0, "");
        check_case(gpu, ref, &p, quick ? 40 : 300, 80.0, 200, 30, "overflow by nbmax");
        check_case(gpu, ref, &p, quick ? 40 : 300, 80.0, 20, 400, "overflow by lmax");
        check_case(gpu, ref, &p, 50, 0.0, 10, 8, "h2 = 0: empty lists");
        if (!quick && nj <= 40000)
            check_case(gpu, ref, &p, 5000, 50.0, 300, 250, "NI=5000 (split)");
        gpunb_close(gpu);
        gpunb_close(ref);
        problem_free(&p);
        tl_cluster_free(&c);
    }
    /* The several-GPU path (j split, per-GPU lists concatenated, sums in
     * double on the host) on one GPU named three times: uneven shares. */
    {
        tl_cluster c;
        problem p;
        gpunb *gpu = NULL, *ref = NULL;
        int nj = quick ? 2000 : 40000;
        setenv("GPU_LIST", "0 0 0", 1);
        tl_cluster_make(&c, nj, 30, 11.0, 0.2);
        problem_init(&p, &c);
        if (TL_CHECK(gpunb_open(&gpu, nj, GPUNB_BACKEND_CUDA) == GPUNB_OK &&
                         gpunb_open(&ref, nj, GPUNB_BACKEND_REFERENCE) == GPUNB_OK,
                     "open with GPU_LIST=\"0 0 0\" failed: %s", gpunb_last_error())) {
            printf("three shares of one GPU: %s\n", gpunb_backend_description(gpu));
            gpunb_send(gpu, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            gpunb_send(ref, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v);
            check_case(gpu, ref, &p, 64, 50.0, 500, 450, "3 shares, NI=64");
            if (!quick)
                check_case(gpu, ref, &p, 1000, 50.0, 500, 450, "3 shares, NI=1000");
            check_case(gpu, ref, &p, 40, 80.0, 200, 30, "3 shares, overflow");
        }
        gpunb_close(gpu);
        gpunb_close(ref);
        problem_free(&p);
        tl_cluster_free(&c);
        check_potential(quick ? 2000 : 20000); /* split over the three shares */
        unsetenv("GPU_LIST");
    }
    check_potential(quick ? 2000 : 20000);
    check_gpu_list();
    check_waves(quick);
    check_single_launch(quick);
    check_spatial(quick);

    printf("relative errors vs double over %ld columns: acc worst %.3e rms %.3e, jerk worst %.3e rms "
           "%.3e, pot worst %.3e; %ld ambiguous members moved, %ld overflowed columns\n",
           n_err, worst_acc, n_err ? sqrt(sum2_acc / n_err) : 0.0, worst_jrk,
           n_err ? sqrt(sum2_jrk / n_err) : 0.0, worst_pot, n_ambiguous_members, n_overflow_cols);
    return tl_finish("test_gpunb_cuda");
}
