/* gpunb_cuda.c -- CUDA back-end of GPUNB (host side).  Temporary: the
 * symbols exist so that a CUDA build links; the back-end reports itself
 * unusable until the kernels land. */
#include "config.h"
#include "gpunb_backend.h"

int gpunb_cuda_usable(char *why)
{
    nb6_format(why, "the CUDA back-end is not finished yet");
    return 0;
}

static int cuda_open(void **state, int capacity, char *desc)
{
    (void)state; (void)capacity; (void)desc;
    return gpunb_fail(GPUNB_EDEVICE, "gpunb_open: the CUDA back-end is not finished yet");
}

static void cuda_close(void *state) { (void)state; }

static int cuda_send(void *state, int nj, const double *m, const double (*x)[3], const double (*v)[3])
{
    return gpunb_fail(GPUNB_EDEVICE, "gpunb_send: the CUDA back-end is not finished yet");
}

static int cuda_regf(void *state, int ni, const double *h2, const double *dtr,
                     const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                     double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                     double *t_force, double *t_gather)
{
    return gpunb_fail(GPUNB_EDEVICE, "gpunb_regf: the CUDA back-end is not finished yet");
}

const gpunb_backend_ops gpunb_backend_cuda = {
    .name = "cuda", .open = cuda_open, .close = cuda_close, .send = cuda_send, .regf = cuda_regf,
};

int gpunb_cuda_potential(int n, const double *m, const double (*x)[3], double *pot)
{
    return gpunb_cpu_potential(n, m, x, pot);
}
