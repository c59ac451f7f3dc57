/* fuzz_api.c -- libFuzzer target: arbitrary sequences of GPUNB and GPUIRR
 * calls with arbitrary arguments (counts, indices, lmax/nbmax, NaN and Inf,
 * calls before open and after close).  The legacy entry points are thin
 * wrappers that stop the program on the status these calls return, so this
 * drives the same checks and kernels without ending the process.
 * A finding is any sanitizer report, hang, or a status/message mismatch:
 * every failed call must leave a message naming its routine. */
#include "gpuirr.h"
#include "gpunb.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAXN = 96, MAXL = 40 };

typedef struct input {
    const uint8_t *p;
    size_t left;
} input;

static uint8_t byte(input *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static int small(input *in, int lo, int hi) { return lo + byte(in) % (hi - lo + 1); }

/* Mostly ordinary values, sometimes the awkward ones. */
static double value(input *in)
{
    uint8_t b = byte(in);
    switch (b % 16) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return 0.0;
    case 3: return 1e6;
    case 4: return -1e-300;
    default: return ((double)b - 128.0) / 32.0 + (double)byte(in) / 4096.0;
    }
}

static void need_message(int st, const char *msg)
{
    if (st != 0 && (msg == NULL || msg[0] == '\0'))
        abort(); /* a failure without a reason */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static double m[MAXN + 4], x[MAXN + 4][3], v[MAXN + 4][3], h2[MAXN], dtr[MAXN];
    static double acc[MAXN][3], jrk[MAXN][3], pot[MAXN + 4], t0[MAXN + 4], tpred[MAXN + 4];
    static int list[MAXN * MAXL], addr[MAXN], members[MAXL + 2];
    input in = {data, size};
    gpunb *nb = NULL;
    gpuirr *g = NULL;
    int cap = 0, nmax = 0, lmax = 1;

    for (int k = 0; k < MAXN + 4; k++) {
        m[k] = (k % 7) ? 1.0 / MAXN : 0.0;
        t0[k] = 0.0;
        tpred[k] = -1.0;
        for (int d = 0; d < 3; d++) {
            x[k][d] = sin(k * 1.7 + d) * (1 + k % 5);
            v[k][d] = cos(k * 0.3 + d);
        }
    }
    while (in.left) {
        int st = 0, op = byte(&in) % 14;
        switch (op) {
        case 0: /* open (again) */
            gpunb_close(nb);
            nb = NULL;
            cap = small(&in, -1, MAXN);
            st = gpunb_open(&nb, cap, (enum gpunb_backend_kind)small(&in, 0, 4));
            need_message(st, gpunb_last_error());
            break;
        case 1:
            gpunb_close(nb);
            nb = NULL;
            break;
        case 2: { /* send, with a few edited values */
            int nj = small(&in, -1, MAXN), k = small(&in, 0, MAXN - 1);
            m[k] = fabs(value(&in));
            x[k][small(&in, 0, 2)] = value(&in);
            st = gpunb_send(nb, nj, m, (const double(*)[3])x, (const double(*)[3])v);
            need_message(st, gpunb_last_error());
            break;
        }
        case 3: { /* regular force */
            int ni = small(&in, -1, MAXN), lm = small(&in, -1, MAXL), nbmax = small(&in, -1, MAXL + 5);
            for (int i = 0; i < MAXN; i++) {
                h2[i] = fabs(value(&in));
                dtr[i] = value(&in) * 0.01;
            }
            if (lm >= 1 && ni > 0 && ni * lm > MAXN * MAXL)
                ni = MAXN * MAXL / lm;
            st = gpunb_regf(nb, ni, h2, dtr, (const double(*)[3])x, (const double(*)[3])v, acc, jrk,
                            pot, lm, nbmax, list);
            need_message(st, gpunb_last_error());
            if (st == 0)
                for (int i = 0; i < ni; i++) {
                    int c = list[i * lm];
                    if (c > lm - 1 || c > nbmax) /* stored counts fit their limits */
                        abort();
                    for (int e = 2; e <= c; e++)
                        if (list[i * lm + e] <= list[i * lm + e - 1])
                            abort(); /* not ascending */
                }
            break;
        }
        case 4:
            gpuirr_close(g);
            g = NULL;
            nmax = small(&in, -1, MAXN);
            lmax = small(&in, -1, MAXL);
            st = gpuirr_open(&g, nmax, lmax);
            need_message(st, gpuirr_last_error());
            break;
        case 5:
            gpuirr_close(g);
            g = NULL;
            break;
        case 6: { /* one particle record */
            int a = small(&in, -1, MAXN + 2);
            double r[4][3];
            for (int q = 0; q < 4; q++)
                for (int d = 0; d < 3; d++)
                    r[q][d] = value(&in);
            st = gpuirr_set_particle(g, a, r[0], r[1], r[2], r[3], fabs(value(&in)), value(&in) * 0.01);
            need_message(st, gpuirr_last_error());
            break;
        }
        case 7: { /* one list */
            int a = small(&in, -1, MAXN + 2), n = small(&in, -1, MAXL + 1);
            for (int e = 0; e < MAXL + 2; e++)
                members[e] = small(&in, -1, MAXN + 2);
            st = gpuirr_set_list(g, a, n, members);
            need_message(st, gpuirr_last_error());
            break;
        }
        case 8:
            st = gpuirr_predict_all(g, small(&in, -1, MAXN + 2), small(&in, -1, MAXN + 2), value(&in));
            need_message(st, gpuirr_last_error());
            break;
        case 9:
        case 10: {
            int ni = small(&in, -1, MAXN);
            for (int n = 0; n < MAXN; n++)
                addr[n] = small(&in, -1, MAXN + 2);
            st = op == 9 ? gpuirr_predict_active(g, ni, addr, value(&in))
                         : gpuirr_force(g, ni, addr, acc, jrk);
            need_message(st, gpuirr_last_error());
            break;
        }
        case 11: {
            int n = small(&in, -1, MAXN);
            st = gpunb_potential(n, m, (const double(*)[3])x, pot);
            need_message(st, gpunb_last_error());
            break;
        }
        case 12: { /* host prediction over an in-range window */
            int js = small(&in, 1, MAXN), je = small(&in, js, MAXN);
            gpuirr_host_predict(js, je, value(&in), t0, (const double(*)[3])x, (const double(*)[3])v,
                                (const double(*)[3])v, (const double(*)[3])x, acc, jrk, tpred);
            break;
        }
        case 13: { /* host neighbour force with in-range members */
            int i = small(&in, 1, MAXN), n = small(&in, 0, MAXL);
            for (int e = 0; e < n; e++)
                members[e] = small(&in, 1, MAXN);
            gpuirr_host_neighbour_force(i, (const double(*)[3])x, (const double(*)[3])v, m, n, members,
                                        acc[0], jrk[0]);
            break;
        }
        }
        (void)cap;
        (void)nmax;
    }
    gpunb_close(nb);
    gpuirr_close(g);
    return 0;
}
