/* testlib.h -- what every nb6accel test needs: a seeded random generator,
 * NBODY6-like particle sets, relative-error bookkeeping, child processes for
 * the paths that stop the program, and a pass/fail tally. */
#ifndef NB6_TESTLIB_H
#define NB6_TESTLIB_H

#include <stdint.h>
#include <stdio.h>

/* ---- random numbers: seed from NB6_TEST_SEED or the clock, printed ------- */
void tl_seed_from_env(void);
uint64_t tl_seed(void);
double tl_uniform(void);            /* [0,1) */
double tl_normal(void);
int tl_int(int lo, int hi);         /* lo..hi inclusive */
/* out[0..n-1] = first..first+n-1 in a random order (Fisher-Yates). */
void tl_shuffled_range(int *out, int n, int first);

/* ---- particle sets ---------------------------------------------------------
 * A Plummer sphere in N-body units, shifted by `offset` from the origin, with
 * masses spread log-uniformly over a factor 100 (total 1), a fraction of
 * particles placed as tight pairs (separation ~1e-4) and `nghost` zero-mass
 * merger ghosts at x = 1e6 (as NBODY6 keeps them).  Arrays are n long. */
typedef struct tl_cluster {
    int n;
    double *m;
    double (*x)[3];
    double (*v)[3];
} tl_cluster;

void tl_cluster_make(tl_cluster *c, int n, int nghost, double offset, double pair_fraction);
void tl_cluster_free(tl_cluster *c);
/* Mean mass of the massive particles (NBODY6's BODYM). */
double tl_cluster_mean_mass(const tl_cluster *c);

/* ---- spatial order -------------------------------------------------------
 * perm[k] = the index of the k-th of n positions in Morton order (10 bits
 * per axis over the cube centre +- half; beyond it clamped); with group > 1,
 * the runs of `group` consecutive entries are then spread apart (run r goes
 * to place r * s mod runs, s coprime to the number of runs; a short last
 * run stays last).  NBODY6 keeps its bodies in no spatial order: this makes
 * the inputs where neighbours crowd into few j-tiles. */
void tl_spatial_order(int n, const double (*x)[3], const double centre[3], double half, int group, int *perm);
/* a[r] = a[perm[r]] for rows of `width` doubles. */
void tl_permute_rows(double *a, int rows, int width, const int *perm);

/* ---- the documented prediction of a record ---------------------------------
 * x = x0 + dt (v0 + dt (fh + dt fd)), v = v0 + 2 dt (fh + 1.5 dt fd): NBODY6's
 * Horner form, compiled without contraction into FMA, as gpunb_predict and
 * GPUIRR state it (fh = acc/2, fd = jerk/6). */
void tl_predict(const double x0[3], const double v0[3], const double fh[3], const double fd[3], double dt,
                double x[3], double v[3]);

/* The term of j (mass m) on i in double, full acceleration and jerk (G = 1,
 * dx = x_j - x_i), added to acc and jrk; returns r^2 (0: a coincident pair,
 * nothing added) and sets *dvabs = |v_j - v_i|. */
double tl_pair_add(const double xi[3], const double vi[3], const double xj[3], const double vj[3], double m,
                   double acc[3], double jrk[3], double *dvabs);

/* ---- checks -------------------------------------------------------------- */
/* |a - b| / |b| for 3-vectors; |a - b| / floor when |b| < floor; 0 when a == b. */
double tl_relerr3(const double a[3], const double b[3], double floor);

/* Records one check; prints the failure with file:line. */
#define TL_CHECK(cond, ...) tl_check((cond), __FILE__, __LINE__, __VA_ARGS__)
int tl_check(int ok, const char *file, int line, const char *fmt, ...);

/* Prints "name: N passed, M failed" and returns the exit status (0 or 1). */
int tl_finish(const char *name);

/* Skip the whole test with a reason: prints "SKIP: reason" and exits 77. */
void tl_skip(const char *fmt, ...);

/* ---- child processes ------------------------------------------------------
 * Runs fn(arg) in a forked child with stderr captured; returns the child's
 * exit status (128+signal if killed) and the first `len` bytes it wrote to
 * stderr in `err`. */
int tl_run_child(void (*fn)(void *), void *arg, char *err, size_t len);

#endif
