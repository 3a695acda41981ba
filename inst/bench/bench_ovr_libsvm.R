#!/usr/bin/env Rscript
# LIBSVM (e1071::svm) one-vs-rest on the 10-class Fashion-MNIST task of
# bench_losses.R (ASKOTCH_BENCH_TASKS=fashion10): the same 10 000 training
# images (seeded draw), first 2000 test images, RBF kernel with askotch's
# median-heuristic bandwidth, C = 10; ten binary fits, each class against
# the rest, and the class of the largest decision value -- the scheme
# kernel_machine() uses, so that its accuracy can be compared with LIBSVM's
# own one-vs-one result without the difference of schemes.
# Usage (from the package root, askotch and e1071 installed):
#   Rscript inst/bench/bench_ovr_libsvm.R
suppressPackageStartupMessages(library(askotch))
source(system.file("scripts", "read_idx.R", package = "askotch"))
dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
f <- function(x) file.path(dir, x)
xtr <- read_idx(f("train-images-idx3-ubyte.gz"))
ytr <- read_idx(f("train-labels-idx1-ubyte.gz"))
set.seed(2026)
idx <- sort(sample.int(nrow(xtr), 10000))
x <- xtr[idx, ] / 255
y <- ytr[idx]
xt <- read_idx(f("t10k-images-idx3-ubyte.gz"))[1:2000, ] / 255
yt <- read_idx(f("t10k-labels-idx1-ubyte.gz"))[1:2000]
# askotch's median-heuristic bandwidth (seed 1), as bench_losses.R takes it
fit <- kernel_machine(x[1:200, ], rep(c(-1, 1), length.out = 200), loss = loss_hinge(),
                      lambda = 1, standardize = FALSE, max_passes = 1, seed = 1,
                      progress = FALSE)
gamma <- 1 / (2 * fit$kernel$bandwidth^2)
cat("# bench_ovr_libsvm.R ", format(Sys.time(), "%Y-%m-%d %H:%M"), "\n# uptime:",
    trimws(system("uptime", intern = TRUE)), "\n")
t0 <- proc.time()[["elapsed"]]
D <- matrix(0, length(yt), 10)
for (cl in 0:9) {
  yy <- factor(ifelse(y == cl, "pos", "neg"), levels = c("neg", "pos"))
  m <- e1071::svm(x, yy, type = "C-classification", kernel = "radial", gamma = gamma,
                  cost = 10, scale = FALSE)
  dv <- attr(predict(m, xt, decision.values = TRUE), "decision.values")
  D[, cl + 1] <- if (colnames(dv)[1] == "neg/pos") -dv[, 1] else dv[, 1]
}
cat(sprintf("e1071 one-vs-rest: accuracy %.4f, %.1f s (fits and predictions)\n",
            mean(max.col(D) - 1 == yt), proc.time()[["elapsed"]] - t0))
