/* legacy_c.c -- a C program that calls every NBODY6 legacy entry point by its
 * gfortran name, built against an installed nb6accel with
 *   cc legacy_c.c $(pkg-config --cflags --libs nb6accel)
 * (`make installcheck` does that).  Exits 0 when every call answered sensibly. */
#include <math.h>
#include <stdio.h>

void gpunb_open_(int *);
void gpunb_send_(int *, double *, double (*)[3], double (*)[3]);
void gpunb_regf_(int *, double *, double *, double (*)[3], double (*)[3], double (*)[3],
                 double (*)[3], double *, int *, int *, int *);
void gpunb_close_(void);
void gpupot_(int *, double *, double (*)[3], double *);
void gpuirr_open_(int *, int *);
void gpuirr_set_jp_(int *, double *, double *, double *, double *, double *, double *);
void gpuirr_set_list_(int *, int *);
void gpuirr_pred_all_(int *, int *, double *);
void gpuirr_pred_act_(int *, int *, double *);
void gpuirr_firr_vec_(int *, int *, double (*)[3], double (*)[3]);
void gpuirr_firr_(int *, double *, double *);
void gpuirr_close_(void);
void cxvpred_(int *, int *, double *, double *, double (*)[3], double (*)[3], double (*)[3],
              double (*)[3], double (*)[3], double (*)[3], double *);
void cnbint_(int *, double (*)[3], double (*)[3], double *, int *, int *, double *, double *);
void wtime_(int *, int *, int *);
double dbltim_(void);

enum { N = 64, LMAX = 16 };

int main(void)
{
    static double m[N], x[N][3], v[N][3], z[N][3], t0[N], tpred[N], pot[N];
    int n = N, cap = N + 10, lmax = LMAX, nbmax = LMAX - 1, ni = 2, one = 1, js = 1, je = N;
    int list[2][LMAX], addr[2] = {1, 2}, nl[3] = {2, 3, 4}, nnb = 3, h, mi, s;
    double h2[2] = {0.5, 0.5}, dtr[2] = {0, 0}, acc[2][3], jrk[2][3], phi[2], t = 0.0, f[3], fd[3];
    for (int i = 0; i < N; i++) {
        m[i] = 1.0 / N;
        x[i][0] = cos(i * 0.7) * (1 + i % 5);
        x[i][1] = sin(i * 1.3) * (1 + i % 3);
        x[i][2] = 0.1 * i;
        v[i][0] = 0.01 * i;
        tpred[i] = -1.0;
    }
    gpunb_open_(&cap);
    gpunb_send_(&n, m, x, v);
    gpunb_regf_(&ni, h2, dtr, x, v, acc, jrk, phi, &lmax, &nbmax, &list[0][0]);
    gpunb_close_();
    gpupot_(&n, m, x, pot);
    gpuirr_open_(&cap, &lmax);
    for (int a = 1; a <= N; a++)
        gpuirr_set_jp_(&a, x[a - 1], v[a - 1], z[a - 1], z[a - 1], &m[a - 1], &t0[a - 1]);
    gpuirr_set_list_(&one, nl);
    gpuirr_pred_all_(&js, &je, &t);
    gpuirr_pred_act_(&ni, addr, &t);
    gpuirr_firr_vec_(&ni, addr, acc, jrk);
    gpuirr_firr_(&one, f, fd);
    gpuirr_close_();
    cxvpred_(&js, &je, &t, t0, x, v, z, z, x, v, tpred);
    cnbint_(&one, x, v, m, &nnb, &nl[1], f, fd);
    wtime_(&h, &mi, &s);
    /* GPUIRR (maybe single precision) and CNBINT (double) see the same list */
    int ok = list[0][0] >= 1 && pot[0] > 0.0 && fabs(acc[0][0] - f[0]) <= 1e-5 * fabs(f[0]) &&
             tpred[0] == t && dbltim_() >= 0.0;
    printf("legacy_c: %s\n", ok ? "1 passed, 0 failed" : "0 passed, 1 failed");
    return !ok;
}
