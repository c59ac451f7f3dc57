!> ac_steps -- the time-step criterion and the power-of-two block steps.
module ac_steps
  use ac_state, only: dp
  implicit none
  private
  public :: tstep, block_step_below, hermite_coefficients

contains

  !> Aarseth's composite criterion (NBODY6's TSTEP, paper eq. 1):
  !> dt = sqrt(eta (|F||D2| + |D1|^2) / (|D1||D3| + |D2|^2)).  A vanishing
  !> denominator (no irregular force, say) gives a huge step, which the
  !> caller caps.
  pure function tstep(f, fd, f2d, f3d, eta) result(dt)
    real(dp), intent(in) :: f(3), fd(3), f2d(3), f3d(3), eta
    real(dp) :: dt, f2, fd2, f2d2, f3d2, num, den
    f2 = f(1)**2 + f(2)**2 + f(3)**2
    fd2 = fd(1)**2 + fd(2)**2 + fd(3)**2
    f2d2 = f2d(1)**2 + f2d(2)**2 + f2d(3)**2
    f3d2 = f3d(1)**2 + f3d(2)**2 + f3d(3)**2
    num = sqrt(f2 * f2d2) + fd2
    den = sqrt(fd2 * f3d2) + f2d2
    if (den > 0) then
      dt = sqrt(eta * num / den)
    else
      dt = huge(1.0_dp)
    end if
  end function tstep

  !> The largest power of two <= dt and <= smax (NBODY6's STEPK, truncated
  !> down); smax is itself a power of two.
  pure function block_step_below(dt, smax) result(s)
    real(dp), intent(in) :: dt, smax
    real(dp) :: s
    if (dt >= smax) then
      s = smax
    else if (dt > 0) then
      s = scale(1.0_dp, exponent(dt) - 1)
    else
      s = tiny(1.0_dp)
    end if
  end function block_step_below

  !> Hermite corrector over a step dt from force f0, derivative d0 at its
  !> start and f1, d1 at its end: returns AT3, BT2 (NBODY6's names) from
  !> which the position correction is (0.6 AT3 + BT2) dt^2/12, the velocity
  !> correction (0.75 AT3 + BT2) dt/3, and at the end of the step
  !> D2 = (3 AT3 + BT2) 2/dt^2, D3 = AT3 6/dt^3.
  pure subroutine hermite_coefficients(df, d0, d1, dt, at3, bt2)
    real(dp), intent(in) :: df(3), d0(3), d1(3), dt
    real(dp), intent(out) :: at3(3), bt2(3)
    real(dp) :: s(3)
    ! df = F(start) - F(end).
    s = d0 + d1
    at3 = 2.0_dp * df + dt * s
    bt2 = -3.0_dp * df - dt * (s + d0)
  end subroutine hermite_coefficients
end module ac_steps
