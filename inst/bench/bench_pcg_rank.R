#!/usr/bin/env Rscript
# The rank of PCG's greedy partial-Cholesky preconditioner against time:
# Friedman 1 (p = 10, noise sd 1), n training and 1e4 test points, the RBF
# kernel at given hyperparameters (by default those the default fit chose at
# n = 1e5: bandwidth 5.30644 with one scale for all columns, lambda
# 0.002478), double precision, 2 threads, the automatic tolerance. For each
# rank: seconds to the end, iterations, and the seconds until the test RMSE
# was within 1e-4 (relative) of the converged one (the validation trace;
# its own evaluations are counted). The automatic rank is
# sqrt(3 n (2p + 44) / 3.4) (src/core/solvers/pcg.c).
#
#   Rscript inst/bench/bench_pcg_rank.R [n] [ranks, comma separated]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 1e5
ranks <- if (length(args) >= 2L) as.integer(strsplit(args[2L], ",")[[1L]]) else
  c(1000L, 1500L, 2000L, 2500L, 4000L)
# friedman_data(): Friedman 1, n training and 1e4 test points (seed 1)
source(system.file("bench", "friedman.R", package = "askotch"))
d <- friedman_data(n)
cat(sprintf("%s; n = %g; load: %s\n", format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), n,
            sub(".*load average: ", "", system("uptime", intern = TRUE))))
cat("| rank | seconds | iterations | seconds to the converged test RMSE (1e-4) |\n")
cat("|---|---|---|---|\n")
for (r in ranks) {
  t0 <- proc.time()[["elapsed"]]
  fit <- krr(d$x, d$y, kernel = "rbf", bandwidth = 5.30644, lambda = 0.002478,
             standardize = "joint", seed = 1, threads = 2L,
             solver = pcg("greedy_cholesky", rank = r), validation = list(x = d$xt, y = d$yt))
  secs <- proc.time()[["elapsed"]] - t0
  v <- fit$trace[!is.na(fit$trace$validation), ]
  final <- sqrt(mean((predict(fit, d$xt) - d$yt)^2))
  k <- which(abs(v$validation / final - 1) <= 1e-4)[1L]
  cat(sprintf("| %d | %.1f | %d | %.1f |\n", r, secs, fit$iterations, v$seconds[k]))
}
