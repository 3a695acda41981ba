#!/usr/bin/env Rscript
# What the default model costs and buys as n grows: krr(x, y) with every
# default (the kernel and the input scaling chosen by likelihood) against
# the former default, bandwidth = "median" (Gaussian kernel, median
# heuristic), on Friedman 1 (p = 10, noise sd 1) at several n. Prints, per
# n and fit: seconds of the whole call and of the solve (fit$seconds; the
# rest is mostly the likelihood searches before it), the chosen kernel and
# scaling, the solver, and the test RMSE on 5000 new points (the noise
# floor is 1).
#
# Usage: Rscript inst/bench/bench_default_cost.R [n ...] (default 500 2000 20000)

suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
ns <- if (length(args)) as.numeric(args) else c(500, 2000, 20000)

friedman1 <- function(n, seed) {
  set.seed(seed)
  x <- matrix(stats::runif(n * 10), n, 10)
  f <- 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] + 5 * x[, 5]
  list(x = x, y = f + stats::rnorm(n))
}

cat(sprintf("# default model cost, %s, askotch %s, load %s\n", format(Sys.time()),
            utils::packageVersion("askotch"),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
te <- friedman1(5000, 99)
rows <- list()
for (n in ns) {
  tr <- friedman1(n, 1)
  for (fit_name in c("default", "median")) {
    extra <- if (fit_name == "median") list(bandwidth = "median") else list()
    t0 <- proc.time()[["elapsed"]]
    fit <- do.call(krr, c(list(tr$x, tr$y, seed = 1, progress = FALSE), extra))
    secs <- proc.time()[["elapsed"]] - t0
    rmse <- sqrt(mean((predict(fit, te$x) - te$y)^2))
    rows[[length(rows) + 1L]] <- data.frame(
      n = n, fit = fit_name, seconds = secs, solve_seconds = fit$seconds,
      kernel = fit$kernel$name, scaling = if (isTRUE(fit$standardize)) "columns" else
        as.character(fit$standardize),
      solver = fit$solver$name, test_rmse = rmse)
    print(rows[[length(rows)]], row.names = FALSE, digits = 4)
  }
}
cat("\n")
print(do.call(rbind, rows), row.names = FALSE, digits = 4)
