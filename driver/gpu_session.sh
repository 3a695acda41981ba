#!/bin/sh
# One lease-sized call on a lent GPU machine (no R there): build, check and
# time the CUDA backend, then time whole fits on the GPU against the CPU
# backend on the same machine.  Run from the repository root:
#
#   sh driver/gpu_session.sh [budget_seconds]        (default 420)
#   env: STAGES (gpu_check stages), STAGE_TIMEOUT (100 s), FIT_N (1e6),
#        FITS (names of the whole fits below to run; default all)
#
# The GPU machine has no OpenBLAS/LAPACKE development files: where the folder
# .blas/ exists (include/ + lib/ copied from a Debian machine with
# libopenblas-dev and liblapacke-dev by tools/blas_bundle.sh) it is put on the
# compiler's and loader's paths.  Every stage has its own time limit, the most
# useful stages run first, and the logs go to
# driver/build/gpu_check (packed into $OUT/gpu_logs.tgz when OUT is set).
BUDGET=${1:-420}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
if [ -d .blas ]; then
  CPATH=$ROOT/.blas/include${CPATH:+:$CPATH}
  LIBRARY_PATH=$ROOT/.blas/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  LD_LIBRARY_PATH=$ROOT/.blas/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH LIBRARY_PATH LD_LIBRARY_PATH
fi
# logs gather in one folder, packed into $OUT/gpu_logs.tgz at the end (the
# lease returns only a few files)
LOG=$ROOT/driver/build/gpu_check
mkdir -p "$LOG"
DEST=$OUT
T0=$(date +%s)
echo "host compiler: $(command -v gcc || echo none) $(gcc --version 2>/dev/null | head -n 1)"
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
: "${JOBS:=$(nproc 2>/dev/null || echo 4)}"
export JOBS KRR_VERBOSE=1

# 1. build, operator parity, solver parity, memcheck, racecheck and the PyTorch
#    comparison (add "bench" to STAGES for the kernel_mv roofline table)
OUT=$LOG STAGE_TIMEOUT=${STAGE_TIMEOUT:-100} sh driver/gpu_check.sh --quick ${STAGES:-build parity progs solvers mpi memcheck racecheck torch}
echo "gpu_check done at $(( $(date +%s) - T0 ))s"

# 2. whole fits: GPU vs the CPU backend (all cores) on the same synthetic data
D=driver/build/cudadrv/askotch_driver
[ -x "$D" ] || { echo "no $D"; exit 1; }
fit() { # name limit args...
  name=$1; lim=$2; shift 2
  case " ${FITS:-all} " in *" all "*|*" $name "*) ;; *) return ;; esac
  l=$(left); [ "$l" -lt 20 ] && { echo "skip $name (budget)"; return; }
  [ "$lim" -gt "$l" ] && lim=$l
  echo "== $name: $*"
  t0=$(date +%s.%N)
  timeout "$lim" "$D" "$@" > "$LOG/$name.log" 2>&1
  rc=$?
  echo "rc=$rc wall $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}") s (setup and warm-up included)" | tee -a "$LOG/$name.log"
  tail -n 12 "$LOG/$name.log"
}
N=${FIT_N:-1000000}
# ASkotch: seconds per block step at the default block (n / 100) and larger
fit ask_cuda_f 60 bench --backend cuda --n "$N" --p 10 --iters 20 --precision single
fit ask_cuda_f_b2 60 bench --backend cuda --n "$N" --p 10 --b 20000 --iters 10 --precision single
fit ask_cuda_f_b5 60 bench --backend cuda --n "$N" --p 10 --b 50000 --iters 10 --precision single
fit ask_cuda_d 60 bench --backend cuda --n "$N" --p 10 --iters 10 --precision double
fit ask_cpu_f 60 bench --backend cpu --n "$N" --p 10 --iters 4 --precision single
# Falkon (default centres): time to a 1e-6 residual on the GPU, per-iteration on the CPU
fit falkon_cuda_f 90 fit --backend cuda --solver falkon --r 0 --n "$N" --p 10 --iters 60 --tol 1e-6 --precision single
fit falkon_cpu_f 60 bench --backend cpu --solver falkon --r 0 --n "$N" --p 10 --iters 3 --precision single
# Joker (hinge loss, default block 512): the trust-region loops run on the host, the
# O(b n) products on the device; seconds per block against the CPU backend
fit joker_cuda 60 bench --backend cuda --solver joker --loss hinge --r 0 --n 200000 --p 10 --iters 200 --lambda 1e-4 --precision double
fit joker_cpu 60 bench --backend cpu --solver joker --loss hinge --r 0 --n 200000 --p 10 --iters 40 --lambda 1e-4 --precision double
# EigenPro 2 at its default 4000-point subsample (the subspace eigensystem on the
# device): the wall time includes the eigensystem, the per-iteration table does not
fit ep2_cuda_f 60 bench --backend cuda --solver eigenpro --opts subsample=4000 --n "$N" --p 10 --iters 30 --precision single
# PCG with the greedy Cholesky preconditioner of automatic rank (the default
# solver up to n = 2e5): time to a 1e-6 residual on the device
fit pcg_gc_cuda_d 90 fit --backend cuda --solver pcg --opts preconditioner=greedy_cholesky --n 200000 --p 10 --lambda 1e-4 --tol 1e-6 --iters 200 --precision double
echo "session done at $(( $(date +%s) - T0 ))s"
echo "== summary"; cat "$LOG/summary.txt"
[ -n "$DEST" ] && tar czf "$DEST/gpu_logs.tgz" -C "$LOG/.." "$(basename "$LOG")"
