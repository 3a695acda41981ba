#!/usr/bin/env Rscript
# The pathwise Monte Carlo standard errors against the exact ones.
# Friedman 1 (p = 10, noise sd 1), n training points (default 2e4), the
# default fit (lambda by maximum likelihood), 200 test points: the exact
# variance (Cholesky of the n x n matrix) against predict(method =
# "pathwise") with 25 and 100 draws, plain (option askotch.gp_cv_rank = 0)
# and with the Nystrom control variate of rank 1000 and 2000, two seeds
# each: relative errors of the variance and of the standard error, their
# bias, the z-scores against the estimates' own Monte Carlo standard errors,
# and the time (the draws are made afresh for every row).
# Above 2e4 points the exact variance is out of reach: the table then gives
# the estimates' own relative Monte Carlo standard errors (mc_rel, the
# median of var_mc_se / variance) only.  The environment variables
# ASKOTCH_BENCH_RANKS, ASKOTCH_BENCH_DRAWS and ASKOTCH_BENCH_SEEDS (comma
# separated numbers) narrow the grid.
#   R_LIBS=/tmp/lib Rscript inst/bench/bench_gp_se_pathwise.R [n]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 2e4
nt <- 200
friedman <- function(m) {
  x <- matrix(runif(m * 10), m, 10)
  list(x = x, y = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 +
         10 * x[, 4] + 5 * x[, 5] + rnorm(m))
}
set.seed(1)
tr <- friedman(n); te <- friedman(nt)
cat(system("uptime", intern = TRUE), "\n")
el <- function() proc.time()[["elapsed"]]
t0 <- el(); fit <- krr(tr$x, tr$y, seed = 1); t_fit <- el() - t0
cat(sprintf("n = %d: fit %.1f s, %s, lambda %.4g\n", as.integer(n), t_fit,
            format(fit$solver), fit$lambda))
env_nums <- function(v, default) {
  e <- Sys.getenv(v)
  if (nzchar(e)) as.numeric(strsplit(e, ",")[[1L]]) else default
}
ex <- rep(NA_real_, nt)
if (n <= 2e4) {
  t0 <- el()
  ex <- predict(fit, te$x, se.fit = TRUE, method = "exact")$se.fit
  t_ex <- el() - t0
  cat(sprintf("exact: %.1f s; variance / s^2 median %.3g (range %.3g-%.3g)\n",
              t_ex, median(ex^2) / askotch:::gp_signal_var(fit),
              min(ex^2) / askotch:::gp_signal_var(fit),
              max(ex^2) / askotch:::gp_signal_var(fit)))
}
rows <- list()
grid <- expand.grid(sd = env_nums("ASKOTCH_BENCH_SEEDS", 1:2),
                    S = env_nums("ASKOTCH_BENCH_DRAWS", c(25, 100)),
                    rank = env_nums("ASKOTCH_BENCH_RANKS", c(0, 1000, 2000)))
for (g in seq_len(nrow(grid))) {
  rank <- grid$rank[g]
  S <- grid$S[g]
  sd <- grid$sd[g]
  options(askotch.gp_cv_rank = rank)
  assign("entries", list(), envir = askotch:::gp_store)  # no kept draws
  set.seed(100 * S + sd)
  t0 <- el()
  p <- predict(fit, te$x, se.fit = TRUE, method = "pathwise", draws = S)$se.fit
  tt <- el() - t0
  rv <- p^2 / ex^2 - 1
  rs <- p / ex - 1
  z <- (p^2 - ex^2) / attr(p, "var_mc_se")
  rows[[length(rows) + 1L]] <- data.frame(
    control_rank = rank, draws = S, seed = sd, seconds = round(tt, 1),
    var_bias = round(mean(rv), 3), var_sd = round(sd(rv), 3),
    sqrt_2_over_S = round(sqrt(2 / S), 3),
    se_q05 = round(quantile(rs, 0.05, na.rm = TRUE), 3), se_median = round(median(rs), 3),
    se_q95 = round(quantile(rs, 0.95, na.rm = TRUE), 3), z_sd = round(sd(z), 2),
    z_within_2 = round(mean(abs(z) <= 2), 2),
    mc_rel = round(median(attr(p, "var_mc_se") / p^2), 3), row.names = NULL)
  print(rows[[length(rows)]])
}
tab <- do.call(rbind, rows)
print(tab)
cat(system("uptime", intern = TRUE), "\n")
