!> plummer_model -- initial conditions for the timing run: the equal-mass
!> Plummer model of Aarseth, Henon & Wielen (1974) in standard N-body units
!> (G = 1, M = 1, E = -1/4, centre of mass at rest at the origin), or a
!> model read from a plain text file.
module plummer_model
  use, intrinsic :: iso_fortran_env, only: real64, error_unit
  use, intrinsic :: iso_c_binding, only: c_int
  use nb6accel, only: gpupot
  use plummer_rng, only: rng_state, rng_seed, rng_uniform
  use ac_order, only: sort_by_key
  implicit none
  private
  public :: plummer_generate, plummer_read, to_standard_units, remove_centre_of_mass
  public :: kinetic_energy, potential_energy, half_mass_radius

  integer, parameter :: dp = real64
  real(dp), parameter :: twopi = 6.283185307179586476925286766559_dp

contains

  !> Sample n equal-mass bodies from the Plummer model (radii cut at 10
  !> scale lengths, velocities by von Neumann rejection on
  !> g(q) = q^2 (1 - q^2)^(7/2)), then scale to standard units.
  subroutine plummer_generate(n, seed, body, x, v)
    integer, intent(in) :: n, seed
    real(dp), intent(out) :: body(n), x(3,n), v(3,n)
    type(rng_state) :: r
    real(dp) :: u, rad, z, phi, q, g, speed
    integer :: i

    call rng_seed(r, seed)
    body = 1.0_dp / n
    do i = 1, n
      do
        u = rng_uniform(r)
        rad = 1.0_dp / sqrt(u**(-2.0_dp / 3.0_dp) - 1.0_dp)
        if (rad <= 10.0_dp) exit
      end do
      z = (1.0_dp - 2.0_dp * rng_uniform(r)) * rad
      phi = twopi * rng_uniform(r)
      x(:,i) = [sqrt(rad**2 - z**2) * cos(phi), sqrt(rad**2 - z**2) * sin(phi), z]
      do
        q = rng_uniform(r)
        g = q**2 * (1.0_dp - q**2)**3.5_dp
        ! max of g is 0.0920 at q = sqrt(2/9): 0.1 bounds it.
        if (0.1_dp * rng_uniform(r) <= g) exit
      end do
      speed = q * sqrt(2.0_dp) / (1.0_dp + rad**2)**0.25_dp
      z = (1.0_dp - 2.0_dp * rng_uniform(r)) * speed
      phi = twopi * rng_uniform(r)
      v(:,i) = [sqrt(speed**2 - z**2) * cos(phi), sqrt(speed**2 - z**2) * sin(phi), z]
    end do
    call to_standard_units(n, body, x, v)
  end subroutine plummer_generate

  !> Read "m x y z vx vy vz" per line (blank lines and lines starting with
  !> '#' skipped).  The model is used as given: no rescaling.
  subroutine plummer_read(path, n, body, x, v)
    character(len=*), intent(in) :: path
    integer, intent(out) :: n
    real(dp), allocatable, intent(out) :: body(:), x(:,:), v(:,:)
    integer :: unit, ios, pass, k
    character(len=1024) :: line
    real(dp) :: row(7)

    open(newunit=unit, file=path, status='old', action='read', iostat=ios)
    if (ios /= 0) then
      write(error_unit, '(3a)') 'plummer_ac: cannot open initial conditions file "', trim(path), '"'
      stop 2
    end if
    do pass = 1, 2
      n = 0
      rewind(unit)
      do
        read(unit, '(a)', iostat=ios) line
        if (ios /= 0) exit
        line = adjustl(line)
        if (len_trim(line) == 0 .or. line(1:1) == '#') cycle
        read(line, *, iostat=ios) row
        if (ios /= 0) then
          write(error_unit, '(3a,i0,a)') 'plummer_ac: "', trim(path), '" line of body ', n + 1, &
              ' is not "m x y z vx vy vz"'
          stop 2
        end if
        n = n + 1
        if (pass == 2) then
          body(n) = row(1); x(:,n) = row(2:4); v(:,n) = row(5:7)
        end if
      end do
      if (pass == 1) then
        if (n < 2) then
          write(error_unit, '(3a,i0)') 'plummer_ac: "', trim(path), '" holds too few bodies: ', n
          stop 2
        end if
        allocate(body(n), x(3,n), v(3,n))
      end if
    end do
    close(unit)
    do k = 1, n
      if (body(k) <= 0.0_dp) then
        write(error_unit, '(3a,i0,a,es12.4)') 'plummer_ac: "', trim(path), '" body ', k, &
            ' has mass ', body(k)
        stop 2
      end if
    end do
  end subroutine plummer_read

  !> Centre of mass to the origin, at rest.
  subroutine remove_centre_of_mass(n, body, x, v)
    integer, intent(in) :: n
    real(dp), intent(in) :: body(n)
    real(dp), intent(inout) :: x(3,n), v(3,n)
    real(dp) :: mtot, cx(3), cv(3)
    integer :: i
    mtot = sum(body)
    cx = 0; cv = 0
    do i = 1, n
      cx = cx + body(i) * x(:,i)
      cv = cv + body(i) * v(:,i)
    end do
    cx = cx / mtot; cv = cv / mtot
    do i = 1, n
      x(:,i) = x(:,i) - cx
      v(:,i) = v(:,i) - cv
    end do
  end subroutine remove_centre_of_mass

  !> Henon's standard units: total mass 1, velocities scaled to virial
  !> equilibrium (2T = |W|), then lengths so that E = T + W = -1/4.  Both
  !> scalings are exact in T and W, so E = -1/4 to rounding.
  subroutine to_standard_units(n, body, x, v)
    integer, intent(in) :: n
    real(dp), intent(inout) :: body(n), x(3,n), v(3,n)
    real(dp) :: t, w, s
    body = body / sum(body)
    call remove_centre_of_mass(n, body, x, v)
    t = kinetic_energy(n, body, v)
    w = -potential_energy(n, body, x)
    v = v * sqrt(0.5_dp * abs(w) / t)
    ! Now E = -|W|/2; lengths times s and velocities over sqrt(s) give E/s.
    s = 2.0_dp * abs(w)
    x = x * s
    v = v / sqrt(s)
  end subroutine to_standard_units

  function kinetic_energy(n, body, v) result(t)
    integer, intent(in) :: n
    real(dp), intent(in) :: body(n), v(3,n)
    real(dp) :: t
    integer :: i
    t = 0
    do i = 1, n
      t = t + body(i) * (v(1,i)**2 + v(2,i)**2 + v(3,i)**2)
    end do
    t = 0.5_dp * t
  end function kinetic_energy

  !> Positive potential energy 1/2 sum m_i phi_i, phi from GPUPOT (double
  !> precision in nb6accel, as NBODY6's ENERGY2 uses it).
  function potential_energy(n, body, x) result(pot)
    integer, intent(in) :: n
    real(dp), intent(in) :: body(n), x(3,n)
    real(dp) :: pot
    real(dp), allocatable :: phi(:)
    integer(c_int) :: nn
    integer :: i
    allocate(phi(n))
    nn = n
    call gpupot(nn, body, x, phi)
    pot = 0
    do i = 1, n
      pot = pot + body(i) * phi(i)
    end do
    pot = 0.5_dp * pot
  end function potential_energy

  !> Radius of the sphere about the origin holding half the mass.
  function half_mass_radius(n, body, x) result(rh)
    integer, intent(in) :: n
    real(dp), intent(in) :: body(n), x(3,n)
    real(dp) :: rh
    real(dp), allocatable :: r(:)
    integer, allocatable :: order(:)
    real(dp) :: m, mhalf
    integer :: i
    allocate(r(n), order(n))
    do i = 1, n
      r(i) = sqrt(x(1,i)**2 + x(2,i)**2 + x(3,i)**2)
      order(i) = i
    end do
    call sort_by_key(r, order)
    mhalf = 0.5_dp * sum(body)
    m = 0
    rh = r(order(n))
    do i = 1, n
      m = m + body(order(i))
      if (m >= mhalf) then
        rh = r(order(i))
        exit
      end if
    end do
  end function half_mass_radius
end module plummer_model
