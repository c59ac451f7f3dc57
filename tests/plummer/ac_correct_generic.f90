!> ac_correct_generic -- the irregular corrector's lanes (ac_correct_lanes.inc),
!> compiled with PLUMMER_LANES_GENERIC_FCFLAGS: -fno-trapping-math and
!> the build's own flags, for any CPU the build runs on.
module ac_correct_generic
  include 'ac_correct_lanes.inc'
end module ac_correct_generic
