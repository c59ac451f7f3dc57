!> ac_forces -- regular forces and neighbour lists through GPUNB_REGF, in
!> chunks of up to NIMAX i-particles (NBODY6 intgrt.omp.f, labels 550-56),
!> and the start of the integration (NBODY6's FPOLY0, FPOLY2, STEPS).
module ac_forces
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  use, intrinsic :: iso_fortran_env, only: int8, int64
  use nb6accel
  use ac_state
  use ac_correct, only: tstep, block_step_below
  use ac_clock, only: wall_seconds
  use ac_order, only: morton_order
  use ac_box_terms_generic, only: box_terms_generic => box_terms, box_sums_generic => box_sums
  use ac_box_terms_avx2, only: box_terms_avx2 => box_terms, box_sums_avx2 => box_sums
  use ac_box_terms_avx512, only: box_terms_avx512 => box_terms, box_sums_avx512 => box_sums
  implicit none
  private
  public :: forces_open, forces_close, regular_chunk, regular_chunk_start, regular_chunk_finish
  public :: regular_chunk_collect, regular_chunk_lists
  public :: initial_forces, send_particle, upload_stale_jparticles, gpu_irregular_on_device
  public :: xi, vi, gacc, gjrk, listgp, gf, gfd

  !> Per-chunk buffers, as in intgrt.omp.f: i-state, regular acc/jerk/pot,
  !> the lists (column ll: count, then members), irregular acc/jerk.
  !> Two chunks may be in flight on the resident path (GPUNB_REGF_START
  !> keeps up to two): the regular steps, results and lists of each are in
  !> a slot of their own, and dtr, gacc, gjrk, gpot and listgp point into
  !> the slot of the chunk collected last.
  real(dp), allocatable :: h2i(:), xi(:,:), vi(:,:)
  real(dp), allocatable :: gf(:,:), gfd(:,:)
  real(dp), allocatable, target :: dtr_slot(:,:), gacc_slot(:,:,:), gjrk_slot(:,:,:), gpot_slot(:,:)
  integer(c_int), allocatable, target :: listgp_slot(:,:,:)
  real(dp), pointer, contiguous :: dtr(:) => null(), gacc(:,:) => null(), gjrk(:,:) => null()
  real(dp), pointer, contiguous :: gpot(:) => null()
  integer(c_int), pointer, contiguous :: listgp(:,:) => null()
  !> The slots of the chunks started and not collected, oldest first;
  !> fetched(s): slot s's force is in its buffers already (the synchronous
  !> path, or taken early for a retry, see regular_chunk_collect).
  integer :: pending_slot(2), npending = 0, next_slot = 1
  logical :: fetched(2) = .false.
  ! Buffers of a retry for the particles whose list failed.
  real(dp), allocatable :: h2r(:), dtrr(:), xr(:,:), vr(:,:), ar(:,:), jr(:,:), pr(:)
  integer(c_int), allocatable :: listr(:,:)

  !> Resident path, -setjp block: body i was corrected since its last
  !> GPUNB_SET_JP.  GPUNB reads its records only at GPUNB_PREDICT (blocks
  !> with regular bodies), so a body corrected several times in between is
  !> sent once, not per step.
  logical, allocatable :: jp_stale(:)

  !> Retries with a radius 1.5 times larger before an empty list is taken.
  integer, parameter :: max_growth = 30

contains

  !> Open both libraries for n bodies, lists of up to nbmax - 1 members.
  subroutine forces_open()
    integer(c_int) :: cap, nn, lm, mn
    allocate(h2i(nimax), xi(3,nimax), vi(3,nimax), gf(3,nimax), gfd(3,nimax))
    allocate(dtr_slot(nimax,2), gacc_slot(3,nimax,2), gjrk_slot(3,nimax,2), gpot_slot(nimax,2))
    allocate(listgp_slot(lmax,nimax,2))
    call point_to_slot(1)
    npending = 0
    next_slot = 1
    allocate(h2r(nimax), dtrr(nimax), xr(3,nimax), vr(3,nimax), ar(3,nimax), jr(3,nimax))
    allocate(pr(nimax), listr(lmax,nimax))
    allocate(jp_stale(n))
    jp_stale = .false.
    cap = n + 100
    call gpunb_open(cap)
    nn = n + 100
    lm = lmax
    if (gpu_irr_min > 0) then
      ! The driver's own GPU irregular force (GPUNB's) takes the large
      ! blocks: GPUIRR's copy on the GPU would only cost a second store.
      mn = 0
      call gpuirr_open_device(nn, lm, mn)
      call gpunb_irr_open(lm)
    else
      call gpuirr_open(nn, lm)
    end if
  end subroutine forces_open

  !> Whether GPUNB_FIRR_START computes on the GPU (after forces_open with
  !> gpu_irr_min > 0); elsewhere GPUNB computes it on the host in plain C,
  !> slower than GPUIRR.
  logical function gpu_irregular_on_device()
    integer(c_int) :: ondev
    call gpunb_irr_on_device(ondev)
    gpu_irregular_on_device = ondev == 1
  end function gpu_irregular_on_device

  subroutine forces_close()
    call gpunb_close()
    call gpuirr_close()
    nullify(dtr, gacc, gjrk, gpot, listgp)
    if (allocated(h2i)) deallocate(h2i, xi, vi, gf, gfd, dtr_slot, gacc_slot, gjrk_slot, gpot_slot, listgp_slot)
    if (allocated(h2r)) deallocate(h2r, dtrr, xr, vr, ar, jr, pr, listr)
    if (allocated(jp_stale)) deallocate(jp_stale)
  end subroutine forces_close

  !> Hand body i's corrected state to GPUIRR (F, FDOT are acc/2, jerk/6),
  !> and to GPUNB when it keeps the j-particles: at once (-setjp step; its
  !> record is the memory GPUNB_PREDICT copies to the GPU, so this store is
  !> the whole upload, made while the body's state is in this core's
  !> cache), or flagged for upload_stale_jparticles.  Called concurrently
  !> for distinct i.
  subroutine send_particle(i)
    integer, intent(in) :: i
    integer(c_int) :: ii
    ii = i
    call gpuirr_set_jp(ii, x0(:,i), x0dot(:,i), f(:,i), fdot(:,i), body(i), t0(i))
    if (resident) then
      if (setjp_per_step) then
        call gpunb_set_jp(ii, x0(:,i), x0dot(:,i), f(:,i), fdot(:,i), body(i), t0(i))
      else
        jp_stale(i) = .true.
      end if
    end if
  end subroutine send_particle

  !> Resident path, -setjp block, just before GPUNB_PREDICT: GPUNB_SET_JP for
  !> the bodies corrected since the last upload (an O(N) scan of flags and
  !> O(changed) calls; GPUNB_SET_JP is thread-safe for distinct j).
  subroutine upload_stale_jparticles()
    integer :: i
    integer(c_int) :: ii
    integer(int64) :: sent
    sent = 0
    !$omp parallel do schedule(static) private(i, ii) reduction(+:sent)
    do i = 1, n
      if (jp_stale(i)) then
        ii = i
        call gpunb_set_jp(ii, x0(:,i), x0dot(:,i), f(:,i), fdot(:,i), body(i), t0(i))
        jp_stale(i) = .false.
        sent = sent + 1
      end if
    end do
    !$omp end parallel do
    nupload = nupload + sent
  end subroutine upload_stale_jparticles

  !> Regular force, jerk and new neighbour list of the ni bodies idx(1:ni)
  !> at their predicted X, XDOT: regular_chunk_start, then (later, when the
  !> resident GPUNB computes while the host works) regular_chunk_finish.
  subroutine regular_chunk(ni, idx, use_steps, grow_empty)
    integer, intent(in) :: ni
    integer, intent(in), contiguous :: idx(:)
    logical, intent(in) :: use_steps, grow_empty
    call regular_chunk_start(ni, idx, use_steps, .false.)
    call regular_chunk_finish(ni, idx, grow_empty, .false.)
  end subroutine regular_chunk

  !> dtr, gacc, gjrk, gpot, listgp: slot sl's buffers.
  subroutine point_to_slot(sl)
    integer, intent(in) :: sl
    dtr => dtr_slot(:,sl)
    gacc => gacc_slot(:,:,sl)
    gjrk => gjrk_slot(:,:,sl)
    gpot => gpot_slot(:,sl)
    listgp => listgp_slot(:,:,sl)
  end subroutine point_to_slot

  !> GPUNB_REGF_FINISH of the oldest chunk in flight into its slot, sl.
  subroutine fetch_slot(sl)
    integer, intent(in) :: sl
    call gpunb_regf_finish(gacc_slot(:,:,sl), gjrk_slot(:,:,sl), gpot_slot(:,sl), listgp_slot(:,:,sl))
    fetched(sl) = .true.
  end subroutine fetch_slot

  !> NBODY6's path (async = .false.): GPUNB_REGF against the j-set of the
  !> last GPUNB_SEND, at once.  Resident path (async): GPUNB_REGF_START on
  !> the library's own predictions; returns while the force is computed.
  !> At most two chunks are started and not collected.
  subroutine regular_chunk_start(ni, idx, use_steps, async)
    integer, intent(in) :: ni
    integer, intent(in), contiguous :: idx(:)
    logical, intent(in) :: use_steps, async
    integer :: ll, i, sl
    integer(c_int) :: nic, lm, nbm
    real(dp) :: t

    t = wall_seconds()
    if (npending >= 2) error stop 'regular_chunk_start: two chunks are in flight already'
    sl = next_slot
    next_slot = 3 - next_slot
    npending = npending + 1
    pending_slot(npending) = sl
    fetched(sl) = .not. async
    ! One pass over the scattered bodies: radii, steps and (NBODY6's path)
    ! the predicted state that GPUNB_REGF takes.
    !$omp parallel do if (ni >= 64) schedule(static) private(ll, i)
    do ll = 1, ni
      i = idx(ll)
      h2i(ll) = rs(i)**2 / bodym
      dtr_slot(ll,sl) = merge(stepr(i), 0.0_dp, use_steps)
      if (.not. async) then
        xi(:,ll) = x(:,i)
        vi(:,ll) = xdot(:,i)
      end if
    end do
    !$omp end parallel do
    nic = ni; lm = lmax; nbm = nbmax
    if (async) then
      call gpunb_regf_start(nic, idx, h2i, dtr_slot(:,sl), lm, nbm)
    else
      call gpunb_regf(nic, h2i, dtr_slot(:,sl), xi, vi, gacc_slot(:,:,sl), gjrk_slot(:,:,sl), gpot_slot(:,sl), &
          lm, nbm, listgp_slot(:,:,sl))
    end if
    wall_regular = wall_regular + (wall_seconds() - t)
  end subroutine regular_chunk_start

  !> Collect the chunk's force: regular_chunk_collect, regular_chunk_lists.
  !> On return xi, vi hold the predicted state, gacc, gjrk the regular
  !> force, listgp(:,ll) the list in NBODY6 LIST format (1-based, self
  !> removed), GPUIRR has it (GPUIRR_SET_LIST), and nnb(i) is its length.
  subroutine regular_chunk_finish(ni, idx, grow_empty, async)
    integer, intent(in) :: ni
    integer, intent(in), contiguous :: idx(:)
    logical, intent(in) :: grow_empty, async
    call regular_chunk_collect(ni, idx, grow_empty, async)
    call regular_chunk_lists(ni, idx, async)
  end subroutine regular_chunk_finish

  !> The oldest chunk's force and raw lists (async: GPUNB_REGF_FINISH) into
  !> its slot, which gacc, gjrk, gpot, listgp then point to.  A column that
  !> overflows (negative count) is recomputed with RS * 0.9; one with no
  !> neighbour (count 1, self only) with RS * 1.5 when grow_empty (FPOLY0's
  !> rule).  Only the failed bodies are recomputed, after the next chunk,
  !> if one is in flight, is fetched into its slot (GPUNB_REGF_FINISH
  !> collects in the order of the starts).  Touches no body's state but the
  !> failed ones' RS, so on the resident path it may come before the
  !> irregular corrector.
  subroutine regular_chunk_collect(ni, idx, grow_empty, async)
    integer, intent(in) :: ni
    integer, intent(in), contiguous :: idx(:)
    logical, intent(in) :: grow_empty, async
    integer :: ll, i, k, nfail, c, growths, sl
    integer(int64) :: nover
    integer(c_int) :: nic, lm, nbm
    integer(c_int) :: fail(nimax), jfail(nimax)
    real(dp) :: t
    logical :: retry(nimax)

    t = wall_seconds()
    nic = ni; lm = lmax; nbm = nbmax
    if (npending < 1) error stop 'regular_chunk_collect: no chunk was started'
    sl = pending_slot(1)
    npending = npending - 1
    pending_slot(1) = pending_slot(2)
    if (.not. fetched(sl)) then
      if (.not. async) error stop 'regular_chunk_collect: the chunk was started asynchronously'
      call fetch_slot(sl)
    end if
    fetched(sl) = .false.
    call point_to_slot(sl)
    growths = 0
    do
      ! The counts on the team: each sits in its own column, 1.3 kB from the
      ! next, last written by another core (a serial pass over the 7-16k
      ! columns of a large block waited on one cache miss after another).
      nfail = 0
      nover = 0
      !$omp parallel do if (ni >= 256) schedule(static) private(ll, i, c) reduction(+:nfail, nover)
      do ll = 1, ni
        i = idx(ll)
        c = listgp(1,ll)
        retry(ll) = .false.
        if (c < 0) then
          rs(i) = 0.9_dp * rs(i)
          nover = nover + 1
          retry(ll) = .true.
          nfail = nfail + 1
        else if (c < 2 .and. grow_empty .and. growths < max_growth) then
          rs(i) = 1.5_dp * rs(i)
          retry(ll) = .true.
          nfail = nfail + 1
        end if
      end do
      !$omp end parallel do
      noverflow = noverflow + nover
      if (nfail == 0) exit
      nfail = 0
      do ll = 1, ni
        if (retry(ll)) then
          nfail = nfail + 1
          fail(nfail) = ll
        end if
      end do
      if (any(listgp(1, fail(1:nfail)) >= 0)) growths = growths + 1
      do k = 1, nfail
        ll = fail(k)
        jfail(k) = idx(ll)
        h2r(k) = rs(idx(ll))**2 / bodym
        dtrr(k) = dtr(ll)
        if (.not. async) then
          xr(:,k) = xi(:,ll); vr(:,k) = vi(:,ll)
        end if
      end do
      nic = nfail
      if (async) then
        if (npending > 0) then
          if (.not. fetched(pending_slot(1))) call fetch_slot(pending_slot(1))
        end if
        call gpunb_regf_start(nic, jfail, h2r, dtrr, lm, nbm)
        call gpunb_regf_finish(ar, jr, pr, listr)
      else
        call gpunb_regf(nic, h2r, dtrr, xr, vr, ar, jr, pr, lm, nbm, listr)
      end if
      do k = 1, nfail
        ll = fail(k)
        gacc(:,ll) = ar(:,k); gjrk(:,ll) = jr(:,k); gpot(ll) = pr(k)
        c = listr(1,k)
        if (c >= 0) then
          listgp(1:c + 1, ll) = listr(1:c + 1, k)
        else
          listgp(1, ll) = c
        end if
      end do
    end do
    wall_regular = wall_regular + (wall_seconds() - t)
  end subroutine regular_chunk_collect

  !> After regular_chunk_collect: the predicted state into xi, vi (async;
  !> regular_chunk_start gathered it on the synchronous path), and the lists
  !> to NBODY6's format, nnb and GPUIRR.  GPU indices are 0-based into the
  !> j-set (IFIRST = 1 here): add 1, drop self, hand the list to GPUIRR
  !> (concurrent SET_LIST with distinct i).
  subroutine regular_chunk_lists(ni, idx, async)
    integer, intent(in) :: ni
    integer, intent(in), contiguous :: idx(:)
    logical, intent(in) :: async
    integer :: ll, i, c, l1, l, item
    real(dp) :: t

    t = wall_seconds()
    !$omp parallel do if (ni >= 64) schedule(static) private(ll, i, l1, l, item, c)
    do ll = 1, ni
      if (async) then
        xi(:,ll) = x(:,idx(ll))
        vi(:,ll) = xdot(:,idx(ll))
      end if
      i = idx(ll)
      c = listgp(1,ll)
      l1 = 1
      do l = 2, c + 1
        item = listgp(l,ll) + 1
        if (item /= i) then
          l1 = l1 + 1
          listgp(l1,ll) = item
        end if
      end do
      listgp(1,ll) = l1 - 1
      nnb(i) = l1 - 1
      call set_list(i, listgp(:,ll))
    end do
    !$omp end parallel do
    wall_corr_reg = wall_corr_reg + (wall_seconds() - t)
  end subroutine regular_chunk_lists

  subroutine set_list(i, column)
    integer, intent(in) :: i
    ! contiguous: no pack/unpack check on every call (one per regular step).
    integer(c_int), intent(in), contiguous :: column(:)
    integer(c_int) :: ii
    ii = i
    call gpuirr_set_list(ii, column)
    if (gpu_irr_min > 0) call gpunb_set_list(ii, column)
  end subroutine set_list

  !> Forces, derivatives, lists and first steps of all bodies at time 0 from
  !> X0, X0DOT, BODY and a first guess of RS (FPOLY0 + FPOLY2 + STEPS).
  subroutine initial_forces()
    integer :: i, j0, ni, ll, k, p
    integer, allocatable :: all(:), nb_start(:), nb_flat(:)
    integer(c_int) :: nn, one
    real(dp) :: tm, fac, dt, dtrn
    real(dp) :: fdum(3)

    time = 0
    x = x0; xdot = x0dot
    f = 0; fdot = 0
    t0 = 0; t0r = 0; tpred = 0; stepr = 0; step = 0
    allocate(all(n), nb_start(n + 1))
    all = [(i, i = 1, n)]

    do i = 1, n
      call send_particle(i)
    end do
    nn = n; one = 1; tm = 0
    call gpuirr_pred_all(one, nn, tm)
    call gpunb_send(nn, body, x, xdot)

    ! One pass to bring every list near the target, then the real one.
    do j0 = 0, n - 1, nimax
      ni = min(nimax, n - j0)
      call regular_chunk(ni, all(j0 + 1:), .false., .true.)
      do ll = 1, ni
        i = all(j0 + ll)
        fac = (real(nnb_target, dp) / max(nnb(i), 1))**(1.0_dp / 3.0_dp)
        rs(i) = rs(i) * min(max(fac, 0.5_dp), 2.0_dp)
      end do
    end do

    ! Final lists; regular force from GPUNB and irregular force over the
    ! lists from GPUIRR (FPOLY0), lists kept for FPOLY2.
    allocate(nb_flat(n * (nnb_target + 8)))
    p = 1
    do j0 = 0, n - 1, nimax
      ni = min(nimax, n - j0)
      call regular_chunk(ni, all(j0 + 1:), .false., .true.)
      nn = ni
      call gpuirr_firr_vec(nn, all(j0 + 1:), gf, gfd)
      do ll = 1, ni
        i = all(j0 + ll)
        fr(:,i) = gacc(:,ll); frdot(:,i) = gjrk(:,ll)
        fi(:,i) = gf(:,ll); fidot(:,i) = gfd(:,ll)
        nb_start(i) = p
        if (p + nnb(i) > size(nb_flat)) call grow(nb_flat, p + nnb(i) + n)
        nb_flat(p:p + nnb(i) - 1) = listgp(2:nnb(i) + 1, ll)
        p = p + nnb(i)
      end do
    end do
    nb_start(n + 1) = p
    do i = 1, n
      f(:,i) = fi(:,i) + fr(:,i)
      fdot(:,i) = fidot(:,i) + frdot(:,i)
    end do

    call second_third_derivatives(nb_start, nb_flat)

    ! STEPS: both criteria, truncated to a power of two; STEP <= STEPR.
    do i = 1, n
      fdum = fi(:,i) + fr(:,i)
      dt = tstep(fdum, fidot(:,i), d2(:,i), d3(:,i), eta_i)
      dtrn = tstep(fr(:,i), frdot(:,i), d2r(:,i), d3r(:,i), eta_r)
      stepr(i) = block_step_below(dtrn, smax)
      step(i) = min(block_step_below(dt, smax), stepr(i))
      regdue(i) = step(i) >= stepr(i)
      do k = 1, 3
        f(k,i) = 0.5_dp * f(k,i)
        fdot(k,i) = fdot(k,i) / 6.0_dp
      end do
    end do
    do i = 1, n
      call send_particle(i)
    end do
  contains
    subroutine grow(a, m)
      integer, allocatable, intent(inout) :: a(:)
      integer, intent(in) :: m
      integer, allocatable :: b(:)
      allocate(b(m))
      b(1:size(a)) = a
      call move_alloc(b, a)
    end subroutine grow
  end subroutine initial_forces

  !> FPOLY2: second and third derivatives at time 0 from every body within
  !> 5 RS (or in the list), split into the irregular (list) and regular
  !> (others) parts; F, FDOT are the full force and jerk here.  NBODY6 tests
  !> all N**2 distances; here the bodies are visited in Morton order, in
  !> boxes of 32, and a box is skipped when it lies wholly outside the
  !> sphere (same pairs, far fewer tests: seconds instead of minutes at 256k).
  !> The sphere holds about a third of the bodies at 32k (10 700 pairs per
  !> body), so the pairs are the start-up's main cost: the j's state is
  !> read from copies in that order (read in index order, each j cost four
  !> cache misses), and the i go in that order too, box_lanes at a time:
  !> one group's pair terms and sums over a box come from one vector loop
  !> over its lanes (box_sums, ac_box_terms.inc, in the copy for the CPU's
  !> level), for every box within some lane's sphere.  Each i's sums take
  !> the same pairs in the same order, with the same bits, as one pair at a
  !> time.
  subroutine second_third_derivatives(nb_start, nb_flat)
    integer, intent(in) :: nb_start(:), nb_flat(:)
    integer :: i, j, k, kk, l, b, nbox, p, k0, m, g0, gm
    integer, allocatable :: order(:), rank(:)
    real(dp), allocatable :: xs(:,:), vs(:,:), fs(:,:), fds(:,:), ms(:), bmin(:,:), bmax(:,:)
    integer(int8), allocatable :: bits(:)
    integer :: ki(box_lanes)
    real(dp), dimension(box_lanes,3) :: xg, vg, fg, fdg, s2, s3, s2r, s3r
    real(dp) :: rcrit2(box_lanes), rc(box_lanes), d2box
    real(dp) :: t2(box,3), t3(box,3), r2(box)

    call morton_order(n, x, order)
    nbox = (n + box - 1) / box
    allocate(rank(n), xs(n,3), vs(n,3), fs(n,3), fds(n,3), ms(n), bmin(3,nbox), bmax(3,nbox))
    do k = 1, n
      j = order(k)
      rank(j) = k
      xs(k,:) = x(:,j); vs(k,:) = xdot(:,j); fs(k,:) = f(:,j); fds(k,:) = fdot(:,j); ms(k) = body(j)
    end do
    do b = 1, nbox
      k0 = (b - 1) * box
      m = min(box, n - k0)
      bmin(:,b) = minval(xs(k0 + 1:k0 + m,:), dim=1)
      bmax(:,b) = maxval(xs(k0 + 1:k0 + m,:), dim=1)
    end do

    !$omp parallel default(shared) private(i, k, kk, l, b, p, k0, m, g0, gm, ki, xg, vg, fg, fdg, s2, s3, &
    !$omp     s2r, s3r, rcrit2, rc, d2box, t2, t3, r2, bits)
    allocate(bits(n))
    bits = 0
    !$omp do schedule(dynamic, 2)
    do g0 = 0, n - 1, box_lanes
      gm = min(box_lanes, n - g0)
      ! Lanes past the group's end repeat its last body and take no pair.
      do l = 1, box_lanes
        kk = g0 + min(l, gm)
        i = order(kk)
        ki(l) = kk
        xg(l,:) = x(:,i); vg(l,:) = xdot(:,i); fg(l,:) = f(:,i); fdg(l,:) = fdot(:,i)
        rcrit2(l) = 25.0_dp * rs(i)**2 * (1.0_dp + 1.0_dp / real(nnb(i) + 1, dp))
        if (l > gm) rcrit2(l) = -1
      end do
      s2 = 0; s3 = 0; s2r = 0; s3r = 0
      do l = 1, gm
        i = order(g0 + l)
        do p = nb_start(i), nb_start(i + 1) - 1
          k = rank(nb_flat(p))
          bits(k) = ibset(bits(k), l - 1)
        end do
      end do
      do b = 1, nbox
        do l = 1, box_lanes
          d2box = max(bmin(1,b) - xg(l,1), 0.0_dp, xg(l,1) - bmax(1,b))**2 &
              + max(bmin(2,b) - xg(l,2), 0.0_dp, xg(l,2) - bmax(2,b))**2 &
              + max(bmin(3,b) - xg(l,3), 0.0_dp, xg(l,3) - bmax(3,b))**2
          rc(l) = merge(-1.0_dp, rcrit2(l), d2box > rcrit2(l))
        end do
        if (all(rc < 0)) cycle
        k0 = (b - 1) * box
        m = min(box, n - k0)
        call level_box_sums(n, m, k0, ki, rc, bits, xg, vg, fg, fdg, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
      end do
      do l = 1, gm
        i = order(g0 + l)
        ! List members beyond the sphere (the velocity criterion took them).
        do p = nb_start(i), nb_start(i + 1) - 1
          k = rank(nb_flat(p))
          bits(k) = 0
          if (sum((xs(k,:) - xg(l,:))**2) > rcrit2(l)) then
            call level_box_terms(n, 1, k - 1, 0, xg(l,:), vg(l,:), fg(l,:), fdg(l,:), xs, vs, fs, fds, ms, &
                r2, t2, t3)
            s2(l,:) = s2(l,:) + t2(1,:); s3(l,:) = s3(l,:) + t3(1,:)
          end if
        end do
        d2(:,i) = s2(l,:); d3(:,i) = s3(l,:); d2r(:,i) = s2r(l,:); d3r(:,i) = s3r(l,:)
      end do
    end do
    !$omp end do
    deallocate(bits)
    !$omp end parallel
  end subroutine second_third_derivatives

  !> box_terms in the copy for the CPU's level (lanes_level): the same bits
  !> from each.
  subroutine level_box_terms(nn, m, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2, t2, t3)
    integer, intent(in) :: nn, m, k0, ki
    real(dp), intent(in) :: xi(3), vi(3), fi(3), fdi(3)
    real(dp), intent(in) :: xs(nn,3), vs(nn,3), fs(nn,3), fds(nn,3), ms(nn)
    real(dp), intent(out) :: r2(box), t2(box,3), t3(box,3)
    select case (lanes_level)
    case (lanes_avx512)
      call box_terms_avx512(nn, m, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2, t2, t3)
    case (lanes_avx2)
      call box_terms_avx2(nn, m, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2, t2, t3)
    case default
      call box_terms_generic(nn, m, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2, t2, t3)
    end select
  end subroutine level_box_terms

  !> box_sums in the copy for the CPU's level (lanes_level).
  subroutine level_box_sums(nn, m, k0, ki, rc, bits, xi, vi, fi, fdi, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
    integer, intent(in) :: nn, m, k0, ki(box_lanes)
    real(dp), intent(in) :: rc(box_lanes)
    integer(int8), intent(in) :: bits(nn)
    real(dp), intent(in) :: xi(box_lanes,3), vi(box_lanes,3), fi(box_lanes,3), fdi(box_lanes,3)
    real(dp), intent(in) :: xs(nn,3), vs(nn,3), fs(nn,3), fds(nn,3), ms(nn)
    real(dp), intent(inout) :: s2(box_lanes,3), s3(box_lanes,3), s2r(box_lanes,3), s3r(box_lanes,3)
    select case (lanes_level)
    case (lanes_avx512)
      call box_sums_avx512(nn, m, k0, ki, rc, bits, xi, vi, fi, fdi, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
    case (lanes_avx2)
      call box_sums_avx2(nn, m, k0, ki, rc, bits, xi, vi, fi, fdi, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
    case default
      call box_sums_generic(nn, m, k0, ki, rc, bits, xi, vi, fi, fdi, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
    end select
  end subroutine level_box_sums
end module ac_forces
