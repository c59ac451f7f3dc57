!> ac_run -- one timing run: set up the parameters from N (as NBODY6's test
!> inputs scale them), start the integration, report at every integer time
!> and measure the wall time of the first and the second half of the run
!> (t = 0..2 and 2..4 for tend = 4), split into regular force, irregular
!> force and the rest.
module ac_run
  use, intrinsic :: iso_fortran_env, only: real64, int64, error_unit, output_unit
  use ac_state
  use ac_blocks, only: blocks_init, blocks_free
  use ac_forces, only: forces_open, forces_close, initial_forces, gpu_irregular_on_device
  use ac_integrator, only: integrator_init, integrator_free, block_step
  use ac_clock, only: wall_seconds
  use ac_profile, only: profile_reset
  use nb6accel, only: cxvpred
  use plummer_model, only: kinetic_energy, potential_energy
  use ac_order, only: morton_order
  !$ use omp_lib, only: omp_get_max_threads
  implicit none
  private
  public :: run_options, run_result, run_plummer, default_nnb_target

  type :: run_options
    real(dp) :: tend = 4.0_dp
    real(dp) :: eta_i = 0.02_dp, eta_r = 0.02_dp
    !> 0: chosen from N.
    integer :: nnb_target = 0, nnbmax = 0, npact = 0
    real(dp) :: smax = 0
    !> Stop (and say so in the table) after this many seconds; 0: no limit.
    real(dp) :: wall_limit = 0
    !> Seconds between progress lines on stderr; 0: none.
    real(dp) :: progress = 10
    !> Use GPUNB's resident j-particles and asynchronous force (extended API).
    logical :: resident = .false.
    !> Resident path: GPUNB_SET_JP in the correctors, per step, else (the
    !> default) once per regular block for the bodies corrected since the
    !> last one: at 64k on the H100 box 8.0-8.3 s against 8.5-8.7 s for
    !> t = 2..4 (a record store per step costs more than a pass per block).
    logical :: setjp_per_step = .false.
    logical :: quiet = .false.
    !> Members the correctors' loops prefetch ahead (0: no prefetch, the
    !> default: see ac_prefetch.c).
    integer :: prefetch = 0
    !> Blocks of at least N / ascending members in index order (0: never).
    integer :: ascending = 8
    !> Regular bodies per GPUNB_REGF call at most (NBODY6's NIMAX is 1024;
    !> 4096 took 12 % less regular time at 64k on the H100 box: fewer calls,
    !> each with its fixed cost, in the blocks with thousands of them).  On
    !> the resident path, with two chunks in flight, the GPU computes a large
    !> block's chunks back to back while the host waits for each, and only
    !> the host's work on the last one has nothing beside it: 4096 gave
    !> t = 2..4 at 64k 0.2 s shorter on average than 16384 (session 61).
    integer :: nimax = 4096
    !> Print where the second half's time went by block size (ac_profile).
    logical :: profile = .false.
    !> Number the bodies along a Morton curve of the initial positions
    !> (neighbours then have nearby indices); .false.: the order given.
    !> Off by default: no gain measured at 64k on the H100 box.
    logical :: morton = .false.
    !> Resident path: blocks of at least this many bodies take the irregular
    !> force from GPUNB (on the GPU) instead of GPUIRR; 0: never.  Where
    !> GPUNB would compute it on the host (the CPU back-end, several GPUs)
    !> GPUIRR keeps it, unless gpu_irr_on_host is set.
    integer :: gpu_irr_min = 0
    !> With gpu_irr_min: use GPUNB's irregular force also where it runs on
    !> the host, in plain C (the tests, which check that path on the CPU).
    logical :: gpu_irr_on_host = .false.
    !> With gpu_irr_min: GPUIRR takes a share of such a block on the host
    !> while the GPU computes the rest (ac_integrator).  Off by default: at
    !> 64k on the H100 box it gained nothing (the balance settles at 8-30 %
    !> of a block, and the split costs a serial pass).
    logical :: irr_share = .false.
    !> With gpu_irr_min: in a block with regular bodies, GPUNB_FIRR_START
    !> comes before the regular force's GPUNB_REGF_START, so that the
    !> irregular force (which the host waits for at once) does not queue
    !> behind the regular force's thread blocks (which the host needs only
    !> after the corrector).
    logical :: irr_first = .false.
    !> Resident path: 2 keeps the next chunk of a large regular block in
    !> flight while the host collects one (the GPU computes it meanwhile); 1
    !> starts each chunk when the one before is collected.  Same arithmetic.
    integer :: regf_depth = 2
    !> With gpu_irr_min: GPUNB_PUSH after each block of at least this many
    !> bodies (0: never; < 0: N/8, at least gpu_irr_min).  After the largest
    !> blocks the next GPU block would otherwise wait for a copy of all
    !> records: at 64k on the H100 box the blocks of 512-1023 took 0.5-0.66 s
    !> instead of 0.86-1.03 s for 0.03-0.06 s of pushes.  Pushing from N/32
    !> or after every GPU block (-push 512) gained nothing measurable at 128k
    !> (session 12), though a push now costs O(changed), ~30 us after a block
    !> of 512-1023.
    integer :: push_min = -1
    !> Blocks in index order (ascending) rebuild the level lists when at
    !> least N / rebuild bodies changed level.  On the H100 box's Xeon at
    !> 64k a rebuild took 73-87 us and a move one by one 190 ns, and N/1024
    !> took 0.43-0.46 s of level moves over t = 0..4 against 0.57-0.67 s
    !> with N/64 (and 0.78-0.80 s with N/16): rebuilt lists are also in
    !> index order, which later blocks walk faster.
    integer :: rebuild = 1024
    !> The irregular corrector's lanes: 'auto' (the best copy the CPU runs),
    !> 'generic', 'avx2' or 'avx512' (ac_correct_generic.f90, ...avx2, ...avx512).
    character(len=8) :: lanes = 'auto'
  end type run_options

  type :: run_result
    integer :: n = 0, threads = 1, nnb_target = 0
    real(dp) :: tend = 0, tsplit = 0, treached = 0
    real(dp) :: wall_init = 0, wall_first = 0, wall_second = 0
    real(dp) :: regular_second = 0, irregular_second = 0, rest_second = 0
    !> The rest split: irregular corrector, regular corrector + lists, SET_JP.
    real(dp) :: corr_irr_second = 0, corr_reg_second = 0, setjp_second = 0
    !> Bodies sent to GPUNB and the time of host prediction + sending
    !> (CXVPRED + GPUNB_SEND, or GPUNB_PREDICT after GPUNB_SET_JP of each
    !> corrected body in the correctors).
    integer(int64) :: nupload_second = 0
    real(dp) :: upload_second = 0
    integer(int64) :: nreg_second = 0, nirr_second = 0, nblock_second = 0
    real(dp) :: mean_nb = 0, e0 = 0, e_end = 0, de_over_e = 0, q0 = 0, q_end = 0
    integer(int64) :: noverflow = 0
    logical :: complete = .false., resident = .false., setjp_per_step = .false.
    integer :: gpu_irr_min = 0
    !> The copy of the corrector's lanes that ran (ac_state's lanes_*).
    integer :: lanes_level = lanes_generic
  end type run_result

contains

  !> NBODY6's test inputs use NNBMAX = 80, 100, ..., 300, 400 for
  !> N = 1k ... 64k, 100k, and aim <NB> at NNBMAX/5: about 16 (N/1024)**0.3.
  pure function default_nnb_target(nbodies) result(t)
    integer, intent(in) :: nbodies
    integer :: t
    t = nint(16.0_dp * (real(nbodies, dp) / 1024.0_dp)**0.3_dp)
    t = max(4, min(t, nbodies / 4))
  end function default_nnb_target

  !> Integrate the bodies (m, x, v in standard units) from t = 0 to
  !> opt%tend with the libraries; fill res.  The caller owns I/O of res.
  subroutine run_plummer(nbodies, m, xs, vs, opt, res, xend, vend)
    integer, intent(in) :: nbodies
    real(dp), intent(in) :: m(nbodies), xs(3,nbodies), vs(3,nbodies)
    type(run_options), intent(in) :: opt
    type(run_result), intent(out) :: res
    real(dp), intent(out), optional :: xend(3,nbodies), vend(3,nbodies)
    real(dp) :: wall0, wall_start, wall_split, reg_split, irr_split, tblock, next_report, last_progress
    real(dp) :: ci_split, cr_split, sj_split, up_split
    integer(int64) :: nup_split
    !> Body k of the run is body order(k) of the caller's arrays.
    integer, allocatable :: order(:)
    integer :: i
    real(dp) :: tkin, pot, rsmin, t_report, report_first, report_second
    integer(int64) :: nreg_split, nirr_split, nblock_split, nb_split
    logical :: split_done, stopped, gpu_irr_dropped

    call state_free()
    call state_allocate(nbodies)
    if (opt%morton) then
      call morton_order(nbodies, xs, order)
    else
      order = [(i, i = 1, nbodies)]
    end if
    body = m(order); x0 = xs(:,order); x0dot = vs(:,order)
    call set_parameters(opt)
    res%n = n
    res%nnb_target = nnb_target
    res%resident = resident
    res%lanes_level = lanes_level
    res%threads = 1
    !$ res%threads = omp_get_max_threads()
    res%tend = opt%tend
    res%tsplit = 0.5_dp * opt%tend

    wall0 = wall_seconds()
    tkin = kinetic_energy(n, body, x0dot)
    pot = potential_energy(n, body, x0)
    res%e0 = tkin - pot
    res%q0 = tkin / pot
    call update_controls(tkin, pot)
    call initial_rs_guess()
    call forces_open()
    ! With several GPUs or the CPU back-end GPUNB's irregular force runs on
    ! the host, in plain C: GPUIRR's SIMD kernels then keep all of it (two
    ! H200s, 64k: 8.8 s of irregular force against 2.6 s with GPUIRR).
    gpu_irr_dropped = gpu_irr_min > 0 .and. .not. opt%gpu_irr_on_host
    if (gpu_irr_dropped) gpu_irr_dropped = .not. gpu_irregular_on_device()
    if (gpu_irr_dropped) then
      gpu_irr_min = 0
      push_min = 0
      setjp_per_step = opt%setjp_per_step
    end if
    res%setjp_per_step = setjp_per_step
    res%gpu_irr_min = gpu_irr_min
    call initial_forces()
    call core_radius(rsmin)
    rsfac = max(rsfac, 1.5_dp * sqrt(2.0_dp * tkin / sum(body)) / rsmin)
    call blocks_init()
    call integrator_init()
    call profile_reset()
    res%wall_init = wall_seconds() - wall0
    if (.not. opt%quiet) then
      write(output_unit, '(a,i0,a,i0,a,f6.3,a,f6.3,a,i0,a,i0,a,i0,a,f7.4,a,i0,a,i0,a,i0,a,i0,2a)') &
          '# N = ', n, '  threads = ', res%threads, '  eta_I = ', eta_i, '  eta_R = ', eta_r, &
          '  <NB> target = ', nnb_target, '  NNBMAX = ', nnbmax, '  NBMAX = ', nbmax, &
          '  SMAX = ', smax, '  NPACT = ', npact, '  NIMAX = ', nimax, '  prefetch = ', prefetch_ahead, &
          '  ascending = ', ascending_fraction, '  order = ', trim(merge('morton', 'given ', opt%morton))
      write(output_unit, '(7a)') '# irregular corrector lanes: ', trim(lanes_name(lanes_level)), &
          ' (ac_correct_', trim(lanes_name(lanes_level)), '; start-up pair terms ac_box_terms_', &
          trim(lanes_name(lanes_level)), ')'
      if (resident) then
        write(output_unit, '(3a)') '# GPUNB path: resident j-particles (GPUNB_SET_JP ', &
            trim(merge('per corrected step    ', 'once per regular block', setjp_per_step)), &
            ', GPUNB_PREDICT, GPUNB_REGF_START/FINISH overlapping the irregular work)'
        if (regf_depth > 1) then
          write(output_unit, '(a,i0,a)') '# regular-force chunks in flight at once: ', regf_depth, &
              ' (the next one computed while the host collects one)'
        else
          write(output_unit, '(a,i0)') '# regular-force chunks in flight at once: ', regf_depth
        end if
        if (gpu_irr_dropped) write(output_unit, '(a,i0,a)') '# -gpu-irr ', opt%gpu_irr_min, &
            ' not used: GPUNB computes the irregular force on the GPU only with one GPU; GPUIRR keeps it'
        if (gpu_irr_min > 0) write(output_unit, '(a,i0,a)') '# irregular force of blocks of >= ', gpu_irr_min, &
            ' bodies: GPUNB_FIRR_START/FINISH (resident records and lists, in double)'
        if (gpu_irr_min > 0 .and. irr_first) write(output_unit, '(a)') &
            '#   started before the regular force in blocks with regular bodies'
        if (gpu_irr_min > 0 .and. irr_share) write(output_unit, '(a)') &
            '#   with a share of their irregular-only bodies on the host (GPUIRR), balanced per block size'
        if (push_min > 0) write(output_unit, '(a,i0,a)') '#   GPUNB_PUSH after each block of >= ', push_min, &
            ' bodies (its records copied to the GPU while the host goes on)'
      else
        write(output_unit, '(a)') '# GPUNB path: NBODY6 GPU2 (CXVPRED + GPUNB_SEND + GPUNB_REGF per regular block)'
      end if
      write(output_unit, '(a)') '#       t            E        dE/E      Q   <NB>    irr. steps    reg. steps' // &
          '      blocks  reg. blocks   wall (s)'
      call report(tkin, pot, res%e0, wall0)
    end if

    wall_start = wall_seconds()
    wall_split = wall_start; reg_split = 0; irr_split = 0
    ci_split = 0; cr_split = 0; sj_split = 0; up_split = 0; nup_split = 0
    nreg_split = 0; nirr_split = 0; nblock_split = 0; nb_split = 0
    split_done = res%tsplit <= 0
    report_first = 0; report_second = 0
    stopped = .false.
    last_progress = wall_start
    next_report = min(1.0_dp, opt%tend)
    do while (time < opt%tend)
      call block_step(tblock)
      if (.not. split_done .and. time >= res%tsplit) then
        split_done = .true.
        wall_split = wall_seconds()
        reg_split = wall_regular; irr_split = wall_irregular
        ci_split = wall_corr_irr; cr_split = wall_corr_reg; sj_split = wall_setjp
        up_split = wall_upload; nup_split = nupload
        nreg_split = nstepr; nirr_split = nstepi; nblock_split = nblock; nb_split = nb_sum
        call profile_reset()
      end if
      if (time >= next_report) then
        ! Energies for the report are not part of the timing (NBODY6 does
        ! them in ADJUST every DTADJ).
        t_report = wall_seconds()
        tkin = kinetic_energy(n, body, x0dot)
        pot = potential_energy(n, body, x0)
        call update_controls(tkin, pot)
        if (.not. opt%quiet) call report(tkin, pot, res%e0, wall0)
        next_report = min(next_report + 1.0_dp, opt%tend)
        if (split_done) then
          report_second = report_second + (wall_seconds() - t_report)
        else
          report_first = report_first + (wall_seconds() - t_report)
        end if
      end if
      if (iand(nblock, 63_int64) == 0) then
        if (opt%progress > 0 .and. wall_seconds() - last_progress > opt%progress) then
          last_progress = wall_seconds()
          write(error_unit, '(a,f10.6,a,f6.2,a,i0,a,i0,a,i0,a,f9.1,a)') 'plummer_ac: t = ', time, &
              ' of ', opt%tend, '  blocks ', nblock, '  irregular ', nstepi, '  regular ', nstepr, &
              '  wall ', last_progress - wall0, ' s'
          flush(error_unit)
        end if
        if (opt%wall_limit > 0 .and. wall_seconds() - wall0 > opt%wall_limit) then
          stopped = .true.
          exit
        end if
      end if
    end do

    res%treached = time
    res%complete = .not. stopped
    if (.not. split_done) wall_split = wall_seconds()
    res%wall_first = wall_split - wall_start - report_first
    res%wall_second = wall_seconds() - wall_split - report_second
    res%regular_second = wall_regular - reg_split
    res%irregular_second = wall_irregular - irr_split
    res%corr_irr_second = wall_corr_irr - ci_split
    res%corr_reg_second = wall_corr_reg - cr_split
    res%setjp_second = wall_setjp - sj_split
    res%upload_second = wall_upload - up_split
    res%nupload_second = nupload - nup_split
    res%rest_second = res%wall_second - res%regular_second - res%irregular_second
    res%nreg_second = nstepr - nreg_split
    res%nirr_second = nstepi - nirr_split
    res%nblock_second = nblock - nblock_split
    if (res%nirr_second > 0) res%mean_nb = real(nb_sum - nb_split, dp) / real(res%nirr_second, dp)
    res%noverflow = noverflow
    if (stopped) then
      ! Bodies are not synchronised: energy of the predicted state.
      call cxvpred(1, n, time, t0, x0, x0dot, f, fdot, x, xdot, tpred)
      tkin = kinetic_energy(n, body, xdot)
      pot = potential_energy(n, body, x)
    else
      tkin = kinetic_energy(n, body, x0dot)
      pot = potential_energy(n, body, x0)
    end if
    res%e_end = tkin - pot
    res%q_end = tkin / pot
    res%de_over_e = (res%e_end - res%e0) / res%e0
    if (present(xend)) xend(:,order) = x0
    if (present(vend)) vend(:,order) = x0dot

    call integrator_free()
    call blocks_free()
    call forces_close()
    call state_free()
  end subroutine run_plummer

  !> Parameters as NBODY6's test inputs scale them with N.
  subroutine set_parameters(opt)
    type(run_options), intent(in) :: opt
    eta_i = opt%eta_i
    resident = opt%resident
    setjp_per_step = opt%setjp_per_step
    gpu_irr_min = merge(max(opt%gpu_irr_min, 0), 0, resident)
    ! GPUNB's irregular force reads its own records: every corrected step
    ! must reach them before the next block, not once per regular block.
    if (gpu_irr_min > 0) setjp_per_step = .true.
    irr_share = opt%irr_share
    irr_first = opt%irr_first
    regf_depth = opt%regf_depth
    push_min = 0
    if (gpu_irr_min > 0) push_min = merge(max(gpu_irr_min, n / 8), opt%push_min, opt%push_min < 0)
    eta_r = opt%eta_r
    nnb_target = opt%nnb_target
    if (nnb_target <= 0) nnb_target = default_nnb_target(n)
    nnbmax = opt%nnbmax
    if (nnbmax <= 0) nnbmax = 5 * nnb_target
    nnbmax = max(nnbmax, nnb_target + 2)
    ! Room above NNBMAX before GPUNB reports an overflow (ADJUST: NNBMAX+50).
    nbmax = min(nnbmax + 50, n)
    lmax = nbmax + 2
    smax = opt%smax
    if (smax <= 0) smax = merge(1.0_dp, 0.125_dp, n <= 16384)
    smax = scale(1.0_dp, exponent(smax) - 1)
    ! Every body must be at the report times (integers and tend) and at the
    ! split tend/2 together: SMAX must divide them.
    ! A tend that no power of two >= 2**-10 divides would shrink every
    ! step to nothing (tend = 0.001 ran 500 regular steps per body): refuse.
    do while (smax >= 2.0_dp**(-10) .and. (modulo(opt%tend, smax) /= 0 .or. &
        modulo(0.5_dp * opt%tend, smax) /= 0 .or. (opt%tend > 1 .and. modulo(1.0_dp, smax) /= 0)))
      smax = 0.5_dp * smax
    end do
    if (smax < 2.0_dp**(-10)) then
      write(error_unit, '(a,es10.3,a)') 'plummer_ac: -tend', opt%tend, ': tend and tend/2 must be multiples' // &
          ' of a power of two >= 2**-10 (e.g. 0.25, 1, 4) so that every body reaches them'
      stop 2
    end if
    ! NBODY6's NPACT (75, 100, 150, 200 by N).  PRED_ACT gathers the members
    ! and their lists on one thread (about NPACT * <NB> bodies), PRED_ALL
    ! predicts all N on every thread: with many threads NBODY6's values are
    ! about where the two cost the same.
    if (n <= 5000) then
      npact = 75
    else if (n <= 50000) then
      npact = 100
    else if (n <= 100000) then
      npact = 150
    else
      npact = 200
    end if
    if (opt%npact > 0) npact = opt%npact
    if (trim(opt%lanes) == 'auto') then
      lanes_level = cpu_lanes_level()
    else if (any(trim(opt%lanes) == lanes_name)) then
      lanes_level = findloc(lanes_name, trim(opt%lanes), dim=1) - 1
      if (lanes_level > cpu_lanes_level()) then
        write(error_unit, '(3a)') 'plummer_ac: -lanes ', trim(opt%lanes), &
            ': this CPU (or its OS) does not run code of that level'
        stop 2
      end if
    else
      write(error_unit, '(3a)') 'plummer_ac: -lanes "', trim(opt%lanes), '" is none of auto, generic, avx2, avx512'
      stop 2
    end if
    prefetch_ahead = max(opt%prefetch, 0)
    ascending_fraction = max(opt%ascending, 0)
    rebuild_fraction = max(opt%rebuild, 1)
    nimax = max(opt%nimax, 1)
    bodym = sum(body) / n
    znbmax = 0.9_dp * nnbmax
    znbmin = max(0.2_dp * nnbmax, 1.0_dp)
    stepj = 0.01_dp * (60000.0_dp / n)**(1.0_dp / 3.0_dp)
    alpha = 0
    rc2 = 0
    rsfac = 0
    rscale = 1
  end subroutine set_parameters

  !> ADJUST's updates: scale radius, core radius (density-weighted, with
  !> NNB/RS**3 as density), RSFAC, and ALPHA nudged towards the target <NB>.
  subroutine update_controls(tkin, pot)
    real(dp), intent(in) :: tkin, pot
    real(dp) :: mtot, tcr, vc, rsmin, meannb
    mtot = sum(body)
    rscale = 0.5_dp * mtot**2 / pot
    tcr = 2.0_dp * rscale / sqrt(2.0_dp * tkin / mtot)
    vc = sqrt(2.0_dp * tkin / mtot)
    if (alpha == 0) then
      alpha = real(nnbmax, dp) * sqrt(0.08_dp * rscale**3 / n)
      rsfac = 25.0_dp / tcr
      return
    end if
    call core_radius(rsmin)
    rsfac = max(25.0_dp / tcr, 1.5_dp * vc / rsmin)
    meannb = real(sum(int(nnb, int64)), dp) / n
    if (meannb < nnb_target) then
      alpha = 1.1_dp * alpha
    else
      alpha = 0.9_dp * alpha
    end if
  end subroutine update_controls

  !> Core radius squared (Casertano & Hut 1985 weighting by density squared,
  !> with NNB/RS**3 as the density of body i) and the smallest RS.
  subroutine core_radius(rsmin)
    real(dp), intent(out) :: rsmin
    real(dp) :: w, sw, swr, r2
    integer :: i
    sw = 0; swr = 0; rsmin = huge(1.0_dp)
    do i = 1, n
      r2 = x0(1,i)**2 + x0(2,i)**2 + x0(3,i)**2
      w = (real(nnb(i), dp) / rs(i)**3)**2
      sw = sw + w
      swr = swr + w * r2
      if (nnb(i) > 0) rsmin = min(rsmin, rs(i))
    end do
    if (sw > 0) rc2 = swr / sw
  end subroutine core_radius

  !> First neighbour radii: the sphere holding nnb_target bodies at the
  !> density of a Plummer model with the same scale radius; refined by
  !> initial_forces against the real counts.
  subroutine initial_rs_guess()
    real(dp) :: a, r2
    integer :: i
    ! Plummer scale length a = 3 pi / 16 in standard units (rscale = 1).
    a = 3.0_dp * acos(-1.0_dp) / 16.0_dp * rscale
    do i = 1, n
      r2 = x0(1,i)**2 + x0(2,i)**2 + x0(3,i)**2
      rs(i) = a * (real(nnb_target, dp) / n)**(1.0_dp / 3.0_dp) * (1.0_dp + r2 / a**2)**(5.0_dp / 6.0_dp)
    end do
  end subroutine initial_rs_guess

  subroutine report(tkin, pot, e0, wall0)
    real(dp), intent(in) :: tkin, pot, e0, wall0
    real(dp) :: e, meannb
    e = tkin - pot
    meannb = real(sum(int(nnb, int64)), dp) / n
    write(output_unit, '(f10.4,f13.8,es12.3,f7.4,f7.1,3i14,i13,f11.2)') time, e, (e - e0) / e0, &
        tkin / pot, meannb, nstepi, nstepr, nblock, nblckr, wall_seconds() - wall0
    flush(output_unit)
  end subroutine report
end module ac_run
