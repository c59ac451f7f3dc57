# GNU make file: NBODY6's GPU2 program linked against nb6accel instead of
# GPU2/lib and GPU2/irrlib.  build-nbody6 runs it inside <copy>/GPU2/Build of
# a scratch copy of the user's NBODY6 tree, as
#   make -f nbody6-gpu2.mk chainmode=archain NB6ACCEL_LIBS="..." [FC=...]
#
# It reads NBODY6's own GPU2/Makefile.build for the Ncode and chain source
# list (SOURCE) and their search path (VPATH), so whatever variant of that
# list the user's tree has is what gets built, and it keeps the split of
# compiler flags of NBODY6's GPU2 build:
#   * Ncode/chain files: Makefile.build's FC and FFLAGS (-O3 -ffast-math ...);
#   * the GPU2 Fortran files (the objects of GPU2/Makefile's `gpu' target
#     other than the C/CUDA libraries): GPU2/Makefile's flags, without
#     -ffast-math and without OpenMP, except intgrt.omp.f, which is the one
#     file compiled with -fopenmp (the !$omp directives elsewhere, e.g. the
#     JNEXT clause of fpoly0.f, are inactive in the original and stay so;
#     build-nbody6 --resident adds its patched gpucor.f: OPENMP_OBJECTS).
# GPU2's objects replace the Ncode routines of the same names (intgrt, nbint,
# start, adjust, ...); here that is explicit (static pattern rules from ../)
# rather than by timestamps of copied objects as in the original.

chainmode ?= archain
include ../Makefile.build

.DEFAULT_GOAL := nbody6-nb6accel

# GPU2/Makefile's Fortran flags (FFLAGS there); -fPIC as Makefile.build's FC.
GPU2_FFLAGS ?= -O3 -Wall -march=core2
OPENMP_FFLAGS ?= -fopenmp
# NB6_MARCH=native (build-nbody6 --march): another -march than NBODY6's core2.
ifneq ($(strip $(NB6_MARCH)),)
FFLAGS := $(patsubst -march=%,-march=$(NB6_MARCH),$(FFLAGS))
GPU2_FFLAGS := $(patsubst -march=%,-march=$(NB6_MARCH),$(GPU2_FFLAGS))
endif
NB6ACCEL_LIBS ?= $(shell pkg-config --libs nb6accel)

# The GPU2 Fortran objects: GPU2/Makefile's `gpu' prerequisites without the
# library objects that nb6accel replaces.
NB6_REPLACED_OBJECTS = gpunb.% gpupot.% gpuirr.o cnbint.o wtime.o cxvpred.o
GPU2_OBJECTS ?= $(filter-out $(NB6_REPLACED_OBJECTS),\
	$(shell sed -n 's/^gpu:\(.*\)$$/\1/p' ../Makefile))
ifeq ($(strip $(GPU2_OBJECTS)),)
$(error no `gpu:' target found in ../Makefile (GPU2/Makefile); is this an NBODY6 GPU2 tree?)
endif

NB6_OBJECTS = $(sort $(SOURCE:.f=.o) $(GPU2_OBJECTS))

# params.h/common6.h set the COMMON layout: every object depends on them.
$(NB6_OBJECTS): ../../Ncode/params.h ../../Ncode/common6.h

# GPU2 objects that build-nbody6 --resident also compiles with OpenMP:
# gpucor.o, which its patched INTGRT calls on the team.
OPENMP_OBJECTS ?=

$(filter-out intgrt.o $(OPENMP_OBJECTS),$(GPU2_OBJECTS)): %.o: ../%.f
	$(FC) $(GPU2_FFLAGS) -c $< -o $@

ifneq ($(strip $(OPENMP_OBJECTS)),)
$(OPENMP_OBJECTS): %.o: ../%.f
	$(FC) $(GPU2_FFLAGS) $(OPENMP_FFLAGS) -c $< -o $@
endif

intgrt.o: ../intgrt.omp.f
	$(FC) $(GPU2_FFLAGS) $(OPENMP_FFLAGS) -c $< -o $@

# Linked as Makefile.build's `gpu' target does, with nb6accel's libraries in
# place of gpuirr.o gpunb.o gpupot.o wtime.o cnbint.o cxvpred.o.
nbody6-nb6accel: $(NB6_OBJECTS)
	$(FC) $(FFLAGS) $(OPENMP_FFLAGS) $(NB6_OBJECTS) $(NB6ACCEL_LIBS) -o $@

.PHONY: print-objects
print-objects:
	@echo $(NB6_OBJECTS)
