/* gpunb_dirty.h -- the indices 0..n-1 that changed since a back-end last
 * took them (records for gpunb_predict, gpunb_push, gpunb_firr_start; list
 * rows for the last two).
 *
 * gpunb_set_jparticle and gpunb_set_list mark from any number of threads at
 * once (distinct indices); a take runs with no mark in progress.  A flag per
 * index made every take an O(N) scan: 40-60 us at 128k in each GPU block of
 * the irregular force and each push, when ~2000 had changed.  One shared
 * list with an atomic counter cost ~100 ns a mark with NBODY6's 16 threads
 * marking.  So a flag still says whether j is marked (a mark of a marked
 * index is a load), and each thread appends the indices it newly marks to a
 * log of its own; a take concatenates the logs, O(marked). */
#ifndef GPUNB_DIRTY_H
#define GPUNB_DIRTY_H

#include "nb6_common.h"

typedef struct gpunb_dirty gpunb_dirty;

/* A set for indices 0..n-1, none marked; NULL when out of memory. */
NB6_INTERNAL gpunb_dirty *gpunb_dirty_new(int n);
NB6_INTERNAL void gpunb_dirty_free(gpunb_dirty *d);

/* Mark j (0 <= j < n).  Threads may mark distinct j at once.  Returns 0, or
 * -1 when this thread's first mark or a longer log found no memory (j then
 * stays unmarked). */
NB6_INTERNAL int gpunb_dirty_mark(gpunb_dirty *d, int j);

/* How many indices are marked (O(threads)).  No mark may run meanwhile. */
NB6_INTERNAL int gpunb_dirty_count(gpunb_dirty *d);

/* The marked indices below `below`, each once and in no particular order,
 * into list (room for `below`); returns their number.  They stay marked
 * until gpunb_dirty_clear.  No mark may run during this call or clear. */
NB6_INTERNAL int gpunb_dirty_list(gpunb_dirty *d, int below, int *list);

/* Unmark every marked index below `below` (those of the last
 * gpunb_dirty_list with the same bound); those above stay marked.  Costs
 * O(threads + those kept), not O(marked): a new epoch unmarks the rest. */
NB6_INTERNAL void gpunb_dirty_clear(gpunb_dirty *d, int below);

#endif
