!> ac_integrator -- one block step of the AC scheme with the libraries, in
!> the order of NBODY6's GPU2 INTGRT (paper Listing C1):
!>   1. next block time and its members (ac_blocks); the regular subset;
!>   2. GPUIRR_PRED_ACT (few members, none regular) or GPUIRR_PRED_ALL;
!>   3. GPUIRR_FIRR_VEC for all members;
!>   4. irregular corrector (OpenMP over members);
!>   5. regular subset: CXVPRED of every body on the host, GPUNB_SEND, then
!>      per chunk of NIMAX: GPUNB_REGF (overflow retries), GPUIRR_SET_LIST,
!>      GPUIRR_FIRR_VEC over the new lists, regular corrector;
!>   6. GPUIRR_SET_JP of every member.
!> With the resident GPUNB (option) step 5 becomes GPUNB_SET_JP of the
!> bodies corrected since the last regular block (each once, however many
!> steps it took), GPUNB_PREDICT and GPUNB_REGF_START before step 2, so that
!> the regular force of the first chunk is computed while the host does
!> steps 2-4, and each next chunk while the host corrects the previous one.
module ac_integrator
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  use, intrinsic :: iso_fortran_env, only: int64
  use nb6accel
  use ac_state
  use ac_blocks, only: blocks_next, blocks_move
  use ac_correct, only: predict_body, irregular_correct, regular_correct
  use ac_forces, only: regular_chunk_start, regular_chunk_finish, regular_chunk_collect, &
      regular_chunk_lists, send_particle, upload_stale_jparticles, xi, vi, gacc, gjrk, listgp, gf, gfd
  use ac_clock, only: wall_seconds
  use ac_profile, only: profile_block, nphase
  implicit none
  private
  public :: integrator_init, integrator_free, block_step

  integer, allocatable :: act(:), ireg(:)
  logical, allocatable :: due(:), moved(:)
  !> Blocks with regular bodies: member k of ireg is act(kreg(k)); step and
  !> list length of act(k) before the block (the level test after SET_JP and
  !> the regular corrector's old count, kept by the irregular corrector loop
  !> so that no serial pass reads them).
  integer, allocatable :: kreg(:), nnb_old(:)
  real(dp), allocatable :: step_old(:)
  real(dp), allocatable :: gfa(:,:), gfda(:,:)
  !> GPUNB_PREDICT has run once: GPUNB's records are laid out, so its
  !> irregular force may be used (-gpu-irr).
  logical :: jset_predicted = .false.
  !> Below this many bodies a loop runs on one thread (an OpenMP region
  !> costs more than the work; NBODY6 uses NPMAX = 16 for the same reason).
  integer, parameter :: par_min = 48

contains

  subroutine integrator_init()
    allocate(act(n), ireg(n), due(n), moved(n), gfa(3,n), gfda(3,n), kreg(n), nnb_old(n), step_old(n))
    jset_predicted = .false.
  end subroutine integrator_init

  subroutine integrator_free()
    if (allocated(act)) deallocate(act, ireg, due, moved, gfa, gfda, kreg, nnb_old, step_old)
  end subroutine integrator_free

  !> Advance the next block; returns its time.
  subroutine block_step(tblock)
    real(dp), intent(out) :: tblock
    integer :: nact, nreg, k, i, j0, ni
    integer(int64) :: nbs
    integer(c_int) :: nc, one, nn
    real(dp) :: t, xp(3), vp(3), sold, spent(nphase), lap_start
    logical :: early, gpu_irr

    spent = 0
    lap_start = wall_seconds()
    call blocks_next(time, tblock, nact, act)
    time = tblock
    nblock = nblock + 1

    ! The regular subset from REGDUE (one byte per body, set by the
    ! correctors): serial, and cheap even for the largest blocks.
    nreg = 0
    do k = 1, nact
      i = act(k)
      due(k) = regdue(i)
      if (due(k)) then
        nreg = nreg + 1
        ireg(nreg) = i
        kreg(nreg) = k
      end if
    end do

    nc = nact; one = 1; nn = n
    call lap(1)
    if (resident .and. nreg > 0) then
      t = wall_seconds()
      if (.not. setjp_per_step) call upload_stale_jparticles()
      call gpunb_predict(nn, time)
      jset_predicted = .true.
      wall_upload = wall_upload + (wall_seconds() - t)
      wall_regular = wall_regular + (wall_seconds() - t)
      call regular_chunk_start(min(nimax, nreg), ireg, .true., .true.)
      call lap(4)
    end if

    t = wall_seconds()
    if (nact <= npact .and. nreg == 0) then
      call gpuirr_pred_act(nc, act, time)
    else
      call gpuirr_pred_all(one, nn, time)
    end if
    ! The new lists' irregular force of the regular bodies (below) comes
    ! from the same library: the regular corrector takes the difference of
    ! the two as the effect of the list change, and a float sum (GPUIRR)
    ! against a double one (GPUNB) would add their rounding difference to
    ! the regular force (dE/E -5.7e-6 instead of 7e-7 at 128k).
    gpu_irr = gpu_irr_min > 0 .and. nact >= gpu_irr_min .and. jset_predicted
    if (gpu_irr) then
      call gpunb_firr_start(nc, act, time)
      call gpunb_firr_finish(gfa, gfda)
    else
      call gpuirr_firr_vec(nc, act, gfa, gfda)
    end if
    wall_irregular = wall_irregular + (wall_seconds() - t)
    call lap(2)

    ! Resident path, several chunks: collect the first now and start the
    ! second, which the GPU then computes during the irregular corrector
    ! (collecting touches no state the corrector reads; the lists and the
    ! regular corrector of the chunk wait for it).
    early = resident .and. nreg > nimax
    if (early) then
      call regular_chunk_collect(nimax, ireg, .false., .true.)
      call regular_chunk_start(min(nimax, nreg - nimax), ireg(nimax + 1:), .true., .true.)
      call lap(4)
    end if

    ! Irregular corrector.  Without regular bodies nothing reads GPUIRR's
    ! predictions any more, so the new state can go to GPUIRR at once, and
    ! nothing reads the members' predicted X, XDOT (CXVPRED, GPUNB_SEND and
    ! the regular corrector run only in blocks with regular bodies).
    t = wall_seconds()
    nbs = 0
    ! A body changes level iff its step changed (blocks_move checks the new
    ! one): no level arithmetic per body.
    !$omp parallel do if (nact >= par_min) schedule(static) private(k, i, xp, vp, sold) reduction(+:nbs)
    do k = 1, nact
      i = act(k)
      if (k + prefetch_ahead <= nact .and. prefetch_ahead > 0) call prefetch_body(act(k + prefetch_ahead))
      call predict_body(i, xp, vp)
      sold = step(i)
      if (nreg > 0) then
        x(:,i) = xp
        xdot(:,i) = vp
        tpred(i) = time
        step_old(k) = sold
        nnb_old(k) = nnb(i)
      end if
      call irregular_correct(i, xp, vp, gfa(:,k), gfda(:,k), due(k))
      nbs = nbs + nnb(i)
      if (nreg == 0) then
        call send_particle(i)
        moved(k) = step(i) /= sold
      end if
    end do
    !$omp end parallel do
    nstepi = nstepi + nact
    if (resident .and. setjp_per_step) nupload = nupload + nact ! one GPUNB_SET_JP per corrected body
    nb_sum = nb_sum + nbs
    wall_corr_irr = wall_corr_irr + (wall_seconds() - t)
    call lap(3)

    if (nreg > 0) then
      nblckr = nblckr + 1
      if (.not. resident) then
        t = wall_seconds()
        ! Bodies of this block keep their predicted (uncorrected) X, XDOT:
        ! TPRED = time makes CXVPRED skip them.
        call cxvpred(one, nn, time, t0, x0, x0dot, f, fdot, x, xdot, tpred)
        call gpunb_send(nn, body, x, xdot)
        wall_upload = wall_upload + (wall_seconds() - t)
        nupload = nupload + n
        wall_regular = wall_regular + (wall_seconds() - t)
      end if
      do j0 = 0, nreg - 1, nimax
        ni = min(nimax, nreg - j0)
        call regular_chunk_with_old_counts(ni, j0)
      end do
      nstepr = nstepr + nreg
      call lap(4)
      t = wall_seconds()
      !$omp parallel do if (nact >= par_min) schedule(static) private(k)
      do k = 1, nact
        if (k + prefetch_ahead <= nact .and. prefetch_ahead > 0) call prefetch_body(act(k + prefetch_ahead))
        call send_particle(act(k))
        moved(k) = step(act(k)) /= step_old(k)
      end do
      !$omp end parallel do
      wall_setjp = wall_setjp + (wall_seconds() - t)
      call lap(5)
    end if

    call blocks_move(nact, act, moved)
    call lap(6)
    call profile_block(nact, nreg, spent)
  contains
    !> The time since the last lap goes to phase p.
    subroutine lap(p)
      integer, intent(in) :: p
      real(dp) :: now
      now = wall_seconds()
      spent(p) = spent(p) + (now - lap_start)
      lap_start = now
    end subroutine lap

    !> One chunk of the regular subset: new lists and forces, then the
    !> regular corrector.
    subroutine regular_chunk_with_old_counts(ni, j0)
      integer, intent(in) :: ni, j0
      integer :: ll, i
      integer(c_int) :: nic
      integer(int64) :: nv
      real(dp) :: t
      if (resident) then
        if (.not. (early .and. j0 == 0)) then
          call regular_chunk_collect(ni, ireg(j0 + 1:), .false., .true.)
          ! Next chunk on the GPU while this one is corrected here.
          if (j0 + ni < nreg) call regular_chunk_start(min(nimax, nreg - j0 - ni), ireg(j0 + ni + 1:), &
              .true., .true.)
        end if
        call regular_chunk_lists(ni, ireg(j0 + 1:), .true.)
      else
        call regular_chunk_start(ni, ireg(j0 + 1:), .true., .false.)
        call regular_chunk_finish(ni, ireg(j0 + 1:), .false., .false.)
      end if
      t = wall_seconds()
      nic = ni
      if (gpu_irr) then
        call gpunb_firr_start(nic, ireg(j0 + 1:), time)
        call gpunb_firr_finish(gf, gfd)
      else
        call gpuirr_firr_vec(nic, ireg(j0 + 1:), gf, gfd)
      end if
      wall_irregular = wall_irregular + (wall_seconds() - t)
      t = wall_seconds()
      nv = 0
      !$omp parallel do if (ni >= par_min) schedule(static) private(ll, i) reduction(+:nv)
      do ll = 1, ni
        i = ireg(j0 + ll)
        if (ll + prefetch_ahead <= ni .and. prefetch_ahead > 0) call prefetch_body(ireg(j0 + ll + prefetch_ahead))
        if (nnb(i) == 0) nv = nv + 1
        call regular_correct(i, xi(:,ll), vi(:,ll), gacc(:,ll), gjrk(:,ll), gf(:,ll), gfd(:,ll), &
            listgp(:,ll), nnb_old(kreg(j0 + ll)))
      end do
      !$omp end parallel do
      nvoid = nvoid + nv
      wall_corr_reg = wall_corr_reg + (wall_seconds() - t)
    end subroutine regular_chunk_with_old_counts
  end subroutine block_step
end module ac_integrator
