!> ac_table -- the final table of a timing run (the columns of Table 2 of
!> Nitadori & Aarseth 2012) on stdout, and one row of it appended to a CSV
!> file (header written when the file is new).
module ac_table
  use, intrinsic :: iso_fortran_env, only: output_unit, error_unit, int64
  use ac_state, only: dp
  use ac_run, only: run_result, run_options
  implicit none
  private
  public :: print_table, append_csv

  character(len=*), parameter :: csv_header = 'n,threads,tend,tsplit,wall_init,wall_first,' // &
      'wall_second,regular_second,irregular_second,rest_second,regular_steps_second,' // &
      'irregular_steps_second,blocks_second,mean_nb,de_over_e,q0,overflows,seed,eta_i,eta_r,' // &
      'nnb_target,status,label,gpunb_path'

contains

  subroutine print_table(r)
    type(run_result), intent(in) :: r
    write(output_unit, '(a)') ''
    write(output_unit, '(a,f5.2,a,f5.2,a,f0.3,a)') '# Timing (wall seconds; regular/irregular/rest and steps for t = ', &
        r%tsplit, ' .. ', r%tend, '; start-up before t = 0: ', r%wall_init, ' s)'
    write(output_unit, '(a)') '#      N  wall 0..t1  wall t1..t2   regular irregular      rest' // &
        '   reg. steps    irr. steps   <NB>       dE/E'
    write(output_unit, '(i8,2f12.3,3f10.3,2i14,f7.1,es11.2)') r%n, r%wall_first, r%wall_second, &
        r%regular_second, r%irregular_second, r%rest_second, r%nreg_second, r%nirr_second, &
        r%mean_nb, r%de_over_e
    write(output_unit, '(a,4(f0.3,a))') '# rest = irregular corrector ', r%corr_irr_second, &
        ' + regular corrector and lists ', r%corr_reg_second, ' + SET_JP after regular blocks ', &
        r%setjp_second, ' + scheduling ', &
        r%rest_second - r%corr_irr_second - r%corr_reg_second - r%setjp_second, ' s'
    if (r%resident .and. r%setjp_per_step) then
      write(output_unit, '(a,i0,a,f0.3,a,f0.3,a)') '# resident: ', r%nupload_second, &
          ' GPUNB_SET_JP calls (', real(r%nupload_second, dp) / real(max(1_int64, r%nirr_second), dp), &
          ' per irregular step, in the correctors); GPUNB_PREDICT ', r%upload_second, ' s (part of regular)'
    else if (r%resident) then
      write(output_unit, '(a,i0,a,f0.3,a,f0.3,a)') '# resident: ', r%nupload_second, &
          ' GPUNB_SET_JP calls (', real(r%nupload_second, dp) / real(max(1_int64, r%nirr_second), dp), &
          ' per irregular step, once per regular block); SET_JP + GPUNB_PREDICT ', r%upload_second, &
          ' s (part of regular)'
    else
      write(output_unit, '(a,i0,a,f0.3,a)') '# NBODY6 path: ', r%nupload_second, &
          ' bodies predicted and sent; CXVPRED + GPUNB_SEND ', r%upload_second, ' s (part of regular)'
    end if
    if (.not. r%complete) write(output_unit, '(a,f10.5,a)') &
        '# STOPPED by the wall-clock limit at t = ', r%treached, ': figures cover only part of the run'
    flush(output_unit)
  end subroutine print_table

  subroutine append_csv(path, r, opt, seed, label)
    character(len=*), intent(in) :: path, label
    type(run_result), intent(in) :: r
    type(run_options), intent(in) :: opt
    integer, intent(in) :: seed
    integer :: unit, ios
    logical :: exists
    character(len=64) :: status
    character(len=len(label)) :: clean
    integer :: k

    ! The label is free text: keep it one CSV field.
    clean = label
    do k = 1, len(clean)
      if (clean(k:k) == ',' .or. clean(k:k) == '"') clean(k:k) = ';'
    end do
    inquire(file=path, exist=exists)
    open(newunit=unit, file=path, position='append', action='write', status='unknown', iostat=ios)
    if (ios /= 0) then
      write(error_unit, '(3a)') 'plummer_ac: cannot append to CSV file "', trim(path), '"'
      stop 2
    end if
    if (.not. exists) write(unit, '(a)') csv_header
    if (r%complete) then
      status = 'complete'
    else
      write(status, '(a,f0.5)') 'stopped_at_t=', r%treached
    end if
    write(unit, '(i0,",",i0,",",f0.4,",",f0.4,6(",",f0.4),3(",",i0),",",f0.2,",",es10.3,",",f0.4,",",i0,' // &
        '",",i0,2(",",f0.4),",",i0,3(",",a))') &
        r%n, r%threads, r%tend, r%tsplit, r%wall_init, r%wall_first, r%wall_second, r%regular_second, &
        r%irregular_second, r%rest_second, r%nreg_second, r%nirr_second, r%nblock_second, r%mean_nb, &
        r%de_over_e, r%q0, r%noverflow, seed, opt%eta_i, opt%eta_r, r%nnb_target, trim(status), trim(clean), &
        trim(merge('resident', 'nbody6  ', r%resident))
    close(unit)
  end subroutine append_csv
end module ac_table
