# device-setup.sh -- source from the repository root on the GPU machine:
#   . tests/device-setup.sh
# That machine has no gfortran: .devtools (made here with
# ../shared/tools/device-fortran.sh prepare .devtools, carried to it) holds
# Debian's gfortran-12, which this unpacks and puts on PATH.  Those packages
# leave gfortran's libgomp.so pointing at a libgomp.so.1 they do not carry, so
# `gfortran -fopenmp` silently linked libgomp.a into every Fortran program
# (NBODY6, the Plummer driver) while nb6accel's libraries use the machine's
# libgomp.so.1: two OpenMP runtimes, and dynamically scheduled loops ran
# every iteration on every thread (NBODY6's CPU regular force at the speed of
# one thread with 16).  Point that link at the machine's shared libgomp.
if ! command -v gfortran >/dev/null 2>&1 && [ -f .devtools/device-fortran.sh ]; then
    # shellcheck disable=SC1091
    . .devtools/device-fortran.sh setup .devtools >/dev/null 2>&1
fi
# (-print-file-name=libgomp.so cannot name a dangling link: it prints the
# bare name; libgcc.a sits in the same directory.)
nb6_gomp_link=$(dirname "$(gfortran -print-libgcc-file-name 2>/dev/null)")/libgomp.so
if [ -L "$nb6_gomp_link" ] && [ ! -e "$nb6_gomp_link" ]; then
    nb6_gomp_shared=$(readlink -f "$(gcc -print-file-name=libgomp.so 2>/dev/null)")
    if [ -f "$nb6_gomp_shared" ]; then
        ln -sf "$nb6_gomp_shared" "$nb6_gomp_link"
        echo "device-setup: gfortran's libgomp.so now -> $nb6_gomp_shared (was dangling: libgomp.a would have been linked)"
    else
        echo "device-setup: WARNING: gfortran's libgomp.so is dangling and no shared libgomp was found" >&2
    fi
fi
unset nb6_gomp_link nb6_gomp_shared
