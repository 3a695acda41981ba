#!/usr/bin/env Rscript
# setTimeLimit latency through the setup of the solvers whose setup holds a
# large dense factorisation (RESULTS.md, "Interrupts"): the fit is stopped by
# setTimeLimit(elapsed = L) for each L of a grid spanning its setup (0.25 s
# apart, after one whole fit to find its length) or for the limits given,
# and the seconds from L until R has control back are printed (the largest
# of them is the longest stretch without a poll that the limits found).
#   Rscript inst/bench/bench_latency.R [threads] [set] [limits]
# limits: comma-separated seconds, e.g. 1,3,6 (then no whole fit first).
# set "eigen" (default), n = 8000, p = 5:
#  - pcg(rank = 3000): the Nystrom sketch's 3000 x 3000 eigensystem (all pairs);
#  - eigenpro(version = 2) with a flat subsample spectrum (bandwidth 0.25 on
#    standardised p = 5 data: K(X_S, X_S) near the identity): the subspace
#    iteration gives up and the 4000 x 4000 top eigensystem follows.
# set "rank5000": pcg(rank = 5000), double (the 5000 x 5000 eigensystem and
#   a sketch rank above n / 2).
# set "large": the largest settings at n = 8000: pcg at ranks 7500 (single)
#   and 8000 (double), falkon(centers = 6000), the greedy Cholesky factor at
#   rank 4000, eigenpro(version = 3).
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
threads <- as.integer(args[1L])
if (is.na(threads)) threads <- 2L
set <- if (length(args) >= 2L) args[2L] else "eigen"
given <- if (length(args) >= 3L) as.numeric(strsplit(args[3L], ",", fixed = TRUE)[[1L]])
set.seed(1)
n <- 8000
x <- matrix(rnorm(n * 5), n)
y <- sin(x[, 1]) + 0.1 * rnorm(n)
case <- function(solver, bandwidth = "median", precision = "double")
  list(solver = solver, bandwidth = bandwidth, precision = precision)
cases <- switch(set,
  eigen = list(pcg_rank3000 = case(pcg(rank = 3000)),
               eigenpro2_flat = case(eigenpro(version = 2), bandwidth = 0.25)),
  rank5000 = list(pcg_rank5000 = case(pcg(rank = 5000))),
  large = list(pcg_rank7500_single = case(pcg(rank = 7500), precision = "single"),
               pcg_rank8000_double = case(pcg(rank = 8000)),
               falkon_6000 = case(falkon(centers = 6000)),
               greedy_4000 = case(pcg("greedy_cholesky", rank = 4000)),
               eigenpro3 = case(eigenpro(version = 3))),
  stop("set must be \"eigen\", \"rank5000\" or \"large\"", call. = FALSE))
cat("uptime:", system("uptime", intern = TRUE), "\n")
cat(sprintf("threads = %d, askotch %s, set %s\n", threads, packageVersion("askotch"), set))
lat_of <- function(cs, L) {
  t0 <- proc.time()[["elapsed"]]
  res <- tryCatch({
    setTimeLimit(elapsed = L, transient = TRUE)
    krr(x, y, solver = cs$solver, lambda = 1e-3, bandwidth = cs$bandwidth, tol = 0,
        max_passes = 1, time_limit = 600, threads = threads, seed = 1,
        precision = cs$precision)
    "done"
  }, error = function(e) if (grepl("time limit", conditionMessage(e))) "stopped" else
    conditionMessage(e), finally = setTimeLimit())
  list(res = res, s = proc.time()[["elapsed"]] - t0)
}
for (nm in names(cases)) {
  cs <- cases[[nm]]
  grid <- given
  if (is.null(grid)) {
    full <- lat_of(cs, Inf)
    cat(sprintf("%s: whole fit (setup + 1 pass) %.2f s (%s)\n", nm, full$s, full$res))
    grid <- seq(0.25, full$s, by = 0.25)
  }
  lat <- vapply(grid, function(L) {
    r <- lat_of(cs, L)
    if (r$res == "stopped") r$s - L else NA_real_
  }, 0)
  cat(sprintf("%s: limits %.2f..%.2f s: latency median %.2f, max %.2f s (at L = %.2f); %d of %d stopped\n",
              nm, min(grid), max(grid), median(lat, na.rm = TRUE), max(lat, na.rm = TRUE),
              grid[which.max(lat)], sum(!is.na(lat)), length(grid)))
}
