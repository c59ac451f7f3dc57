!> test_plummer_teams -- a Plummer run creates no OpenMP threads beyond its
!> first team.  Every parallel region of the driver and the libraries must
!> take the whole team or one thread: a team of part of the threads makes
!> libgomp end the others and create them anew for the next whole team, at
!> every block that does it (16k runs on 16 threads were 2.4-3.4x slower
!> for it, tests/plummer/RESULTS.md session 29).  N = 4096 on 4 threads:
!> the block scan used to take 2 of them there.
program test_plummer_teams
  use, intrinsic :: iso_fortran_env, only: real64
  use, intrinsic :: iso_c_binding, only: c_int
  use plummer_model, only: plummer_generate
  use ac_run, only: run_options, run_result, run_plummer
  !$ use omp_lib, only: omp_set_num_threads
  implicit none
  interface
    integer(c_int) function ac_team_new_threads() bind(C, name="ac_team_new_threads")
      import :: c_int
    end function ac_team_new_threads
  end interface
  integer, parameter :: dp = real64, n = 4096, threads = 4
  type(run_options) :: opt
  type(run_result) :: r
  real(dp), allocatable :: body(:), x(:,:), v(:,:), xe(:,:), ve(:,:)
  integer :: first, fresh

  !$ call omp_set_num_threads(threads)
  first = ac_team_new_threads()
  if (first < 0) then
    write(*, '(a)') 'test_plummer_teams: SKIP: built without OpenMP, no teams to check'
    stop 77
  end if
  if (first < 2) then ! (OMP_THREAD_LIMIT=1, say): no thread to lose
    write(*, '(a,i0,a)') 'test_plummer_teams: SKIP: a team of ', first, ' thread, no team to check'
    stop 77
  end if
  allocate(body(n), x(3,n), v(3,n), xe(3,n), ve(3,n))
  call plummer_generate(n, 5, body, x, v)
  opt%quiet = .true.
  opt%progress = 0
  opt%tend = 0.125_dp
  call run_plummer(n, body, x, v, opt, r, xe, ve)
  fresh = ac_team_new_threads()
  deallocate(body, x, v, xe, ve)
  write(*, '(a,i0,a,i0,a,i0,a,i0,a)') 'N = ', n, ' to t = 0.125 on ', threads, ' threads: a team of ', &
      first, ' before the run, ', fresh, ' of them new after it'
  if (.not. r%complete) then
    write(*, '(a)') 'FAIL: run complete'
    write(*, '(a)') 'test_plummer_teams: 0 passed, 2 failed'
    stop 1
  end if
  if (fresh /= 0) then
    write(*, '(a,i0,a)') 'FAIL: no thread created during the run (', fresh, ' new in the team after it)'
    write(*, '(a)') 'test_plummer_teams: 1 passed, 1 failed'
    stop 1
  end if
  write(*, '(a)') 'PASS: run complete'
  write(*, '(a)') 'PASS: no thread created during the run'
  write(*, '(a)') 'test_plummer_teams: 2 passed, 0 failed'
end program test_plummer_teams
