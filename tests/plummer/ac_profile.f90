!> ac_profile -- where a block step's time goes, by block size.  The blocks
!> of a run range from one body to N; the small ones are most blocks and
!> the large ones most steps, and they cost for different reasons (fixed
!> costs per call against memory traffic per member), so the totals alone
!> do not say which to attack.  block_step hands in each block's seconds
!> per phase; the buckets are powers of two of the block size.
module ac_profile
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: profile_block, profile_reset, profile_print, nphase
  public :: profile_regular_part, reg_predict, reg_start, reg_collect, reg_lists, reg_new_irr, reg_correct

  integer, parameter :: dp = real64
  !> schedule (blocks_next, regular subset), irregular force (GPUIRR
  !> prediction + FIRR_VEC), irregular corrector, regular part (upload,
  !> GPUNB, new lists, regular corrector), SET_JP after a regular block,
  !> level moves.
  integer, parameter :: nphase = 6
  character(len=*), parameter :: phase_name(nphase) = [character(len=10) :: &
      'schedule', 'irr.force', 'irr.corr', 'regular', 'SET_JP', 'move']
  !> bucket b holds blocks of 2**(b-1) .. 2**b - 1 bodies
  integer, parameter :: nbucket = 31
  integer(int64) :: blocks(nbucket) = 0, members(nbucket) = 0, regular_blocks(nbucket) = 0
  real(dp) :: seconds(nphase, nbucket) = 0
  !> The regular phase of blocks with regular bodies, by part: the
  !> buckets' "regular" column says how long it took, these say whether the
  !> host worked or waited for the GPU (collect is GPUNB_REGF_FINISH).
  integer, parameter :: reg_predict = 1, reg_start = 2, reg_collect = 3, reg_lists = 4, reg_new_irr = 5, &
      reg_correct = 6, nregpart = 6
  character(len=*), parameter :: regpart_name(nregpart) = [character(len=24) :: &
      'GPUNB_PREDICT', 'REGF_START', 'collect (REGF_FINISH)', 'lists', 'new lists'' irr. force', &
      'regular corrector']
  real(dp) :: regular_seconds(nregpart) = 0

contains

  !> One block of nact bodies (nreg of them regular) that spent spent(p)
  !> seconds in phase p.
  subroutine profile_block(nact, nreg, spent)
    integer, intent(in) :: nact, nreg
    real(dp), intent(in) :: spent(nphase)
    integer :: b, p
    b = min(max(bit_size(nact) - leadz(nact), 1), nbucket)
    blocks(b) = blocks(b) + 1
    members(b) = members(b) + nact
    if (nreg > 0) regular_blocks(b) = regular_blocks(b) + 1
    do p = 1, nphase
      seconds(p, b) = seconds(p, b) + spent(p)
    end do
  end subroutine profile_block

  !> seconds spent in part p of a block's regular phase.
  subroutine profile_regular_part(p, spent)
    integer, intent(in) :: p
    real(dp), intent(in) :: spent
    regular_seconds(p) = regular_seconds(p) + spent
  end subroutine profile_regular_part

  subroutine profile_reset()
    blocks = 0; members = 0; regular_blocks = 0; seconds = 0; regular_seconds = 0
  end subroutine profile_reset

  !> A table: per bucket the blocks, their members, the seconds of each
  !> phase and the cost per block and per member; then the totals.
  subroutine profile_print(unit, label)
    integer, intent(in) :: unit
    character(len=*), intent(in) :: label
    integer :: b, p
    real(dp) :: tb
    write(unit, '(3a)') '# Block profile (', label, '): seconds per phase by block size'
    write(unit, '(a)', advance='no') '#    members      blocks    reg.blk       bodies'
    do p = 1, nphase
      write(unit, '(a10)', advance='no') trim(phase_name(p))
    end do
    write(unit, '(a)') '   us/block   ns/body'
    do b = 1, nbucket
      if (blocks(b) == 0) cycle
      tb = sum(seconds(:, b))
      write(unit, '(a,i7,a,i7,i12,i11,i13)', advance='no') '# ', 2**(b - 1), '..', 2**b - 1, &
          blocks(b), regular_blocks(b), members(b)
      do p = 1, nphase
        write(unit, '(f10.3)', advance='no') seconds(p, b)
      end do
      write(unit, '(f11.2,f10.1)') 1.0e6_dp * tb / real(blocks(b), dp), 1.0e9_dp * tb / real(members(b), dp)
    end do
    write(unit, '(a,i12,i11,i13)', advance='no') '#   all         ', sum(blocks), sum(regular_blocks), sum(members)
    do p = 1, nphase
      write(unit, '(f10.3)', advance='no') sum(seconds(p, :))
    end do
    if (sum(blocks) > 0) then
      write(unit, '(f11.2,f10.1)') 1.0e6_dp * sum(seconds) / real(sum(blocks), dp), &
          1.0e9_dp * sum(seconds) / real(max(sum(members), 1_int64), dp)
    else
      write(unit, '(a)') ''
    end if
    write(unit, '(a)', advance='no') '# regular phase by part (s):'
    do p = 1, nregpart
      write(unit, '(3a,f0.3)', advance='no') ' ', trim(regpart_name(p)), ' ', regular_seconds(p)
      if (p < nregpart) write(unit, '(a)', advance='no') ','
    end do
    write(unit, '(a)') ''
  end subroutine profile_print
end module ac_profile
