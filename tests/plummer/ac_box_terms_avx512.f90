!> ac_box_terms_avx512 -- the start-up's pair terms (ac_box_terms.inc),
!> compiled with PLUMMER_LANES_AVX512_FCFLAGS: -fno-trapping-math and
!> -march=x86-64-v4 -ffp-contract=off: AVX-512, eight pairs in one vector.
module ac_box_terms_avx512
  include 'ac_box_terms.inc'
end module ac_box_terms_avx512
