/* test_gpunb_simd.c -- the SIMD + OpenMP host back-end of GPUNB ("cpu") at
 * every SIMD level this build has and this CPU runs (NB6ACCEL_SIMD), at 1, 2
 * and 4 OpenMP threads, against a double-precision reference computed here,
 * on fresh random inputs: a Plummer sphere offset from the origin, tight
 * pairs, exact twins (r = 0), zero-mass ghosts far away, neighbour radii that
 * put ~10..140 particles in a sphere so that some lists overflow nbmax.
 * Every column is checked for its format; CHECKED random columns in full.
 *
 * Lists: the criterion min(r^2, |dx + dtr dv|^2) < m_j h2 is evaluated in
 * float by the back-end, in double here; a j on which they disagree must lie
 * within BOUNDARY_TOL (relative) of the boundary.  Lists must be ascending,
 * contain self (when m_i > 0), be negative exactly when they overflow, and
 * nothing may be written past the list array.
 * Forces: the reference leaves out exactly the members the back-end listed
 * (so boundary cases do not count as errors) and measures
 *   acc, pot: max_i |err| / sum_j |term_j|  <= FORCE_TOL (1e-6)
 *   jrk:      max_i |err| / sum_j |term_j|  <= JRK_TOL (2e-6)
 * (float pair terms, about 5e-7 each in the worst case; sums in double per
 * tile, see gpunb/simd/gpunb_simd_kernel.c).
 * gpunb_potential (GPUPOT, the energy check) must stay double precision:
 * max_k |pot - pot_ref| / pot_ref <= POT_TOL (1e-12), at every level. */
#include "simd_testutil.h"
#include "gpunb.h"

#define BOUNDARY_TOL 2e-5
#define FORCE_TOL 1e-6
#define JRK_TOL 2e-6
#define POT_TOL 1e-12

enum { NJ = 5000, CHECKED = 1000, NGHOST = 10, LMAX = 160, NBMAX = 120, SENTINEL = 0x5a5a5a5a };

typedef struct problem {
    int n;
    double *m, (*x)[3], (*v)[3], *h2, *dtr;
} problem;

static void make_problem(problem *p)
{
    const double offset[3] = {-4.2, 1.3, 2.9};
    int n = NJ;
    p->n = n;
    p->m = calloc(n, sizeof *p->m);
    p->x = calloc(n, sizeof *p->x);
    p->v = calloc(n, sizeof *p->v);
    p->h2 = calloc(n, sizeof *p->h2);
    p->dtr = calloc(n, sizeof *p->dtr);
    for (int j = 0; j < n; j++) {
        if (j >= n - NGHOST) { /* merger ghosts: massless, far away */
            p->x[j][0] = 1e6 + j;
            p->x[j][1] = p->x[j][2] = 0.0;
            p->m[j] = 0.0;
            continue;
        }
        if (j > 0 && rng_uniform() < 0.05) { /* exact twin of the previous one */
            memcpy(p->x[j], p->x[j - 1], sizeof p->x[j]);
        } else if (j > 0 && rng_uniform() < 0.1) { /* tight pair */
            double sep = pow(10.0, -3.0 - 2.0 * rng_uniform());
            for (int k = 0; k < 3; k++)
                p->x[j][k] = p->x[j - 1][k] + sep * rng_normal() / sqrt(3.0);
        } else {
            rng_plummer(p->x[j]);
            for (int k = 0; k < 3; k++)
                p->x[j][k] += offset[k];
        }
        for (int k = 0; k < 3; k++)
            p->v[j][k] = 0.5 * rng_normal();
        p->m[j] = (rng_uniform() < 0.02 ? 0.0 : 0.5 + rng_uniform()) / NJ;
    }
    for (int i = 0; i < n; i++) {
        /* Neighbour sphere of 20..200 mean-mass particles of the local density. */
        double r = sqrt((p->x[i][0] - offset[0]) * (p->x[i][0] - offset[0]) +
                        (p->x[i][1] - offset[1]) * (p->x[i][1] - offset[1]) +
                        (p->x[i][2] - offset[2]) * (p->x[i][2] - offset[2]));
        double rho = 3.0 / (4.0 * M_PI) * pow(1.0 + r * r, -2.5) * NJ; /* number density */
        double want = 10.0 + 130.0 * rng_uniform();
        double rs = cbrt(want / (4.0 / 3.0 * M_PI * rho));
        p->h2[i] = rs * rs * NJ; /* m_j h2 ~ rs^2 for a mean mass 1/NJ */
        p->dtr[i] = 0.02 * rng_uniform();
    }
}

static void free_problem(problem *p)
{
    free(p->m);
    free(p->x);
    free(p->v);
    free(p->h2);
    free(p->dtr);
}

/* Double-precision criterion: returns min(r2, rp2) - m_j h2 relative to m_j h2. */
static double criterion(const problem *p, int i, int j, double *r2out)
{
    double dx[3], dp[3];
    for (int k = 0; k < 3; k++) {
        double dv = p->v[j][k] - p->v[i][k];
        dx[k] = p->x[j][k] - p->x[i][k];
        dp[k] = dx[k] + p->dtr[i] * dv;
    }
    double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
    double rp2 = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2];
    double lim = p->m[j] * p->h2[i];
    *r2out = r2;
    return lim > 0 ? (fmin(r2, rp2) - lim) / lim : (fmin(r2, rp2) < lim ? -1.0 : 1.0);
}

static double norm3(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

typedef struct errors {
    double acc, jrk, pot;
    int list_bad, ambiguous, overflowed;
} errors;

/* Checks column i; returns a description of the first list defect or NULL. */
static const char *check_one(const problem *p, int i, const int *col, const double acc[3],
                             const double jrk[3], double pot, errors *e, char *inlist)
{
    const int limit = NBMAX < LMAX - 1 ? NBMAX : LMAX - 1;
    int count = col[0], nref = 0, nsure = 0;
    memset(inlist, 0, p->n);
    for (int j = 0; j < p->n; j++) {
        double r2, c = criterion(p, i, j, &r2);
        nref += c < 0;
        nsure += c < -BOUNDARY_TOL;
    }
    if (count < 0) { /* overflow: the true count must exceed the limit */
        e->overflowed++;
        if (-count <= limit)
            return "negative count within the limit";
        if (nref <= limit && nsure <= limit && -count > nref + 8)
            return "negative count but the reference count is within the limit";
        return NULL;
    }
    if (count > limit)
        return "count above the limit";
    for (int e2 = 1; e2 <= count; e2++) {
        int j = col[e2];
        if (j < 0 || j >= p->n)
            return "member outside 0..nj-1";
        if (e2 > 1 && col[e2 - 1] >= j)
            return "not strictly ascending";
        inlist[j] = 1;
    }
    if (p->m[i] > 0 && !inlist[i])
        return "self missing";
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0, as = 0, js = 0, ps = 0;
    for (int j = 0; j < p->n; j++) {
        double r2, c = criterion(p, i, j, &r2);
        if ((c < 0) != inlist[j]) {
            if (fabs(c) > BOUNDARY_TOL)
                return inlist[j] ? "a member that is no neighbour" : "a neighbour missing";
            e->ambiguous++;
        }
        if (inlist[j] || r2 == 0.0)
            continue;
        double dx[3], dv[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = p->x[j][k] - p->x[i][k];
            dv[k] = p->v[j][k] - p->v[i][k];
        }
        double rinv2 = 1.0 / r2, rinv = sqrt(rinv2), mr3 = p->m[j] * rinv * rinv2;
        double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
        for (int k = 0; k < 3; k++) {
            a[k] += mr3 * dx[k];
            jk[k] += mr3 * (dv[k] - rv * dx[k]);
        }
        phi += p->m[j] * rinv;
        as += mr3 * sqrt(r2);
        js += mr3 * (norm3(dv) + fabs(rv) * sqrt(r2));
        ps += p->m[j] * rinv;
    }
    double da[3], dj[3];
    for (int k = 0; k < 3; k++) {
        da[k] = acc[k] - a[k];
        dj[k] = jrk[k] - jk[k];
    }
    if (!isfinite(norm3(acc)) || !isfinite(norm3(jrk)) || !isfinite(pot))
        return "non-finite force";
    if (as > 0) {
        e->acc = fmax(e->acc, norm3(da) / as);
        e->jrk = fmax(e->jrk, norm3(dj) / js);
        e->pot = fmax(e->pot, fabs(pot - phi) / ps);
    }
    return NULL;
}

/* The regular force of i = 0 .. ni-1 (ni <= n) against all n j. */
static int check_level(const problem *p, int level, int threads, int ni)
{
    const int n = p->n;
    gpunb *nb;
    int fails = 0;
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    set_threads(threads);
    if (gpunb_open(&nb, n + 100, GPUNB_BACKEND_CPU) != GPUNB_OK) {
        printf("FAIL %s: gpunb_open: %s\n", level_name[level], gpunb_last_error());
        return 1;
    }
    if (strcmp(gpunb_backend_name(nb), "cpu") != 0 ||
        !strstr(gpunb_backend_description(nb), level_name[level])) {
        printf("FAIL %s: back-end \"%s\" (%s)\n", level_name[level], gpunb_backend_name(nb),
               gpunb_backend_description(nb));
        fails++;
    }
    double (*acc)[3] = malloc(sizeof *acc * n), (*jrk)[3] = malloc(sizeof *jrk * n);
    double *pot = malloc(sizeof(double) * n);
    size_t words = (size_t)ni * LMAX;
    int *list = malloc(sizeof(int) * (words + 64));
    char *inlist = malloc(n);
    for (size_t w = 0; w < words + 64; w++)
        list[w] = SENTINEL;
    if (gpunb_send(nb, n, p->m, (const double(*)[3])p->x, (const double(*)[3])p->v) != GPUNB_OK ||
        gpunb_regf(nb, ni, p->h2, p->dtr, (const double(*)[3])p->x, (const double(*)[3])p->v, acc,
                   jrk, pot, LMAX, NBMAX, list) != GPUNB_OK) {
        printf("FAIL %s: %s\n", level_name[level], gpunb_last_error());
        fails++;
    }
    errors e = {0};
    int list_fail = 0;
    for (size_t w = words; w < words + 64; w++)
        if (list[w] != SENTINEL) {
            printf("FAIL %s: written past the list array\n", level_name[level]);
            fails++;
            break;
        }
    for (int c = 0; c < ni; c++) {
        /* the last i first: with an odd ni it has a pass of its own */
        int i = c == 0 ? ni - 1 : c < CHECKED ? rng_int(ni) : c;
        if (c >= CHECKED) { /* format only: count within the limit or negative, ascending */
            const int *col = list + (size_t)i * LMAX;
            int bad_col = col[0] > LMAX - 1 || col[0] > NBMAX;
            for (int e2 = 2; e2 <= col[0] && !bad_col; e2++)
                bad_col = col[e2 - 1] >= col[e2];
            if (bad_col && list_fail++ < 5)
                printf("FAIL %s: i = %d: malformed column (count %d)\n", level_name[level], i, col[0]);
            continue;
        }
        const char *why = check_one(p, i, list + (size_t)i * LMAX, acc[i], jrk[i], pot[i], &e, inlist);
        if (why && list_fail++ < 5)
            printf("FAIL %s: i = %d: %s (count %d)\n", level_name[level], i, why, list[(size_t)i * LMAX]);
    }
    int bad = list_fail || e.acc > FORCE_TOL || e.pot > FORCE_TOL || e.jrk > JRK_TOL;
    printf("%s %-6s %d thr, %d i: acc err/scale %.2e, pot %.2e (tol %.0e), jrk %.2e (tol %.0e); "
           "lists: %d bad, %d boundary-ambiguous members, %d overflowed\n",
           bad ? "FAIL" : "ok  ", level_name[level], threads, ni, e.acc, e.pot, FORCE_TOL, e.jrk,
           JRK_TOL, list_fail, e.ambiguous, e.overflowed);
    fails += bad;
    gpunb_close(nb);
    free(acc);
    free(jrk);
    free(pot);
    free(list);
    free(inlist);
    return fails != 0;
}

/* GPUPOT against the double reference; returns 1 on failure. */
static int check_potential(const problem *p, int level)
{
    int n = p->n;
    double *pot = malloc(sizeof(double) * n), worst = 0.0;
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    if (gpunb_potential(n, p->m, (const double(*)[3])p->x, pot) != GPUNB_OK) {
        printf("FAIL %s: gpunb_potential: %s\n", level_name[level], gpunb_last_error());
        free(pot);
        return 1;
    }
    for (int k = 0; k < n; k++) {
        double phi = 0.0;
        for (int l = 0; l < n; l++) {
            double dx = p->x[l][0] - p->x[k][0], dy = p->x[l][1] - p->x[k][1],
                   dz = p->x[l][2] - p->x[k][2], r2 = dx * dx + dy * dy + dz * dz;
            if (l != k && r2 > 0.0)
                phi += p->m[l] / sqrt(r2);
        }
        double err = phi > 0 ? fabs(pot[k] - phi) / phi : fabs(pot[k]);
        worst = isfinite(pot[k]) ? fmax(worst, err) : INFINITY;
    }
    free(pot);
    printf("%s %-6s gpunb_potential: max rel err %.2e (tol %.0e)\n",
           worst <= POT_TOL ? "ok  " : "FAIL", level_name[level], worst, POT_TOL);
    return worst > POT_TOL;
}

int main(void)
{
    problem p;
    int fails = 0, ran = 0;
    unsigned long long seed = rng_seed_fresh();
    printf("test_gpunb_simd: seed %llu (NB6_TEST_SEED=%llu repeats it), CPU %s\n", seed, seed,
           cpu_model());
    make_problem(&p);
    gpunb *nb = NULL;
    setenv("NB6ACCEL_SIMD", "bogus", 1);
    if (gpunb_open(&nb, 10, GPUNB_BACKEND_CPU) == GPUNB_OK ||
        !strstr(gpunb_last_error(), "\"bogus\"")) {
        printf("FAIL: NB6ACCEL_SIMD=bogus was not refused with a message naming it (\"%s\")\n",
               gpunb_last_error());
        fails++;
        gpunb_close(nb);
    }
    for (int l = 0; l < NLEVELS; l++) {
        if (!level_compiled(l)) {
            printf("skip %-6s: not compiled into this build\n", level_name[l]);
            continue;
        }
        if (!level_cpu_has(l)) {
            setenv("NB6ACCEL_SIMD", level_name[l], 1);
            if (gpunb_open(&nb, 10, GPUNB_BACKEND_CPU) == GPUNB_OK) {
                printf("FAIL %s: opened on a CPU without it\n", level_name[l]);
                fails++;
                gpunb_close(nb);
            } else
                printf("skip %-6s: this CPU lacks it (%s)\n", level_name[l], gpunb_last_error());
            continue;
        }
        /* The kernel takes the i in pairs: an odd count too, and one i alone. */
        const int threads[4] = {1, 2, 4, 2}, ni[4] = {p.n, p.n - NGHOST - 1, p.n, 1};
        for (int t = 0; t < 4; t++) {
            fails += check_level(&p, l, threads[t], ni[t]);
            ran++;
        }
        fails += check_potential(&p, l);
    }
    printf("%s: %d runs, %d failed\n", fails ? "FAIL" : "PASS", ran, fails);
    free_problem(&p);
    return fails ? 1 : 0;
}
