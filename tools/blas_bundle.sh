#!/bin/sh
# Copy this (Debian, x86-64) machine's OpenBLAS + LAPACKE headers and shared
# libraries into .blas/ (include/, lib/), for a GPU machine that has neither
# (driver/gpu_session.sh puts .blas/ on the compiler's and loader's paths).
# The folder is not tracked: add `/.blas/` to .git/info/exclude and name
# `.blas` in the device call's carry list.  About 45 MB.
#
#   sh tools/blas_bundle.sh            (from the repository root)
set -e
A=/usr/lib/x86_64-linux-gnu
I=/usr/include
[ -f "$A/liblapacke.so.3" ] && [ -f "$A/openblas-pthread/cblas.h" -o -f "$I/x86_64-linux-gnu/openblas-pthread/cblas.h" ] ||
  { echo "needs libopenblas-dev and liblapacke-dev (apt-get install libopenblas-dev liblapacke-dev)"; exit 1; }
rm -rf .blas
mkdir -p .blas/include .blas/lib
cp "$I"/x86_64-linux-gnu/openblas-pthread/cblas.h "$I"/x86_64-linux-gnu/openblas-pthread/f77blas.h \
   "$I"/x86_64-linux-gnu/openblas-pthread/openblas_config.h "$I"/lapack.h "$I"/lapacke*.h .blas/include/
# OpenBLAS holds BLAS and LAPACK: libblas.so.3 and liblapack.so.3 (needed by
# liblapacke) are links to it
cp -L "$(readlink -f "$A"/libopenblas.so.0)" .blas/lib/libopenblas.so.0
cp -L "$A"/liblapacke.so.3 "$A"/libtmglib.so.3 "$A"/libgfortran.so.5 "$A"/libquadmath.so.0 .blas/lib/
cd .blas/lib
ln -s libopenblas.so.0 libopenblas.so
ln -s libopenblas.so.0 libblas.so.3
ln -s libopenblas.so.0 liblapack.so.3
ln -s liblapacke.so.3 liblapacke.so
cd ../..
grep -qx '/.blas/' .git/info/exclude 2>/dev/null || echo /.blas/ >> .git/info/exclude
du -sh .blas
