#!/usr/bin/env Rscript
# The two automatic stopping rules side by side on the benchmark grid
# (grid_tasks.R). For each task the exact solution (Cholesky) gives the
# reference predictions and test RMSE; then krr()'s default solver, at the
# same hyperparameters, stops by
#   * the default rule (tol = NULL, "uniform": the fitted function within
#     1e-3 sd of the response of the exact one at every point), and by
#   * tol = "average" (the fitted values at the training points within 1e-3
#     sd in root mean square),
# run in turn (uniform, average, uniform, average, ...; `reps` each).
# Reported per rule: the seconds (median, min and max over the
# repetitions), the passes, whether the fit converged, the test RMSE's
# relative difference from the exact one, and the test predictions'
# largest and root-mean-square difference from the exact ones in sd(y)
# (classification, fashion10_2e4_ml: the error rate, and the decision
# scores' differences in their sd).
#
# The task "friedman_1e5_default" is the whole default call krr(x, y) on
# Friedman 1 at n = 1e5 (hyperparameters by maximum likelihood included;
# no exact solution at this n: the reference is the uniform rule's fit).
#
#   Rscript inst/bench/bench_early_stop.R [tasks] [reps] [out.rds]
#
# tasks: comma-separated names of grid_tasks.R's table or
# friedman_1e5_default (default: the whole table); reps: repetitions of each
# rule (default 2).
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
pick <- if (length(args) >= 1L && nzchar(args[1L])) strsplit(args[1L], ",")[[1L]] else NULL
reps <- if (length(args) >= 2L) as.integer(args[2L]) else 2L
out <- if (length(args) >= 3L) args[3L] else "inst/bench/early_stop_results.rds"
threads <- 2L
tlim <- 300

# the grid: gen(), tasks, save_results()
source(system.file("bench", "grid_tasks.R", package = "askotch"))
source(system.file("bench", "friedman.R", package = "askotch"))
tasks$friedman_1e5_default <- list("friedman", 1e5, "ml", "auto", "double", default = TRUE)
tasks$fashion10_2e4_ml <- list("fashion10", 2e4, "ml", "rbf", "double")
if (!is.null(pick)) tasks <- tasks[pick]
rules <- list(uniform = NULL, average = "average")

el <- function() proc.time()[["elapsed"]]
rows <- list()
for (tn in names(tasks)) {
  tk <- tasks[[tn]]
  whole <- isTRUE(tk$default)
  d <- if (whole) friedman_data(tk[[2]], nt = 2000) else gen(tk[[1]], tk[[2]])
  fit_rule <- function(tol) {
    if (whole) {
      return(krr(d$x, d$y, tol = tol, seed = 2, threads = threads))
    }
    suppressWarnings(krr(d$x, d$y, lambda = ex$lambda, bandwidth = ex$kernel$bandwidth,
                         standardize = ex$standardize, kernel = tk[[4]],
                         precision = tk[[5]], tol = tol, seed = 2, threads = threads,
                         time_limit = tlim, max_passes = 1000))
  }
  ex <- NULL
  if (!whole) {
    lam <- if (identical(tk[[3]], "ml")) NULL else tk[[3]] * tk[[2]]
    ex <- krr(d$x, d$y, lambda = lam, kernel = tk[[4]], solver = cholesky(),
              precision = "double", seed = 1, threads = threads)
  }
  secs <- list(uniform = numeric(0), average = numeric(0))
  fits <- list()
  for (r in seq_len(reps)) for (rn in names(rules)) {
    t0 <- el()
    fits[[rn]] <- fit_rule(rules[[rn]])
    secs[[rn]] <- c(secs[[rn]], el() - t0)
  }
  ref <- if (whole) fits$uniform else ex
  # regression: predictions and RMSE; classification: decision scores and
  # the error rate
  cls <- is.factor(d$y)
  score <- function(f) predict(f, d$xt, type = if (cls) "decision" else "response")
  err <- function(f) {
    if (cls) mean(predict(f, d$xt) != d$yt) else sqrt(mean((predict(f, d$xt) - d$yt)^2))
  }
  mu_ref <- score(ref)
  err_ref <- err(ref)
  sdy <- if (cls) sd(as.vector(mu_ref)) else sd(d$y)
  cat(sprintf(paste("\n[%s] n = %d, p = %d, lambda = %.4g, bandwidth %.4g, %s, %s;",
                    "reference test %s %.6g (%s)\n"),
              tn, nrow(d$x), ncol(d$x), fits$uniform$lambda, fits$uniform$kernel$bandwidth,
              fits$uniform$kernel$name, tk[[5]], if (cls) "error rate" else "RMSE", err_ref,
              if (whole) "the uniform rule's fit" else "exact"))
  for (rn in names(rules)) {
    f <- fits[[rn]]
    mu <- score(f)
    e <- err(f)
    row <- data.frame(task = tn, n = nrow(d$x), p = ncol(d$x), rule = rn,
                      solver = format(f$solver), tol = f$tol,
                      sec_med = median(secs[[rn]]), sec_min = min(secs[[rn]]),
                      sec_max = max(secs[[rn]]), passes = f$passes, converged = f$converged,
                      metric = if (cls) "error rate" else "rmse", err = e,
                      err_rel = e / err_ref - 1,
                      maxdiff_sd = max(abs(mu - mu_ref)) / sdy,
                      rmsdiff_sd = sqrt(mean((mu - mu_ref)^2)) / sdy)
    rows[[length(rows) + 1L]] <- row
    cat(sprintf(paste("  %-8s tol %.2e  %6.1f s [%5.1f, %5.1f]  passes %6.1f  conv %-5s",
                      "%s %.6g (%+.1e)  test diff/sd max %.1e rms %.1e\n"),
                rn, f$tol, row$sec_med, row$sec_min, row$sec_max, f$passes, f$converged,
                row$metric, e, row$err_rel, row$maxdiff_sd, row$rmsdiff_sd))
  }
}
save_results(do.call(rbind, rows), out)
