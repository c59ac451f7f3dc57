!> test_fortran -- every legacy routine called from Fortran through the
!> nb6accel module, with NBODY6's argument forms (array elements such as
!> X(1,IFIRST), LIST(2,I1), column-major X(3,N)).
program test_fortran
  use nb6accel
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  implicit none
  integer, parameter :: nmax = 700, lmax = 64, nimax = 32
  integer(c_int) :: n, ifirst, ntot, nn, cap, nnn, lm, ni, nbmax, i, j, k, e, nfail, npass
  integer(c_int) :: listgp(lmax, nimax), list(lmax, nmax), addr(nimax), ih, im, is, nnb
  real(c_double) :: body(nmax), x(3,nmax), xdot(3,nmax), x0(3,nmax), x0dot(3,nmax)
  real(c_double) :: f(3,nmax), fdot(3,nmax), t0(nmax), tpred(nmax), phi(nmax)
  real(c_double) :: h2i(nimax), dtr(nimax), xi(3,nimax), vi(3,nimax)
  real(c_double) :: gpuacc(3,nimax), gpujrk(3,nimax), gpuphi(nimax), gf(3,nimax), gfd(3,nimax)
  real(c_double) :: time, dx(3), r2, ref(3), fp(3), fd(3), err, worst, u
  logical :: sorted, hasself

  nfail = 0; npass = 0
  n = 600; ifirst = 3; ntot = ifirst + n - 1
  call random_seed()
  do i = 1, ntot
    call random_number(x0(:,i)); call random_number(x0dot(:,i))
    x0(:,i) = 2.0d0*x0(:,i) - 1.0d0 + 5.0d0
    x0dot(:,i) = 0.5d0*(x0dot(:,i) - 0.5d0)
    call random_number(u); body(i) = (0.5d0 + u)/n
    f(:,i) = 0.0d0; fdot(:,i) = 0.0d0; t0(i) = 0.0d0; tpred(i) = -1.0d0
  end do
  x = x0; xdot = x0dot
  time = 0.0d0

  ! FPOLY0's order: open both, set records, predict, send, regular force.
  cap = ntot + 100; nnn = ntot + 110; lm = lmax
  call gpunb_open(cap)
  call gpuirr_open(nnn, lm)
  do i = ifirst, ntot
    call gpuirr_set_jp(i, x(1,i), xdot(1,i), f(1,i), fdot(1,i), body(i), t0(i))
  end do
  call gpuirr_pred_all(ifirst, ntot, time)
  nn = ntot - ifirst + 1
  call gpunb_send(nn, body(ifirst), x(1,ifirst), xdot(1,ifirst))
  ni = nimax; nbmax = lmax - 5
  do k = 1, ni
    i = ifirst + 7*(k-1)
    h2i(k) = 0.15d0**2 / (1.0d0/n); dtr(k) = 0.002d0
    xi(:,k) = x(:,i); vi(:,k) = xdot(:,i)
  end do
  call gpunb_regf(ni, h2i, dtr, xi, vi, gpuacc, gpujrk, gpuphi, lm, nbmax, listgp)
  worst = 0.0d0
  do k = 1, ni
    i = ifirst + 7*(k-1)
    sorted = .true.; hasself = .false.
    do e = 2, listgp(1,k) + 1
      if (e > 2) sorted = sorted .and. listgp(e,k) > listgp(e-1,k)
      hasself = hasself .or. (listgp(e,k) + ifirst == i)
    end do
    call check(listgp(1,k) >= 1 .and. sorted .and. hasself, 'GPUNB_REGF list: counted, ascending, self included')
    ! regular force from the non-neighbours, directly
    ref = 0.0d0
    do j = ifirst, ntot
      if (any(listgp(2:listgp(1,k)+1,k) + ifirst == j)) cycle
      dx = x(:,j) - xi(:,k); r2 = sum(dx**2)
      ref = ref + body(j)*dx/(r2*sqrt(r2))
    end do
    worst = max(worst, norm2(gpuacc(:,k) - ref)/norm2(ref))
    ! the NBODY6 conversion: absolute indices, self dropped, to GPUIRR
    nnb = 0
    do e = 2, listgp(1,k) + 1
      j = listgp(e,k) + ifirst
      if (j /= i) then
        nnb = nnb + 1; list(nnb+1, i) = j
      end if
    end do
    list(1,i) = nnb
    call gpuirr_set_list(i, list(1,i))
    addr(k) = i
  end do
  call check(worst < 1.0d-5, 'GPUNB_REGF regular force matches the direct sum')

  call gpuirr_firr_vec(ni, addr, gf, gfd)
  ! Error relative to the sum of the terms' sizes, as the C tests measure it:
  ! a few neighbours can nearly cancel, and float terms then leave ~1e-6 of
  ! |ref| itself (seen once in 60 runs with an absolute-|ref| bound).
  worst = 0.0d0
  do k = 1, ni
    i = addr(k); ref = 0.0d0; err = 0.0d0
    do e = 2, list(1,i) + 1
      j = list(e,i); dx = x(:,j) - x(:,i); r2 = sum(dx**2)
      ref = ref + body(j)*dx/(r2*sqrt(r2))
      err = err + body(j)/r2
    end do
    if (list(1,i) > 0) worst = max(worst, norm2(gf(:,k) - ref)/err)
  end do
  call check(worst < 1.0d-6, 'GPUIRR_FIRR_VEC irregular force matches the direct sum (error / sum of |terms|)')
  call gpuirr_firr(addr(2), fp, fd)
  call check(all(fp == gf(:,2)), 'GPUIRR_FIRR equals row 2 of GPUIRR_FIRR_VEC')
  call gpuirr_pred_act(ni, addr, time)

  ! CNBINT on the first particle's list: NNB-1 entries from LIST(2,I)
  i = addr(1); nnb = list(1,i) + 1
  call cnbint(i, x, xdot, body, nnb, list(2,i), fp, fd)
  call check(norm2(fp - gf(:,1)) <= 1.0d-6*norm2(gf(:,1)), 'CNBINT agrees with GPUIRR')

  ! CXVPRED to a later time, GPUPOT, the clock
  time = 0.01d0
  do i = ifirst, ntot
    f(:,i) = 0.5d0*(x0(:,i) - 5.0d0)
  end do
  call cxvpred(ifirst, ntot, time, t0, x0, x0dot, f, fdot, x, xdot, tpred)
  call check(all(tpred(ifirst:ntot) == time) .and. all(tpred(1:ifirst-1) == -1.0d0), 'CXVPRED sets TPRED on js..je only')
  call check(abs(x(1,ifirst) - (x0(1,ifirst) + time*(x0dot(1,ifirst) + time*f(1,ifirst)))) < 1.0d-15, &
             'CXVPRED predicts with F = acc/2')
  call gpupot(nn, body(ifirst), x(1,ifirst), phi)
  call check(all(phi(1:nn) > 0.0d0), 'GPUPOT is positive')
  call wtime(ih, im, is)
  call check(ih >= 0 .and. im >= 0 .and. im < 60 .and. is >= 0 .and. is < 60 .and. dbltim() >= 0.0d0, 'WTIME/DBLTIM')

  call gpunb_close()
  call gpuirr_close()
  call gpunb_close()   ! ADJUST may close again: harmless
  call gpuirr_close()
  call gpunb_open(cap) ! INTGRT opens again
  call gpunb_send(nn, body(ifirst), x(1,ifirst), xdot(1,ifirst))
  call gpunb_regf(ni, h2i, dtr, xi, vi, gpuacc, gpujrk, gpuphi, lm, nbmax, listgp)
  call check(listgp(1,1) >= 1, 'GPUNB works after close and reopen')
  call gpunb_close()

  print '(a,i0,a,i0,a)', 'test_fortran: ', npass, ' passed, ', nfail, ' failed'
  if (nfail > 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (ok) then
      npass = npass + 1
    else
      nfail = nfail + 1
      print '(2a)', 'FAIL: ', what
    end if
  end subroutine check
end program test_fortran
