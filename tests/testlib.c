#include "testlib.h"
#include "nb6_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t state[4], seed_used;
static int passed, failed;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void tl_seed_from_env(void)
{
    const char *env = getenv("NB6_TEST_SEED");
    uint64_t s = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    seed_used = s;
    for (int k = 0; k < 4; k++)
        state[k] = splitmix(&s);
    printf("random seed %llu (set NB6_TEST_SEED to repeat)\n", (unsigned long long)seed_used);
}

uint64_t tl_seed(void) { return seed_used; }

/* xoshiro256** */
static uint64_t next(void)
{
    uint64_t r = rotl(state[1] * 5, 7) * 9, t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return r;
}

double tl_uniform(void) { return (double)(next() >> 11) * 0x1.0p-53; }

double tl_normal(void)
{
    double u = tl_uniform(), w = tl_uniform();
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * w);
}

int tl_int(int lo, int hi) { return lo + (int)(tl_uniform() * (double)(hi - lo + 1)); }

void tl_shuffled_range(int *out, int n, int first)
{
    for (int k = 0; k < n; k++)
        out[k] = first + k;
    for (int k = n - 1; k > 0; k--) {
        int s = tl_int(0, k), tmp = out[k];
        out[k] = out[s];
        out[s] = tmp;
    }
}

static void random_direction(double r, double out[3])
{
    double z = 2.0 * tl_uniform() - 1.0, phi = 2.0 * M_PI * tl_uniform();
    double s = sqrt(1.0 - z * z);
    out[0] = r * s * cos(phi);
    out[1] = r * s * sin(phi);
    out[2] = r * z;
}

void tl_cluster_make(tl_cluster *c, int n, int nghost, double offset, double pair_fraction)
{
    double mtot = 0.0;
    c->n = n;
    c->m = calloc((size_t)n, sizeof(double));
    c->x = calloc((size_t)n, sizeof(double[3]));
    c->v = calloc((size_t)n, sizeof(double[3]));
    for (int i = 0; i < n; i++) {
        /* Plummer radius (scale length 3pi/16) and an isotropic velocity of
         * the local escape-speed scale: enough structure for neighbour lists. */
        double X = 0.999 * tl_uniform() + 1e-6;
        double r = 3.0 * M_PI / 16.0 / sqrt(pow(X, -2.0 / 3.0) - 1.0);
        double vesc = sqrt(2.0) * pow(1.0 + r * r, -0.25);
        random_direction(r, c->x[i]);
        random_direction(0.5 * vesc * tl_uniform(), c->v[i]);
        for (int k = 0; k < 3; k++)
            c->x[i][k] += offset;
        c->m[i] = exp(log(100.0) * tl_uniform());
    }
    /* Tight pairs: particle i+1 sits 1e-4 from particle i. */
    for (int i = 0; i + 1 < n - nghost; i += 2) {
        if (tl_uniform() >= pair_fraction)
            continue;
        double d[3];
        random_direction(1e-4 * (0.5 + tl_uniform()), d);
        for (int k = 0; k < 3; k++) {
            c->x[i + 1][k] = c->x[i][k] + d[k];
            c->v[i + 1][k] = c->v[i][k] + 0.3 * tl_normal();
        }
    }
    for (int i = n - nghost; i < n; i++) {
        c->m[i] = 0.0;
        c->x[i][0] = 1.0e6;
        c->x[i][1] = c->x[i][2] = 0.0;
        c->v[i][0] = c->v[i][1] = c->v[i][2] = 0.0;
    }
    for (int i = 0; i < n; i++)
        mtot += c->m[i];
    for (int i = 0; i < n; i++)
        c->m[i] /= mtot;
}

typedef struct morton_key {
    unsigned key;
    int index;
} morton_key;

static int cmp_morton(const void *a, const void *b)
{
    const morton_key *x = a, *y = b;
    return x->key != y->key ? (x->key > y->key) - (x->key < y->key) : x->index - y->index;
}

void tl_spatial_order(int n, const double (*x)[3], const double centre[3], double half, int group, int *perm)
{
    morton_key *k = malloc(sizeof *k * (size_t)n);
    for (int i = 0; i < n; i++) {
        unsigned c[3];
        for (int d = 0; d < 3; d++) {
            double t = (x[i][d] - centre[d] + half) / (2.0 * half) * 1024.0;
            c[d] = t < 0.0 ? 0u : t >= 1023.0 ? 1023u : (unsigned)t;
        }
        k[i] = (morton_key){nb6_morton10(c), i};
    }
    qsort(k, (size_t)n, sizeof *k, cmp_morton);
    const int runs = group > 1 ? n / group : 0;
    int s = (int)(0.618 * runs) | 1;
    for (;; s += 2) { /* coprime to runs */
        int a = s, b = runs;
        while (b) {
            int t = a % b;
            a = b;
            b = t;
        }
        if (a == 1 || runs == 0)
            break;
    }
    for (int i = 0; i < n; i++) {
        const int r = runs ? i / group : 0;
        perm[r < runs ? (int)((long long)r * s % runs) * group + i % group : i] = k[i].index;
    }
    free(k);
}

void tl_permute_rows(double *a, int rows, int width, const int *perm)
{
    double *t = malloc(sizeof(double) * (size_t)rows * (size_t)width);
    for (int r = 0; r < rows; r++)
        memcpy(t + (size_t)r * width, a + (size_t)perm[r] * width, sizeof(double) * (size_t)width);
    memcpy(a, t, sizeof(double) * (size_t)rows * (size_t)width);
    free(t);
}

void tl_cluster_free(tl_cluster *c)
{
    free(c->m);
    free(c->x);
    free(c->v);
    memset(c, 0, sizeof *c);
}

double tl_cluster_mean_mass(const tl_cluster *c)
{
    double s = 0.0;
    int k = 0;
    for (int i = 0; i < c->n; i++)
        if (c->m[i] > 0.0) {
            s += c->m[i];
            k++;
        }
    return k ? s / k : 0.0;
}

double tl_relerr3(const double a[3], const double b[3], double floor)
{
    double d = 0.0, r = 0.0;
    for (int k = 0; k < 3; k++) {
        d += (a[k] - b[k]) * (a[k] - b[k]);
        r += b[k] * b[k];
    }
    d = sqrt(d);
    r = sqrt(r);
    if (d == 0.0)
        return 0.0;
    return d / (r > floor ? r : floor);
}

int tl_check(int ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return 1;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s:%d: ", file, line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    return 0;
}

int tl_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, passed, failed);
    return failed ? 1 : (passed ? 0 : 1);
}

void tl_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("SKIP: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(77);
}

int tl_run_child(void (*fn)(void *), void *arg, char *err, size_t len)
{
    int fds[2], status = 0;
    size_t got = 0;
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn(arg);
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    for (;;) {
        ssize_t r = read(fds[0], err + got, len - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == len - 1) {
            char sink[256];
            while (read(fds[0], sink, sizeof sink) > 0) {
            }
            break;
        }
    }
    err[got] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
void tl_predict(const double x0[3], const double v0[3], const double fh[3], const double fd[3], double dt,
                double x[3], double v[3])
{
    for (int k = 0; k < 3; k++) {
        const double a2 = fh[k], j6 = fd[k];
        x[k] = x0[k] + dt * (v0[k] + dt * (a2 + dt * j6));
        v[k] = v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
    }
}

double tl_pair_add(const double xi[3], const double vi[3], const double xj[3], const double vj[3], double m,
                   double acc[3], double jrk[3], double *dvabs)
{
    double dx[3], dv[3];
    for (int k = 0; k < 3; k++) {
        dx[k] = xj[k] - xi[k];
        dv[k] = vj[k] - vi[k];
    }
    const double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
    *dvabs = sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
    if (r2 == 0.0)
        return 0.0;
    const double r3 = r2 * sqrt(r2), rv = dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2];
    for (int k = 0; k < 3; k++) {
        acc[k] += m * dx[k] / r3;
        jrk[k] += m * (dv[k] / r3 - 3.0 * rv * dx[k] / (r2 * r3));
    }
    return r2;
}
