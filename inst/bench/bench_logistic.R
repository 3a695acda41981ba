#!/usr/bin/env Rscript
# Kernel logistic regression: Joker (kernel_machine(loss = loss_logistic()))
# against the exact solution by Newton's method (RESULTS.md, "Kernel machines").
#
# Task: Fashion-MNIST "Shirt" (class 6) against the rest, a random training
# subset of n images (p = 784, pixels / 255, not standardised; seed 2026, as
# bench_losses.R) and the first 2000 test images; the RBF kernel with
# askotch's median bandwidth; C = 1 / lambda = 10, no intercept.
#
# The oracle: the problem min_F 1/2 F^T K^{-1} F + C sum_i log(1 + e^{-y_i F_i})
# (F = K a on the training points) is the mode of a Gaussian-process
# classifier with prior N(0, K) and a logistic likelihood scaled by C, found
# by Newton's method in the stable form of Rasmussen and Williams (2006),
# Algorithm 3.1 (B = I + W^{1/2} K W^{1/2}, one n x n Cholesky factor per
# step), run until the step changes the objective by less than 1e-12
# relative.  Its test accuracy, test log-loss and decision values are the
# targets; askotch's runs report the solver time at which the validation
# trace first came within 0.001 of the exact accuracy, and the final test
# log-loss and the largest difference of the test decision values from the
# exact ones.
# Above n = 2e4 the n x n kernel matrix (and the factor) of the oracle do not
# fit this machine's memory: it is skipped, and the runs are compared with
# each other (single against double precision).
#   Rscript inst/bench/bench_logistic.R [n] [budget_seconds] [runs] [passes]
#   (1e4, 120, "double,single,rff1e4", no limit): with `passes` every run
#   stops after that many passes (max_passes), so single and double
#   precision are compared at equal work along the same block sequence.
suppressPackageStartupMessages(library(askotch))
source(system.file("scripts", "read_idx.R", package = "askotch"))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 1e4
budget <- if (length(args) >= 2L) as.numeric(args[2L]) else 120
passes <- if (length(args) >= 4L) as.numeric(args[4L]) else 1e6
C <- 10
now <- function() proc.time()[["elapsed"]]
dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
lab <- function(l) factor(ifelse(l == 6L, "shirt", "other"), levels = c("other", "shirt"))
xtr <- read_idx(file.path(dir, "train-images-idx3-ubyte.gz"))
ytr <- read_idx(file.path(dir, "train-labels-idx1-ubyte.gz"))
set.seed(2026)
idx <- sort(sample.int(nrow(xtr), n))
x <- xtr[idx, , drop = FALSE] / 255
y <- lab(ytr[idx])
rm(xtr)
xt <- read_idx(file.path(dir, "t10k-images-idx3-ubyte.gz"))[1:2000, ] / 255
yt <- lab(read_idx(file.path(dir, "t10k-labels-idx1-ubyte.gz"))[1:2000])
ys <- ifelse(y == "shirt", 1, -1)
yts <- ifelse(yt == "shirt", 1, -1)
cpu <- grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)
cat(sprintf("# bench_logistic.R %s\n# %s, %d cores\n# uptime: %s\n# n = %d, C = %g, budget %g s, askotch threads %d\n",
            format(Sys.time(), "%Y-%m-%d %H:%M"), sub(".*: ", "", cpu[1L]), length(cpu),
            trimws(system("uptime", intern = TRUE)), n, C, budget, askotch_threads()))
# the bandwidth: askotch's median heuristic on the first 200 training
# images (as bench_losses.R), given to every method
bw <- suppressWarnings(kernel_machine(
  x[1:200, ], rep(c(-1, 1), 100), loss = loss_hinge(), lambda = 1, standardize = FALSE,
  max_passes = 1, seed = 1, progress = FALSE))$kernel$bandwidth
softplus <- function(t) pmax(t, 0) + log1p(exp(-abs(t)))   # log(1 + e^t), stably
logloss <- function(F) mean(softplus(-yts * F))
acc <- function(F) mean(sign(F) == yts)
kmat <- function(a, b) {
  d2 <- outer(rowSums(a^2), rowSums(b^2), "+") - 2 * tcrossprod(a, b)
  exp(-pmax(d2, 0) / (2 * bw^2))
}

# --- the exact solution: Newton (R & W, Algorithm 3.1) ----------------------
exact <- n <= 2e4
if (exact) {
  t0 <- now()
  K <- kmat(x, x)
  t_k <- now() - t0
  f <- numeric(n)
  obj <- function(a, f) 0.5 * sum(a * f) + C * sum(softplus(-ys * f))
  a <- numeric(n)
  prev <- Inf
  for (it in 1:50) {
    pi1 <- stats::plogis(f)                      # P(y = +1 | f)
    g <- C * ((ys + 1) / 2 - pi1)                # gradient of the scaled log-likelihood
    w <- C * pi1 * (1 - pi1)
    sw <- sqrt(w)
    B <- K * outer(sw, sw)
    diag(B) <- diag(B) + 1
    L <- chol(B)                                 # upper: B = L^T L
    b <- w * f + g
    v <- backsolve(L, backsolve(L, sw * drop(K %*% b), transpose = TRUE))
    a <- b - sw * v
    f <- drop(K %*% a)
    cur <- obj(a, f)
    if (abs(prev - cur) <= 1e-12 * abs(cur)) break
    if (it == 50) stop("Newton's method did not converge in 50 steps")
    prev <- cur
  }
  t_newton <- now() - t0
  Fx <- drop(kmat(xt, x) %*% a)
  cat(sprintf("newton: %d steps, %.1f s (kernel matrix %.1f s), objective %.10g, test accuracy %.4f, log-loss %.5f\n",
              it, t_newton, t_k, cur, acc(Fx), logloss(Fx)))
  rm(K, B, L)
  invisible(gc())
  target <- acc(Fx)
} else {
  cat(sprintf("newton: not run (the n x n kernel matrix alone is %.1f GB)\n", 8 * n^2 / 1e9))
  Fx <- rep(NA_real_, length(yts))
  target <- NA_real_
}

# --- askotch: Joker with the logistic loss -----------------------------------
runs <- list(double = list(), single = list(precision = "single"),
             rff1e4 = list(features = 10000))
if (length(args) >= 3L) runs <- runs[strsplit(args[3L], ",")[[1L]]]
rows <- list()
for (nm in names(runs)) {
  t0 <- now()
  fit <- do.call(kernel_machine, c(list(x, y, loss = loss_logistic(), kernel = "rbf",
                                        bandwidth = bw, lambda = 1 / C, standardize = FALSE,
                                        seed = 1, progress = FALSE, time_limit = budget,
                                        max_passes = passes, validation = list(x = xt, y = yt)),
                                   runs[[nm]]))
  secs <- now() - t0
  F <- predict(fit, xt, type = "decision")
  tr <- fit$trace
  ok <- !is.na(tr$validation) & !is.na(target) & tr$validation >= target - 1e-3
  rows[[nm]] <- data.frame(run = nm, seconds = round(secs, 1), passes = round(fit$passes, 1),
                           reason = fit$reason, gap = signif(fit$gap, 2),
                           accuracy = round(acc(F), 4), logloss = round(logloss(F), 5),
                           max_dF = signif(max(abs(F - Fx)), 2),
                           best_val = max(tr$validation, na.rm = TRUE),
                           t_to_exact = if (any(ok)) round(tr$seconds[which(ok)[1L]], 1) else NA)
  print(rows[[nm]], row.names = FALSE)
  v <- !is.na(tr$validation)
  cat(sprintf("  validation along the fit (passes: accuracy): %s\n",
              paste(sprintf("%.2f: %.4f", tr$passes[v], tr$validation[v]), collapse = ", ")))
}
cat(sprintf("# uptime at the end: %s\n", trimws(system("uptime", intern = TRUE))))
