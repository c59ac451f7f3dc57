/* test_gpuirr_simd.c -- every GPUIRR kernel that this build has and this CPU
 * runs (NB6ACCEL_SIMD=scalar|sse2|avx|avx2|avx512), at 1, 2 and 4 OpenMP
 * threads, against a double-precision reference computed here, on fresh
 * random inputs: a Plummer sphere offset from the origin, tight pairs
 * (separations 1e-3..1e-5), exact twins (coincident predicted positions, so
 * r = 0 pairs inside lists), zero masses, lists of every length 0..lmax-1
 * made of nearest neighbours.  Checks PRED_ALL + FORCE and PRED_ACT + FORCE,
 * exact zeros for empty lists, no NaN, and the error for a bad NB6ACCEL_SIMD.
 * Levels the CPU lacks are reported as skipped.
 *
 * Tolerances.  The SIMD kernels do pair arithmetic in float on two-float
 * positions: one term m dx/r^3 goes through about eight float roundings
 * (dx, r2, 1/sqrt, r^-3, mass, product), whose worst case, measured over 2e6
 * random pairs, is 4.6e-7 of the term (rms 7e-8).  They also predict in
 * float: the displacement d = x(t) - x0 of i and of j is good to a float
 * ulp of itself, and they store x0 to 2^-40 of itself (a float and 16 bits
 * more, gpuirr_internal.h), so dx is good to about
 * eps (r + |d_i| + |d_j| + 2^-16 (|x0_i| + |x0_j|)), and a term to that
 * relative to r.  So the error of a sum is bounded by that times the sum of
 * |terms| weighted by w = (r + |d_i| + |d_j| + 2^-16 (|x0_i| + |x0_j|)) / r,
 * and the check is
 *   acc: max_i |a - a_ref| / sum_j m_j w / r^2  <= ACC_TOL (7.5e-7)
 *   jrk: max_i |j - j_ref| / sum_j |jerk term_j| w  <= JRK_TOL (1.5e-6)
 * (typical maxima: 4e-7 and 4e-7; the weight matters only for the tight
 * pairs, which these random velocities pull apart by much more than their
 * separation, unlike a real step).  The usual max_i |a - a_ref| / |a_ref|
 * is printed beside them; it has no bound because a sum of neighbour forces
 * can nearly cancel (typical maxima 1e-6).  The double reference kernel
 * ("scalar") must agree to 1e-12.  check_storage tests the stored x0 and
 * t0 alone: pairs 1e-3..1e-6 apart at |x| ~ 8 forced at their own t0. */
#include "simd_testutil.h"
#include "gpuirr.h"

#define ACC_TOL 7.5e-7
#define JRK_TOL 1.5e-6
#define SCALAR_TOL 1e-12

/* Main problem: N_BASE particles (+ twins), nearest-neighbour lists of
 * 0..LMAX-1 members.  Long-list problem: N_LONG particles whose lists have
 * up to LMAX_LONG-1 random members, repeats included (NBODY6 allows any
 * LMAX; the sums do not care about repeats). */
enum { N_BASE = 3000, LMAX = 131, N_ACTIVE = 200, N_LONG = 400, LMAX_LONG = 1201 };

typedef struct problem {
    int n, lmax;
    double (*x0)[3], (*v0)[3], (*f2)[3], (*fd6)[3], *m, *t0;
    int *list; /* n columns of lmax: count, then 1-based members */
} problem;

/* nbase particles and nbase/50 twins; long_lists: random members, lengths up
 * to lmax-1, else nearest neighbours, lengths 0..lmax-1. */
static void make_problem(problem *p, int nbase, int lmax, int long_lists)
{
    int twins = nbase / 50, n = nbase + twins;
    const double offset[3] = {3.7, -2.1, 5.3};
    p->n = n;
    p->lmax = lmax;
    p->x0 = calloc(n, sizeof *p->x0);
    p->v0 = calloc(n, sizeof *p->v0);
    p->f2 = calloc(n, sizeof *p->f2);
    p->fd6 = calloc(n, sizeof *p->fd6);
    p->m = calloc(n, sizeof *p->m);
    p->t0 = calloc(n, sizeof *p->t0);
    p->list = calloc((size_t)n * lmax, sizeof(int));
    for (int s = 0; s < nbase; s++) {
        if (s > 0 && rng_uniform() < 0.1) { /* tight pair with the previous one */
            double sep = pow(10.0, -3.0 - 2.0 * rng_uniform());
            for (int k = 0; k < 3; k++)
                p->x0[s][k] = p->x0[s - 1][k] + sep * rng_normal() / sqrt(3.0);
        } else {
            rng_plummer(p->x0[s]);
            for (int k = 0; k < 3; k++)
                p->x0[s][k] += offset[k];
        }
        for (int k = 0; k < 3; k++) {
            p->v0[s][k] = 0.5 * rng_normal();
            p->f2[s][k] = 0.3 * rng_normal();
            p->fd6[s][k] = 0.5 * rng_normal();
        }
        p->m[s] = rng_uniform() < 0.02 ? 0.0 : pow(10.0, -5.0 + 2.0 * rng_uniform());
        p->t0[s] = 1.0 - rng_uniform() / 64.0;
    }
    for (int s = nbase; s < n; s++) { /* exact copies: same prediction */
        int o = rng_int(nbase);
        memcpy(p->x0[s], p->x0[o], sizeof p->x0[s]);
        memcpy(p->v0[s], p->v0[o], sizeof p->v0[s]);
        memcpy(p->f2[s], p->f2[o], sizeof p->f2[s]);
        memcpy(p->fd6[s], p->fd6[o], sizeof p->fd6[s]);
        p->m[s] = p->m[o] > 0 ? p->m[o] : 1e-4;
        p->t0[s] = p->t0[o];
    }
    /* Lists: the len nearest others by x0 (or random ones), ascending, len
     * uniform in 0..lmax-1 (or long_lists: mostly above lmax/2). */
    double *d2 = malloc(sizeof(double) * n);
    int *idx = malloc(sizeof(int) * (n > lmax ? n : lmax));
    for (int i = 0; i < n; i++) {
        int len = long_lists ? lmax - 1 - rng_int(lmax / 2) : rng_int(lmax), c = 0;
        if (long_lists) {
            for (int e = 0; e < len; e++) {
                int j;
                do
                    j = rng_int(n);
                while (j == i);
                idx[c++] = j;
            }
            len = 0; /* skip the selection below */
        }
        for (int j = 0; j < n; j++) {
            double dx = p->x0[j][0] - p->x0[i][0], dy = p->x0[j][1] - p->x0[i][1],
                   dz = p->x0[j][2] - p->x0[i][2];
            d2[j] = dx * dx + dy * dy + dz * dz;
        }
        /* partial selection of the len smallest, self excluded */
        d2[i] = INFINITY;
        for (int e = 0; e < len; e++) {
            int best = -1;
            for (int j = 0; j < n; j++)
                if (d2[j] < INFINITY && (best < 0 || d2[j] < d2[best]))
                    best = j;
            idx[c++] = best;
            d2[best] = INFINITY;
        }
        /* ascending order, as NBODY6 keeps its lists */
        for (int a = 1; a < c; a++)
            for (int b = a; b > 0 && idx[b - 1] > idx[b]; b--) {
                int t = idx[b];
                idx[b] = idx[b - 1];
                idx[b - 1] = t;
            }
        int *col = p->list + (size_t)i * lmax;
        col[0] = c;
        for (int e = 0; e < c; e++)
            col[1 + e] = idx[e] + 1;
    }
    free(d2);
    free(idx);
}

static void free_problem(problem *p)
{
    free(p->x0);
    free(p->v0);
    free(p->f2);
    free(p->fd6);
    free(p->m);
    free(p->t0);
    free(p->list);
}

static double norm3(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

static void predict_ref(const problem *p, int s, double t, double x[3], double v[3])
{
    double dt = t - p->t0[s];
    for (int k = 0; k < 3; k++) {
        x[k] = p->x0[s][k] + dt * (p->v0[s][k] + dt * (p->f2[s][k] + dt * p->fd6[s][k]));
        v[k] = p->v0[s][k] + 2.0 * dt * (p->f2[s][k] + 1.5 * dt * p->fd6[s][k]);
    }
}

/* Reference force on slot i at time t, and the scales sum |term|. */
static void force_ref(const problem *p, int i, double t, double a[3], double jk[3],
                      double *ascale, double *jscale)
{
    double xi[3], vi[3], di[3];
    const int *col = p->list + (size_t)i * p->lmax;
    predict_ref(p, i, t, xi, vi);
    for (int k = 0; k < 3; k++)
        di[k] = xi[k] - p->x0[i][k];
    a[0] = a[1] = a[2] = jk[0] = jk[1] = jk[2] = 0.0;
    *ascale = *jscale = 0.0;
    for (int e = 1; e <= col[0]; e++) {
        int j = col[e] - 1;
        double xj[3], vj[3], dx[3], dv[3], dj[3];
        predict_ref(p, j, t, xj, vj);
        for (int k = 0; k < 3; k++) {
            dx[k] = xj[k] - xi[k];
            dv[k] = vj[k] - vi[k];
            dj[k] = xj[k] - p->x0[j][k];
        }
        double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if (r2 == 0.0)
            continue;
        double rinv2 = 1.0 / r2, mr3 = p->m[j] * rinv2 * sqrt(rinv2);
        double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
        for (int k = 0; k < 3; k++) {
            a[k] += mr3 * dx[k];
            jk[k] += mr3 * (dv[k] - rv * dx[k]);
        }
        double vabs = sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]), r = sqrt(r2);
        /* float prediction and stored x0 */
        double weight = (r + norm3(di) + norm3(dj) + 0x1p-16 * (norm3(p->x0[i]) + norm3(p->x0[j]))) / r;
        *ascale += mr3 * r * weight;
        *jscale += mr3 * (vabs + fabs(rv) * r) * weight;
    }
}

typedef struct errors {
    double acc_scaled, jrk_scaled, acc_rel, jrk_rel;
    int nonfinite, nonzero_empty;
} errors;

static void compare(const problem *p, int ni, const int *addr, double t, double (*acc)[3],
                    double (*jrk)[3], errors *e)
{
    for (int n = 0; n < ni; n++) {
        int i = addr[n] - 1;
        double a[3], jk[3], as, js, da[3], dj[3];
        force_ref(p, i, t, a, jk, &as, &js);
        for (int k = 0; k < 3; k++) {
            if (!isfinite(acc[n][k]) || !isfinite(jrk[n][k]))
                e->nonfinite++;
            da[k] = acc[n][k] - a[k];
            dj[k] = jrk[n][k] - jk[k];
        }
        if (p->list[(size_t)i * p->lmax] == 0) {
            for (int k = 0; k < 3; k++)
                if (acc[n][k] != 0.0 || jrk[n][k] != 0.0)
                    e->nonzero_empty++;
            continue;
        }
        if (as > 0) {
            e->acc_scaled = fmax(e->acc_scaled, norm3(da) / as);
            e->jrk_scaled = fmax(e->jrk_scaled, norm3(dj) / js);
        }
        if (norm3(a) > 0)
            e->acc_rel = fmax(e->acc_rel, norm3(da) / norm3(a));
        if (norm3(jk) > 0)
            e->jrk_rel = fmax(e->jrk_rel, norm3(dj) / norm3(jk));
    }
}

/* Runs one level; returns 0 pass, 1 fail. */
static int check_level(const problem *p, const char *what_problem, int level, int threads)
{
    const int n = p->n;
    gpuirr *g;
    int fails = 0;
    double (*acc)[3] = malloc(sizeof *acc * n), (*jrk)[3] = malloc(sizeof *jrk * n);
    int *addr = malloc(sizeof(int) * n);

    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    if (gpuirr_open(&g, n, p->lmax) != GPUIRR_OK) {
        printf("FAIL %s: gpuirr_open: %s\n", level_name[level], gpuirr_last_error());
        return 1;
    }
    if (strcmp(gpuirr_kernel_name(g), level_name[level]) != 0) {
        printf("FAIL %s: kernel is \"%s\"\n", level_name[level], gpuirr_kernel_name(g));
        fails++;
    }
    set_threads(threads);
    /* NBODY6 sets records and lists from OpenMP loops. */
#pragma omp parallel for schedule(dynamic, 7)
    for (int s = 0; s < n; s++) {
        if (gpuirr_set_particle(g, s + 1, p->x0[s], p->v0[s], p->f2[s], p->fd6[s], p->m[s],
                                p->t0[s]) != GPUIRR_OK ||
            gpuirr_set_list(g, s + 1, p->list[(size_t)s * p->lmax], p->list + (size_t)s * p->lmax + 1) !=
                GPUIRR_OK) {
#pragma omp critical
            printf("FAIL set %d: %s\n", s + 1, gpuirr_last_error());
        }
    }

    /* PRED_ALL, then FORCE for everyone in shuffled order. */
    for (int s = 0; s < n; s++)
        addr[s] = s + 1;
    for (int s = n - 1; s > 0; s--) {
        int r = rng_int(s + 1), t = addr[s];
        addr[s] = addr[r];
        addr[r] = t;
    }
    double t1 = 1.0 + 1.0 / 128.0;
    errors eall = {0}, eact = {0};
    if (gpuirr_predict_all(g, 1, n, t1) != GPUIRR_OK || gpuirr_force(g, n, addr, acc, jrk) != GPUIRR_OK) {
        printf("FAIL %s: %s\n", level_name[level], gpuirr_last_error());
        fails++;
    }
    compare(p, n, addr, t1, acc, jrk, &eall);

    /* PRED_ALL in two ranges (NBODY6 predicts IFIRST..NTOT), same check. */
    double t1b = t1 + 1.0 / 4096.0;
    if (gpuirr_predict_all(g, 1, n / 3, t1b) != GPUIRR_OK ||
        gpuirr_predict_all(g, n / 3 + 1, n, t1b) != GPUIRR_OK ||
        gpuirr_force(g, n, addr, acc, jrk) != GPUIRR_OK) {
        printf("FAIL %s: %s\n", level_name[level], gpuirr_last_error());
        fails++;
    }
    compare(p, n, addr, t1b, acc, jrk, &eall);

    /* PRED_ACT of a block of actives at a later time, FORCE for them. */
    double t2 = t1 + 1.0 / 1024.0;
    int nact = n < 2 * N_ACTIVE ? n / 2 : N_ACTIVE;
    int *act = addr + rng_int(n - nact);
    if (gpuirr_predict_active(g, nact, act, t2) != GPUIRR_OK ||
        gpuirr_force(g, nact, act, acc, jrk) != GPUIRR_OK) {
        printf("FAIL %s: %s\n", level_name[level], gpuirr_last_error());
        fails++;
    }
    compare(p, nact, act, t2, acc, jrk, &eact);

    double tol = level == 0 ? SCALAR_TOL : ACC_TOL, jtol = level == 0 ? SCALAR_TOL : JRK_TOL;
    /* Bound |da|/|a| only for the double kernel (see the tolerances above). */
    double rtol = level == 0 ? SCALAR_TOL : INFINITY;
    const errors *es[2] = {&eall, &eact};
    const char *what[2] = {"pred_all", "pred_act"};
    for (int w = 0; w < 2; w++) {
        const errors *e = es[w];
        int bad = e->acc_scaled > tol || e->jrk_scaled > jtol || e->acc_rel > rtol ||
                  e->nonfinite || e->nonzero_empty;
        printf("%s %-6s %d thr %s %s: acc err/scale %.2e (tol %.0e), |da|/|a| %.2e (tol %.0e), "
               "jrk err/scale %.2e (tol %.0e), |dj|/|j| %.2e, non-finite %d, non-zero empty %d\n",
               bad ? "FAIL" : "ok  ", level_name[level], threads, what_problem, what[w], e->acc_scaled, tol,
               e->acc_rel, rtol, e->jrk_scaled, jtol, e->jrk_rel, e->nonfinite, e->nonzero_empty);
        fails += bad;
    }
    gpuirr_close(g);
    free(acc);
    free(jrk);
    free(addr);
    return fails != 0;
}

/* The stored x0 and t0 alone: NPAIR pairs at separations 1e-3..1e-6 around
 * |x| ~ 8, fast and each with a velocity of its own, every particle listing
 * its partner, all forced at their common t0 = 1 + 3 * 2^-30.  t0 is exact
 * in the record (a multiple of 2^-33 below 128), so dt = 0 and each force is
 * m dx/r^3 of the stored positions: good to ~1e-6 from the float
 * arithmetic plus the storage's 2^-40 |x| per coordinate, 3 times over in
 * r^-3.  Positions in float alone would be off by up to 2^-24 * 8 / 1e-6, half the
 * force; a t0 off by 2^-40 would move dx by 2^-40 * 200 / 1e-6 = 2e-7 of r. */
static int check_storage(int level)
{
    enum { NPAIR = 32, N = 2 * NPAIR };
    const double offset[3] = {3.7, -2.1, 5.3}, t0 = 1.0 + 3.0 * 0x1p-30;
    double x[N][3], v[N][3], f2[N][3], fd6[N][3], m[N];
    for (int a = 0; a < N; a += 2) {
        double sep = pow(10.0, -3.0 - 3.0 * (a / 2) / (NPAIR - 1.0));
        rng_plummer(x[a]);
        for (int k = 0; k < 3; k++) {
            x[a][k] += offset[k];
            x[a + 1][k] = x[a][k] + sep * rng_normal() / sqrt(3.0);
        }
        for (int b = a; b < a + 2; b++) {
            for (int k = 0; k < 3; k++) {
                v[b][k] = 100.0 * rng_normal();
                f2[b][k] = rng_normal();
                fd6[b][k] = rng_normal();
            }
            m[b] = pow(10.0, -5.0 + 2.0 * rng_uniform());
        }
    }
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    gpuirr *g;
    if (gpuirr_open(&g, N, 2) != GPUIRR_OK) {
        printf("FAIL %s storage: gpuirr_open: %s\n", level_name[level], gpuirr_last_error());
        return 1;
    }
    int addr[N], fails = 0;
    double acc[N][3], jrk[N][3], worst = 0.0, worst_bound = 0.0;
    for (int a = 0; a < N; a++) {
        int partner = (a ^ 1) + 1;
        addr[a] = a + 1;
        if (gpuirr_set_particle(g, a + 1, x[a], v[a], f2[a], fd6[a], m[a], t0) != GPUIRR_OK ||
            gpuirr_set_list(g, a + 1, 1, &partner) != GPUIRR_OK)
            fails++;
    }
    if (fails || gpuirr_predict_all(g, 1, N, t0) != GPUIRR_OK || gpuirr_force(g, N, addr, acc, jrk) != GPUIRR_OK) {
        printf("FAIL %s storage: %s\n", level_name[level], gpuirr_last_error());
        gpuirr_close(g);
        return 1;
    }
    for (int a = 0; a < N; a++) {
        int j = a ^ 1;
        double dx[3], dv[3], ra[3], rj[3], da[3], dj[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = x[j][k] - x[a][k];
            dv[k] = v[j][k] - v[a][k];
        }
        double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2], r = sqrt(r2);
        double mr3 = m[j] / (r2 * r), rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) / r2;
        for (int k = 0; k < 3; k++) {
            ra[k] = mr3 * dx[k];
            rj[k] = mr3 * (dv[k] - rv * dx[k]);
            da[k] = acc[a][k] - ra[k];
            dj[k] = jrk[a][k] - rj[k];
        }
        double stored = 0x1p-40 * (norm3(x[a]) + norm3(x[j])) / r;
        double bound = 1e-6 + 4.0 * stored;
        double e = fmax(norm3(da) / (mr3 * r), norm3(dj) / (mr3 * (norm3(dv) + fabs(rv) * r)));
        if (e > bound) {
            printf("FAIL %s storage: pair %d (r = %.1e at |x| = %.1f): error %.2e of the term, bound %.2e\n",
                   level_name[level], a / 2, r, norm3(x[a]), e, bound);
            fails++;
        }
        if (e / bound > worst / (worst_bound > 0 ? worst_bound : 1.0)) {
            worst = e;
            worst_bound = bound;
        }
    }
    printf("%s %-6s storage (x0, t0 at dt = 0, r = 1e-3..1e-6): worst error %.2e of the term, its bound %.2e\n",
           fails ? "FAIL" : "ok  ", level_name[level], worst, worst_bound);
    gpuirr_close(g);
    return fails != 0;
}

int main(void)
{
    problem p, plong;
    int fails = 0, ran = 0;
    unsigned long long seed = rng_seed_fresh();
    printf("test_gpuirr_simd: seed %llu (NB6_TEST_SEED=%llu repeats it), CPU %s\n", seed, seed,
           cpu_model());
    make_problem(&p, N_BASE, LMAX, 0);
    make_problem(&plong, N_LONG, LMAX_LONG, 1);

    setenv("NB6ACCEL_SIMD", "bogus", 1);
    gpuirr *g = NULL;
    if (gpuirr_open(&g, 10, 10) == GPUIRR_OK || !strstr(gpuirr_last_error(), "\"bogus\"")) {
        printf("FAIL: NB6ACCEL_SIMD=bogus was not refused with a message naming it (\"%s\")\n",
               gpuirr_last_error());
        fails++;
        gpuirr_close(g);
    }

    for (int l = 0; l < NLEVELS; l++) {
        if (!level_compiled(l)) {
            printf("skip %-6s: not compiled into this build\n", level_name[l]);
            continue;
        }
        if (!level_cpu_has(l)) {
            setenv("NB6ACCEL_SIMD", level_name[l], 1);
            if (gpuirr_open(&g, 10, 10) == GPUIRR_OK) {
                printf("FAIL %s: opened on a CPU without it\n", level_name[l]);
                fails++;
                gpuirr_close(g);
            } else
                printf("skip %-6s: this CPU lacks it (%s)\n", level_name[l], gpuirr_last_error());
            continue;
        }
        const int threads[3] = {1, 2, 4};
        for (int t = 0; t < 3; t++) {
            fails += check_level(&p, "nearest", l, threads[t]);
            ran++;
        }
        fails += check_level(&plong, "long", l, 4);
        fails += check_storage(l);
        ran += 2;
    }
    unsetenv("NB6ACCEL_SIMD");
    if (gpuirr_open(&g, 10, 10) == GPUIRR_OK) {
        printf("default kernel on this CPU: %s\n", gpuirr_kernel_name(g));
        gpuirr_close(g);
    }
    printf("%s: %d runs, %d failed\n", fails ? "FAIL" : "PASS", ran, fails);
    free_problem(&p);
    free_problem(&plong);
    return fails ? 1 : 0;
}
