!> legacy_f -- a Fortran program linked against an installed nb6accel through
!> the module and pkg-config:  gfortran legacy_f.f90 $(pkg-config --cflags --libs nb6accel)
program legacy_f
  use nb6accel
  implicit none
  integer :: n, cap, i
  double precision :: m(32), x(3,32), pot(32)
  n = 32; cap = 40
  do i = 1, n
    m(i) = 1.0d0/n; x(:,i) = [cos(0.3d0*i), sin(0.7d0*i), 0.05d0*i]
  end do
  call gpupot(n, m, x, pot)
  call gpunb_open(cap)
  call gpunb_close()
  if (all(pot(1:n) > 0.0d0) .and. dbltim() >= 0.0d0) then
    print '(a)', 'legacy_f: 1 passed, 0 failed'
  else
    print '(a)', 'legacy_f: 0 passed, 1 failed'
    stop 1
  end if
end program legacy_f
