#!/bin/sh
# One-stop check of the CUDA backend on a GPU machine (no R needed).
#
#   sh driver/gpu_check.sh [--quick] [stage ...]      (from the repository root)
#   stages: build parity solvers progs mpi memcheck racecheck bench torch   (default: all, in that order)
#
# build     : tools/config_cuda.sh probe, CUDA objects, test_parity (needs
#             OpenBLAS + LAPACKE dev files; checked by a test compile, else the
#             parity stages are skipped and the benchmark is still built)
# parity    : driver/build/cuda/test_parity (every krr_ops entry, CPU vs CUDA)
# solvers   : driver/build/cudadrv/askotch_driver parity --backend cuda (every solver's
#             solution on the GPU vs the CPU backend vs the exact Cholesky one)
# progs     : the driver's test programs that take --backend (test_seams, test_bcd,
#             test_features, test_joker, test_restart, test_solvers, test_solvers2,
#             test_svrg)
#             on the CUDA backend
# mpi       : where mpicc and mpirun exist: the MPI build with CUDA (make -C driver
#             CUDA=1 mpi) and test_dist --backend cuda at np = 2 (the ranks share
#             the GPU); skipped with a note otherwise
# memcheck  : compute-sanitizer --tool memcheck --leak-check full test_parity --small
# racecheck : compute-sanitizer --tool racecheck test_parity --small
# bench     : inst/bench/gpu bench_cuda (cuBLAS GEMM + kernel_mv roofline table)
# torch     : inst/bench/gpu/bench_torch.py (the same product in PyTorch)
# Logs go to $OUT (if set) else driver/build/gpu_check/; a summary table ends the run.
# Env: CUDA_HOME (default /usr/local/cuda), CUDA_ARCHS (default 90), JOBS (default nproc),
# STAGE_TIMEOUT (caps each stage's seconds), PARITY_SET (base|more: one half of
# the solver parity).

QUICK=
STAGES=
for a in "$@"; do
  case "$a" in
    --quick) QUICK=--quick ;;
    build|parity|solvers|progs|mpi|memcheck|racecheck|bench|torch) STAGES="$STAGES $a" ;;
    *) echo "usage: $0 [--quick] [build|parity|solvers|progs|mpi|memcheck|racecheck|bench|torch ...]"; exit 2 ;;
  esac
done
[ -n "$STAGES" ] || STAGES="build parity solvers progs mpi memcheck racecheck bench torch"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
LOG=${OUT:-$ROOT/driver/build/gpu_check}
mkdir -p "$LOG"
: "${CUDA_HOME:=/usr/local/cuda}"
export CUDA_HOME
PATH="$CUDA_HOME/bin:$PATH"
export PATH
: "${CUDA_ARCHS:=90}"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
SAN=$(command -v compute-sanitizer || { [ -x "$CUDA_HOME/bin/compute-sanitizer" ] && echo "$CUDA_HOME/bin/compute-sanitizer"; })
PARITY=driver/build/cuda/test_parity
BENCH=driver/build/bench_gpu/bench_cuda
SUMMARY="$LOG/summary.txt"
: > "$SUMMARY"

note() { printf '%-10s %-8s %7s  %s\n' "$1" "$2" "$3" "$4" >> "$SUMMARY"; }
# run NAME TIMEOUT CMD...: log to $LOG/NAME.log, record status + seconds
run() {
  name=$1; lim=$2; shift 2
  # STAGE_TIMEOUT (seconds) caps every stage, to fit a device lease
  [ -n "$STAGE_TIMEOUT" ] && [ "$STAGE_TIMEOUT" -lt "$lim" ] && lim=$STAGE_TIMEOUT
  echo "== $name: $*"
  t0=$(date +%s)
  timeout "$lim" "$@" > "$LOG/$name.log" 2>&1
  rc=$?
  dt=$(( $(date +%s) - t0 ))
  tail -n 25 "$LOG/$name.log"
  case $rc in
    0) st=ok ;; 77) st=skip ;; 124) st=TIMEOUT ;; *) st="FAIL($rc)" ;;
  esac

  RUN_ST=$st
  RUN_DT=${dt}s
}

echo "== environment" | tee "$LOG/env.log"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -n 3
  nvcc --version 2>&1 | tail -n 2
  echo "compute-sanitizer: ${SAN:-missing}"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
  echo "cores: $JOBS"
} | tee -a "$LOG/env.log"

# OpenBLAS + LAPACKE available for the CPU side of the parity test?
HAVE_BLAS=no
printf '#include <cblas.h>\n#include <lapacke.h>\nint main(void){double a=4;int r=LAPACKE_dpotrf(LAPACK_COL_MAJOR,(char)85,1,&a,1);return r+(int)cblas_ddot(1,&a,1,&a,1)-4;}\n' > "$LOG/blas_probe.c"
if gcc -o "$LOG/blas_probe" "$LOG/blas_probe.c" -llapacke -lopenblas -lm > "$LOG/blas_probe.log" 2>&1; then
  HAVE_BLAS=yes
else
  echo "note: OpenBLAS/LAPACKE development files missing (apt-get install libopenblas-dev liblapacke-dev); parity stages will be skipped"
fi

for stage in $STAGES; do
  case $stage in
    build)
      run config 120 sh -c "ASKOTCH_CUDA_ARCHS='$CUDA_ARCHS' CUDA_HOME='$CUDA_HOME' ASKOTCH_CUDA=yes; export ASKOTCH_CUDA_ARCHS CUDA_HOME ASKOTCH_CUDA; . tools/config_cuda.sh; echo CUDA_BUILT=\$CUDA_BUILT CUDA_OBJS=\$CUDA_OBJS"
      note config "$RUN_ST" "$RUN_DT" "$(grep 'askotch: CUDA' "$LOG/config.log" | head -n 1)"
      run build_objs 600 make -f driver/Makefile.cuda -j"$JOBS" CUDA_HOME="$CUDA_HOME" CUDA_ARCHS="$CUDA_ARCHS" objs
      note build_objs "$RUN_ST" "$RUN_DT" "src/cuda/*.cu (sm_$CUDA_ARCHS)"
      if [ "$HAVE_BLAS" = yes ]; then
        run build_parity 600 make -f driver/Makefile.cuda -j"$JOBS" CUDA_HOME="$CUDA_HOME" CUDA_ARCHS="$CUDA_ARCHS"
        note build_par "$RUN_ST" "$RUN_DT" "$PARITY"
      else
        note build_par skip - "no OpenBLAS/LAPACKE dev files"
      fi
      run build_bench 600 make -C inst/bench/gpu -j"$JOBS" CUDA_HOME="$CUDA_HOME" CUDA_ARCHS="$CUDA_ARCHS"
      note build_bench "$RUN_ST" "$RUN_DT" "$BENCH"
      ;;
    parity)
      if [ -x "$PARITY" ]; then
        run parity 600 "$PARITY"
        note parity "$RUN_ST" "$RUN_DT" "$(grep -E '^[0-9]+ passed' "$LOG/parity.log" | tail -n 1)"
        grep '^FAIL' "$LOG/parity.log" | head -n 40
        # again with every L2 kernel product on the GEMM route
        run parity_gemm 600 env ASKOTCH_CUDA_GEMM_MIN_P=1 "$PARITY"
        note parity_gemm "$RUN_ST" "$RUN_DT" "$(grep -E '^[0-9]+ passed' "$LOG/parity_gemm.log" | tail -n 1)"
        grep '^FAIL' "$LOG/parity_gemm.log" | head -n 40
      else
        note parity skip - "test_parity not built"
      fi
      ;;
    solvers)
      # every solver on the GPU vs the CPU backend vs the exact solution
      if make -s -C driver B=build/cudadrv CUDA=1 CUDA_HOME="$CUDA_HOME" all >"$LOG/solvers-build.log" 2>&1; then
        run solvers 900 driver/build/cudadrv/askotch_driver parity --backend cuda ${PARITY_SET:+--opts $PARITY_SET}
        note solvers "$RUN_ST" "$RUN_DT" "$(grep -E '^[0-9]+ passed' "$LOG/solvers.log" | tail -n 1)"
        grep '^FAIL' "$LOG/solvers.log" | head -n 40
      else
        note solvers skip - "askotch_driver (CUDA=1) did not build: see solvers-build.log"
      fi
      ;;
    progs)
      # the test programs of the CPU suite, each on the CUDA backend
      if make -s -C driver B=build/cudadrv CUDA=1 CUDA_HOME="$CUDA_HOME" -j"$JOBS" progs >"$LOG/progs-build.log" 2>&1; then
        for t in test_seams test_bcd test_features test_joker test_restart test_solvers test_solvers2 test_svrg; do
          run "$t" 300 driver/build/cudadrv/$t --backend cuda
          note "$t" "$RUN_ST" "$RUN_DT" "$(grep -E '^[0-9]+ passed' "$LOG/$t.log" | tail -n 1)"
          grep -E '^FAIL' "$LOG/$t.log" | head -n 20
        done
      else
        note progs skip - "test programs (CUDA=1) did not build: see progs-build.log"
      fi
      ;;
    mpi)
      # MPI with the CUDA backend (issue 14): the sharded operator's ranks on the GPU
      if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
        note mpi skip - "no mpicc / mpirun on this machine"
      elif make -s -C driver B=build/cudampi CUDA=1 CUDA_HOME="$CUDA_HOME" mpi >"$LOG/mpi-build.log" 2>&1; then
        [ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        run mpi 300 mpirun --oversubscribe -np 2 driver/build/cudampi/mpi/test_dist --backend cuda
        note mpi "$RUN_ST" "$RUN_DT" "$(grep -E '^[0-9]+ passed' "$LOG/mpi.log" | tail -n 1)"
        grep -E '^FAIL' "$LOG/mpi.log" | head -n 20
      else
        note mpi skip - "the MPI build with CUDA failed: see mpi-build.log"
      fi
      ;;
    memcheck|racecheck)
      if [ -z "$SAN" ]; then note "$stage" skip - "compute-sanitizer missing"; continue; fi
      if [ ! -x "$PARITY" ]; then note "$stage" skip - "test_parity not built"; continue; fi
      if [ "$stage" = memcheck ]; then
        # the parity test asks for more memory than the card has on purpose (the
        # failure path): API errors are checked by the code, not reported here
        run memcheck 600 "$SAN" --tool memcheck --leak-check full --report-api-errors no --error-exitcode 3 "$PARITY" --small
      else
        run racecheck 600 "$SAN" --tool racecheck --racecheck-report all --error-exitcode 3 "$PARITY" --small
      fi
      errs=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOG/$stage.log" | tail -n 1)
      note "$stage" "$RUN_ST" "$RUN_DT" "$errs; $(grep -E '^[0-9]+ passed' "$LOG/$stage.log" | tail -n 1)"
      ;;
    bench)
      if [ -x "$BENCH" ]; then
        run bench 600 "$BENCH" $QUICK
        note bench "$RUN_ST" "$RUN_DT" "table in $LOG/bench.log"
        cat "$LOG/bench.log"
      else
        note bench skip - "bench_cuda not built"
      fi
      ;;
    torch)
      run torch 600 python3 inst/bench/gpu/bench_torch.py $QUICK
      note torch "$RUN_ST" "$RUN_DT" "table in $LOG/torch.log"
      cat "$LOG/torch.log"
      ;;
  esac
done

echo
echo "================ gpu_check summary ================"
printf '%-10s %-8s %7s  %s\n' stage status time detail
cat "$SUMMARY"
grep -q -E 'FAIL|TIMEOUT' "$SUMMARY" && exit 1
exit 0
