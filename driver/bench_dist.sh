#!/bin/sh
# Scaling of the MPI-sharded ASkotch (and PCG) on this machine (driver/bench_dist.c):
# strong scaling (n fixed), weak scaling (n per rank fixed) at np = 1..4, and
# np = 2 x 1 thread vs np = 1 x 2 threads at n = 2e5 (ASkotch) and 4e4
# (PCG, Nystrom rank 100); each setting REPS
# times.  Output: one line per run (see bench_dist.c), to stdout.
#   sh driver/bench_dist.sh [REPS]      (from the repository root, after make -C driver mpi)
REPS=${1:-3}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --bind-to none: Open MPI binds each rank to one core by default (np <= 2),
# which leaves a one-rank, two-thread run one core
run() { np=$1; shift; timeout 300 mpirun --oversubscribe --bind-to none --mca btl self,vader -np "$np" driver/build/mpi/bench_dist "$@" | grep "^np"; }
for rep in $(seq "$REPS"); do
  for np in 1 2 3 4; do echo "strong $(run $np --n 100000 --iters 5)"; done
  for np in 1 2 3 4; do echo "weak $(run $np --n $((25000 * np)) --b 1000 --iters 5)"; done
  echo "target1x2 $(run 1 --n 200000 --iters 3 --threads 2)"
  echo "target2x1 $(run 2 --n 200000 --iters 3 --threads 1)"
  echo "pcg1x2 $(run 1 --solver pcg --n 40000 --iters 5 --threads 2)"
  echo "pcg2x1 $(run 2 --solver pcg --n 40000 --iters 5 --threads 1)"
done
