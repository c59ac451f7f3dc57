!> test_plummer_box_terms -- the start-up's pair terms (FPOLY2's second and
!> third force derivatives, ac_box_terms.inc) in each copy this CPU runs:
!> against a reference computed here in double by the usual recursion
!> (A2 = m a/r^3 - 6 alpha A1 - 3 beta A0, A3 = ..., a different arrangement
!> of the same sums), within 1e-14 of the sum of the terms' magnitudes, and
!> the AVX2 and AVX-512 copies bit for bit the same as the generic one, on a
!> Plummer model with random relative accelerations and jerks, a tight
!> cluster and near-coincident pairs.  i's own lane (r = 0) must stay finite.
!> Fresh inputs each run: NB6_TEST_SEED=S repeats one.
program test_plummer_box_terms
  use plummer_checks, only: check, checks_finish
  use, intrinsic :: iso_fortran_env, only: int64
  use ac_state, only: dp, box, lanes_generic, lanes_avx2, lanes_avx512, lanes_name, cpu_lanes_level
  use plummer_model, only: plummer_generate
  use ac_box_terms_generic, only: box_terms_generic => box_terms
  use ac_box_terms_avx2, only: box_terms_avx2 => box_terms
  use ac_box_terms_avx512, only: box_terms_avx512 => box_terms
  implicit none
  integer, parameter :: n = 4096, nbox = n / box
  real(dp), allocatable :: body(:), x(:,:), v(:,:), xs(:,:), vs(:,:), fs(:,:), fds(:,:), ms(:)
  real(dp) :: r2(box), t2(box,3), t3(box,3), r2c(box), t2c(box,3), t3c(box,3)
  real(dp) :: xi(3), vi(3), fi(3), fdi(3), worst_ref, worst_self, u(3)
  real(dp) :: ref2(3), ref3(3), scale2, scale3, err
  integer :: seed, level, best, b, k0, ki, l, i, nsame, ndiff, ncase
  character(len=32) :: env
  integer(int64) :: seed64
  integer :: status
  character(len=*), parameter :: case_name(3) = [character(24) :: 'Plummer model', 'tight cluster', &
      'near-coincident pairs']

  ! NB6_TEST_SEED as the C tests take it (up to 64 bits); the model and the
  ! random forces use it reduced below 10**6.
  call get_environment_variable('NB6_TEST_SEED', env)
  seed64 = 0
  status = 0
  if (len_trim(env) > 0) read(env, *, iostat=status) seed64
  if (len_trim(env) == 0 .or. status /= 0) then
    if (len_trim(env) > 0) write(*, '(3a)') 'test_plummer_box_terms: NB6_TEST_SEED "', trim(env), &
        '" is not an integer; a seed from the clock instead'
    call system_clock(seed64)
  end if
  write(*, '(a,i0,a)') 'test_plummer_box_terms: random seed ', seed64, ' (set NB6_TEST_SEED to repeat)'
  seed = int(modulo(seed64, 1000000_int64)) + 1
  best = cpu_lanes_level()
  allocate(body(n), x(3,n), v(3,n), xs(n,3), vs(n,3), fs(n,3), fds(n,3), ms(n))

  do ncase = 1, 3
    call inputs(ncase)
    worst_ref = 0; worst_self = 0
    nsame = 0; ndiff = 0
    do b = 1, nbox
      k0 = (b - 1) * box
      ! i is a body of this box (its own lane has r = 0) in every other box.
      ki = k0 + 1 + mod(7 * b, box)
      if (mod(b, 2) == 0) ki = 1 + mod(97 * b, n)
      xi = xs(ki,:); vi = vs(ki,:); fi = fs(ki,:); fdi = fds(ki,:)
      call box_terms_generic(n, box, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2, t2, t3)
      do l = 1, box
        i = k0 + l
        if (i == ki) then
          worst_self = max(worst_self, merge(0.0_dp, 1.0_dp, all(abs(t2(l,:)) <= huge(1.0_dp)) .and. &
              all(abs(t3(l,:)) <= huge(1.0_dp))))
          cycle
        end if
        call reference(i, ki, ref2, ref3, scale2, scale3)
        err = max(maxval(abs(t2(l,:) - ref2)) / scale2, maxval(abs(t3(l,:) - ref3)) / scale3, &
            abs(r2(l) - sum((xs(i,:) - xi)**2)) / r2(l))
        worst_ref = max(worst_ref, err)
      end do
      do level = lanes_avx2, best
        select case (level)
        case (lanes_avx2)
          call box_terms_avx2(n, box, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2c, t2c, t3c)
        case (lanes_avx512)
          call box_terms_avx512(n, box, k0, ki, xi, vi, fi, fdi, xs, vs, fs, fds, ms, r2c, t2c, t3c)
        end select
        do l = 1, box
          if (k0 + l == ki) cycle
          if (all(t2c(l,:) == t2(l,:)) .and. all(t3c(l,:) == t3(l,:)) .and. r2c(l) == r2(l)) then
            nsame = nsame + 1
          else
            ndiff = ndiff + 1
          end if
        end do
      end do
    end do
    call check(trim(case_name(ncase)) // ': generic pair terms match the recursion (error / sum of magnitudes)', &
        worst_ref < 1.0e-14_dp, worst_ref)
    call check(trim(case_name(ncase)) // ': i''s own lane finite', worst_self == 0, worst_self)
    if (best > lanes_generic) then
      call check(trim(case_name(ncase)) // ': copies up to ' // trim(lanes_name(best)) // &
          ' bit for bit as the generic one (pairs that differ)', ndiff == 0 .and. nsame > 0, real(ndiff, dp))
    end if
  end do
  if (best < lanes_avx512) write(*, '(3a)') 'SKIP: this CPU runs no ', trim(lanes_name(best + 1)), &
      ' code, so those copies were not compared'

  deallocate(body, x, v, xs, vs, fs, fds, ms)
  call checks_finish('test_plummer_box_terms')

contains

  !> Case 1: a Plummer model; 2: the same shrunk 1000 times about its first
  !> body; 3: every odd body 1e-7 from the body before it.  Relative
  !> accelerations and jerks are random, of the size a body's own has.
  subroutine inputs(which)
    integer, intent(in) :: which
    integer :: seed_size, k
    integer, allocatable :: put(:)
    call plummer_generate(n, seed + which, body, x, v)
    call random_seed(size=seed_size)
    allocate(put(seed_size))
    put = [(seed * 1999 + which * 104729 + k, k = 1, seed_size)]
    call random_seed(put=put)
    do k = 1, n
      xs(k,:) = x(:,k); vs(k,:) = v(:,k); ms(k) = body(k)
      call random_number(u)
      fs(k,:) = u - 0.5_dp
      call random_number(u)
      fds(k,:) = 4.0_dp * (u - 0.5_dp)
    end do
    select case (which)
    case (2)
      do k = 1, n
        xs(k,:) = xs(1,:) + 1.0e-3_dp * (xs(k,:) - xs(1,:))
      end do
    case (3)
      do k = 2, n, 2
        call random_number(u)
        xs(k,:) = xs(k - 1,:) + 1.0e-7_dp * (u - 0.5_dp)
      end do
    end select
  end subroutine inputs

  !> Pair (i on ki) by the recursion of the force's derivatives, and the
  !> sums of the magnitudes of each result's terms (the scale of its
  !> rounding error).
  subroutine reference(j, i, a2, a3, s2, s3)
    integer, intent(in) :: j, i
    real(dp), intent(out) :: a2(3), a3(3), s2, s3
    real(dp) :: r(3), rv(3), ra(3), rj(3), rr, mr3, alpha, beta, gamma, a0(3), a1(3), s0, s1, sb, sg
    r = xs(j,:) - xs(i,:); rv = vs(j,:) - vs(i,:); ra = fs(j,:) - fs(i,:); rj = fds(j,:) - fds(i,:)
    rr = dot_product(r, r)
    mr3 = ms(j) / (rr * sqrt(rr))
    alpha = dot_product(r, rv) / rr
    beta = (dot_product(rv, rv) + dot_product(r, ra)) / rr + alpha**2
    gamma = (3.0_dp * dot_product(rv, ra) + dot_product(r, rj)) / rr + alpha * (3.0_dp * beta - 4.0_dp * alpha**2)
    a0 = mr3 * r
    a1 = mr3 * rv - 3.0_dp * alpha * a0
    a2 = mr3 * ra - 6.0_dp * alpha * a1 - 3.0_dp * beta * a0
    a3 = mr3 * rj - 9.0_dp * alpha * a2 - 9.0_dp * beta * a1 - 3.0_dp * gamma * a0
    ! beta and gamma by the magnitudes of their terms too.
    sb = (dot_product(rv, rv) + sqrt(rr) * norm2(ra)) / rr + alpha**2
    sg = (3.0_dp * norm2(rv) * norm2(ra) + sqrt(rr) * norm2(rj)) / rr + abs(alpha) * (3.0_dp * sb + 4.0_dp * alpha**2)
    s0 = mr3 * sqrt(rr)
    s1 = mr3 * norm2(rv) + 3.0_dp * abs(alpha) * s0
    s2 = mr3 * norm2(ra) + 6.0_dp * abs(alpha) * s1 + 3.0_dp * sb * s0
    s3 = mr3 * norm2(rj) + 9.0_dp * abs(alpha) * s2 + 9.0_dp * sb * s1 + 3.0_dp * sg * s0
  end subroutine reference
end program test_plummer_box_terms
