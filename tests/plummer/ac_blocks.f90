!> ac_blocks -- the hierarchical block-step schedule without any O(N) work
!> per block.  Every particle sits in the list of its level L (step =
!> smax / 2**(L-1)).  Since a particle's T0 is a multiple of its step and
!> T0 <= time < T0 + step, all members of one level share the next time
!> (floor(time/step) + 1) step; the next block time is the smallest of those
!> over the occupied levels, and the block is every occupied level whose step
!> divides it.
module ac_blocks
  use, intrinsic :: iso_fortran_env, only: int64
  use ac_state, only: dp, n, smax, step, maxlevel, ascending_fraction, rebuild_fraction, regdue
  use ac_clock, only: wall_seconds
  implicit none
  private
  public :: blocks_init, blocks_next, blocks_move, blocks_free, level_of, blocks_print_moves

  type :: level_list
    integer, allocatable :: idx(:)
    integer :: count = 0
  end type level_list

  integer(int64), parameter :: mantissa = shiftl(1_int64, 52) - 1
  !> Blocks built from the level lists with at least this many members find
  !> their regular subset on the team (member_subset).
  integer, parameter :: subset_par_min = 8192
  type(level_list) :: levels(maxlevel)
  integer, allocatable :: level(:), slot(:)
  !> blocks_move over the run: blocks whose lists were rebuilt, blocks with
  !> moves one by one and those moves, and the seconds of each way.
  integer(int64) :: rebuilds = 0, serial_blocks = 0, serial_moves = 0
  real(dp) :: rebuild_seconds = 0, serial_seconds = 0
  !> A rebuild's seconds by part, as its first thread saw them: the start
  !> of the team, the levels and their count per share, the prefix (one
  !> thread), the lists.
  real(dp) :: rebuild_part(4) = 0

contains

  !> Level of a power-of-two step s <= smax, from the biased exponents of
  !> the IEEE doubles (EXPONENT is a frexp call with gfortran, and
  !> blocks_move asks for every body whose step changed: millions of times
  !> per run).  A negative s gives a level far below 1.
  pure function level_of(s) result(l)
    real(dp), intent(in) :: s
    integer :: l
    l = int(shiftr(transfer(smax, 0_int64), 52)) - int(shiftr(transfer(s, 0_int64), 52)) + 1
  end function level_of

  subroutine blocks_init()
    integer :: i, l
    call blocks_free()
    rebuilds = 0; serial_blocks = 0; serial_moves = 0
    rebuild_seconds = 0; serial_seconds = 0; rebuild_part = 0
    allocate(level(n), slot(n))
    do l = 1, maxlevel
      allocate(levels(l)%idx(16))
      levels(l)%count = 0
    end do
    do i = 1, n
      call add(i, checked_level(i))
    end do
  end subroutine blocks_init

  subroutine blocks_free()
    integer :: l
    if (allocated(level)) deallocate(level, slot)
    do l = 1, maxlevel
      if (allocated(levels(l)%idx)) deallocate(levels(l)%idx)
      levels(l)%count = 0
    end do
  end subroutine blocks_free

  !> Next block time after time `now` and its members act(1:nact): in level
  !> order, or ascending where they are at least n / ascending_fraction.
  !> With them the regular subset: due(k) = REGDUE of act(k), and the
  !> members due, in member order, ireg(1:nreg) = act(kreg(1:nreg)).
  !> Every level's next time is a multiple of the deepest occupied level's
  !> step s (coarser steps are multiples of it) and lies after now, so the
  !> next block time is the first multiple of s after now: k s.  A level of
  !> step 2**m s is in the block iff 2**m divides k.  No floating-point
  !> modulo per level (a libm call each): this runs ~100 000 times per run.
  subroutine blocks_next(now, tnext, nact, act, due, ireg, kreg, nreg)
    real(dp), intent(in) :: now
    real(dp), intent(out) :: tnext
    integer, intent(out) :: nact, nreg
    integer, intent(inout) :: act(:), ireg(:), kreg(:)
    logical, intent(inout) :: due(:)
    real(dp) :: s
    integer(int64) :: k
    integer :: l, c, deepest, shallowest
    deepest = 0
    do l = maxlevel, 1, -1
      if (levels(l)%count > 0) then
        deepest = l
        exit
      end if
    end do
    nact = 0
    nreg = 0
    if (deepest == 0) then
      tnext = huge(1.0_dp)
      return
    end if
    s = scale(smax, 1 - deepest)
    ! now / s and tnext / s are exact (s a power of two, times multiples of
    ! the finest step), and k <= tend / s < 2**62.
    k = int(aint(now / s), int64) + 1
    tnext = real(k, dp) * s
    shallowest = deepest
    do l = deepest, 1, -1
      nact = nact + levels(l)%count
      shallowest = l
      if (btest(k, 0)) exit
      k = shiftr(k, 1)
    end do
    if (ascending_fraction > 0 .and. nact >= n / max(ascending_fraction, 1)) then
      ! A large block in index order: its members are most bodies, so the
      ! correctors and GPUIRR then walk the per-body arrays nearly
      ! sequentially (the hardware prefetchers follow) instead of in the
      ! scattered order of the level lists.  One pass over LEVEL costs less
      ! than a member's step.  The same pass finds the regular subset.
      call scan_members(shallowest, act, due, ireg, kreg, nreg)
    else
      c = 0
      do l = deepest, shallowest, -1
        act(c + 1:c + levels(l)%count) = levels(l)%idx(1:levels(l)%count)
        c = c + levels(l)%count
      end do
      call member_subset(nact, act, due, ireg, kreg, nreg)
    end if
  end subroutine blocks_next

  !> After a block: move the nmoved flagged bodies (their step changed) to
  !> their level; checked_level stops on a step that is not a power of two.
  subroutine blocks_move(nact, act, moved, nmoved)
    integer, intent(in) :: nact, act(:)
    logical, intent(in) :: moved(:)
    integer, intent(in) :: nmoved
    integer :: k, i, l
    real(dp) :: t
    if (nmoved == 0) return
    t = wall_seconds()
    if (ascending_fraction > 0 .and. nact >= n / max(ascending_fraction, 1)) then
      if (nmoved >= n / max(rebuild_fraction, 1)) then
        ! Many moves: new levels first, then every list afresh in one pass
        ! over LEVEL on the team, cheaper than hundreds of scattered
        ! remove/add pairs on one thread,
        ! and it leaves each list ascending, so that the blocks made of
        ! them walk the per-body arrays in a few sequential streams.
        call rebuild_lists(t)
        rebuilds = rebuilds + 1
        rebuild_seconds = rebuild_seconds + (wall_seconds() - t)
        return
      end if
    end if
    do k = 1, nact
      if (.not. moved(k)) cycle
      i = act(k)
      l = checked_level(i)
      if (l /= level(i)) then
        call remove(i)
        call add(i, l)
      end if
    end do
    serial_blocks = serial_blocks + 1
    serial_moves = serial_moves + nmoved
    serial_seconds = serial_seconds + (wall_seconds() - t)
  end subroutine blocks_move

  !> What blocks_move did over the run (for -profile).
  subroutine blocks_print_moves(unit)
    integer, intent(in) :: unit
    write(unit, '(a,i0,a,f7.3,a,i0,a,i0,a,f7.3,a)') '# level moves (t = 0 .. tend): lists rebuilt after ', &
        rebuilds, ' blocks (', rebuild_seconds, ' s); one by one in ', serial_blocks, ' blocks, ', &
        serial_moves, ' moves (', serial_seconds, ' s)'
    write(unit, '(a,4(f0.3,a))') '# rebuilds by part: team start ', rebuild_part(1), ' s, levels and count ', &
        rebuild_part(2), ' s, prefix ', rebuild_part(3), ' s, lists ', rebuild_part(4), ' s'
  end subroutine blocks_print_moves

  !> act = the bodies of level >= shallowest, ascending, and their regular
  !> subset (due, ireg, kreg, nreg as blocks_next): each thread counts its
  !> share of LEVEL, then writes its members after those of the shares
  !> before it (a serial scan of 64k levels took ~200 us on the H100 box's
  !> Xeon, as long as the block's scheduling otherwise; the subset in a pass
  !> of its own over the members cost another parallel region per block).
  subroutine scan_members(shallowest, act, due, ireg, kreg, nreg)
    integer, intent(in) :: shallowest
    integer, intent(inout) :: act(:), ireg(:), kreg(:)
    logical, intent(inout) :: due(:)
    integer, intent(out) :: nreg
    integer, allocatable :: before(:,:)
    integer :: t, nt, mt, lo, hi, c, r, i
    logical :: member
    nt = 1
    !$ nt = scan_team_size()
    ! before(1, t): members in the shares before thread t; before(2, t): regular ones.
    allocate(before(2, 0:nt))
    before = 0
    !$omp parallel num_threads(nt) default(shared) private(t, mt, lo, hi, c, r, i, member)
    call team_share(t, mt, lo, hi)
    c = 0
    r = 0
    do i = lo, hi
      member = level(i) >= shallowest
      c = c + merge(1, 0, member)
      r = r + merge(1, 0, member .and. regdue(i))
    end do
    before(:, t + 1) = [c, r]
    !$omp barrier
    !$omp single
    do i = 1, mt
      before(:, i) = before(:, i) + before(:, i - 1)
    end do
    nreg = before(2, mt)
    !$omp end single
    c = before(1, t)
    r = before(2, t)
    do i = lo, hi
      if (level(i) >= shallowest) then
        c = c + 1
        act(c) = i
        due(c) = regdue(i)
        if (due(c)) then
          r = r + 1
          ireg(r) = i
          kreg(r) = c
        end if
      end if
    end do
    !$omp end parallel
  end subroutine scan_members

  !> The regular subset of members act(1:nact) given in any order (due,
  !> ireg, kreg, nreg as blocks_next).  A block of subset_par_min members or
  !> more on the team, as scan_members: serially it was a good part of the
  !> scheduling of a block of many bodies.
  subroutine member_subset(nact, act, due, ireg, kreg, nreg)
    integer, intent(in) :: nact, act(:)
    integer, intent(inout) :: ireg(:), kreg(:)
    logical, intent(inout) :: due(:)
    integer, intent(out) :: nreg
    integer, allocatable :: before(:)
    integer :: nt, mt, t, lo, hi, k, c
    nt = 1
    !$ if (nact >= subset_par_min) nt = scan_team_size()
    if (nt == 1) then ! no region, no allocation: most blocks have a few members
      do k = 1, nact
        due(k) = regdue(act(k))
      end do
      nreg = 0
      call append_due(1, nact, nreg)
      return
    end if
    allocate(before(0:nt))
    before = 0
    !$omp parallel num_threads(nt) default(shared) private(t, mt, lo, hi, k, c)
    call team_share_of(nact, t, mt, lo, hi)
    c = 0
    do k = lo, hi
      due(k) = regdue(act(k))
      if (due(k)) c = c + 1
    end do
    before(t + 1) = c
    !$omp barrier
    !$omp single
    do k = 1, mt
      before(k) = before(k) + before(k - 1)
    end do
    nreg = before(mt)
    !$omp end single
    c = before(t)
    call append_due(lo, hi, c)
    !$omp end parallel
  contains
    !> The due members among act(lo:hi) after the c before them.
    subroutine append_due(lo, hi, c)
      integer, intent(in) :: lo, hi
      integer, intent(inout) :: c
      integer :: k
      do k = lo, hi
        if (due(k)) then
          c = c + 1
          ireg(c) = act(k)
          kreg(c) = k
        end if
      end do
    end subroutine append_due
  end subroutine member_subset

  !> The team for scan_members: every thread from 4096 bodies, else none.
  !> Never a team between one thread and the whole: libgomp ends the
  !> threads a smaller team leaves out and creates them again for the next
  !> full one (N = 16k on 16 threads had 8 created per large block).
  integer function scan_team_size() result(nt)
    !$ use omp_lib, only: omp_get_max_threads
    nt = 1
    !$ if (n >= 4096) nt = omp_get_max_threads()
  end function scan_team_size

  !> This thread's number t, the size mt of the team it is in, and its share
  !> lo..hi of the bodies 1..n.
  subroutine team_share(t, mt, lo, hi)
    integer, intent(out) :: t, mt, lo, hi
    call team_share_of(n, t, mt, lo, hi)
  end subroutine team_share

  !> The same for items 1..m.  From the team actually running, not the
  !> size asked for: OpenMP may give fewer threads (OMP_DYNAMIC, a thread
  !> limit), and shares sized for absent threads would leave items out.
  subroutine team_share_of(m, t, mt, lo, hi)
    !$ use omp_lib, only: omp_get_num_threads, omp_get_thread_num
    integer, intent(in) :: m
    integer, intent(out) :: t, mt, lo, hi
    t = 0
    mt = 1
    !$ t = omp_get_thread_num()
    !$ mt = omp_get_num_threads()
    lo = int(int(t, int64) * m / mt) + 1
    hi = int(int(t + 1, int64) * m / mt)
  end subroutine team_share_of

  !> Every level and level list afresh from STEP, the lists ascending: each
  !> thread sets the levels of its share of the bodies and counts them per
  !> level, then writes its members of each level after those of the shares
  !> before it (the lists come out as a serial pass would make them;
  !> serially the passes over 64k bodies took ~200 us, a good part of a
  !> large block's scheduling on the H100 box's Xeon).  Levels from every
  !> step, not only from the moved members': the same pass, in one parallel
  !> region instead of two.  started: wall_seconds() when blocks_move began.
  subroutine rebuild_lists(started)
    real(dp), intent(in) :: started
    integer, allocatable :: before(:,:)
    integer :: t, nt, mt, lo, hi, i, l, c, top
    integer(int64) :: bits
    integer :: counts(maxlevel)
    logical :: bad
    real(dp) :: stamp(4)
    nt = 1
    !$ nt = scan_team_size()
    allocate(before(maxlevel, 0:nt))
    before = 0
    stamp = started
    ! level_of and checked_level's test written out: a branch-free loop body.
    top = int(shiftr(transfer(smax, 0_int64), 52)) + 1
    !$omp parallel num_threads(nt) default(shared) private(t, mt, lo, hi, i, l, c, counts, bits, bad)
    call team_share(t, mt, lo, hi)
    if (t == 0) stamp(1) = wall_seconds()
    counts = 0
    bad = .false.
    do i = lo, hi
      bits = transfer(step(i), 0_int64)
      l = top - int(shiftr(bits, 52))
      bad = bad .or. iand(bits, mantissa) /= 0 .or. l < 1 .or. l > maxlevel
      l = min(max(l, 1), maxlevel)
      level(i) = l
      counts(l) = counts(l) + 1
    end do
    if (bad) then ! the first bad body, with checked_level's message
      do i = lo, hi
        l = checked_level(i)
      end do
    end if
    before(:, t + 1) = counts
    !$omp barrier
    !$omp single
    stamp(2) = wall_seconds()
    do i = 1, mt
      before(:, i) = before(:, i) + before(:, i - 1)
    end do
    do l = 1, maxlevel
      c = before(l, mt)
      if (size(levels(l)%idx) < c) then
        deallocate(levels(l)%idx)
        allocate(levels(l)%idx(max(c, 2 * size(levels(l)%idx))))
      end if
      levels(l)%count = c
    end do
    stamp(3) = wall_seconds()
    !$omp end single
    do i = lo, hi
      l = level(i)
      c = before(l, t) + 1
      before(l, t) = c
      levels(l)%idx(c) = i
      slot(i) = c
    end do
    !$omp end parallel
    stamp(4) = wall_seconds()
    rebuild_part(1) = rebuild_part(1) + (stamp(1) - started)
    rebuild_part(2:4) = rebuild_part(2:4) + (stamp(2:4) - stamp(1:3))
  end subroutine rebuild_lists

  function checked_level(i) result(l)
    integer, intent(in) :: i
    integer :: l
    l = level_of(step(i))
    ! A power of two has no mantissa bits (FRACTION = 0.5).
    if (l < 1 .or. l > maxlevel .or. iand(transfer(step(i), 0_int64), mantissa) /= 0) then
      write(*, '(a,i0,a,es12.4,a,es12.4)') 'plummer_ac: step of body ', i, ' = ', step(i), &
          ' is not a power of two in [smax/2**59, smax], smax = ', smax
      stop 3
    end if
  end function checked_level

  subroutine add(i, l)
    integer, intent(in) :: i, l
    integer, allocatable :: grown(:)
    associate (lv => levels(l))
      if (lv%count == size(lv%idx)) then
        allocate(grown(2 * size(lv%idx)))
        grown(1:lv%count) = lv%idx(1:lv%count)
        call move_alloc(grown, lv%idx)
      end if
      lv%count = lv%count + 1
      lv%idx(lv%count) = i
      level(i) = l
      slot(i) = lv%count
    end associate
  end subroutine add

  subroutine remove(i)
    integer, intent(in) :: i
    integer :: last
    associate (lv => levels(level(i)))
      last = lv%idx(lv%count)
      lv%idx(slot(i)) = last
      slot(last) = slot(i)
      lv%count = lv%count - 1
    end associate
  end subroutine remove
end module ac_blocks
