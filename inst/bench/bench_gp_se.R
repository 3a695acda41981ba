#!/usr/bin/env Rscript
# Time of predict(se.fit = TRUE) (Nystrom bracket) at scale: Friedman 1,
# p = 10, n training points (default 1e5), nt test points (default 1e4),
# lambda = 0.04, a 1-pass fit (the variance does not depend on the weights).
# Prints the factor's time, rank and trace error, then the whole call's time.
#   R_LIBS=/tmp/lib Rscript inst/bench/bench_gp_se.R [n] [nt]
suppressPackageStartupMessages(library(askotch))
a <- commandArgs(TRUE)
n <- if (length(a) >= 1L) as.numeric(a[1L]) else 1e5
nt <- if (length(a) >= 2L) as.numeric(a[2L]) else 1e4
friedman <- function(m) {
  x <- matrix(runif(m * 10), m, 10)
  list(x = x, f = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] + 5 * x[, 5])
}
set.seed(1); tr <- friedman(n); y <- tr$f + rnorm(n); te <- friedman(nt)
fit <- suppressWarnings(krr(tr$x, y, lambda = 0.04, max_passes = 1, seed = 1))
el <- function() proc.time()[["elapsed"]]
t0 <- el(); fac <- askotch:::gp_nystrom_factor(fit); t_fac <- el() - t0
cat(sprintf("factor: %.1f s, rank %d, e %.3g\n", t_fac, fac$rank, fac$e))
t0 <- el(); pr <- predict(fit, te$x, se.fit = TRUE, method = "nystrom"); t_se <- el() - t0
cat(sprintf("predict se.fit %d points: %.1f s (factor included); median se %.4g\n", nt, t_se, median(pr$se.fit)))
cat(system("uptime", intern = TRUE), "\n")
