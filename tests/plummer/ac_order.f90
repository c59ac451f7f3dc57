!> ac_order -- bodies in space-filling-curve order, and the heap sort
!> behind it.  Morton order is used twice: FPOLY2's start-up walks boxes of
!> bodies near in space, and the run may number the bodies along the curve
!> (`-order morton`), so that a body's neighbours have nearby indices.  The
!> sort also gives the model's half-mass radius (plummer_model).
module ac_order
  use, intrinsic :: iso_fortran_env, only: real64, int64
  implicit none
  private
  public :: morton_order, sort_by_key

  integer, parameter :: dp = real64
  !> Bits per coordinate of the key: 3 x 17 = 51 bits, exact in a double.
  integer, parameter :: key_bits = 17

contains

  !> order(:) lists the bodies by the Morton (Z-order) key of their cell in
  !> a 2**17 grid per axis over the bounding box of pos(:,1:npos): near in
  !> the order means near in space.  Ties keep index order.
  subroutine morton_order(npos, pos, order)
    integer, intent(in) :: npos
    real(dp), intent(in) :: pos(3,npos)
    integer, allocatable, intent(out) :: order(:)
    real(dp), allocatable :: key(:)
    real(dp) :: lo(3), hi(3), scale_
    integer(int64) :: bits
    integer :: i, k, cmax, c(3)
    allocate(order(npos), key(npos))
    if (npos == 0) return
    lo = minval(pos, dim=2)
    hi = maxval(pos, dim=2)
    cmax = 2**key_bits - 1
    scale_ = real(cmax, dp) / max(maxval(hi - lo), tiny(1.0_dp))
    !$omp parallel do private(c, k, bits)
    do i = 1, npos
      c = min(cmax, max(0, int((pos(:,i) - lo) * scale_)))
      bits = 0
      do k = 1, 3
        bits = ior(bits, ishft(spread_bits(c(k)), k - 1))
      end do
      key(i) = real(bits, dp)
      order(i) = i
    end do
    !$omp end parallel do
    call sort_by_key(key, order)
  end subroutine morton_order

  !> The low key_bits bits of c, two zero bits after each.
  pure integer(int64) function spread_bits(c)
    integer, intent(in) :: c
    integer :: bit
    spread_bits = 0
    do bit = 0, key_bits - 1
      if (btest(c, bit)) spread_bits = ibset(spread_bits, 3 * bit)
    end do
  end function spread_bits

  !> order(:) sorted so that key(order(:)) ascends (ties by index: heap
  !> sort is not stable, so compare the pair).
  subroutine sort_by_key(key, order)
    real(dp), intent(in) :: key(:)
    integer, intent(inout) :: order(:)
    integer :: m, i, t
    m = size(order)
    do i = m / 2, 1, -1
      call sift(i, m)
    end do
    do i = m, 2, -1
      t = order(1); order(1) = order(i); order(i) = t
      call sift(1, i - 1)
    end do
  contains
    logical function before(a, b)
      integer, intent(in) :: a, b
      before = key(a) < key(b) .or. (key(a) == key(b) .and. a < b)
    end function before
    subroutine sift(first, last)
      integer, intent(in) :: first, last
      integer :: root, child, tmp
      root = first
      do while (2 * root <= last)
        child = 2 * root
        if (child < last) then
          if (before(order(child), order(child + 1))) child = child + 1
        end if
        if (before(order(root), order(child))) then
          tmp = order(root); order(root) = order(child); order(child) = tmp
          root = child
        else
          return
        end if
      end do
    end subroutine sift
  end subroutine sort_by_key
end module ac_order
