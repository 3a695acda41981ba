#!/bin/sh
# The main job: install what is missing, install askotch, fit Fashion-MNIST
# (one class against the rest) and print accuracy and time.
set -e
cd "$(dirname "$0")/.."
sh tools/install_deps.sh
R CMD INSTALL --preclean . >/tmp/askotch-install.log 2>&1 || { tail -40 /tmp/askotch-install.log; exit 1; }
grep "askotch:" /tmp/askotch-install.log || true
Rscript inst/scripts/fashion_mnist.R "$@"
