#!/bin/sh
# Installs what askotch needs from Debian when it is missing (run as root or
# with sudo available).  Idempotent: does nothing when everything is there.
set -e
PKGS="r-base-dev r-cran-testthat r-cran-roxygen2 r-cran-cli r-cran-knitr r-cran-rmarkdown
      r-cran-kernlab r-cran-quadprog r-cran-e1071 r-cran-mlbench r-cran-generics r-cran-fields r-cran-caret r-cran-modeldata r-cran-rmpi libopenblas-dev liblapacke-dev pandoc qpdf make
      dataset-fashion-mnist devscripts valgrind libopenmpi-dev openmpi-bin r-cran-lintr clang-format"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "askotch: installing from Debian:$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
