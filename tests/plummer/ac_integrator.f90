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
  use ac_correct, only: lanes, regular_correct
  use ac_correct_generic, only: irregular_correct_lanes_generic => irregular_correct_lanes
  use ac_correct_avx2, only: irregular_correct_lanes_avx2 => irregular_correct_lanes
  use ac_correct_avx512, only: irregular_correct_lanes_avx512 => irregular_correct_lanes
  use ac_forces, only: regular_chunk_start, regular_chunk_finish, regular_chunk_collect, &
      regular_chunk_lists, send_particle, upload_stale_jparticles, xi, vi, gacc, gjrk, listgp, gf, gfd
  use ac_clock, only: wall_seconds
  use ac_profile, only: profile_block, nphase, profile_regular_part, reg_predict, reg_start, reg_collect, &
      reg_lists, reg_new_irr, reg_correct
  implicit none
  private
  public :: integrator_init, integrator_free, block_step, irr_share_print

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
  !> -irr-share: in a block of at least gpu_irr_min bodies GPUNB computes
  !> the regular bodies and part of the others on the GPU while GPUIRR
  !> computes the rest on the host.  The bodies of such a block, the GPU's
  !> and the host's (absolute indices); row(k): the column of gfa that holds
  !> act(k)'s force, the GPU's 1..ngpu first, then the host's (row(k) < 0:
  !> ngpu - row(k)).  The host's share of a block by block size (bucket b:
  !> 2**(b-1) .. 2**b - 1 bodies), moved by share_step after each block
  !> towards the point where both finish together (GPUNB_FIRR_DONE says
  !> which finished first).  The regular bodies stay on the GPU: their
  !> old- and new-list forces must come from the same arithmetic.
  integer, allocatable :: on_gpu(:), on_host(:), row(:)
  integer, parameter :: nshare = 31
  real(dp) :: host_share(nshare) = 0
  integer(int64) :: shared_blocks(nshare) = 0
  real(dp), parameter :: share_first = 0.2_dp, share_step = 0.01_dp, share_most = 0.9_dp
  !> Below this many bodies a loop runs on one thread (an OpenMP region
  !> costs more than the work; NBODY6 uses NPMAX = 16 for the same reason).
  integer, parameter :: par_min = 48

contains

  subroutine integrator_init()
    allocate(act(n), ireg(n), due(n), moved(n), gfa(3,n), gfda(3,n), kreg(n), nnb_old(n), step_old(n))
    allocate(on_gpu(n), on_host(n), row(n))
    jset_predicted = .false.
    host_share = share_first
    shared_blocks = 0
  end subroutine integrator_init

  subroutine integrator_free()
    if (allocated(act)) deallocate(act, ireg, due, moved, gfa, gfda, kreg, nnb_old, step_old)
    if (allocated(on_gpu)) deallocate(on_gpu, on_host, row)
  end subroutine integrator_free

  !> The host's share that -irr-share arrived at, by block size.
  subroutine irr_share_print(unit)
    integer, intent(in) :: unit
    integer :: b
    if (sum(shared_blocks) == 0) return
    write(unit, '(a)') '# Host share of the irregular-only bodies (-irr-share) at the end, by block size:'
    do b = 1, nshare
      if (shared_blocks(b) > 0) write(unit, '(a,i7,a,i7,a,f6.3,a,i0,a)') '# ', 2**(b - 1), '..', 2**b - 1, &
          ': ', host_share(b), '  (', shared_blocks(b), ' blocks)'
    end do
  end subroutine irr_share_print

  !> Advance the next block; returns its time.
  subroutine block_step(tblock)
    real(dp), intent(out) :: tblock
    integer :: nact, nreg, k, i, j0, ni, ngpu, nhost, nhost_most, b, r, nmoved, k0, m, l
    integer :: idx(lanes)
    logical :: dl(lanes)
    real(dp) :: sold(lanes), fl(lanes,3), fdl(lanes,3), xl(lanes,3), vl(lanes,3)
    integer(int64) :: nbs
    integer(c_int) :: nc, one, nn
    real(dp) :: t, spent(nphase), lap_start
    logical :: early, gpu_irr, split, start_after_irr
    real(dp) :: t_start

    spent = 0
    lap_start = wall_seconds()
    ! The members and their regular subset (from REGDUE, one byte per body,
    ! set by the correctors).
    call blocks_next(time, tblock, nact, act, due, ireg, kreg, nreg)
    time = tblock
    nblock = nblock + 1

    ! A block shared with the host (-irr-share) is split.
    split = irr_share .and. gpu_irr_min > 0 .and. nact >= gpu_irr_min .and. jset_predicted
    nhost_most = 0
    if (split) then
      b = min(max(bit_size(nact) - leadz(nact), 1), nshare)
      nhost_most = int(host_share(b) * nact) ! < nact: the GPU gets at least one
    end if
    ngpu = 0
    nhost = 0
    if (split) then
      do k = 1, nact
        i = act(k)
        if (due(k) .or. nhost >= nhost_most) then
          ngpu = ngpu + 1
          on_gpu(ngpu) = i
          row(k) = ngpu
        else
          nhost = nhost + 1
          on_host(nhost) = i
          row(k) = -nhost
        end if
      end do
    end if

    nc = nact; one = 1; nn = n
    call lap(1)
    if (resident .and. nreg > 0) then
      t = wall_seconds()
      if (.not. setjp_per_step) call upload_stale_jparticles()
      call gpunb_predict(nn, time)
      jset_predicted = .true.
      wall_upload = wall_upload + (wall_seconds() - t)
      wall_regular = wall_regular + (wall_seconds() - t)
      call profile_regular_part(reg_predict, wall_seconds() - t)
    end if
    gpu_irr = gpu_irr_min > 0 .and. nact >= gpu_irr_min .and. jset_predicted
    ! -irr-first: the regular force starts just after the irregular one.
    start_after_irr = irr_first .and. gpu_irr .and. .not. split
    if (resident .and. nreg > 0 .and. .not. start_after_irr) call start_regular_force()
    if (resident .and. nreg > 0) call lap(4)

    t = lap_start
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
    if (split) then
      call shared_irregular_force()
    else if (gpu_irr) then
      call gpunb_firr_start(nc, act, time)
      if (resident .and. nreg > 0 .and. start_after_irr) then
        ! Its time counts as the regular force's, not the irregular's.
        t_start = wall_seconds()
        call start_regular_force()
        t = t + (wall_seconds() - t_start)
      end if
      call gpunb_firr_finish(gfa, gfda)
    else
      call gpuirr_firr_vec(nc, act, gfa, gfda)
    end if
    call lap(2)
    wall_irregular = wall_irregular + (lap_start - t)

    ! Resident path, several chunks, one in flight at a time (-regf-depth
    ! 1): collect the first now and start the second, which the GPU then
    ! computes during the irregular corrector (collecting touches no state
    ! the corrector reads; the lists and the regular corrector of the chunk
    ! wait for it).  With two in flight the second runs already.
    early = resident .and. nreg > nimax .and. regf_depth == 1
    if (early) then
      t = wall_seconds()
      call regular_chunk_collect(nimax, ireg, .false., .true.)
      call profile_regular_part(reg_collect, wall_seconds() - t)
      t = wall_seconds()
      call regular_chunk_start(min(nimax, nreg - nimax), ireg(nimax + 1:), .true., .true.)
      call profile_regular_part(reg_start, wall_seconds() - t)
      call lap(4)
    end if

    ! Irregular corrector.  Without regular bodies nothing reads GPUIRR's
    ! predictions any more, so the new state can go to GPUIRR at once, and
    ! nothing reads the members' predicted X, XDOT (CXVPRED, GPUNB_SEND and
    ! the regular corrector run only in blocks with regular bodies).
    t = lap_start
    nbs = 0
    nmoved = 0
    ! A body changes level iff its step changed (blocks_move checks the new
    ! one): no level arithmetic per body.  The members go to the corrector
    ! a vector of lanes at a time.
    !$omp parallel do if (nact >= par_min) schedule(static) private(k0, m, l, k, i, r, idx, sold, fl, fdl, dl, xl, vl) &
    !$omp reduction(+:nbs, nmoved)
    do k0 = 1, nact, lanes
      m = min(lanes, nact - k0 + 1)
      do l = 1, m
        k = k0 + l - 1
        i = act(k)
        if (k + prefetch_ahead <= nact .and. prefetch_ahead > 0) call prefetch_body(act(k + prefetch_ahead))
        r = k
        if (split) then
          r = row(k)
          if (r < 0) r = ngpu - r
        end if
        idx(l) = i
        fl(l,:) = gfa(:,r)
        fdl(l,:) = gfda(:,r)
        dl(l) = due(k)
        sold(l) = step(i)
        if (nreg > 0) then
          step_old(k) = sold(l)
          nnb_old(k) = nnb(i)
        end if
      end do
      ! The last chunk's empty lanes are computed too: give them lane 1's force.
      do l = m + 1, lanes
        fl(l,:) = fl(1,:)
        fdl(l,:) = fdl(1,:)
      end do
      select case (lanes_level)
      case (lanes_avx512)
        call irregular_correct_lanes_avx512(m, idx, fl, fdl, dl, xl, vl)
      case (lanes_avx2)
        call irregular_correct_lanes_avx2(m, idx, fl, fdl, dl, xl, vl)
      case default
        call irregular_correct_lanes_generic(m, idx, fl, fdl, dl, xl, vl)
      end select
      do l = 1, m
        k = k0 + l - 1
        i = idx(l)
        if (nreg > 0) then
          x(:,i) = xl(l,:)
          xdot(:,i) = vl(l,:)
          tpred(i) = time
        end if
        nbs = nbs + nnb(i)
        if (nreg == 0) then
          call send_particle(i)
          moved(k) = step(i) /= sold(l)
          if (moved(k)) nmoved = nmoved + 1
        end if
      end do
    end do
    !$omp end parallel do
    nstepi = nstepi + nact
    if (resident .and. setjp_per_step) nupload = nupload + nact ! one GPUNB_SET_JP per corrected body
    nb_sum = nb_sum + nbs
    call lap(3)
    wall_corr_irr = wall_corr_irr + (lap_start - t)

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
      !$omp parallel do if (nact >= par_min) schedule(static) private(k) reduction(+:nmoved)
      do k = 1, nact
        if (k + prefetch_ahead <= nact .and. prefetch_ahead > 0) call prefetch_body(act(k + prefetch_ahead))
        call send_particle(act(k))
        moved(k) = step(act(k)) /= step_old(k)
        if (moved(k)) nmoved = nmoved + 1
      end do
      !$omp end parallel do
      wall_setjp = wall_setjp + (wall_seconds() - t)
      call lap(5)
    end if

    ! What this block corrected goes to the GPU now, while the host works on
    ! the next blocks, instead of inside the next large block's
    ! GPUNB_FIRR_START or GPUNB_PREDICT (GPUNB_PUSH returns at once).
    if (push_min > 0 .and. nact >= push_min) then
      call gpunb_push()
      call lap(5)
    end if
    call blocks_move(nact, act, moved, nmoved)
    call lap(6)
    call profile_block(nact, nreg, spent)
  contains
    !> The irregular force of a split block: the GPU's part started, the
    !> host's computed meanwhile, then the GPU's collected; the share moves
    !> towards the side that finished first.
    subroutine shared_irregular_force()
      integer(c_int) :: ngc, nhc, done
      ngc = ngpu
      nhc = nhost
      call gpunb_firr_start(ngc, on_gpu, time)
      if (nhost > 0) call gpuirr_firr_vec(nhc, on_host, gfa(1, ngpu + 1), gfda(1, ngpu + 1))
      call gpunb_firr_done(done)
      call gpunb_firr_finish(gfa, gfda)
      if (done /= 0) then
        host_share(b) = max(host_share(b) - share_step, 0.0_dp)
      else
        host_share(b) = min(host_share(b) + share_step, share_most)
      end if
      shared_blocks(b) = shared_blocks(b) + 1
    end subroutine shared_irregular_force

    !> The regular force of the block's first chunk, and with -regf-depth 2
    !> of its second (resident path).
    subroutine start_regular_force()
      real(dp) :: t_chunk
      t_chunk = wall_seconds()
      call regular_chunk_start(min(nimax, nreg), ireg, .true., .true.)
      if (regf_depth > 1 .and. nreg > nimax) &
          call regular_chunk_start(min(nimax, nreg - nimax), ireg(nimax + 1:), .true., .true.)
      call profile_regular_part(reg_start, wall_seconds() - t_chunk)
    end subroutine start_regular_force

    !> The time since the last lap goes to phase p; lap_start is now the
    !> clock's reading, which the timers of the block's parts also take
    !> (a read costs 45-50 ns on the H100 box's VM; a small block made some 20, the
    !> libraries' included).
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
      integer :: ll, i, jn
      integer(c_int) :: nic
      integer(int64) :: nv
      real(dp) :: t
      if (resident) then
        if (.not. (early .and. j0 == 0)) then
          t = wall_seconds()
          call regular_chunk_collect(ni, ireg(j0 + 1:), .false., .true.)
          call profile_regular_part(reg_collect, wall_seconds() - t)
          t = wall_seconds()
          ! Next chunk on the GPU while this one is corrected here (with
          ! two in flight, the one after the next, whose place this
          ! chunk's collection freed: chunks are nimax long but the last).
          jn = j0 + regf_depth * nimax
          if (jn < nreg) call regular_chunk_start(min(nimax, nreg - jn), ireg(jn + 1:), .true., .true.)
          call profile_regular_part(reg_start, wall_seconds() - t)
        end if
        t = wall_seconds()
        call regular_chunk_lists(ni, ireg(j0 + 1:), .true.)
        call profile_regular_part(reg_lists, wall_seconds() - t)
      else
        ! NBODY6's path: all of GPUNB_REGF in REGF_START, the lists in collect.
        t = wall_seconds()
        call regular_chunk_start(ni, ireg(j0 + 1:), .true., .false.)
        call profile_regular_part(reg_start, wall_seconds() - t)
        t = wall_seconds()
        call regular_chunk_finish(ni, ireg(j0 + 1:), .false., .false.)
        call profile_regular_part(reg_collect, wall_seconds() - t)
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
      call profile_regular_part(reg_new_irr, wall_seconds() - t)
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
      call profile_regular_part(reg_correct, wall_seconds() - t)
    end subroutine regular_chunk_with_old_counts
  end subroutine block_step
end module ac_integrator
