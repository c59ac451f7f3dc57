!> ac_correct_avx512 -- the irregular corrector's lanes (ac_correct_lanes.inc),
!> compiled with PLUMMER_LANES_AVX512_FCFLAGS: -fno-trapping-math and
!> -march=x86-64-v4 -ffp-contract=off: AVX-512, eight lanes in one vector.
module ac_correct_avx512
  include 'ac_correct_lanes.inc'
end module ac_correct_avx512
