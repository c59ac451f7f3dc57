!> plummer_ac -- the Plummer timing run of Nitadori & Aarseth (2012) with the
!> nb6accel libraries: an equal-mass Plummer model in N-body units,
!> integrated with the Ahmad-Cohen 4th-order Hermite scheme on block steps
!> exactly as NBODY6's GPU2 loop calls GPUNB and GPUIRR, timed from t = 2
!> to 4.  Reports at t = 0, 1, 2, 3, 4; a table at the end; -csv appends it.
!>
!>   plummer_ac [-n N] [-seed S] [-tend T] [-etai E] [-etar E] [-nnb NB]
!>              [-nbmax NB] [-smax S] [-npact NP] [-nimax NI] [-prefetch K] [-ascending F] [-order O] [-ic FILE] [-dump FILE] [-csv FILE]
!>              [-label TEXT] [-wall-limit SECONDS] [-progress SECONDS] [-resident] [-setjp W]
!>              [-gpu-irr NMIN] [-gpu-irr-host on|off] [-irr-share on|off] [-irr-first on|off]
!>              [-regf-depth D] [-push NMIN] [-lanes L] [-profile] [-q]
program plummer_ac
  use, intrinsic :: iso_fortran_env, only: real64, error_unit, output_unit
  use plummer_model, only: plummer_generate, plummer_read
  use ac_run, only: run_options, run_result, run_plummer, default_nnb_target
  use ac_table, only: print_table, append_csv
  use ac_profile, only: profile_print
  use ac_integrator, only: irr_share_print
  use ac_blocks, only: blocks_print_moves
  implicit none
  integer, parameter :: dp = real64
  type(run_options) :: opt
  type(run_result) :: res
  integer :: n, seed, k, nargs, unit, i
  character(len=1024) :: arg, val, ic_file, csv_file, dump_file, label
  real(dp), allocatable :: body(:), x(:,:), v(:,:), xe(:,:), ve(:,:)

  n = 4096; seed = 1
  ic_file = ''; csv_file = ''; dump_file = ''; label = ''
  nargs = command_argument_count()
  k = 1
  do while (k <= nargs)
    call get_command_argument(k, arg)
    select case (trim(arg))
    case ('-h', '-help', '--help')
      call usage()
      stop
    case ('-q')
      opt%quiet = .true.
      k = k + 1
      cycle
    case ('-resident')
      opt%resident = .true.
      k = k + 1
      cycle
    case ('-profile')
      opt%profile = .true.
      k = k + 1
      cycle
    end select
    if (k == nargs) call bad(arg, '(missing value)')
    call get_command_argument(k + 1, val)
    select case (trim(arg))
    case ('-n'); n = int_value(arg, val, 2)
    case ('-seed'); seed = int_value(arg, val, 0)
    case ('-tend'); opt%tend = real_value(arg, val, 1.0e-3_dp)
    case ('-etai'); opt%eta_i = real_value(arg, val, 1.0e-6_dp)
    case ('-etar'); opt%eta_r = real_value(arg, val, 1.0e-6_dp)
    case ('-nnb'); opt%nnb_target = int_value(arg, val, 1)
    case ('-nbmax'); opt%nnbmax = int_value(arg, val, 2)
    case ('-smax'); opt%smax = real_value(arg, val, 1.0e-6_dp)
    case ('-npact'); opt%npact = int_value(arg, val, 1)
    case ('-prefetch'); opt%prefetch = int_value(arg, val, 0)
    case ('-ascending'); opt%ascending = int_value(arg, val, 0)
    case ('-nimax'); opt%nimax = int_value(arg, val, 1)
    case ('-gpu-irr'); opt%gpu_irr_min = int_value(arg, val, 0)
    case ('-push'); opt%push_min = int_value(arg, val, 0)
    case ('-rebuild'); opt%rebuild = int_value(arg, val, 1)
    case ('-wall-limit'); opt%wall_limit = real_value(arg, val, 0.0_dp)
    case ('-progress'); opt%progress = real_value(arg, val, 0.0_dp)
    case ('-ic'); ic_file = val
    case ('-csv'); csv_file = val
    case ('-dump'); dump_file = val
    case ('-label'); label = val
    case ('-setjp'); opt%setjp_per_step = choice(arg, val, 'step', 'block')
    case ('-irr-share'); opt%irr_share = choice(arg, val, 'on', 'off')
    case ('-irr-first'); opt%irr_first = choice(arg, val, 'on', 'off')
    case ('-regf-depth')
      opt%regf_depth = int_value(arg, val, 1)
      if (opt%regf_depth > 2) call bad(arg, val)
    case ('-gpu-irr-host'); opt%gpu_irr_on_host = choice(arg, val, 'on', 'off')
    case ('-order'); opt%morton = choice(arg, val, 'morton', 'given')
    case ('-lanes')
      if (all(trim(val) /= [character(8) :: 'auto', 'generic', 'avx2', 'avx512'])) call bad(arg, val)
      opt%lanes = val
    case default
      write(error_unit, '(3a)') 'plummer_ac: unknown option "', trim(arg), '" (try -help)'
      stop 2
    end select
    k = k + 2
  end do

  if (opt%gpu_irr_min > 0 .and. .not. opt%resident) then
    write(error_unit, '(a,i0,a)') 'plummer_ac: -gpu-irr ', opt%gpu_irr_min, &
        ' needs -resident (GPUNB keeps the records only on the resident path)'
    stop 2
  end if
  if (len_trim(ic_file) > 0) then
    call plummer_read(trim(ic_file), n, body, x, v)
  else
    allocate(body(n), x(3,n), v(3,n))
    call plummer_generate(n, seed, body, x, v)
  end if
  if (opt%nnb_target > 0 .and. opt%nnb_target > n / 4) then
    write(error_unit, '(a,i0,a,i0)') 'plummer_ac: -nnb ', opt%nnb_target, ' is too large for N = ', n
    stop 2
  end if

  allocate(xe(3,n), ve(3,n))
  if (.not. opt%quiet) then
    if (len_trim(ic_file) > 0) then
      write(output_unit, '(a,i0,3a)') '# plummer_ac: N = ', n, '  initial conditions from "', trim(ic_file), '"'
    else
      write(output_unit, '(a,i0,a,i0,a)') '# plummer_ac: N = ', n, '  seed = ', seed, &
          '  Plummer model (Aarseth, Henon & Wielen 1974), E = -1/4'
    end if
  end if
  call run_plummer(n, body, x, v, opt, res, xe, ve)
  call print_table(res)
  if (opt%profile) call profile_print(output_unit, 'second half, t = tend/2 .. tend')
  if (opt%profile) call blocks_print_moves(output_unit)
  if (opt%profile) call irr_share_print(output_unit)
  if (len_trim(csv_file) > 0) call append_csv(trim(csv_file), res, opt, seed, trim(label))
  if (len_trim(dump_file) > 0) then
    open(newunit=unit, file=trim(dump_file), status='replace', action='write')
    write(unit, '(a,f0.6)') '# m x y z vx vy vz at t = ', res%treached
    do i = 1, n
      write(unit, '(7es25.16e3)') body(i), xe(:,i), ve(:,i)
    end do
    close(unit)
  end if
  ! The main program's arrays are never freed otherwise (LeakSanitizer
  ! counts them in the sanitizer build's tests).
  deallocate(body, x, v, xe, ve)
  if (.not. res%complete) stop 1

contains

  subroutine usage()
    write(output_unit, '(a)') 'usage: plummer_ac [options]', &
        '  -n N            number of bodies (default 4096)', &
        '  -seed S         random seed of the Plummer model (default 1)', &
        '  -ic FILE        read "m x y z vx vy vz" lines instead', &
        '  -order O        given: the bodies as generated or read (default);', &
        '                  morton: numbered along a Morton curve of their initial', &
        '                  positions (neighbours get nearby indices)', &
        '  -tend T         end time (default 4; timing of the second half, t = 2..4)', &
        '  -etai E         irregular accuracy parameter (default 0.02)', &
        '  -etar E         regular accuracy parameter (default 0.02)', &
        '  -nnb NB         mean neighbour number aimed at (default 16 (N/1024)**0.3)', &
        '  -nbmax NB       largest neighbour number (NBODY6 NNBMAX, default 5 * target)', &
        '  -smax S         largest step, a power of two (default 1 for N <= 16k, else 1/8)', &
        '  -npact NP       blocks of at most NP bodies and no regular one use', &
        '                  GPUIRR_PRED_ACT, larger ones GPUIRR_PRED_ALL', &
        '                  (default NBODY6''s: 75, 100, 150, 200 for N up to 5000,', &
        '                  50000, 100000, above)', &
        '  -prefetch K     the correctors prefetch the data of the member K places', &
        '                  ahead (default 0: no prefetch)', &
        '  -ascending F    blocks of at least N/F members in index order (default 8,', &
        '                  0: every block in level order)', &
        '  -rebuild F      blocks in index order rebuild the level lists once N/F', &
        '                  bodies changed level, else move them one by one (default 1024)', &
        '  -nimax NI       regular bodies per GPUNB_REGF call at most (default 4096;', &
        '                  NBODY6''s NIMAX is 1024)', &
        '  -profile        after the table, the second half''s time by block size and',&
        '                  phase (scheduling, irregular force and corrector, regular)', &
        '  -csv FILE       append the final table as a CSV row', &
        '  -label TEXT     free text for the CSV row (machine, back-end)', &
        '  -dump FILE      write the final state as "m x y z vx vy vz" lines', &
        '  -wall-limit S   stop after S seconds of wall time (row marked stopped)', &
        '  -progress S     progress line on stderr every S seconds (default 10, 0: none)', &
        '  -resident       GPUNB keeps and predicts the j-particles (extended API,', &
        '                  regular force overlapping the irregular work) instead of', &
        '                  NBODY6''s CXVPRED + GPUNB_SEND + GPUNB_REGF', &
        '  -setjp W        resident path: GPUNB_SET_JP once per regular block for', &
        '                  the bodies corrected since the last one (block, the', &
        '                  default) or as each body is corrected (step)', &
        '  -gpu-irr NMIN   resident path: blocks of at least NMIN bodies take the', &
        '                  irregular force from GPUNB (GPUNB_FIRR_START/FINISH: on', &
        '                  the GPU, in double) instead of GPUIRR (0: never); with', &
        '                  several GPUs or no GPU, GPUIRR keeps it (GPUNB would', &
        '                  compute it on the host, more slowly)', &
        '  -gpu-irr-host W with -gpu-irr: use GPUNB''s irregular force also where it', &
        '                  runs on the host (on; for tests of that path; off, the', &
        '                  default)', &
        '  -irr-share W    with -gpu-irr: GPUIRR computes a share of such a block''s', &
        '                  irregular-only bodies on the host while the GPU computes', &
        '                  the rest, balanced per block size (on; off, the default)', &
        '  -irr-first W    with -gpu-irr: a block with regular bodies starts its', &
        '                  irregular force on the GPU before its regular force', &
        '                  (on), or after it (off, the default)', &
        '  -regf-depth D   with -resident: regular-force chunks of a large block in', &
        '                  flight at once, 2 (the default: the GPU computes the next', &
        '                  while the host collects one) or 1; the same arithmetic', &
        '  -push NMIN      with -gpu-irr: after each block of at least NMIN bodies,', &
        '                  GPUNB_PUSH starts copying its records to the GPU (default:', &
        '                  N/8, at least the -gpu-irr NMIN; 0: never)', &
        '  -lanes L        the code of the irregular corrector and of the start-up''s', &
        '                  pair terms: auto (the default: the best copy the CPU', &
        '                  runs), generic, avx2, avx512', &
        '  -q              no reports, only the final table'
  end subroutine usage

  subroutine bad(name, value)
    character(len=*), intent(in) :: name, value
    write(error_unit, '(5a)') 'plummer_ac: bad value for ', trim(name), ': "', trim(value), '"'
    stop 2
  end subroutine bad

  !> A two-way option: true for yes, false for no, else a bad value.
  logical function choice(name, text, yes, no)
    character(*), intent(in) :: name, text, yes, no
    choice = .false.
    if (trim(text) == yes) then
      choice = .true.
    else if (trim(text) /= no) then
      call bad(name, text)
    end if
  end function choice

  integer function int_value(name, text, lowest)
    character(len=*), intent(in) :: name, text
    integer, intent(in) :: lowest
    integer :: ios
    read(text, *, iostat=ios) int_value
    if (ios /= 0) call bad(name, text)
    if (int_value < lowest) call bad(name, text)
  end function int_value

  real(dp) function real_value(name, text, lowest)
    character(len=*), intent(in) :: name, text
    real(dp), intent(in) :: lowest
    integer :: ios
    read(text, *, iostat=ios) real_value
    if (ios /= 0) call bad(name, text)
    if (real_value < lowest) call bad(name, text)
  end function real_value
end program plummer_ac
