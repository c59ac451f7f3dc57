/* test_gpuirr_lazy.c -- GPUIRR's lazy prediction: PRED_ALL and PRED_ACT only
 * start an epoch, each force call predicts the due slots it reads, each
 * exactly once per epoch.  For every kernel this build has and this CPU runs,
 * at 1, 2, 4 and 8 OpenMP threads, on fresh random inputs (Plummer sphere
 * offset from the origin, lists drawn from a window of neighbouring slots so
 * that the lists of one call and of successive calls overlap heavily):
 *   - several FIRR_VEC per PRED_ALL epoch on overlapping sets, SET_LIST
 *     between them (members no earlier list had), a one-particle call (the
 *     serial path);
 *   - SET_JP after PRED_ALL, of slots already predicted in the epoch: the
 *     next FIRR_VEC must see the new records (no stale prediction);
 *   - PRED_ACT, two FIRR_VEC in its epoch;
 *   - PRED_ALL over two sub-ranges at different times: each slot at the time
 *     of the last call that covered it; then PRED_ALL over a range that
 *     leaves part of the previous one out;
 *   - PRED_ACT of every particle (the range streamed, the rest claimed),
 *     a call on every particle after PRED_ALL (the streamed path).
 * Each force is checked against a double reference at the time each slot
 * must have (tolerances as test_gpuirr_simd: acc error / sum |terms| <=
 * 7.5e-7, jerk 1.5e-6; 1e-12 for the double kernel), and the number of
 * slots predicted (gpuirr_get_stats) against the count of due slots read
 * and not yet predicted in the epoch: a slot predicted twice, or one read
 * and never predicted, fails.  (A call whose reads, repeats counted, reach
 * the size of the due range may predict the whole range in order; the
 * calls here stay far below that, but for the every-particle calls, which
 * read all of it anyway.) */
#include "simd_testutil.h"
#include "gpuirr.h"

#define ACC_TOL 7.5e-7
#define JRK_TOL 1.5e-6
#define SCALAR_TOL 1e-12

enum { N = 100000, LMAX = 80, WINDOW = 400, NSET = 100 };

static double x0[N][3], v0[N][3], f2[N][3], fd6[N][3], mass[N], t0s[N];
static int list[N][LMAX];   /* count, then 1-based members, as stored */
static double tslot[N];     /* the time slot s must be predicted to */
static int marked[N];       /* predicted in the current epoch (the model) */
static int due_lo, due_hi, due_any; /* the model's due set (0-based range) */

static void random_record(int s, double t0)
{
    rng_plummer(x0[s]);
    for (int k = 0; k < 3; k++) {
        x0[s][k] += 4.0 + k;
        v0[s][k] = 0.5 * rng_normal();
        f2[s][k] = 0.3 * rng_normal();
        fd6[s][k] = 0.5 * rng_normal();
    }
    mass[s] = rng_uniform() < 0.02 ? 0.0 : pow(10.0, -5.0 + 2.0 * rng_uniform());
    t0s[s] = t0;
}

/* Members from the window of slots around s, so lists overlap. */
static void random_list(int s)
{
    int len = rng_int(10) == 0 ? 0 : 20 + rng_int(LMAX - 20); /* mean ~45 */
    list[s][0] = len;
    for (int e = 1; e <= len; e++) {
        int j;
        do
            j = s - WINDOW / 2 + rng_int(WINDOW);
        while (j < 0 || j >= N || j == s);
        list[s][e] = j + 1;
    }
}

static void predict_ref(int s, double x[3], double v[3])
{
    double dt = tslot[s] - t0s[s];
    for (int k = 0; k < 3; k++) {
        x[k] = x0[s][k] + dt * (v0[s][k] + dt * (f2[s][k] + dt * fd6[s][k]));
        v[k] = v0[s][k] + 2.0 * dt * (f2[s][k] + 1.5 * dt * fd6[s][k]);
    }
}

static double norm3(const double a[3]) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

/* Worst scaled errors of one force call against the reference. */
static void check_call(int ni, const int *addr, double (*acc)[3], double (*jrk)[3], double *aerr,
                       double *jerr)
{
    for (int n = 0; n < ni; n++) {
        int i = addr[n] - 1;
        double xi[3], vi[3], a[3] = {0}, jk[3] = {0}, as = 0, js = 0, da[3], dj[3];
        predict_ref(i, xi, vi);
        for (int e = 1; e <= list[i][0]; e++) {
            int j = list[i][e] - 1;
            double xj[3], vj[3], dx[3], dv[3];
            predict_ref(j, xj, vj);
            for (int k = 0; k < 3; k++) {
                dx[k] = xj[k] - xi[k];
                dv[k] = vj[k] - vi[k];
            }
            double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            double rinv2 = 1.0 / r2, mr3 = mass[j] * rinv2 * sqrt(rinv2);
            double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
            for (int k = 0; k < 3; k++) {
                a[k] += mr3 * dx[k];
                jk[k] += mr3 * (dv[k] - rv * dx[k]);
            }
            as += mr3 * sqrt(r2);
            js += mr3 * (norm3(dv) + fabs(rv) * sqrt(r2));
        }
        for (int k = 0; k < 3; k++) {
            da[k] = acc[n][k] - a[k];
            dj[k] = jrk[n][k] - jk[k];
            if (!isfinite(acc[n][k]) || !isfinite(jrk[n][k]))
                *aerr = INFINITY;
        }
        if (list[i][0] == 0) {
            if (norm3(acc[n]) != 0.0 || norm3(jrk[n]) != 0.0)
                *aerr = INFINITY;
        } else if (as > 0) {
            *aerr = fmax(*aerr, norm3(da) / as);
            *jerr = fmax(*jerr, norm3(dj) / js);
        }
    }
}

static int due(int s) { return !marked[s] && (due_any || (s >= due_lo && s <= due_hi)); }

/* The model: slots this call reads that are due and not yet predicted. */
static long long expected_predictions(int ni, const int *addr)
{
    long long c = 0;
    for (int n = 0; n < ni; n++) {
        int i = addr[n] - 1;
        if (due(i))
            marked[i] = 1, c++;
        for (int e = 1; e <= list[i][0]; e++) {
            int j = list[i][e] - 1;
            if (due(j))
                marked[j] = 1, c++;
        }
    }
    return c;
}

typedef struct run {
    gpuirr *g;
    const char *level;
    int threads, fails;
    double acc[N][3], jrk[N][3];
} run;

static void step(run *r, const char *what, int ni, const int *addr)
{
    gpuirr_stats before, after;
    double aerr = 0, jerr = 0;
    gpuirr_get_stats(r->g, &before);
    long long want = expected_predictions(ni, addr);
    if (gpuirr_force(r->g, ni, addr, r->acc, r->jrk) != GPUIRR_OK) {
        printf("FAIL %s %d thr %s: %s\n", r->level, r->threads, what, gpuirr_last_error());
        r->fails++;
        return;
    }
    gpuirr_get_stats(r->g, &after);
    long long got = after.particles_predicted - before.particles_predicted;
    check_call(ni, addr, r->acc, r->jrk, &aerr, &jerr);
    int scalar = strcmp(r->level, "scalar") == 0;
    double atol = scalar ? SCALAR_TOL : ACC_TOL, jtol = scalar ? SCALAR_TOL : JRK_TOL;
    int bad = !(aerr <= atol) || !(jerr <= jtol) || got != want;
    if (bad || r->threads == 1)
        printf("%s %-6s %d thr %-44s ni %5d: acc err/scale %.2e, jrk err/scale %.2e, "
               "predicted %lld (due and read: %lld)\n",
               bad ? "FAIL" : "ok  ", r->level, r->threads, what, ni, aerr, jerr, got, want);
    r->fails += bad;
}

static void set_record(run *r, int s)
{
    if (gpuirr_set_particle(r->g, s + 1, x0[s], v0[s], f2[s], fd6[s], mass[s], t0s[s]) != GPUIRR_OK) {
        printf("FAIL set_particle %d: %s\n", s + 1, gpuirr_last_error());
        r->fails++;
    }
    marked[s] = 0;
}

static void set_list(run *r, int s)
{
    if (gpuirr_set_list(r->g, s + 1, list[s][0], list[s] + 1) != GPUIRR_OK) {
        printf("FAIL set_list %d: %s\n", s + 1, gpuirr_last_error());
        r->fails++;
    }
}

/* An epoch in the model: slots first..last (0-based) due at t, or with any
 * every slot read. */
static void model_epoch(int any, int first, int last, double t)
{
    /* Slots of the old range left out and never read keep the old time
     * (nothing to do in the model: tslot already holds it). */
    memset(marked, 0, sizeof marked);
    due_any = any;
    if (!any) {
        due_lo = first;
        due_hi = last;
    }
    for (int s = 0; s < N; s++)
        if (any || (s >= first && s <= last))
            tslot[s] = t;
}

/* NSET particles, a window of slots starting at s0, shuffled. */
static void window_set(int *addr, int s0)
{
    for (int n = 0; n < NSET; n++)
        addr[n] = (s0 + n) % N + 1;
    for (int n = NSET - 1; n > 0; n--) {
        int k = rng_int(n + 1), t = addr[n];
        addr[n] = addr[k];
        addr[k] = t;
    }
}

static int check_level(int level, int threads)
{
    static run r;
    static int all[N];
    int s1[NSET], s2[NSET], s3[NSET];
    memset(&r, 0, sizeof r);
    r.level = level_name[level];
    r.threads = threads;
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    if (gpuirr_open(&r.g, N, LMAX) != GPUIRR_OK) {
        printf("FAIL %s: gpuirr_open: %s\n", level_name[level], gpuirr_last_error());
        return 1;
    }
    set_threads(threads);
    for (int s = 0; s < N; s++) {
        random_record(s, 1.0 - rng_uniform() / 64.0);
        random_list(s);
        set_record(&r, s);
        set_list(&r, s);
        all[s] = s + 1;
    }

    /* A PRED_ALL epoch, calls on overlapping sets, lists changed between. */
    double t = 1.0 + 1.0 / 128.0;
    gpuirr_predict_all(r.g, 1, N, t);
    model_epoch(0, 0, N - 1, t);
    int base = rng_int(N);
    window_set(s1, base);
    window_set(s2, base + NSET / 2);
    step(&r, "pred_all: first call", NSET, s1);
    step(&r, "pred_all: same set again (nothing due)", NSET, s1);
    for (int n = 0; n < NSET / 3; n++) { /* new lists, as SET_LIST in a regular block */
        random_list(s2[n] - 1);
        set_list(&r, s2[n] - 1);
    }
    step(&r, "pred_all: overlapping set, new lists", NSET, s2);
    step(&r, "pred_all: one particle (serial path)", 1, s1 + 7);

    /* SET_JP after PRED_ALL, of slots already predicted: seen at once. */
    for (int n = 0; n < NSET; n += 3) {
        int s = s1[n] - 1;
        random_record(s, t - 1.0 / 512.0);
        set_record(&r, s);
    }
    step(&r, "pred_all: after SET_JP of predicted slots", NSET, s1);

    /* A PRED_ACT epoch, two calls in it. */
    t += 1.0 / 1024.0;
    window_set(s3, rng_int(N));
    gpuirr_predict_active(r.g, NSET, s3, t);
    model_epoch(1, 0, 0, t);
    step(&r, "pred_act: the actives", NSET, s3);
    step(&r, "pred_act: half of them again", NSET / 2, s3 + NSET / 4);

    /* PRED_ALL over two sub-ranges at different times. */
    double ta = t + 1.0 / 2048.0, tb = ta + 1.0 / 4096.0;
    int cut = N / 3 + rng_int(N / 3);
    gpuirr_predict_all(r.g, 1, cut, ta);
    model_epoch(0, 0, cut - 1, ta);
    gpuirr_predict_all(r.g, cut + 1, N, tb);
    model_epoch(0, cut, N - 1, tb);
    window_set(s1, cut - NSET / 2); /* lists on both sides of the cut */
    step(&r, "two sub-ranges at two times", NSET, s1);
    /* A range that leaves out part of the last one. */
    double tc = tb + 1.0 / 4096.0;
    int first = cut + WINDOW;
    gpuirr_predict_all(r.g, first + 1, N, tc);
    model_epoch(0, first, N - 1, tc);
    window_set(s2, first - NSET / 2);
    step(&r, "a range leaving part of the last one out", NSET, s2);

    /* PRED_ACT of every particle, the range of the last PRED_ALL leaving
     * slots out: the range streamed, the slots outside it claimed. */
    double te = tc + 1.0 / 8192.0;
    gpuirr_predict_active(r.g, N, all, te);
    model_epoch(1, 0, 0, te);
    step(&r, "pred_act of every particle", N, all);

    /* Every particle: the streamed path. */
    double td = te + 1.0 / 4096.0;
    gpuirr_predict_all(r.g, 1, N, td);
    model_epoch(0, 0, N - 1, td);
    step(&r, "every particle", N, all);
    step(&r, "every particle again (nothing due)", N, all);

    gpuirr_close(r.g);
    return r.fails != 0;
}

int main(void)
{
    int fails = 0, ran = 0;
    unsigned long long seed = rng_seed_fresh();
    printf("test_gpuirr_lazy: seed %llu (NB6_TEST_SEED=%llu repeats it), CPU %s\n", seed, seed,
           cpu_model());
    for (int l = 0; l < NLEVELS; l++) {
        if (!level_compiled(l) || !level_cpu_has(l)) {
            printf("skip %-6s: %s\n", level_name[l],
                   level_compiled(l) ? "this CPU lacks it" : "not compiled into this build");
            continue;
        }
        const int threads[4] = {1, 2, 4, 8};
        for (int t = 0; t < 4; t++) {
            fails += check_level(l, threads[t]);
            ran++;
        }
    }
    unsetenv("NB6ACCEL_SIMD");
    printf("%s: %d runs, %d failed\n", fails ? "FAIL" : "PASS", ran, fails);
    return fails ? 1 : 0;
}
