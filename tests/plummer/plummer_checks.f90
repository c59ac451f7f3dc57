!> plummer_checks -- the driver's tests' PASS and FAIL lines and their
!> count: each check prints what it checked and the value it judged.
module plummer_checks
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  private
  public :: check, checks_finish

  integer :: npass = 0, nfail = 0

contains

  subroutine check(what, ok, value)
    character(len=*), intent(in) :: what
    logical, intent(in) :: ok
    real(real64), intent(in) :: value
    if (ok) then
      npass = npass + 1
      write(*, '(a,a,a,es14.6,a)') 'PASS: ', what, ' (', value, ')'
    else
      nfail = nfail + 1
      write(*, '(a,a,a,es14.6,a)') 'FAIL: ', what, ' (got ', value, ')'
    end if
  end subroutine check

  !> "program: N passed, M failed"; exit status 1 after any failure.
  subroutine checks_finish(program)
    character(len=*), intent(in) :: program
    write(*, '(a,a,i0,a,i0,a)') program, ': ', npass, ' passed, ', nfail, ' failed'
    if (nfail > 0) stop 1
  end subroutine checks_finish
end module plummer_checks
