!> ac_box_terms_avx2 -- the start-up's pair terms (ac_box_terms.inc),
!> compiled with PLUMMER_LANES_AVX2_FCFLAGS: -fno-trapping-math and
!> -march=x86-64-v3 -ffp-contract=off: AVX2, four pairs in one vector.
module ac_box_terms_avx2
  include 'ac_box_terms.inc'
end module ac_box_terms_avx2
