/* team_marks.c -- for test_plummer_teams: how many threads of a whole
 * OpenMP team were not there at the last call.  Each thread marks itself
 * (thread-local) when first seen, so threads that libgomp ended and created
 * anew since then count: it does that to the threads a team of part of the
 * threads leaves out, once a whole team runs again (ac_blocks.f90). */
#include "config.h"

/* -1 without OpenMP: nothing to count. */
int ac_team_new_threads(void)
{
#ifdef _OPENMP
    static _Thread_local int seen;
    int fresh = 0;
#pragma omp parallel reduction(+ : fresh)
    {
        fresh += !seen;
        seen = 1;
    }
    return fresh;
#else
    return -1;
#endif
}
