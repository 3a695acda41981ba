#!/usr/bin/env Rscript
# setTimeLimit latency through the setup of the solvers whose setup holds a
# large symmetric eigensystem (BENCHMARKS.md (i)): the fit is stopped by
# setTimeLimit(elapsed = L) for each L of a grid spanning its setup, and the
# seconds from L until R has control back are printed (the largest of them
# is the longest stretch without a poll that the grid found).
#   Rscript inst/bench/bench_latency.R [threads]
#  - pcg(rank = 3000), n = 8000: the Nystrom sketch's 3000 x 3000 eigensystem
#    (all pairs);
#  - eigenpro(version = 2) with a flat subsample spectrum (bandwidth 0.25 on
#    standardised p = 5 data: K(X_S, X_S) near the identity), n = 8000: the
#    subspace iteration gives up and the 4000 x 4000 top eigensystem follows.
suppressPackageStartupMessages(library(askotch))
threads <- as.integer(commandArgs(TRUE)[1L])
if (is.na(threads)) threads <- 2L
set.seed(1)
n <- 8000
x <- matrix(rnorm(n * 5), n)
y <- sin(x[, 1]) + 0.1 * rnorm(n)
cases <- list(
  pcg_rank3000 = list(solver = pcg(rank = 3000), bandwidth = "median"),
  eigenpro2_flat = list(solver = eigenpro(version = 2), bandwidth = 0.25)
)
cat("uptime:", system("uptime", intern = TRUE), "\n")
cat(sprintf("threads = %d, askotch %s\n", threads, packageVersion("askotch")))
lat_of <- function(cs, L) {
  t0 <- proc.time()[["elapsed"]]
  res <- tryCatch({
    setTimeLimit(elapsed = L, transient = TRUE)
    krr(x, y, solver = cs$solver, lambda = 1e-3, bandwidth = cs$bandwidth, tol = 0,
        max_passes = 1, time_limit = 600, threads = threads, seed = 1)
    "done"
  }, error = function(e) if (grepl("time limit", conditionMessage(e))) "stopped" else
    conditionMessage(e), finally = setTimeLimit())
  list(res = res, s = proc.time()[["elapsed"]] - t0)
}
for (nm in names(cases)) {
  cs <- cases[[nm]]
  full <- lat_of(cs, Inf)
  cat(sprintf("%s: whole fit (setup + 1 pass) %.2f s (%s)\n", nm, full$s, full$res))
  grid <- seq(0.25, full$s, by = 0.25)
  lat <- vapply(grid, function(L) {
    r <- lat_of(cs, L)
    if (r$res == "stopped") r$s - L else NA_real_
  }, 0)
  cat(sprintf("%s: limits %.2f..%.2f s by 0.25: latency median %.2f, max %.2f s (at L = %.2f); %d of %d stopped\n",
              nm, min(grid), max(grid), median(lat, na.rm = TRUE), max(lat, na.rm = TRUE),
              grid[which.max(lat)], sum(!is.na(lat)), length(grid)))
}
