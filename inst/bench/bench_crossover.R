#!/usr/bin/env Rscript
# Issue 10's open question: above solver = "auto"'s PCG range (n > 2e5,
# option askotch.auto_pcg_max_n) auto runs ASkotch; is PCG with the greedy
# Cholesky preconditioner (its automatic rank now capped by memory) still
# sooner there?  Friedman 1 (p = 10, noise sd 1), n training points (default
# 4e5), 2000 test points: (1) krr() with all defaults but solver =
# pcg("greedy_cholesky") (lambda by maximum likelihood on a subsample),
# validation RMSE once per pass; (2) ASkotch (the default at this n), all
# defaults but the solver (the same lambda and bandwidth), with time_limit =
# 1.5 x (1)'s time.  The
# converged PCG fit is the reference: "to 0.1%" is the first time the test
# RMSE is within 0.1% of its final value.
#   R_LIBS=/tmp/lib Rscript inst/bench/bench_crossover.R [n] [threads] [part] [limit] [ref] [rank]
# part: "both" (default), "pcg", or "askotch" (all defaults but the solver,
# so the same ML lambda and bandwidth, with time_limit = limit seconds and
# the reference test RMSE ref from a "pcg" run).  rank: PCG's rank instead
# of its automatic one (to stand for a machine with less memory; with
# part = "pcg", limit and ref apply to it as to ASkotch).
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 4e5
threads <- if (length(args) >= 2L) as.integer(args[2L]) else 2L
part <- if (length(args) >= 3L) args[3L] else "both"
limit <- if (length(args) >= 4L) as.numeric(args[4L]) else NA
ref <- if (length(args) >= 5L) as.numeric(args[5L]) else NA
rank <- if (length(args) >= 6L) as.numeric(args[6L]) else NULL
friedman <- function(m) {
  x <- matrix(runif(m * 10), m, 10)
  list(x = x, y = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 +
         10 * x[, 4] + 5 * x[, 5] + rnorm(m))
}
set.seed(1)
tr <- friedman(n); te <- friedman(2000)
cat(system("uptime", intern = TRUE), "\n")
el <- function() proc.time()[["elapsed"]]
report <- function(name, f, wall, target = NULL) {
  t <- f$trace
  mu <- predict(f, te$x)
  rmse <- sqrt(mean((mu - te$y)^2))
  hit <- if (is.null(target)) integer(0) else which(t$validation <= 1.001 * target)
  cat(sprintf(paste("%-8s %s: wall %.1f s, %.1f passes, converged %s (%s), relative",
                    "residual %.2e, test RMSE %.5f, to 0.1%% of the reference: %s\n"),
              name, format(f$solver), wall, f$passes, f$converged, f$reason,
              f$resid_exact, rmse,
              if (length(hit)) sprintf("%.1f s", t$seconds[hit[1]]) else "-"))
  v <- t[!is.na(t$validation), intersect(c("seconds", "passes", "validation"), names(t))]
  print(v[unique(round(seq(1, nrow(v), length.out = min(nrow(v), 40)))), ], row.names = FALSE)
  rmse
}
if (part %in% c("both", "pcg")) {
  t0 <- el()
  fp <- suppressWarnings(krr(tr$x, tr$y, seed = 1, solver = pcg("greedy_cholesky", rank = rank),
                             threads = threads, time_limit = if (is.na(limit)) Inf else limit,
                             validation = list(x = te$x, y = te$y)))
  wp <- el() - t0
  cat(sprintf("lambda %.6g (ML on a subsample), bandwidth %.6g\n", fp$lambda,
              fp$kernel$bandwidth))
  if (is.na(ref)) ref <- report("pcg", fp, wp)
  report("pcg", fp, wp, ref)
  if (is.na(limit)) limit <- 1.5 * max(fp$trace$seconds)
}
if (part %in% c("both", "askotch")) {
  t0 <- el()
  fa <- suppressWarnings(krr(tr$x, tr$y, seed = 1, solver = askotch(), threads = threads,
                             time_limit = limit, max_passes = 1000,
                             validation = list(x = te$x, y = te$y)))
  wa <- el() - t0
  cat(sprintf("lambda %.6g (ML on a subsample), bandwidth %.6g\n", fa$lambda,
              fa$kernel$bandwidth))
  report("askotch", fa, wa, if (is.na(ref)) NULL else ref)
}
cat(system("uptime", intern = TRUE), "\n")
