#!/usr/bin/env Rscript
# Benchmark: the Nystrom-bracketed predictive variance of predict.krr()
# (method = "nystrom": greedy pivoted Cholesky K_hat = L L^T <= K, trace
# error e = tr(K - K_hat) >= ||K - K_hat||_2, the variance between the
# Woodbury values for K_hat + lambda I and K_hat + (lambda + e) I) at
# n = 2e4 against the exact variance computed once here by a base-R Cholesky
# of K + lambda I (K from the package's tested kernel matrix), and the time
# of both.
#
# Data: x uniform on [-1, 1]^3, y = sin(2 x1) + x2^2 - 0.5 x3 + N(0, 0.1^2)
# (the tests' make_regression), 200 new points uniform on [-1.6, 1.6]^3, RBF
# kernel with the median-heuristic bandwidth, lambda in {1e-6 n, 1}.
# Checks: lower <= exact <= upper at every point (up to 1e-9 relative;
# max_violation is the largest relative distance of the exact value outside
# the bracket, 0 when it holds: both sides round at about
# eps * cond(K + lambda I)); reported: the rank, e, the
# largest relative width (upper - lower) / exact and the largest relative
# error of the midpoint, and the seconds (3 repeats of the Nystrom method).
#
# Usage: Rscript inst/bench/bench_gp_variance.R [n] [lib]
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 2e4
if (length(args) >= 2L) .libPaths(c(args[2L], .libPaths()))
suppressMessages(library(askotch))
set.seed(1)
p <- 3
x <- matrix(stats::runif(n * p, -1, 1), n, p)
y <- sin(2 * x[, 1]) + x[, 2]^2 - 0.5 * x[, p] + stats::rnorm(n, sd = 0.1)
xnew <- matrix(stats::runif(200 * p, -1.6, 1.6), 200, p)
kmat <- getFromNamespace("ffi_kernel_matrix", "askotch")
rows <- list()
for (lam in c(1e-6 * n, 1)) {
  fit <- krr(x, y, lambda = lam, solver = pcg(rank = 500), tol = 1e-10,
             seed = 1, threads = 2)
  xs <- fit$x
  xn <- scale(xnew, fit$center, fit$scale)
  bw <- fit$kernel$bandwidth
  # exact oracle: base-R Cholesky
  t0 <- proc.time()[["elapsed"]]
  K <- .Call(kmat, xs, xs, 0L, bw, 1L, 2L)
  c0 <- sum(K) + n * lam
  diag(K) <- diag(K) + lam
  R <- chol(K)
  rm(K); invisible(gc())
  ks <- .Call(kmat, xs, xn, 0L, bw, 1L, 2L)
  Z <- backsolve(R, ks, transpose = TRUE)
  u <- backsolve(R, backsolve(R, rep(1, n), transpose = TRUE))
  yc <- y - mean(y)
  s2 <- sum(yc * backsolve(R, backsolve(R, yc, transpose = TRUE))) / n
  b <- (1 - drop(crossprod(u, ks))) / n
  exact <- s2 * (1 - colSums(Z^2) + b^2 * c0)
  t_exact <- proc.time()[["elapsed"]] - t0
  rm(R, Z); invisible(gc())
  times <- numeric(3)
  for (i in 1:3) {
    t0 <- proc.time()[["elapsed"]]
    se <- predict(fit, xnew, se.fit = TRUE, method = "nystrom")$se.fit
    times[i] <- proc.time()[["elapsed"]] - t0
  }
  rng <- attr(se, "var_range")
  # the package's s^2 comes from the PCG weights; compare on its scale
  s2_fit <- sum(yc * fit$weights[, 1]) / n
  ex <- exact / s2 * s2_fit
  rows[[length(rows) + 1L]] <- data.frame(
    n = n, lambda = lam, rank = attr(se, "rank"),
    trace_error = attr(se, "trace_error"),
    bracket_holds = all(rng[, "lower"] <= ex * (1 + 1e-9) &
                          rng[, "upper"] >= ex * (1 - 1e-9)),
    max_violation = max(pmax(rng[, "lower"] - ex, ex - rng[, "upper"], 0) / ex),
    max_rel_width = max((rng[, "upper"] - rng[, "lower"]) / ex),
    max_rel_err_mid = max(abs(se^2 / ex - 1)),
    s2_rel_diff = abs(s2_fit / s2 - 1),
    sec_exact = t_exact, sec_nystrom_min = min(times),
    sec_nystrom_max = max(times))
  print(rows[[length(rows)]])
}
print(do.call(rbind, rows))
