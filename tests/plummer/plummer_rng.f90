!> plummer_rng -- L'Ecuyer's MRG32k3a uniform generator, written with 64-bit
!> integers so that a seed gives the same stream with every compiler and on
!> every machine (the intrinsic RANDOM_NUMBER does not promise that, and the
!> determinism test and the CSV figures depend on it).
module plummer_rng
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: rng_state, rng_seed, rng_uniform

  integer(int64), parameter :: m1 = 4294967087_int64, m2 = 4294944443_int64
  integer(int64), parameter :: a12 = 1403580_int64, a13n = 810728_int64
  integer(int64), parameter :: a21 = 527612_int64, a23n = 1370589_int64
  real(real64), parameter :: norm = 1.0_real64 / (real(m1, real64) + 1.0_real64)

  !> The six state words; products of a multiplier (< 2**21) and a word
  !> (< 2**32) stay below 2**53, far from int64 overflow.
  type :: rng_state
    integer(int64) :: s1(3) = [12345_int64, 12345_int64, 12345_int64]
    integer(int64) :: s2(3) = [12345_int64, 12345_int64, 12345_int64]
  end type rng_state

contains

  !> Start the stream of seed (any integer >= 0); different seeds give
  !> different, reproducible streams.
  subroutine rng_seed(r, seed)
    type(rng_state), intent(out) :: r
    integer, intent(in) :: seed
    integer(int64) :: s
    integer :: k
    real(real64) :: u
    s = abs(int(seed, int64))
    do k = 1, 3
      ! Every word in 1..m-1 (never all zero, which would stick).
      r%s1(k) = modulo(12345_int64 + s * 69069_int64 + 1013904223_int64 * k, m1 - 1) + 1
      r%s2(k) = modulo(54321_int64 + s * 1664525_int64 + 22695477_int64 * k, m2 - 1) + 1
    end do
    ! Discard a few numbers so that nearby seeds decorrelate.
    do k = 1, 64
      u = rng_uniform(r)
    end do
  end subroutine rng_seed

  !> Next uniform number in the open interval (0, 1).
  function rng_uniform(r) result(u)
    type(rng_state), intent(inout) :: r
    real(real64) :: u
    integer(int64) :: p1, p2
    p1 = modulo(a12 * r%s1(2) - a13n * r%s1(1), m1)
    r%s1 = [r%s1(2), r%s1(3), p1]
    p2 = modulo(a21 * r%s2(3) - a23n * r%s2(1), m2)
    r%s2 = [r%s2(2), r%s2(3), p2]
    if (p1 > p2) then
      u = real(p1 - p2, real64) * norm
    else
      u = real(p1 - p2 + m1, real64) * norm
    end if
  end function rng_uniform
end module plummer_rng
