!> ac_box_terms_generic -- the start-up's pair terms (ac_box_terms.inc),
!> compiled with PLUMMER_LANES_GENERIC_FCFLAGS: -fno-trapping-math and
!> the build's own flags, for any CPU the build runs on.
module ac_box_terms_generic
  include 'ac_box_terms.inc'
end module ac_box_terms_generic
