/* gpuirr_device.c -- GPUIRR's irregular force of large blocks on a GPU
 * (gpuirr_use_device): a GPUNB handle of GPUIRR's own holds a copy of every
 * record and list, stored there as they are set, and computes the force
 * with gpunb_firr_start/finish.  NBODY6 calls GPUIRR unchanged, so this is
 * how its large blocks reach the GPU without a change to its Fortran.
 * Which blocks go there, and why each block's calls all go one way, is
 * decided in gpuirr_api.c (gpuirr_force); here: the copy and the calls. */
#include "config.h"
#include "gpuirr_internal.h"
#include "gpunb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* NB6ACCEL_GPUIRR_DEVICE: "off" or 0 never, "auto" the default, else the
 * smallest block (a positive integer). */
static int min_ni_from_env(int *min_ni)
{
    const char *v = nb6_getenv("NB6ACCEL_GPUIRR_DEVICE");
    *min_ni = GPUIRR_DEVICE_MIN_NI;
    if (!v || strcmp(v, "auto") == 0)
        return GPUIRR_OK;
    if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0) {
        *min_ni = 0;
        return GPUIRR_OK;
    }
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' || n < 0 || n > GPUIRR_NMAX)
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "gpuirr_use_device: NB6ACCEL_GPUIRR_DEVICE=\"%s\" is not off, auto or a block size "
                           "0..%d",
                           v, (int)GPUIRR_NMAX);
    *min_ni = (int)n;
    return GPUIRR_OK;
}

/* A GPUNB handle that computes the irregular force on the GPU, or NULL
 * with the reason in g->dev_note. */
static int open_copy(gpuirr *g, gpunb **out)
{
    const char *backend = nb6_getenv("NB6ACCEL_GPUNB");
    gpunb *nb = NULL;
    int on_device = 0;

    *out = NULL;
    if (backend && strcmp(backend, "auto") != 0 && strcmp(backend, "cuda") != 0) {
        nb6_format(g->dev_note, "NB6ACCEL_GPUNB=%s asks for no GPU", backend);
        return GPUIRR_OK;
    }
    if (!gpunb_backend_usable(GPUNB_BACKEND_CUDA)) {
        nb6_format(g->dev_note, "%s", gpunb_last_error());
        return GPUIRR_OK;
    }
    if (gpunb_open(&nb, g->nmax + 1, GPUNB_BACKEND_CUDA) != GPUNB_OK ||
        gpunb_irr_open(nb, g->lmax) != GPUNB_OK || gpunb_irr_on_device(nb, &on_device) != GPUNB_OK) {
        const int st = gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_use_device: %s", gpunb_last_error());
        gpunb_close(nb);
        return st;
    }
    if (!on_device) {
        nb6_format(g->dev_note, "GPUNB computes irregular forces on the host with several GPUs (GPU_LIST)");
        gpunb_close(nb);
        return GPUIRR_OK;
    }
    /* Every j a particle of mass 0 until it is set: a list may name any
     * index NBODY6 set in either order (GPUNB wants its members set first),
     * and one predict lays the records out on the GPU. */
    static const double zero[3] = {0.0, 0.0, 0.0};
    int st = GPUNB_OK;
    for (int j = 0; st == GPUNB_OK && j <= g->nmax; j++)
        st = gpunb_set_jparticle(nb, j, zero, zero, zero, zero, 0.0, 0.0);
    if (st != GPUNB_OK || gpunb_predict(nb, g->nmax + 1, 0.0) != GPUNB_OK) {
        st = gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_use_device: %s", gpunb_last_error());
        gpunb_close(nb);
        return st;
    }
    *out = nb;
    return GPUIRR_OK;
}

int gpuirr_use_device(gpuirr *g, int min_ni, int *on_device)
{
    int st;
    if (on_device)
        *on_device = 0;
    if (!g)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_use_device: called before gpuirr_open (handle is NULL)");
    if (g->dev_asked)
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_use_device: called twice on one handle");
    if (atomic_load(&g->any_set))
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_use_device: called after gpuirr_set_particle (the GPU's copy "
                                          "would lack what was set): call it just after gpuirr_open");
    if (min_ni == GPUIRR_DEVICE_DEFAULT) {
        if ((st = min_ni_from_env(&min_ni)) != GPUIRR_OK)
            return st;
    } else if (min_ni < 0) {
        return gpuirr_fail(GPUIRR_EUSAGE, "gpuirr_use_device: min_ni = %d, must be 0 (never) or more, or "
                                          "GPUIRR_DEVICE_DEFAULT",
                           min_ni);
    }
    g->dev_asked = 1;
    if (min_ni == 0) {
        nb6_format(g->dev_note, "turned off (NB6ACCEL_GPUIRR_DEVICE or min_ni = 0)");
        return GPUIRR_OK;
    }
    if ((st = open_copy(g, &g->dev)) != GPUIRR_OK || !g->dev)
        return st;
    g->dev_min_ni = min_ni;
    g->dev_block = -1;
    g->dev_unsent = g->nmax; /* every particle may be set before the first block */
    g->dev_note[0] = '\0';
    if (on_device)
        *on_device = 1;
    return GPUIRR_OK;
}

const char *gpuirr_device_note(const gpuirr *g) { return g ? g->dev_note : "no handle"; }

int gpuirr_device_set_particle(gpuirr *g, int addr, const double x0[3], const double v0[3], const double f_half[3],
                               const double fdot_sixth[3], double mass, double t0)
{
    if (gpunb_set_jparticle(g->dev, addr, x0, v0, f_half, fdot_sixth, mass, t0) != GPUNB_OK)
        return gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_set_particle: particle %d on the GPU: %s", addr,
                           gpunb_last_error());
    return GPUIRR_OK;
}

int gpuirr_device_set_list(gpuirr *g, int addr, int n, const int *members)
{
    if (gpunb_set_list(g->dev, addr, n, members) != GPUNB_OK)
        return gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_set_list: particle %d's list on the GPU: %s", addr,
                           gpunb_last_error());
    return GPUIRR_OK;
}

int gpuirr_device_force(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3], double *pairs)
{
    gpunb_stats before, after;
    gpunb_get_stats(g->dev, &before);
    if (gpunb_firr_start(g->dev, ni, addr, g->t_pred) != GPUNB_OK || gpunb_firr_finish(g->dev, acc, jrk) != GPUNB_OK)
        return gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_force: %d particles on the GPU: %s", ni, gpunb_last_error());
    gpunb_get_stats(g->dev, &after);
    *pairs = after.irr_pairs - before.irr_pairs;
    return GPUIRR_OK;
}

int gpuirr_device_push(gpuirr *g)
{
    if (gpunb_push(g->dev) != GPUNB_OK)
        return gpuirr_fail(GPUIRR_EDEVICE, "gpuirr_force: copying the changed particles to the GPU: %s",
                           gpunb_last_error());
    return GPUIRR_OK;
}

void gpuirr_device_close(gpuirr *g)
{
    gpunb_close(g->dev);
    g->dev = NULL;
}
