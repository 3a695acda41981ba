#!/bin/sh
# The distributed checks of the C driver: builds driver/build/mpi/test_dist
# with mpicc and runs it under mpirun over shared memory only (btl self,vader)
# for np = 1..4, each bounded by `timeout` (a hang fails, it does not block;
# ASKOTCH_MPI_TIMEOUT seconds, 600 by default: oversubscribed ranks on a busy
# 2-core machine run many times slower than alone).
# Prints each run's "N passed, M failed" line (and FAIL lines); skipped with
# the reason when MPI is missing.  Usage: sh tools/mpi_tests.sh [max_np]
cd "$(dirname "$0")/.."
maxnp=${1:-4}
if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
  echo "MPI tests skipped: mpicc / mpirun not found (apt-get install libopenmpi-dev openmpi-bin)"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
make -s -j"$(nproc 2>/dev/null || echo 2)" -C driver mpi >/tmp/askotch-mpi-build.log 2>&1 || {
  tail -30 /tmp/askotch-mpi-build.log; echo "0 passed, 1 failed"; exit 1; }
status=0
np=1
while [ "$np" -le "$maxnp" ]; do
  out=$(timeout "${ASKOTCH_MPI_TIMEOUT:-600}" mpirun --oversubscribe --mca btl self,vader -np "$np" \
          driver/build/mpi/test_dist 2>&1)
  rc=$?
  echo "$out" | grep -E "^FAIL|^ranks"
  line=$(echo "$out" | grep -E "^[0-9]+ passed, [0-9]+ failed" | tail -1)
  if [ -z "$line" ]; then
    echo "test_dist np $np: no summary (exit $rc$( [ $rc -eq 124 ] && echo ', timed out'))"
    echo "$out" | tail -15
    echo "0 passed, 1 failed"
    status=1
  else
    echo "$line"
    [ $rc -eq 0 ] || status=1
  fi
  np=$((np + 1))
done
exit $status
