!> ac_blocks -- the hierarchical block-step schedule without any O(N) work
!> per block.  Every particle sits in the list of its level L (step =
!> smax / 2**(L-1)).  Since a particle's T0 is a multiple of its step and
!> T0 <= time < T0 + step, all members of one level share the next time
!> (floor(time/step) + 1) step; the next block time is the smallest of those
!> over the occupied levels, and the block is every occupied level whose step
!> divides it.
module ac_blocks
  use, intrinsic :: iso_fortran_env, only: int64
  use ac_state, only: dp, n, smax, step, maxlevel
  implicit none
  private
  public :: blocks_init, blocks_next, blocks_move, blocks_free, level_of

  type :: level_list
    integer, allocatable :: idx(:)
    integer :: count = 0
  end type level_list

  integer(int64), parameter :: mantissa = shiftl(1_int64, 52) - 1
  type(level_list) :: levels(maxlevel)
  integer, allocatable :: level(:), slot(:)

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

  !> Next block time after time `now` and its members, in level order.
  !> Every level's next time is a multiple of the deepest occupied level's
  !> step s (coarser steps are multiples of it) and lies after now, so the
  !> next block time is the first multiple of s after now: k s.  A level of
  !> step 2**m s is in the block iff 2**m divides k.  No floating-point
  !> modulo per level (a libm call each): this runs ~100 000 times per run.
  subroutine blocks_next(now, tnext, nact, act)
    real(dp), intent(in) :: now
    real(dp), intent(out) :: tnext
    integer, intent(out) :: nact
    integer, intent(inout) :: act(:)
    real(dp) :: s
    integer(int64) :: k
    integer :: l, c, deepest
    deepest = 0
    do l = maxlevel, 1, -1
      if (levels(l)%count > 0) then
        deepest = l
        exit
      end if
    end do
    nact = 0
    if (deepest == 0) then
      tnext = huge(1.0_dp)
      return
    end if
    s = scale(smax, 1 - deepest)
    ! now / s and tnext / s are exact (s a power of two, times multiples of
    ! the finest step), and k <= tend / s < 2**62.
    k = int(aint(now / s), int64) + 1
    tnext = real(k, dp) * s
    do l = deepest, 1, -1
      c = levels(l)%count
      if (c > 0) then
        act(nact + 1:nact + c) = levels(l)%idx(1:c)
        nact = nact + c
      end if
      if (btest(k, 0)) exit
      k = shiftr(k, 1)
    end do
  end subroutine blocks_next

  !> After a block: move the flagged bodies (their step changed) to their
  !> level; checked_level stops on a step that is not a power of two.
  subroutine blocks_move(nact, act, moved)
    integer, intent(in) :: nact, act(:)
    logical, intent(in) :: moved(:)
    integer :: k, i, l
    do k = 1, nact
      if (.not. moved(k)) cycle
      i = act(k)
      l = checked_level(i)
      if (l /= level(i)) then
        call remove(i)
        call add(i, l)
      end if
    end do
  end subroutine blocks_move

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
