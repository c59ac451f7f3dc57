!> test_plummer_model -- the initial conditions of the timing run: E = -1/4
!> and virial ratio 1/2 to rounding (checked with a direct double sum here,
!> not with the GPUPOT the generator scales with), centre of mass at rest at
!> the origin, equal masses summing to 1, the half-mass radius of a Plummer
!> model (0.769 in these units), radii within the cut, the same model for
!> the same seed, a model written as text read back unchanged, and the
!> Morton numbering of the run (-order morton): a permutation under which
!> bodies next in order are near in space.
program test_plummer_model
  use plummer_checks, only: check, checks_finish
  use, intrinsic :: iso_fortran_env, only: real64
  use plummer_model, only: plummer_generate, half_mass_radius, plummer_read
  use ac_order, only: morton_order
  implicit none
  integer, parameter :: dp = real64
  integer, parameter :: n = 8192, seed = 20120905
  real(dp), allocatable :: body(:), x(:,:), v(:,:), x2(:,:), v2(:,:)
  real(dp), allocatable :: br(:), xr(:,:), vr(:,:)
  real(dp) :: t, w, e, q, cx(3), cv(3), rh, rmax, a
  integer :: i, j, unit, nr
  integer, allocatable :: order(:), seen(:)
  real(dp) :: step_given, step_morton

  allocate(body(n), x(3,n), v(3,n), x2(3,n), v2(3,n))
  call plummer_generate(n, seed, body, x, v)
  write(*, '(a,i0,a,i0)') 'test_plummer_model: N = ', n, '  seed = ', seed

  t = 0; w = 0
  do i = 1, n
    t = t + 0.5_dp * body(i) * sum(v(:,i)**2)
  end do
  !$omp parallel do reduction(+:w) private(j) schedule(dynamic, 64)
  do i = 1, n
    do j = i + 1, n
      w = w - body(i) * body(j) / sqrt(sum((x(:,i) - x(:,j))**2))
    end do
  end do
  !$omp end parallel do
  e = t + w
  q = t / abs(w)
  call check('E = -1/4 (direct double sum)', abs(e + 0.25_dp) < 1.0e-12_dp, e)
  call check('virial ratio T/|W| = 1/2', abs(q - 0.5_dp) < 1.0e-12_dp, q)
  call check('total mass 1', abs(sum(body) - 1.0_dp) < 1.0e-14_dp, sum(body))
  call check('equal masses', maxval(body) == minval(body), maxval(body) - minval(body))
  cx = 0; cv = 0
  do i = 1, n
    cx = cx + body(i) * x(:,i)
    cv = cv + body(i) * v(:,i)
  end do
  call check('centre of mass at the origin', maxval(abs(cx)) < 1.0e-14_dp, maxval(abs(cx)))
  call check('centre of mass at rest', maxval(abs(cv)) < 1.0e-14_dp, maxval(abs(cv)))
  ! Plummer: r_h = a / sqrt(2**(2/3) - 1) = 1.3048 a, a = 3 pi / 16 here;
  ! sampling noise of the median radius at N = 8192 is about 1 %.
  a = 3.0_dp * acos(-1.0_dp) / 16.0_dp
  rh = half_mass_radius(n, body, x)
  call check('half-mass radius 0.769 +- 4 %', abs(rh / (1.3048_dp * a) - 1.0_dp) < 0.04_dp, rh)
  rmax = 0
  do i = 1, n
    rmax = max(rmax, sqrt(sum(x(:,i)**2)))
  end do
  ! Cut at 10 a before scaling; scaling and centring move it little.
  call check('no body beyond the 10 a cut', rmax < 11.0_dp * a, rmax)
  call plummer_generate(n, seed, body, x2, v2)
  call check('same seed, same model', all(x2 == x) .and. all(v2 == v), maxval(abs(x2 - x)))
  call plummer_generate(n, seed + 1, body, x2, v2)
  call check('other seed, other model', any(x2 /= x), maxval(abs(x2 - x)))

  ! A text model as -ic reads it: comment and blank lines skipped, values
  ! back bit for bit (17 significant digits).
  open(newunit=unit, file='test_plummer_model.ic', status='replace', action='write')
  write(unit, '(a)') '# m x y z vx vy vz', ''
  do i = 1, n
    write(unit, '(7es25.16e3)') body(i), x(:,i), v(:,i)
  end do
  close(unit)
  call plummer_read('test_plummer_model.ic', nr, br, xr, vr)
  open(newunit=unit, file='test_plummer_model.ic', status='old')
  close(unit, status='delete')
  call check('text model read back: count', nr == n, real(nr, dp))
  call check('text model read back: values', all(xr == x) .and. all(vr == v) .and. all(br == body), &
      maxval(abs(xr - x)))

  ! Morton numbering: every body once; the mean distance from one body to
  ! the next in that order is a small fraction of the generator's (random
  ! order: about the model's size; along the curve: about the local spacing).
  call morton_order(n, x, order)
  allocate(seen(n))
  seen = 0
  do i = 1, n
    if (order(i) >= 1 .and. order(i) <= n) seen(order(i)) = seen(order(i)) + 1
  end do
  call check('Morton order: a permutation', size(order) == n .and. all(seen == 1), real(count(seen /= 1), dp))
  step_given = 0; step_morton = 0
  do i = 1, n - 1
    step_given = step_given + sqrt(sum((x(:,i + 1) - x(:,i))**2))
    step_morton = step_morton + sqrt(sum((x(:,order(i + 1)) - x(:,order(i)))**2))
  end do
  write(*, '(a,f8.4,a,f8.4)') 'mean distance to the next body: given order ', step_given / (n - 1), &
      ', Morton order ', step_morton / (n - 1)
  call check('Morton order: next body near (< 1/4 of the given order''s distance)', &
      step_morton < 0.25_dp * step_given, step_morton / step_given)
  deallocate(order, seen)

  deallocate(body, x, v, x2, v2, br, xr, vr) ! stack-frame arrays under -fopenmp: free before the end
  call checks_finish('test_plummer_model')
end program test_plummer_model
