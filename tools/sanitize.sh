#!/bin/sh
# Sanitizer and valgrind stage of CI (called by .ci/run after the other steps).
#  1. the C driver built with AddressSanitizer + UBSan (+ float-cast-overflow),
#     every program run with leak checking on;
#  2. the C driver programs under valgrind memcheck (a plain -O1 -g build,
#     one thread: valgrind serialises threads anyway);
#  3. the R package built with the same sanitizers into a temporary library,
#     and a subset of the testthat suite run in R with libasan preloaded
#     (ASAN_OPTIONS=detect_leaks=0: R itself is not instrumented and keeps
#     memory to its exit).  The subset: the exact-oracle solver tests, the
#     stopping rules, the error paths, interrupts (the unwinding path that
#     frees everything), solving again, composite kernels (their spec
#     decoding, tiles and derivatives), the stochastic GP likelihood and
#     the GP classifiers' site posterior and tilted moments (EP, Laplace) --
#     the files that reach every C entry point and every error/cleanup path; the statistical and
#     convention tests (GP uncertainty, broom, caret, tasks) run only R code
#     on top of the same entry points and would double the stage's time.
# Any sanitizer or valgrind report fails the stage.  Prints stage timings.
set -e
cd "$(dirname "$0")/.."
SAN="-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow"
PROGS="askotch_driver:test test_solvers test_solvers2 test_seams test_features test_joker test_svrg test_bcd test_dist test_compose test_stop"
ASAN_SUPP="$(pwd)/tools/asan.supp"
t_all=$(date +%s)
stage_t=$t_all
stage() { now=$(date +%s); echo "== sanitize: $1 done in $((now - stage_t)) s"; stage_t=$now; }
fail=0

# run_one LABEL DIR PROG ARG [VAR=value ...] [WRAPPER ...]: ./driver/DIR/PROG
# ARG with those variables under the wrapper (valgrind), logged to
# /tmp/askotch-san-<label>.log; prints "LABEL: N passed, M failed", or
# FAILED and the log's tail and returns 1 on any failure or report
run_one() {
  label=$1; dir=$2; prog=$3; arg=$4; shift 4
  log=/tmp/askotch-san-$(printf %s "$label" | tr -c 'A-Za-z0-9_' '_').log
  if env "$@" ./driver/"$dir"/"$prog" ${arg:+"$arg"} >"$log" 2>&1 &&
     ! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:|^FAIL" "$log"; then
    echo "   $label: $(grep -E '^[0-9]+ passed' "$log" | tail -1)"
  else
    echo "   $label: FAILED"; tail -40 "$log"; return 1
  fi
}

run_progs() { # $1: build dir; every program of PROGS (name:argument)
  for pr in $PROGS; do
    prog=${pr%%:*}; arg=""; [ "$prog" != "$pr" ] && arg=${pr#*:}
    run_one "$prog" "$1" "$prog" "$arg" || fail=1
  done
}

echo "== sanitize: C driver with ASan + UBSan (leak checking on)"
JOBS=$(nproc 2>/dev/null || echo 2)
make -s -j"$JOBS" -C driver B=build-asan CFLAGS="-O1 -g -Wall $SAN" progs >/dev/null
ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:suppressions=$ASAN_SUPP" \
LSAN_OPTIONS="suppressions=$(pwd)/tools/lsan.supp:print_suppressions=0" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" OMP_NUM_THREADS=2 \
  run_progs build-asan
stage "ASan/UBSan driver"

echo "== sanitize: C driver under valgrind"
if ! command -v valgrind >/dev/null 2>&1; then echo "valgrind missing (tools/install_deps.sh installs it)"; exit 1; fi
make -s -j"$JOBS" -C driver B=build-vg CFLAGS="-O1 -g" build-vg/test_solvers build-vg/test_seams >/dev/null
# A subset under valgrind: the solver family on every operator path
# (test_solvers) and the seams -- operators, losses, state reuse, failure
# injection, the panel factorisations (test_seams) -- in two lanes, one per
# core: the warm-start checks (test_seams' "resolve", the longest part) and
# the rest. test_seams' thread-count bit checks ("team") are left out:
# valgrind serialises threads, and their 1100 x 2000 products three times
# over would take longer than all the rest. The other programs would take
# far longer under valgrind (it runs ~35-100x slower), too long for CI; the
# ASan/UBSan run above covers them all with leak checking.
VG="valgrind -q --error-exitcode=1 --suppressions=$(pwd)/tools/valgrind.supp"
ONE="OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1"
# shellcheck disable=SC2086 # ONE and VG are word lists
(run_one "test_seams (resolve)" build-vg test_seams "" ONLY=resolve $ONE $VG \
   >/tmp/askotch-vg-lane1.out 2>&1; echo $? >>/tmp/askotch-vg-lane1.out) &
lane1=$!
# shellcheck disable=SC2086
run_one test_solvers build-vg test_solvers "" $ONE $VG || fail=1
SEAMS="options operator loss fail cgroup overlap pieces vectors gram"
# shellcheck disable=SC2086
run_one "test_seams ($SEAMS)" build-vg test_seams "" "ONLY=$SEAMS" $ONE $VG || fail=1
wait $lane1
head -n -1 /tmp/askotch-vg-lane1.out
[ "$(tail -n 1 /tmp/askotch-vg-lane1.out)" = 0 ] || fail=1
stage "valgrind driver"

echo "== sanitize: R package with ASan + UBSan"
LIB=$(mktemp -d /tmp/askotch-asan-lib.XXXXXX)
MV=$(mktemp /tmp/askotch-asan-makevars.XXXXXX)
printf 'CFLAGS = -O1 -g %s\nLDFLAGS = %s\n' "$SAN" "$SAN" >"$MV"
# (without the CUDA backend: no device here, and nvcc adds minutes)
ASKOTCH_CUDA=no R_MAKEVARS_USER="$MV" R CMD INSTALL --preclean --no-test-load -l "$LIB" . >/tmp/askotch-asan-install.log 2>&1 ||
  { tail -40 /tmp/askotch-asan-install.log; exit 1; }
# the next plain install must not reuse these objects
rm -f src/*.o src/*/*.o src/*/*/*.o src/*.so
stage "R package ASan build"
LIBASAN=$(gcc -print-file-name=libasan.so)
FILES="test-solvers.R test-stopping.R test-errors.R test-interrupts.R test-refit.R test-losses.R test-kernels.R test-kernel-algebra.R test-bcd.R test-gp-slq.R test-ep.R test-laplace.R"
for f in $FILES; do
  log=/tmp/askotch-asan-$f.log
  if LD_PRELOAD="$LIBASAN" ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:suppressions=$ASAN_SUPP" \
     UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" NOT_CRAN=true OMP_THREAD_LIMIT=2 \
     Rscript -e ".libPaths(c('$LIB', .libPaths())); r <- as.data.frame(testthat::test_file('tests/testthat/$f', package = 'askotch', load_package = 'installed', reporter = 'summary')); bad <- r\$failed > 0 | r\$error; if (any(bad)) cat('failed or errored:', paste(r\$test[bad], collapse = ' | '), '\n'); cat(sprintf('%d passed, %d failed\n', sum(r\$nb) - sum(r\$failed) - sum(r\$skipped), sum(r\$failed) + sum(r\$error)))" \
     >"$log" 2>&1 && ! grep -qE "ERROR: AddressSanitizer|runtime error:" "$log" && grep -qE "^[0-9]+ passed, 0 failed" "$log"; then
    echo "   $f: $(grep -E '^[0-9]+ passed' "$log" | tail -1)"
  else
    echo "   $f: FAILED"; grep -E -A30 "ERROR: AddressSanitizer|runtime error:" "$log" | head -60; tail -40 "$log"; fail=1
  fi
done
rm -rf "$LIB" "$MV" driver/build-asan driver/build-vg
stage "R tests under ASan"
echo "== sanitize: total $(( $(date +%s) - t_all )) s"
[ "$fail" -eq 0 ] || { echo "sanitize: FAILED"; exit 1; }
echo "sanitize: OK"
