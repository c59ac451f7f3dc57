!> ac_state -- the particle data of the Ahmad-Cohen Hermite integrator, in
!> NBODY6's names and conventions (common6.h) so that the flow can be read
!> beside NBODY6's GPU2 code: F = acc/2 and FDOT = jerk/6 (Taylor
!> coefficients, what GPUIRR_SET_JP takes); FI, FR, FIDOT, FRDOT, D2, D3, D2R,
!> D3R are full derivatives.  No regularisation: IFIRST = 1, NTOT = N.
module ac_state
  use, intrinsic :: iso_fortran_env, only: real64, int64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_loc, c_bool
  implicit none
  public

  integer, parameter :: dp = real64
  !> i-particles per GPUNB_REGF call at most (NBODY6's NIMAX; run_options
  !> sets it before ac_forces sizes its buffers).
  integer :: nimax = 4096
  !> Deepest block-step level: steps down to smax * 2**(1 - maxlevel).
  integer, parameter :: maxlevel = 60

  ! ---- parameters of the run (set once by ac_setup) -------------------------
  integer :: n = 0
  real(dp) :: eta_i = 0.02_dp, eta_r = 0.02_dp
  !> Largest step (a power of two, so that report times are block times).
  real(dp) :: smax = 0.125_dp
  !> Mean neighbour number aimed at, the maximum (NBODY6's NNBMAX), and the
  !> limit given to GPUNB_REGF (count including self; overflow above it).
  integer :: nnb_target = 0, nnbmax = 0, nbmax = 0
  !> Leading dimension of the GPUNB list columns and GPUIRR's list length + 1.
  integer :: lmax = 0
  !> Few active particles and no regular one: predict only those (PRED_ACT).
  integer :: npact = 100
  !> GPUNB keeps the j-particles and predicts them itself (GPUNB_SET_JP,
  !> GPUNB_PREDICT, GPUNB_REGF_START/FINISH, the extended API) instead of
  !> NBODY6's CXVPRED + GPUNB_SEND + GPUNB_REGF every regular block.
  logical :: resident = .false.
  !> Resident path: GPUNB_SET_JP per corrected step (else per regular block).
  logical :: setjp_per_step = .false.
  !> Resident path: blocks of at least this many bodies take the irregular
  !> force from GPUNB (GPUNB_FIRR_START/FINISH) instead of GPUIRR; 0: never.
  integer :: gpu_irr_min = 0
  !> With gpu_irr_min: GPUIRR computes a share of such a block's
  !> irregular-only bodies on the host while the GPU computes the rest.
  logical :: irr_share = .false.
  !> With gpu_irr_min: a block with regular bodies starts its GPU irregular
  !> force before its regular force (else after it).
  logical :: irr_first = .false.
  !> Resident path: regular-force chunks in flight at once (GPUNB_REGF_START
  !> keeps up to two): 2 starts a large block's first two chunks together and
  !> each later one when the chunk two before it is collected.
  integer :: regf_depth = 2
  !> With gpu_irr_min: after each block of at least this many bodies,
  !> GPUNB_PUSH starts copying its corrected records to the GPU; 0: never.
  integer :: push_min = 0
  real(dp) :: bodym = 0
  !> Neighbour-sphere control (NBODY6's ALPHA, ZNBMIN, ZNBMAX, RSFAC), the
  !> scale radius 0.5 M**2 / POT, the core radius squared, and the step above
  !> which Jun Makino's convergence test is applied (NBODY6's STEPJ).
  real(dp) :: alpha = 0, znbmin = 0, znbmax = 0, rsfac = 0, rscale = 1, rc2 = 0.01_dp
  real(dp) :: stepj = 0.01_dp
  !> The correctors' loops prefetch the data of the member this many places
  !> ahead (ac_prefetch.c; 0: none; run_options sets it).
  integer :: prefetch_ahead = 0
  !> Blocks of at least n / ascending_fraction members come in index order
  !> (ac_blocks; 0: always in level order; run_options sets it).
  integer :: ascending_fraction = 8
  !> In such blocks, n / rebuild_fraction or more bodies that changed level
  !> rebuild every level list on the team instead of moving one by one
  !> (run_options sets it).
  integer :: rebuild_fraction = 1024
  !> Which copy of the driver's vector loops runs: ac_correct_generic,
  !> ac_correct_avx2 or ac_correct_avx512 for the irregular corrector's lanes,
  !> ac_box_terms_generic, _avx2 or _avx512 for the start-up's pair terms
  !> (run_options sets it, from the CPU).
  integer, parameter :: lanes_generic = 0, lanes_avx2 = 1, lanes_avx512 = 2
  character(len=*), parameter :: lanes_name(0:2) = [character(7) :: 'generic', 'avx2', 'avx512']
  integer :: lanes_level = lanes_generic
  !> Bodies per box of the start-up's derivatives (ac_forces'
  !> second_third_derivatives; the box_terms copies of ac_box_terms.inc).
  integer, parameter :: box = 32
  !> Bodies i per group of those derivatives (box_sums: one in each lane of
  !> an AVX-512 vector of doubles; their list marks are bits of one byte).
  integer, parameter :: box_lanes = 8

  ! ---- particles -------------------------------------------------------------
  real(dp), allocatable, target :: body(:)
  real(dp), allocatable, target :: x0(:,:), x0dot(:,:)    ! corrected state at T0
  real(dp), allocatable :: x(:,:), xdot(:,:)              ! predicted state at TPRED
  real(dp), allocatable, target :: f(:,:), fdot(:,:)      ! acc/2, jerk/6 at T0
  real(dp), allocatable, target :: fi(:,:), fidot(:,:)    ! irregular force, derivative
  real(dp), allocatable, target :: fr(:,:), frdot(:,:)    ! regular force, derivative (at T0R)
  ! Irregular and regular 2nd, 3rd derivatives at time 0 (FPOLY2, for the
  ! first steps); the correctors keep theirs local (only the criterion reads them).
  real(dp), allocatable :: d2(:,:), d3(:,:)
  real(dp), allocatable :: d2r(:,:), d3r(:,:)
  real(dp), allocatable, target :: t0(:), t0r(:), step(:), stepr(:), tpred(:)
  !> Body i's next irregular step ends at its regular time (NBODY6's test
  !> TNEW >= T0R + STEPR, made by the corrector while the body is in cache):
  !> the scheduler reads this one byte per member (64 KiB at 64k, cache-
  !> resident) instead of three doubles scattered over memory.
  logical(1), allocatable, target :: regdue(:)
  real(dp), allocatable :: rs(:)                          ! neighbour radius
  integer, allocatable, target :: nnb(:)                  ! current list length (self excluded)

  ! ---- time and counters ----------------------------------------------------
  real(dp) :: time = 0
  integer(int64) :: nstepi = 0, nstepr = 0, nblock = 0, nblckr = 0, noverflow = 0, nvoid = 0
  !> Sum of list lengths over irregular steps (mean cost of one step).
  integer(int64) :: nb_sum = 0

  ! ---- wall-clock accounting (seconds) ---------------------------------------
  !> Regular force: CXVPRED + GPUNB_SEND + GPUNB_REGF (retries included).
  !> Irregular force: GPUIRR_PRED_ALL/PRED_ACT + GPUIRR_FIRR_VEC.
  real(dp) :: wall_regular = 0, wall_irregular = 0
  !> Parts of the rest: the irregular corrector loop (with GPUIRR_SET_JP, and
  !> GPUNB_SET_JP on the resident path, in blocks without regular bodies),
  !> the regular corrector and list hand-over, the SET_JP calls after
  !> regular blocks.
  real(dp) :: wall_corr_irr = 0, wall_corr_reg = 0, wall_setjp = 0
  !> Host prediction and sending before the regular force (part of
  !> wall_regular): bodies sent and seconds.  NBODY6's path: CXVPRED +
  !> GPUNB_SEND of all N per regular block; resident path: GPUNB_PREDICT
  !> (the bodies are those handed to GPUNB_SET_JP as they were corrected,
  !> whose time is in the correctors' columns).
  integer(int64) :: nupload = 0
  real(dp) :: wall_upload = 0

contains

  !> Allocate every per-particle array for nbodies bodies.
  subroutine state_allocate(nbodies)
    integer, intent(in) :: nbodies
    n = nbodies
    allocate(body(n), x0(3,n), x0dot(3,n), x(3,n), xdot(3,n), f(3,n), fdot(3,n))
    allocate(fi(3,n), fidot(3,n), fr(3,n), frdot(3,n), d2(3,n), d3(3,n), d2r(3,n), d3r(3,n))
    allocate(t0(n), t0r(n), step(n), stepr(n), tpred(n), regdue(n), rs(n), nnb(n))
    call register_prefetch()
  end subroutine state_allocate

  !> What one irregular step of a member reads and writes (its prediction,
  !> irregular_correct, send_particle, the scheduler's REGDUE and NNB), for
  !> prefetch_body.  X, XDOT, TPRED are left out: only blocks with regular
  !> bodies write them.
  subroutine register_prefetch()
    interface
      subroutine ac_prefetch_clear() bind(C, name='ac_prefetch_clear')
      end subroutine ac_prefetch_clear
    end interface
    call ac_prefetch_clear()
    call add(c_loc(body), storage_size(body)); call add(c_loc(x0), 3 * storage_size(x0))
    call add(c_loc(x0dot), 3 * storage_size(x0dot)); call add(c_loc(f), 3 * storage_size(f))
    call add(c_loc(fdot), 3 * storage_size(fdot)); call add(c_loc(fi), 3 * storage_size(fi))
    call add(c_loc(fidot), 3 * storage_size(fidot)); call add(c_loc(fr), 3 * storage_size(fr))
    call add(c_loc(frdot), 3 * storage_size(frdot)); call add(c_loc(t0), storage_size(t0))
    call add(c_loc(t0r), storage_size(t0r)); call add(c_loc(step), storage_size(step))
    call add(c_loc(stepr), storage_size(stepr)); call add(c_loc(regdue), storage_size(regdue))
    call add(c_loc(nnb), storage_size(nnb))
  contains
    subroutine add(base, bits)
      type(c_ptr), intent(in) :: base
      integer, intent(in) :: bits
      interface
        integer(c_int) function ac_prefetch_add(base, bytes) bind(C, name='ac_prefetch_add')
          import :: c_ptr, c_int
          type(c_ptr), value :: base
          integer(c_int), value :: bytes
        end function ac_prefetch_add
      end interface
      if (ac_prefetch_add(base, int(bits / 8, c_int)) /= 0) error stop 'ac_state: prefetch table full'
    end subroutine add
  end subroutine register_prefetch

  !> Ask for body i's lines in the arrays register_prefetch named.
  subroutine prefetch_body(i)
    integer, intent(in) :: i
    interface
      subroutine ac_prefetch_body(i) bind(C, name='ac_prefetch_body')
        import :: c_int
        integer(c_int), value :: i
      end subroutine ac_prefetch_body
    end interface
    call ac_prefetch_body(int(i, c_int))
  end subroutine prefetch_body

  !> The best copy of the corrector's lanes this CPU runs (ac_cpu.c).
  integer function cpu_lanes_level()
    interface
      logical(c_bool) function ac_cpu_has_avx2() bind(C, name='ac_cpu_has_avx2')
        import :: c_bool
      end function ac_cpu_has_avx2
      logical(c_bool) function ac_cpu_has_avx512() bind(C, name='ac_cpu_has_avx512')
        import :: c_bool
      end function ac_cpu_has_avx512
    end interface
    cpu_lanes_level = lanes_generic
    if (ac_cpu_has_avx2()) cpu_lanes_level = lanes_avx2
    if (ac_cpu_has_avx512()) cpu_lanes_level = lanes_avx512
  end function cpu_lanes_level

  subroutine state_free()
    if (allocated(body)) then
      deallocate(body, x0, x0dot, x, xdot, f, fdot, fi, fidot, fr, frdot, d2, d3, d2r, d3r)
      deallocate(t0, t0r, step, stepr, tpred, regdue, rs, nnb)
    end if
    n = 0
    time = 0
    nstepi = 0; nstepr = 0; nblock = 0; nblckr = 0; noverflow = 0; nvoid = 0; nb_sum = 0
    wall_regular = 0; wall_irregular = 0; wall_corr_irr = 0; wall_corr_reg = 0; wall_setjp = 0
    nupload = 0; wall_upload = 0
  end subroutine state_free
end module ac_state
