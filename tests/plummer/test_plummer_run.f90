!> test_plummer_run -- the AC Hermite driver end to end with whatever
!> back-ends the libraries choose: energy conservation over t = 0..1 at
!> N = 1536 (|dE/E| <= 1e-5; a wrong force split, corrector or list
!> hand-over gives 1e-3 or worse), the virial ratio at t = 0 and t = 1, every
!> step counted, and determinism: the same model integrated twice in one
!> process (libraries closed and reopened in between) ends bit for bit in
!> the same state with the same step counts; and the resident GPUNB path
!> (-resident, -setjp block and step: records uploaded only when changed, GPU-side prediction,
!> asynchronous force) ends with the same energy as NBODY6's path: to 1e-9
!> of E where GPUNB runs on the host (the two give the same bits there), to
!> 2e-8 of E (a sixth of that run's |dE/E|) where it runs on a GPU, whose
!> float forces may round differently on the two paths (a record left stale
!> costs 1e-6 or more); the irregular corrector's generic, AVX2 and AVX-512
!> copies (those the CPU runs) end in the same state, bit for bit.  These runs pass at most 128
!> bodies per GPUNB_REGF call, so that blocks take several calls, as at
!> large N.  With -gpu-irr 32
!> (GPUNB's irregular force in double for blocks of >= 32, on the GPU where
!> there is one) the energy is within 1e-7 of E of NBODY6's path.
program test_plummer_run
  use plummer_checks, only: check, checks_finish
  use, intrinsic :: iso_fortran_env, only: real64, int64
  use plummer_model, only: plummer_generate
  use ac_run, only: run_options, run_result, run_plummer
  use ac_state, only: lanes_generic, lanes_avx512, lanes_name
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    !> GPUNB's query (C API): whether a back-end kind can run here.
    integer(c_int) function gpunb_backend_usable(kind) bind(C, name="gpunb_backend_usable")
      import :: c_int
      integer(c_int), value :: kind
    end function gpunb_backend_usable
  end interface
  !> enum gpunb_backend_kind: GPUNB_BACKEND_CUDA.
  integer(c_int), parameter :: backend_cuda = 2
  integer, parameter :: dp = real64
  type(run_options) :: opt
  type(run_result) :: r1, r2, r3, r4, r5, r6, r7
  real(dp), allocatable :: body(:), x(:,:), v(:,:), xa(:,:), va(:,:), xb(:,:), vb(:,:)
  integer :: n, level
  real(dp) :: tol_paths
  character(len=16) :: gpunb_env
  integer :: env_len, env_status

  opt%quiet = .true.
  opt%progress = 0

  n = 1536
  allocate(body(n), x(3,n), v(3,n), xa(3,n), va(3,n))
  call plummer_generate(n, 7, body, x, v)
  opt%tend = 1.0_dp
  call run_plummer(n, body, x, v, opt, r1, xa, va)
  write(*, '(a,i0,a,es10.3,a,f7.4,a,i0,a,i0,a,f6.1)') 'N = ', n, ' t = 0..1: dE/E = ', r1%de_over_e, &
      '  Q(1) = ', r1%q_end, '  irregular steps ', r1%nirr_second, '  regular ', r1%nreg_second, &
      '  <NB> ', r1%mean_nb
  call check('run complete', r1%complete, r1%treached)
  call check('|dE/E| <= 1e-5 over t = 0..1', abs(r1%de_over_e) <= 1.0e-5_dp, r1%de_over_e)
  call check('virial ratio 0.5 at t = 0', abs(r1%q0 - 0.5_dp) < 1.0e-6_dp, r1%q0)
  call check('virial ratio near 0.5 at t = 1', abs(r1%q_end - 0.5_dp) < 0.05_dp, r1%q_end)
  call check('irregular steps outnumber regular ones', r1%nirr_second > 2 * r1%nreg_second, &
      real(r1%nirr_second, dp) / max(1_int64, r1%nreg_second))
  call check('neighbour lists used (<NB> > 4)', r1%mean_nb > 4.0_dp, r1%mean_nb)
  deallocate(body, x, v, xa, va)

  n = 512
  allocate(body(n), x(3,n), v(3,n), xa(3,n), va(3,n), xb(3,n), vb(3,n))
  call plummer_generate(n, 11, body, x, v)
  opt%tend = 0.5_dp
  ! Several GPUNB_REGF calls per regular block (on the resident path the
  ! next one runs while this one is corrected), as at large N.
  opt%nimax = 128
  call run_plummer(n, body, x, v, opt, r1, xa, va)
  call run_plummer(n, body, x, v, opt, r2, xb, vb)
  call check('determinism: same final positions', all(xa == xb), maxval(abs(xa - xb)))
  call check('determinism: same final velocities', all(va == vb), maxval(abs(va - vb)))
  call check('determinism: same step counts', r1%nirr_second == r2%nirr_second .and. &
      r1%nreg_second == r2%nreg_second .and. r1%nblock_second == r2%nblock_second, &
      real(r1%nirr_second - r2%nirr_second, dp))
  call check('determinism: same energy error', r1%de_over_e == r2%de_over_e, r1%de_over_e - r2%de_over_e)
  call check('bodies moved', maxval(abs(xa - x)) > 1.0e-3_dp, maxval(abs(xa - x)))
  ! The irregular corrector's copies (ac_correct_lanes.inc): the same
  ! operations, rounded alike, so the same trajectory bit for bit.  r1 ran
  ! the best copy this CPU runs; each other one it runs must end there too.
  do level = lanes_generic, lanes_avx512
    if (level == r1%lanes_level) cycle
    if (level > r1%lanes_level) then
      write(*, '(3a)') 'SKIP: this CPU runs no ', trim(lanes_name(level)), &
          ' code, so those corrector lanes were not compared'
      cycle
    end if
    opt%lanes = lanes_name(level)
    call run_plummer(n, body, x, v, opt, r2, xb, vb)
    call check(trim(lanes_name(level)) // ' corrector lanes end where the ' // trim(lanes_name(r1%lanes_level)) &
        // ' ones do, bit for bit', all(xa == xb) .and. all(va == vb) .and. &
        r1%nirr_second == r2%nirr_second .and. r2%lanes_level == level, &
        max(maxval(abs(xa - xb)), maxval(abs(va - vb))))
  end do
  opt%lanes = 'auto'
  ! With -order morton the run numbers the bodies along a Morton curve but
  ! hands the final state back in the caller's order: it ends in nearly the
  ! same place body by body as the run in the given order (only the rounding
  ! of sums in another order differs; a body mixed up would be off by ~1).
  opt%morton = .true.
  call run_plummer(n, body, x, v, opt, r2, xb, vb)
  opt%morton = .false.
  write(*, '(a,es10.3,a,es10.3)') 'Morton vs given numbering: largest |dx| ', maxval(abs(xa - xb)), &
      ', dE/E ', r2%de_over_e
  call check('Morton numbering: final state in the caller''s order', maxval(abs(xa - xb)) < 1.0e-4_dp, &
      maxval(abs(xa - xb)))
  call check('Morton numbering: same energy error to 2e-8', abs(r1%de_over_e - r2%de_over_e) < 2.0e-8_dp, &
      r1%de_over_e - r2%de_over_e)

  ! GPUNB on a GPU unless NB6ACCEL_GPUNB sends it to the host.
  tol_paths = 1.0e-9_dp
  call get_environment_variable('NB6ACCEL_GPUNB', gpunb_env, env_len, env_status)
  if (gpunb_backend_usable(backend_cuda) /= 0 .and. .not. (env_status == 0 .and. &
      (gpunb_env == 'cpu' .or. gpunb_env == 'reference'))) tol_paths = 2.0e-8_dp
  opt%resident = .true.
  opt%setjp_per_step = .false.
  call run_plummer(n, body, x, v, opt, r3, xb, vb)
  opt%setjp_per_step = .true.
  call run_plummer(n, body, x, v, opt, r4, xb, vb)
  ! Blocks of >= 32 bodies take the irregular force from GPUNB (GPUNB_IRR_OPEN,
  ! GPUNB_SET_LIST, GPUNB_FIRR_START/FINISH): double sums instead of GPUIRR's
  ! float ones on the SIMD kernels, so another trajectory, not other bits.
  opt%gpu_irr_min = 32
  ! Where GPUNB computes that on the host (the CPU back-end, several GPUs)
  ! the run keeps GPUIRR, so it repeats the last run bit for bit...
  call run_plummer(n, body, x, v, opt, r7, xb, vb)
  ! ... unless told to use GPUNB's host path.
  opt%gpu_irr_on_host = .true.
  call run_plummer(n, body, x, v, opt, r5, xb, vb)
  ! The same with a share of each GPU block on the host (GPUIRR beside
  ! GPUNB_FIRR_START, balanced by GPUNB_FIRR_DONE) and GPUNB_PUSH after
  ! every GPU block.
  opt%irr_share = .true.
  opt%push_min = 32
  call run_plummer(n, body, x, v, opt, r6, xb, vb)
  opt%irr_share = .false.
  opt%push_min = -1
  opt%gpu_irr_on_host = .false.
  opt%gpu_irr_min = 0
  opt%setjp_per_step = .false.
  opt%resident = .false.
  write(*, '(a,es12.5,a,es12.5)') 'N = 512 t = 0..0.5: dE/E with -gpu-irr 32 ', r5%de_over_e, &
      ', energy against the legacy path ', (r5%e_end - r1%e_end) / abs(r1%e0)
  call check('-gpu-irr: run complete', r5%complete, r5%treached)
  call check('-gpu-irr: |dE/E| <= 1e-5', abs(r5%de_over_e) <= 1.0e-5_dp, r5%de_over_e)
  call check('-gpu-irr: energy within 1e-7 of E of the legacy path', &
      abs(r5%e_end - r1%e_end) <= 1.0e-7_dp * abs(r1%e0), (r5%e_end - r1%e_end) / abs(r1%e0))
  write(*, '(a,es12.5,a,es12.5)') 'N = 512 t = 0..0.5: dE/E with -gpu-irr 32 -irr-share on -push 32 ', &
      r6%de_over_e, ', energy against the legacy path ', (r6%e_end - r1%e_end) / abs(r1%e0)
  call check('-gpu-irr -irr-share on -push 32: run complete', r6%complete, r6%treached)
  call check('-gpu-irr -irr-share on -push 32: |dE/E| <= 1e-5', abs(r6%de_over_e) <= 1.0e-5_dp, r6%de_over_e)
  call check('-gpu-irr -irr-share on -push 32: energy within 1e-7 of E of the legacy path', &
      abs(r6%e_end - r1%e_end) <= 1.0e-7_dp * abs(r1%e0), (r6%e_end - r1%e_end) / abs(r1%e0))
  if (r7%gpu_irr_min == 0) then
    write(*, '(a)') '-gpu-irr 32: GPUNB computes the irregular force on the host here; GPUIRR kept it'
    call check('-gpu-irr on the host path: the same steps and energy as without it', &
        r7%e_end == r4%e_end .and. r7%nirr_second == r4%nirr_second .and. r7%nreg_second == r4%nreg_second, &
        (r7%e_end - r4%e_end) / abs(r1%e0))
  else
    write(*, '(a)') '-gpu-irr 32: GPUNB computes the irregular force on the GPU'
    call check('-gpu-irr on the GPU: the same steps and energy as with gpu_irr_on_host', &
        r7%e_end == r5%e_end .and. r7%nirr_second == r5%nirr_second .and. r7%nreg_second == r5%nreg_second, &
        (r7%e_end - r5%e_end) / abs(r1%e0))
  end if
  call check('-gpu-irr: GPUIRR keeps the irregular force where GPUNB has no GPU for it', &
      r7%gpu_irr_min == 0 .or. gpunb_backend_usable(backend_cuda) /= 0, real(r7%gpu_irr_min, dp))
  call check('-gpu-irr: one GPUNB_SET_JP per irregular step', &
      r5%nupload_second == r5%nirr_second .and. r5%nirr_second > 0, &
      real(r5%nupload_second, dp) / max(1_int64, r5%nirr_second))
  write(*, '(a,es12.5,a,es12.5,a,i0,a,i0)') 'N = 512 t = 0..0.5: dE/E legacy ', r1%de_over_e, &
      ', resident ', r3%de_over_e, ';  GPUNB_SET_JP calls ', r3%nupload_second, ' for irregular steps ', &
      r3%nirr_second
  call check('resident path: run complete', r3%complete, r3%treached)
  write(*, '(a,es8.1,a)') 'resident vs legacy energy tolerance ', tol_paths, ' of E'
  call check('resident path: same energy as the legacy path', &
      abs(r3%e_end - r1%e_end) <= tol_paths * abs(r1%e0), (r3%e_end - r1%e_end) / abs(r1%e0))
  call check('resident path: fewer GPUNB_SET_JP calls than irregular steps', &
      r3%nupload_second > 0 .and. r3%nupload_second < r3%nirr_second, &
      real(r3%nupload_second, dp) / max(1_int64, r3%nirr_second))
  call check('resident path, -setjp step: same energy as the legacy path', &
      abs(r4%e_end - r1%e_end) <= tol_paths * abs(r1%e0), (r4%e_end - r1%e_end) / abs(r1%e0))
  call check('resident path, -setjp step: one GPUNB_SET_JP per irregular step', &
      r4%nupload_second == r4%nirr_second .and. r4%nirr_second > 0, &
      real(r4%nupload_second, dp) / max(1_int64, r4%nirr_second))

  ! Main-program arrays live on the stack frame under -fopenmp, so free them
  ! before the end, or LeakSanitizer rightly reports them.
  deallocate(body, x, v, xa, va, xb, vb)
  call checks_finish('test_plummer_run')
end program test_plummer_run
