!> ac_correct_avx2 -- the irregular corrector's lanes (ac_correct_lanes.inc),
!> compiled with PLUMMER_LANES_AVX2_FCFLAGS: -fno-trapping-math and
!> -march=x86-64-v3 -ffp-contract=off: AVX2, eight lanes in two vectors.
module ac_correct_avx2
  include 'ac_correct_lanes.inc'
end module ac_correct_avx2
