!> ac_clock -- wall clock in seconds (system_clock with 64-bit counts, so
!> nanosecond resolution with gfortran and no OpenMP dependency).
module ac_clock
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: wall_seconds

contains

  function wall_seconds() result(t)
    real(real64) :: t
    integer(int64) :: count, rate
    call system_clock(count, rate)
    t = real(count, real64) / real(rate, real64)
  end function wall_seconds
end module ac_clock
