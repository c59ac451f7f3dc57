!> test_plummer_box_terms -- the start-up's pair terms (FPOLY2's second and
!> third force derivatives, ac_box_terms.inc) in each copy this CPU runs:
!> against a reference computed here in double by the usual recursion
!> (A2 = m a/r^3 - 6 alpha A1 - 3 beta A0, A3 = ..., a different arrangement
!> of the same sums), within 1e-14 of the sum of the terms' magnitudes, and
!> the AVX2 and AVX-512 copies bit for bit the same as the generic one, on a
!> Plummer model with random relative accelerations and jerks, a tight
!> cluster and near-coincident pairs.  i's own lane (r = 0) must stay finite.
!> And FPOLY2's sums for a group of box_lanes bodies at once (box_sums, in
!> each copy): bit for bit the sums one body and one pair at a time would
!> give from the generic box_terms, with random list marks, radii (some
!> exactly a pair's r2, some lanes taking nothing) and groups that hold
!> bodies of the box.
!> Fresh inputs each run: NB6_TEST_SEED=S repeats one.
program test_plummer_box_terms
  use plummer_checks, only: check, checks_finish
  use, intrinsic :: iso_fortran_env, only: int8, int64
  use ac_state, only: dp, box, box_lanes, lanes_generic, lanes_avx2, lanes_avx512, lanes_name, cpu_lanes_level
  use plummer_model, only: plummer_generate
  use ac_box_terms_generic, only: box_terms_generic => box_terms, box_sums_generic => box_sums
  use ac_box_terms_avx2, only: box_terms_avx2 => box_terms, box_sums_avx2 => box_sums
  use ac_box_terms_avx512, only: box_terms_avx512 => box_terms, box_sums_avx512 => box_sums
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
  ! The group sums' test (group_sums_check): the group's bodies (their
  ! positions in xs and their state), the list marks, the reference sums,
  ! and counts of the kinds of lanes met.
  integer :: kg(box_lanes), nlist, nrest, nnone, nself, nedge
  integer(int8), allocatable :: bits(:)
  real(dp), dimension(box_lanes,3) :: xg, vg, fg, fdg, e2, e3, e2r, e3r
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
    call group_sums_check(trim(case_name(ncase)))
  end do
  if (best < lanes_avx512) write(*, '(3a)') 'SKIP: this CPU runs no ', trim(lanes_name(best + 1)), &
      ' code, so those copies were not compared'

  deallocate(body, x, v, xs, vs, fs, fds, ms)
  call checks_finish('test_plummer_box_terms')

contains

  !> box_sums of every copy this CPU runs against the sums one i and one
  !> pair at a time (generic box_terms, then each kept term added to the
  !> list's or the others' sums in j's order), over groups of bodies and a
  !> run of boxes each; bit for bit.  Also that every kind of lane
  !> occurred: terms in both sums, lanes that take nothing from a box, i's
  !> own pair and a pair at r2 = rc exactly.
  subroutine group_sums_check(what)
    character(len=*), intent(in) :: what
    integer, parameter :: ngroups = 40, nb = 12
    integer :: boxes(nb), g, l, bb, j, level, k0, nbad, ncompared
    real(dp), dimension(box_lanes,3) :: s2, s3, s2r, s3r, z2, z3, z2r, z3r
    real(dp) :: rc(box_lanes,nb), u1
    allocate(bits(n))
    nbad = 0; ncompared = 0; nlist = 0; nrest = 0; nnone = 0; nself = 0; nedge = 0
    do g = 1, ngroups
      ! A run of bodies (the first box holds them, so i's own pair occurs);
      ! in odd groups the last lane repeats the one before, as ac_forces
      ! pads a short last group.
      call random_number(u1)
      k0 = int(u1 * (n - box_lanes))
      do l = 1, box_lanes
        kg(l) = k0 + l
        if (mod(g, 2) == 1 .and. l == box_lanes) kg(l) = kg(l - 1)
        xg(l,:) = xs(kg(l),:); vg(l,:) = vs(kg(l),:); fg(l,:) = fs(kg(l),:); fdg(l,:) = fds(kg(l),:)
      end do
      do j = 1, n
        call random_number(u1)
        bits(j) = int(u1 * 256 - 128, int8)
        call random_number(u1)
        if (u1 < 0.5_dp) bits(j) = 0
      end do
      do bb = 1, nb
        boxes(bb) = 1 + mod(k0 / box + (bb - 1) * (nbox / nb + 1), nbox)
        call choose_radii(boxes(bb), rc(:,bb))
      end do
      ! Sums that start nonzero, as after earlier boxes.
      call random_number(z2); call random_number(z3); call random_number(z2r); call random_number(z3r)
      e2 = z2; e3 = z3; e2r = z2r; e3r = z3r
      do bb = 1, nb
        call reference_sums_add(boxes(bb), rc(:,bb))
      end do
      do level = lanes_generic, best
        s2 = z2; s3 = z3; s2r = z2r; s3r = z3r
        do bb = 1, nb
          k0 = (boxes(bb) - 1) * box
          select case (level)
          case (lanes_avx2)
            call box_sums_avx2(n, box, k0, kg, rc(:,bb), bits, xg, vg, fg, fdg, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
          case (lanes_avx512)
            call box_sums_avx512(n, box, k0, kg, rc(:,bb), bits, xg, vg, fg, fdg, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
          case default
            call box_sums_generic(n, box, k0, kg, rc(:,bb), bits, xg, vg, fg, fdg, xs, vs, fs, fds, ms, s2, s3, s2r, s3r)
          end select
        end do
        do l = 1, box_lanes
          ncompared = ncompared + 1
          if (any(s2(l,:) /= e2(l,:)) .or. any(s3(l,:) /= e3(l,:)) .or. any(s2r(l,:) /= e2r(l,:)) .or. &
              any(s3r(l,:) /= e3r(l,:))) nbad = nbad + 1
        end do
      end do
    end do
    call check(what // ': group sums bit for bit as one pair at a time, copies up to ' // trim(lanes_name(best)) // &
        ' (lanes that differ)', nbad == 0 .and. ncompared > 0, real(nbad, dp))
    call check(what // ': group sums met list and other terms, empty lanes, i''s own pair, r2 = rc (fewest)', &
        min(nlist, nrest, nnone, nself, nedge) > 0, real(min(nlist, nrest, nnone, nself, nedge), dp))
    deallocate(bits)
  end subroutine group_sums_check

  !> Radii per lane for box b: random, lane 2's exactly the r2 of one of
  !> the box's pairs (not its own), lane 3 none (-1).
  subroutine choose_radii(b, r)
    integer, intent(in) :: b
    real(dp), intent(out) :: r(box_lanes)
    integer :: l, jj
    real(dp) :: r2(box), t2(box,3), t3(box,3), u
    do l = 1, box_lanes
      call random_number(u)
      r(l) = 1.5_dp * u * u * maxval(sum((xs((b - 1) * box + 1:b * box,:) - spread(xg(l,:), 1, box))**2, dim=2))
    end do
    call box_terms_generic(n, box, (b - 1) * box, kg(2), xg(2,:), vg(2,:), fg(2,:), fdg(2,:), xs, vs, fs, fds, &
        ms, r2, t2, t3)
    jj = 1 + mod(b, box)
    if ((b - 1) * box + jj == kg(2)) jj = 1 + mod(b + 1, box)
    r(2) = r2(jj)
    r(3) = -1
  end subroutine choose_radii

  !> One i and one pair at a time, as FPOLY2 summed before box_sums.
  subroutine reference_sums_add(b, r)
    integer, intent(in) :: b
    real(dp), intent(in) :: r(box_lanes)
    integer :: l, jj, k
    real(dp) :: r2(box), t2(box,3), t3(box,3)
    logical :: taken
    do l = 1, box_lanes
      call box_terms_generic(n, box, (b - 1) * box, kg(l), xg(l,:), vg(l,:), fg(l,:), fdg(l,:), xs, vs, fs, fds, &
          ms, r2, t2, t3)
      taken = .false.
      do jj = 1, box
        k = (b - 1) * box + jj
        if (k == kg(l)) nself = nself + 1
        if (r2(jj) == r(l) .and. k /= kg(l)) nedge = nedge + 1
        if (r2(jj) > r(l) .or. k == kg(l)) cycle
        taken = .true.
        if (btest(bits(k), l - 1)) then
          e2(l,:) = e2(l,:) + t2(jj,:); e3(l,:) = e3(l,:) + t3(jj,:)
          nlist = nlist + 1
        else
          e2r(l,:) = e2r(l,:) + t2(jj,:); e3r(l,:) = e3r(l,:) + t3(jj,:)
          nrest = nrest + 1
        end if
      end do
      if (.not. taken) nnone = nnone + 1
    end do
  end subroutine reference_sums_add

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

  !> Pair (i on kg) by the recursion of the force's derivatives, and the
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
