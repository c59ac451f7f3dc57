!> ac_correct_avx512 -- the irregular corrector's lanes (ac_correct_lanes.inc)
!> a second time, compiled with PLUMMER_LANES_FCFLAGS: for AVX-512 without
!> FMA contraction (-march=x86-64-v4 -ffp-contract=off) where configure found
!> gfortran to take them, so that the default build, which must run on any
!> x86-64, still gets the eight lanes in one 512-bit vector (gfortran leaves
!> the SSE2 copy's square roots scalar): at 64k on the H100 box, in a -g -O3
!> build, the irregular corrector took 1.66-1.75 s with this copy and
!> 1.97-2.29 s with the generic one (tests/plummer/RESULTS.md, session 45).
!> Without contraction both copies round every operation alike and give the
!> same bits (test_plummer_run checks it).  ac_integrator calls this copy
!> where the CPU has AVX-512 (ac_cpu.c) unless -lanes generic; in a build
!> with --enable-native or without those flags the copies are the same code.
module ac_correct_avx512
  use, intrinsic :: iso_fortran_env, only: int64
  use ac_state
  use ac_correct, only: irregular_correct, lanes, makino_ratio10, makino_margin, one3, one12, mantissa_bits
  implicit none
  private
  public :: irregular_correct_lanes

contains

  include 'ac_correct_lanes.inc'

end module ac_correct_avx512
