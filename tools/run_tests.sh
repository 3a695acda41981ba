#!/bin/sh
# The test suite: installs what is missing, installs askotch, runs the
# standalone C driver checks and the testthat suite, and ends with one line
# "N passed, N failed".  Exit status is non-zero on any failure.
set -e
cd "$(dirname "$0")/.."
sh tools/install_deps.sh
echo "== installing askotch"
R CMD INSTALL --preclean . >/tmp/askotch-install.log 2>&1 || { tail -60 /tmp/askotch-install.log; exit 1; }
grep "askotch:" /tmp/askotch-install.log || true
echo "== core layering (tools/check_deps.sh)"
deps_fail=0
sh tools/check_deps.sh || deps_fail=1
echo "== C driver (core + CPU backend, no R)"
jobs=$(nproc 2>/dev/null || echo 2)
make -s -C driver clean
make -s -j"$jobs" -C driver progs >/dev/null
# the kernel primitives on every instruction set this CPU runs (AVX-512, AVX2, generic)
make -s -f driver/Makefile.kernels driver/build/kernels/test_kernels >/dev/null
: > /tmp/askotch-driver.log
crashed=$deps_fail
for prog in "askotch_driver test" "test_solvers" "test_solvers2" "test_seams" "test_features" "test_joker" "test_restart" "test_dist" "test_svrg" "test_bcd" "test_stop" "test_compose" "kernels/test_kernels"; do
  # a program that dies without its summary line counts as one failure
  ./driver/build/$prog > /tmp/askotch-prog.log 2>&1 || {
    grep -qE "^[0-9]+ passed, [0-9]+ failed" /tmp/askotch-prog.log || crashed=$((crashed + 1)); }
  cat /tmp/askotch-prog.log >> /tmp/askotch-driver.log
done
# the distributed checks under mpirun (np 1..4; skipped with the reason without MPI)
sh tools/mpi_tests.sh > /tmp/askotch-prog.log 2>&1 || true
grep -E "skipped|^ranks" /tmp/askotch-prog.log || true
cat /tmp/askotch-prog.log >> /tmp/askotch-driver.log
grep -E "^FAIL" /tmp/askotch-driver.log || true
# sum the "N passed, N failed" lines of the C programs
c_line=$(grep -E "^[0-9]+ passed, [0-9]+ failed" /tmp/askotch-driver.log |
         awk -v c="$crashed" '{p += $1; f += $3} END {printf "%d passed, %d failed", p, f + c}')
echo "driver: $c_line"
echo "== testthat"
export NOT_CRAN=true
export C_LINE="$c_line"
Rscript -e '
  res <- as.data.frame(testthat::test_dir("tests/testthat", package = "askotch",
                                           load_package = "installed", reporter = "summary",
                                           stop_on_failure = FALSE))
  c_line <- Sys.getenv("C_LINE")
  cp <- as.integer(sub(" passed.*", "", c_line)); cf <- as.integer(sub(".*passed, ([0-9]+) failed.*", "\\1", c_line))
  passed <- sum(res$passed) + cp
  failed <- sum(res$failed) + sum(res$error) + cf
  cat(sprintf("\n%d passed, %d failed, %d skipped\n", passed, failed, sum(res$skipped)))
  quit(status = if (failed > 0) 1 else 0)
' || exit 1
