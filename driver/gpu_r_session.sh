#!/bin/sh
# One device call that runs the R package on a lent GPU machine (which has no
# R, MPI or OpenBLAS of its own): unpacks .device/bundle.tar.xz (made here by
# tools/device_bundle.sh and carried with the call), then, each step with its
# own time limit, the most useful first:
#   0. the operator parity test (test_parity, twice: the second with every L2
#      kernel product on the GEMM route) and the kernel-product benchmark of
#      both routes (bench_cuda --quick) beside PyTorch's (bench_torch.py);
#   1. the R package's CUDA tests (tests/testthat/test-cuda.R) on the device;
#   2. the driver's MPI build with CUDA: test_dist --backend cuda at np = 2
#      (Open MPI 5; the two ranks share the GPU), and the R package's MPI
#      tests (tests/testthat/test-mpi.R: SPMD fits under mpirun, faults, and
#      every rank on the GPU);
#   3. issue 11's GP analysis at n = 5e4 (bench_gp_scale.R: lambda by maximum
#      likelihood, solver "auto", standard errors for 1e4 test points), the
#      size at which GPyTorch's exact GP was timed on the same kind of card;
#   4. the driver's CUDA test programs (test_solvers2, test_solvers, test_seams);
#   5. the same GP analysis at n = 1e5, then GPyTorch's at 5e4 again;
#   6. (only when named in STEPS) "crossover": issue 10's solver = "auto"
#      question on the GPU, inst/bench/bench_crossover.R with the arguments
#      in CROSSOVER_ARGS (default "5e5 16 both": PCG with the greedy
#      Cholesky preconditioner to convergence, then ASkotch for 1.5x its time).
# Run from the repository root:
#   sh driver/gpu_r_session.sh [budget_seconds]          (default 480)
#   env: STEPS (names of the steps below to run; default all)
# Logs in $OUT (else driver/build/gpu_r); a summary table ends the run.
BUDGET=${1:-480}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
T0=$(date +%s)
LOG=${OUT:-$ROOT/driver/build/gpu_r}
mkdir -p "$LOG"
SUM=$LOG/summary.txt
: > "$SUM"
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# step NAME LIMIT CMD...: runs within the budget left, logs, notes status
# (STEPS="name ...": only the steps named)
step() {
  name=$1; lim=$2; shift 2
  case " ${STEPS:-all} " in *" all "*|*" $name "*) ;; *) return ;; esac
  l=$(left)
  if [ "$l" -lt 15 ]; then printf '%-12s %-8s %6s\n' "$name" skip - >> "$SUM"; return; fi
  [ "$lim" -gt "$l" ] && lim=$l
  echo "== $name ($lim s): $*"
  t0=$(date +%s)
  timeout "$lim" "$@" > "$LOG/$name.log" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  tail -n 15 "$LOG/$name.log"
  case $rc in 0) st=ok ;; 124) st=TIMEOUT ;; *) st="FAIL($rc)" ;; esac
  printf '%-12s %-8s %5ss  %s\n' "$name" "$st" "$dt" \
    "$(grep -E 'passed|FAIL [0-9]|\[ FAIL|RMSE|fit \(s\)|total' "$LOG/$name.log" | tail -n 2 | tr '\n' ' ' | cut -c1-150)" >> "$SUM"
}

[ -f .device/bundle.tar.xz ] || { echo "no .device/bundle.tar.xz (tools/device_bundle.sh)"; exit 2; }
xz -T0 -dc .device/bundle.tar.xz | tar -C / -xf - || exit 2
echo "unpacked in $(( $(date +%s) - T0 )) s"
: "${CUDA_HOME:=/usr/local/cuda}"
R_LD_LIBRARY_PATH=/usr/lib/R/lib:/opt/askotch/lib:/opt/askotch/mpi/lib:$CUDA_HOME/lib64
LD_LIBRARY_PATH=$R_LD_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=/opt/askotch/mpi/bin:$PATH
R_LIBS=/opt/askotch/rlib
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NOT_CRAN=true
export R_LD_LIBRARY_PATH LD_LIBRARY_PATH PATH R_LIBS OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM NOT_CRAN
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"; uptime
  for f in /usr/lib/R/bin/exec/R /opt/askotch/rlib/askotch/libs/askotch.so /opt/askotch/bin/test_dist_mpi; do
    ldd "$f" | grep 'not found' | sed "s|^|$f: |"
  done
  Rscript -e 'library(askotch); print(askotch_devices()); cat(R.version.string, "\n")'
} > "$LOG/env.log" 2>&1
cat "$LOG/env.log"

B=/opt/askotch/bin
# the CUDA operators against the CPU backend (every L2 kernel product on the
# GEMM route in the second run), then the kernel-product rates of both routes
# and PyTorch's on the same card
step parity 120 "$B/test_parity"
step parity_gemm 120 env ASKOTCH_CUDA_GEMM_MIN_P=1 "$B/test_parity"
step routes 150 "$B/bench_cuda" --quick
step torch 120 python3 inst/bench/gpu/bench_torch.py --quick
step r_cuda 150 Rscript -e 'r <- as.data.frame(testthat::test_file("tests/testthat/test-cuda.R", package = "askotch", load_package = "installed", reporter = "summary")); cat(sprintf("%d passed, %d failed, %d errors, %d skipped\n", sum(r$passed), sum(r$failed), sum(r$error), sum(r$skipped)))'
step mpi_cuda 90 mpirun --oversubscribe -np 2 /opt/askotch/bin/test_dist_mpi --backend cuda
step r_mpi 150 Rscript -e 'r <- as.data.frame(testthat::test_file("tests/testthat/test-mpi.R", package = "askotch", load_package = "installed", reporter = "summary")); cat(sprintf("%d passed, %d failed, %d errors, %d skipped\n", sum(r$passed), sum(r$failed), sum(r$error), sum(r$skipped)))'
step gp_5e4 120 env ASKOTCH_BENCH_PROFILE="$LOG/gp_5e4.prof" Rscript inst/bench/bench_gp_scale.R 5e4 "$LOG/gp_5e4.rds"
step solvers2 60 "$B/test_solvers2" --backend cuda
step solvers2_gemm 60 env ASKOTCH_CUDA_GEMM_MIN_P=1 "$B/test_solvers2" --backend cuda
step solvers 30 "$B/test_solvers" --backend cuda
step seams 30 "$B/test_seams" --backend cuda
step gp_1e5 200 Rscript inst/bench/bench_gp_scale.R 1e5 "$LOG/gp_1e5.rds"
step gpytorch 60 python3 inst/bench/gpu/bench_gpytorch_gp.py --n 50000 --budget 50
case " $STEPS " in *" crossover "*)
  # shellcheck disable=SC2086
  step crossover 280 Rscript inst/bench/bench_crossover.R ${CROSSOVER_ARGS:-5e5 16 both} ;;
esac
echo "== total $(( $(date +%s) - T0 )) s"
cat "$SUM"
