!> ac_correct -- the two Hermite correctors of the Ahmad-Cohen scheme and
!> the neighbour-sphere control, per body (each call touches only body i's
!> data, so OpenMP loops may call them for distinct i at once).
!> irregular_correct follows NBODY6's NBINTP, regular_correct its GPUCOR
!> (without KS, chain, tidal and FPCORR options).  The step criterion and
!> the Hermite coefficients live here too.  gfortran 12 at -O3 keeps them as
!> calls (perf, session 18); writing them into the corrector by hand gained
!> nothing measurable, so they stay shared.
module ac_correct
  use, intrinsic :: iso_fortran_env, only: int64
  use ac_state
  implicit none
  private
  public :: irregular_correct, regular_correct, tstep, block_step_below
  ! What ac_correct_lanes.inc needs, for its copies in ac_correct_generic,
  ! ac_correct_avx2 and ac_correct_avx512.
  public :: makino_ratio10, makino_margin, one3, one12, mantissa_bits

  !> Members per call of irregular_correct_lanes: one AVX-512 vector of doubles.
  integer, parameter, public :: lanes = 8
  !> makino_bound's step ratios and their tenth powers (exact); the margin
  !> covers the rounding of pow and of s * y**0.1 many times over.
  real(dp), parameter :: makino_ratio(5) = [0.5_dp, 1.0_dp, 2.0_dp, 10.0_dp, 20.0_dp], &
      makino_ratio10(5) = makino_ratio**10, makino_margin = 1.0e-9_dp

  real(dp), parameter :: one3 = 1.0_dp / 3.0_dp, one12 = 1.0_dp / 12.0_dp
  integer(int64), parameter :: mantissa_bits = shiftl(1_int64, 52) - 1

contains

  !> Body j at the block time without touching shared data: X, XDOT where
  !> they hold that time (CXVPRED ran, or j is in the block), else its
  !> Taylor series (the resident GPUNB path needs no CXVPRED).
  subroutine predicted_state(j, xj, vj)
    integer, intent(in) :: j
    real(dp), intent(out) :: xj(3), vj(3)
    real(dp) :: s
    integer :: k
    if (tpred(j) == time) then
      xj = x(:,j)
      vj = xdot(:,j)
    else
      s = time - t0(j)
      do k = 1, 3
        xj(k) = ((fdot(k,j) * s + f(k,j)) * s + x0dot(k,j)) * s + x0(k,j)
        vj(k) = (fdot(k,j) * 1.5_dp * s + f(k,j)) * 2.0_dp * s + x0dot(k,j)
      end do
    end if
  end subroutine predicted_state

  !> Irregular step of body i at the block time: xp, vp its predicted
  !> state (irregular_correct_lanes), firr, fd the irregular force and derivative over
  !> its current list at the predicted positions.  Corrects X0, X0DOT
  !> (T0 = time), sets FI, FIDOT and the new irregular step; for a body not
  !> due a regular step also F, FDOT with the regular force extrapolated to
  !> the block time, and REGDUE.  D2, D3 are local: only the step criterion
  !> reads them (two scattered stores per step less).
  subroutine irregular_correct(i, xp, vp, firr, fd, regular_due)
    integer, intent(in) :: i
    real(dp), intent(in) :: xp(3), vp(3), firr(3), fd(3)
    logical, intent(in) :: regular_due
    real(dp) :: dt, df(3), at3(3), bt2(3), fdum(3), ttmp, dt0, dtsq, dv2, f2, dtj, dtr, rdt, rdt2
    real(dp) :: d2i(3), d3i(3)
    integer :: k

    dt = time - t0(i)
    dtsq = dt * dt
    ! One division for the six of D2, D3 (they feed only the step criterion).
    rdt = 1.0_dp / dt
    rdt2 = rdt * rdt
    df = fi(:,i) - firr
    call hermite_coefficients(df, fidot(:,i), fd, dt, at3, bt2)
    do k = 1, 3
      x0(k,i) = xp(k) + (0.6_dp * at3(k) + bt2(k)) * dtsq * one12
      x0dot(k,i) = vp(k) + (0.75_dp * at3(k) + bt2(k)) * dt * one3
      fi(k,i) = firr(k)
      fidot(k,i) = fd(k)
      d2i(k) = (3.0_dp * at3(k) + bt2(k)) * (2.0_dp * rdt2)
      d3i(k) = at3(k) * (6.0_dp * rdt2 * rdt)
    end do
    t0(i) = time

    ! Total force in the criterion, irregular derivatives (Makino & Aarseth 1992).
    fdum = firr + fr(:,i)
    ttmp = tstep(fdum, fd, d2i, d3i, eta_i)
    ! Jun Makino's convergence test against over-shooting on large steps.
    if (ttmp > stepj) then
      dv2 = sum((vp - x0dot(:,i))**2)
      f2 = sum(firr**2)
      if (dv2 > 0) then
        dtj = makino_bound(1.0e-6_dp * step(i)**2 * f2 / dv2, step(i))
        ttmp = min(ttmp, dtj)
      end if
    end if
    dt0 = ttmp

    ! Double only where the block time allows it (up to 4x for a step far
    ! too small), halve once or twice, else keep.
    if (ttmp > 2.0_dp * step(i)) then
      if (is_multiple(time, 2.0_dp * step(i))) then
        ttmp = min(2.0_dp * step(i), smax)
        if (dt0 > 10.0_dp * ttmp .and. is_multiple(time, 2.0_dp * ttmp)) &
            ttmp = min(2.0_dp * ttmp, smax)
      else
        ttmp = step(i)
      end if
    else if (ttmp < step(i)) then
      ttmp = 0.5_dp * step(i)
      if (ttmp > dt0) ttmp = 0.5_dp * ttmp
    else
      ttmp = step(i)
    end if
    ! Irregular steps never pass the next regular time.
    step(i) = min(ttmp, stepr(i))

    if (.not. regular_due) then
      dtr = time - t0r(i)
      do k = 1, 3
        f(k,i) = 0.5_dp * (frdot(k,i) * dtr + fr(k,i) + firr(k))
        fdot(k,i) = (frdot(k,i) + fd(k)) / 6.0_dp
      end do
      ! regular_correct sets it for a due body.
      regdue(i) = time + step(i) >= t0r(i) + stepr(i)
    end if
  end subroutine irregular_correct

  !> Regular step of body i (after its irregular step at the same time).
  !> xi, xidot: its predicted state; freg, fdr: regular force and jerk from
  !> GPUNB over the new list; firr, fd: irregular force and jerk over the new
  !> list at the same predicted positions; list: the new list (count first);
  !> nnb0: the length of the old list.  The regular corrector takes the
  !> difference of the old and new irregular forces (FI - FIRR) as a change
  !> of the regular force, so that both ends of the regular step use the same
  !> split (paper eq. 13).
  subroutine regular_correct(i, xi, xidot, freg_in, fdr_in, firr, fd, list, nnb0)
    integer, intent(in) :: i, nnb0
    real(dp), intent(in) :: xi(3), xidot(3), freg_in(3), fdr_in(3), firr(3), fd(3)
    integer, intent(in) :: list(:)
    real(dp) :: freg(3), fdr(3), dtr, dtsq, dt6, dt2, dtsq12, dtr13, dfr(3), fdr0(3)
    real(dp) :: at3(3), bt2(3), dfd2, fdr2, fr2, ttmp, dt0, dv2, vi2, dtj, d2ri(3), d3ri(3)
    integer :: k, nb

    freg = freg_in
    fdr = fdr_in
    dtr = time - t0r(i)
    nb = list(1)
    call neighbour_sphere(i, xi, xidot, dtr, nb, nnb0, list)

    dtsq = dtr**2
    dt6 = 6.0_dp / (dtr * dtsq)
    dt2 = 2.0_dp / dtsq
    dtsq12 = one12 * dtsq
    dtr13 = one3 * dtr
    t0r(i) = time

    ! Suppress the corrector when a long regular step meets a wild change
    ! of the irregular derivative (GPUCOR).
    if (dtr > 100.0_dp * step(i)) then
      dfd2 = sum((fidot(:,i) - fd)**2)
      fdr2 = sum(fdr**2)
      if (dfd2 > 1.0e6_dp * fdr2) then
        dtr13 = 0
        dtsq12 = 0
      end if
    end if

    do k = 1, 3
      ! Regular force difference over the step in the old neighbour split.
      dfr(k) = fr(k,i) - (firr(k) - fi(k,i)) - freg(k)
      fdr0(k) = fdr(k) - (fidot(k,i) - fd(k))
    end do
    call hermite_coefficients(dfr, frdot(:,i), fdr0, dtr, at3, bt2)
    do k = 1, 3
      x0(k,i) = x0(k,i) + (0.6_dp * at3(k) + bt2(k)) * dtsq12
      x0dot(k,i) = x0dot(k,i) + (0.75_dp * at3(k) + bt2(k)) * dtr13
      fi(k,i) = firr(k)
      fr(k,i) = freg(k)
      f(k,i) = 0.5_dp * (freg(k) + firr(k))
      fidot(k,i) = fd(k)
      frdot(k,i) = fdr(k)
      fdot(k,i) = (fdr(k) + fd(k)) / 6.0_dp
      d2ri(k) = (3.0_dp * at3(k) + bt2(k)) * dt2
      d3ri(k) = at3(k) * dt6
    end do

    ! New regular step by the composite criterion.
    fr2 = sum(freg**2)
    ttmp = tstep(freg, fdr, d2ri, d3ri, eta_r)
    dt0 = ttmp
    if (ttmp > 2.0_dp * stepr(i)) then
      if (is_multiple(time, 2.0_dp * dtr)) then
        ttmp = min(2.0_dp * dtr, smax)
        if (dt0 > 10.0_dp * ttmp .and. is_multiple(time, 2.0_dp * ttmp)) &
            ttmp = min(2.0_dp * ttmp, smax)
      else
        ttmp = stepr(i)
      end if
    else if (ttmp < dtr) then
      ttmp = 0.5_dp * dtr
      if (ttmp > dt0) ttmp = 0.5_dp * ttmp
    else
      ttmp = stepr(i)
    end if

    ! Makino's convergence test before a large increase.
    if (ttmp > 0.1_dp .and. ttmp > dtr .and. fr2 > 0) then
      dv2 = sum((xidot - x0dot(:,i))**2)
      if (dv2 > 0) then
        dtj = dtr * (1.0e-4_dp * dtr**2 * fr2 / dv2)**0.1_dp
        if (dtj < ttmp) ttmp = dtr
      end if
    end if
    ! Rare case of a far too small regular step: cut the irregular one.
    if (dt0 < 0.01_dp * ttmp) then
      dv2 = sum((xidot - x0dot(:,i))**2)
      vi2 = sum(xidot**2)
      if (dv2 > 0.01_dp * vi2) step(i) = step(i) / 8.0_dp
    end if

    stepr(i) = ttmp
    do while (step(i) > stepr(i))
      step(i) = 0.5_dp * step(i)
    end do
    ! A body that had no neighbours gets a careful first irregular step.
    if (nnb0 == 0 .and. nb > 0) step(i) = 0.25_dp * step(i)
    regdue(i) = t0(i) + step(i) >= t0r(i) + stepr(i)
  end subroutine regular_correct

  !> Move RS towards the neighbour number NBODY6 aims at (GPUCOR): a target
  !> growing as the square root of the density contrast,
  !> ALPHA sqrt(NNB RS) / RS**2, at most ZNBMAX, at least ZNBMIN inside
  !> RSCALE and shrinking as RSCALE/r outside; the volume changes by at most
  !> min(RSFAC*DTR, 25 %) per regular step, with a square-root damping when
  !> the count oscillates about the target.
  subroutine neighbour_sphere(i, xi, xidot, dtr, nb, nnb0, list)
    integer, intent(in) :: i, nb, nnb0
    real(dp), intent(in) :: xi(3), xidot(3), dtr
    integer, intent(in) :: list(:)
    real(dp) :: ri2, rs2, a1, a3, a4, a5, ridot, rij, rsdot, drs, nbp, xj(3), vj(3)
    integer :: l, j

    ri2 = xi(1)**2 + xi(2)**2 + xi(3)**2
    if (nb == 0) then
      ! No neighbour even after the retries: widen gently, outward movers less.
      ridot = dot_product(xi, xidot)
      if (ridot > 0 .and. ri2 > rscale**2) then
        rs(i) = max(0.75_dp * rs(i), 0.1_dp * rscale)
      else
        rs(i) = 1.1_dp * rs(i)
      end if
      return
    end if
    rs2 = rs(i)**2
    a3 = alpha * sqrt(real(nb, dp) * rs(i)) / rs2
    a3 = min(a3, znbmax)
    nbp = a3
    if (ri2 > rscale**2) then
      a3 = a3 * rscale / sqrt(ri2)
    else
      a3 = max(a3, znbmin)
    end if
    a4 = a3 / real(nb, dp)
    if ((a3 - real(nnb0, dp)) * (a3 - real(nb, dp)) < 0) a4 = sqrt(a4)
    ridot = dot_product(xi, xidot)
    if (ri2 > rc2 .and. ri2 < 9.0_dp * rscale**2) a4 = a4 * (1.0_dp + ridot * dtr / ri2)
    a5 = min(rsfac * dtr, 0.25_dp)
    a4 = min(max(a4 - 1.0_dp, -a5), a5)
    ! Second-order cube root of the volume ratio.
    a3 = a4 / 3.0_dp
    a1 = 1.0_dp + a3 - a3 * a3
    if (nb < znbmin .and. nbp > znbmin .and. a1 < 1.0_dp) a1 = 1.05_dp
    if (abs(a1 - 1.0_dp) > 0.003_dp) then
      if (rs2 > ri2 .and. rs2 < 2.0_dp * ri2 .and. nb > 5) a1 = sqrt(a1)
      rs(i) = a1 * rs(i)
    end if
    if (rs(i)**2 > rc2 .and. nb > znbmax .and. ridot < 0) then
      drs = (real(nb, dp) - znbmax) / (3.0_dp * nb)
      rs(i) = rs(i) * (1.0_dp - drs)
    end if
    ! Few neighbours inside RSCALE: make sure the sphere keeps up with them.
    if (nb <= 3 .and. ri2 < rscale**2) then
      a1 = 1.2_dp * rs(i)
      do l = 2, nb + 1
        j = list(l)
        call predicted_state(j, xj, vj)
        rij = sqrt(sum((xi - xj)**2))
        rsdot = dot_product(xi - xj, xidot - vj) / rij
        a1 = min(a1, rij + rsdot * dtr)
      end do
      rs(i) = max(a1, 1.1_dp * rs(i))
      rs(i) = max(0.1_dp * rscale, rs(i))
    end if
  end subroutine neighbour_sphere

  !> s * y**0.1, Makino's bound on an irregular step s (irregular_correct),
  !> or a stand-in on the same side as it of each step irregular_correct
  !> compares the bound with: s/2, s, 2 s, 10 min(2 s, smax), i.e. 10 s or
  !> 20 s.  The stand-in where y is clearly away from the tenth powers of
  !> those ratios: then pow's exact value changes no decision, and the pow
  !> call came in most steps (Makino's test is on for steps above stepj).
  pure function makino_bound(y, s) result(dtj)
    real(dp), intent(in) :: y, s
    real(dp) :: dtj
    real(dp), parameter :: ratio(5) = makino_ratio, ratio10(5) = makino_ratio10, margin = makino_margin
    integer :: k, below
    below = 0
    if (.not. (y > 0 .and. y < huge(1.0_dp))) then
      dtj = s * y**0.1_dp
      return
    end if
    do k = 1, size(ratio)
      if (abs(y - ratio10(k)) <= margin * ratio10(k)) then
        dtj = s * y**0.1_dp
        return
      end if
      if (y > ratio10(k)) below = k
    end do
    ! below ratios lie under y**0.1: a stand-in between ratio(below) and the
    ! next one (or beyond the ends).
    if (below == 0) then
      dtj = 0.25_dp * s
    else if (below == size(ratio)) then
      dtj = 2.0_dp * ratio(below) * s
    else
      dtj = 0.5_dp * (ratio(below) + ratio(below + 1)) * s
    end if
  end function makino_bound

  !> modulo(t, p) == 0 for a power of two p > 0 without the fmod call: t / p
  !> is then exact, so the test is too.  Any other p takes modulo.
  pure logical function is_multiple(t, p) result(yes)
    real(dp), intent(in) :: t, p
    real(dp) :: q
    if (p > 0 .and. iand(transfer(p, 0_int64), mantissa_bits) == 0) then
      q = t / p
      yes = q == aint(q)
    else
      yes = modulo(t, p) == 0.0_dp
    end if
  end function is_multiple

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
end module ac_correct
