#!/usr/bin/env Rscript
# The defaults study: which solver should solver = "auto" be above the exact
# range?  For each task (data, n, lambda, kernel, precision) the exact
# solution (Cholesky) gives the reference test RMSE; then each candidate
# solves the same system (same lambda and bandwidth) with the automatic
# tolerance and a time limit, recording
#   * the time to a test RMSE within 0.1% of the exact one (from the trace's
#     validation column, recorded at most once per pass),
#   * the time to the end (converged by the automatic tolerance, or stopped),
#   * the passes, and the relative difference of the predictions from the
#     exact ones (max over the test points, in units of sd(y)).
# Candidates: askotch() (the default above n = 5000 until 2026-11),
# pcg("greedy_cholesky") with its automatic rank (the new default),
# pcg() (Nystrom, rank 100) and falkon() (its default centres: a different,
# approximate model, shown for time only).
#
#   Rscript inst/bench/bench_auto_solver.R [tasks] [time_limit] [out.rds] [candidates]
#
# tasks: comma-separated names from the table below (default: all);
# time_limit: seconds per iterative fit (default 90); candidates:
# comma-separated names from the list below (default: the first four).
# "auto" is krr()'s default solver choice (time_limit = Inf with max_passes
# 1000 then shows whether the defaults' fit ends converged).
# askotch_b256 is askotch() with the block and rank that were its defaults
# until 2026-11-28 (max(256, n / 100) and 100: 256 at these n); askotch()
# itself now takes the block by cost and the rank by the spectrum.
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
pick <- if (length(args) >= 1L && nzchar(args[1L])) strsplit(args[1L], ",")[[1L]] else NULL
tlim <- if (length(args) >= 2L) as.numeric(args[2L]) else 90
out <- if (length(args) >= 3L) args[3L] else "inst/bench/auto_solver_results.rds"
threads <- 2L

# the grid: gen(), tasks, save_results()
source(system.file("bench", "grid_tasks.R", package = "askotch"))
if (!is.null(pick)) tasks <- tasks[pick]

candidates <- list(
  askotch = askotch(),
  pcg_greedy_auto = pcg("greedy_cholesky"),
  pcg_nystrom_100 = pcg(),
  falkon = falkon(),
  askotch_b256 = askotch(block_size = 256, rank = 100),
  askotch_paper = askotch(block_size = "paper"),
  auto = "auto")
cand <- if (length(args) >= 4L) strsplit(args[4L], ",")[[1L]] else names(candidates)[1:4]
candidates <- candidates[cand]

el <- function() proc.time()[["elapsed"]]
rows <- list()
for (tn in names(tasks)) {
  tk <- tasks[[tn]]
  d <- gen(tk[[1]], tk[[2]])
  lam <- if (identical(tk[[3]], "ml")) NULL else tk[[3]] * tk[[2]]
  # the exact solution: lambda (by ML when asked) and bandwidth for all
  t0 <- el()
  ex <- krr(d$x, d$y, lambda = lam, kernel = tk[[4]], solver = cholesky(),
            precision = "double", seed = 1, threads = threads)
  t_ex <- el() - t0
  mu_ex <- predict(ex, d$xt)
  rmse_ex <- sqrt(mean((mu_ex - d$yt)^2))
  # (and its input scaling: with a given bandwidth "auto" scales by column)
  lam <- ex$lambda; bw <- ex$kernel$bandwidth
  cat(sprintf("\n[%s] n = %d, p = %d, lambda = %.4g (%s), bandwidth %.4g, %s, %s; exact: %.1f s (incl. lambda), test RMSE %.5g\n",
              tn, nrow(d$x), ncol(d$x), lam, tk[[3]], bw, tk[[4]], tk[[5]], t_ex, rmse_ex))
  for (cn in names(candidates)) {
    t0 <- el()
    f <- tryCatch(suppressWarnings(krr(d$x, d$y, lambda = lam, bandwidth = bw,
                                       standardize = ex$standardize,
                                       kernel = tk[[4]], solver = candidates[[cn]],
                                       precision = tk[[5]], seed = 2, threads = threads,
                                       time_limit = tlim, max_passes = 1000,
                                       validation = list(x = d$xt, y = d$yt))),
                  error = function(e) e)
    wall <- el() - t0
    if (inherits(f, "error")) {
      cat(sprintf("  %-16s error: %s\n", cn, conditionMessage(f)))
      next
    }
    mu <- predict(f, d$xt)
    tr <- f$trace
    hit <- which(tr$validation <= 1.001 * rmse_ex)
    t_hit <- if (length(hit)) tr$seconds[hit[1]] else NA
    row <- data.frame(task = tn, n = nrow(d$x), p = ncol(d$x), lambda = lam,
                      kernel = tk[[4]], precision = tk[[5]], solver = cn,
                      spec = format(f$solver), t_exact = t_ex, rmse_exact = rmse_ex,
                      t_target = t_hit, t_total = wall, passes = f$passes,
                      converged = f$converged, resid = f$resid_exact,
                      rmse = sqrt(mean((mu - d$yt)^2)),
                      maxdiff_sd = max(abs(mu - mu_ex)) / sd(d$y))
    rows[[length(rows) + 1L]] <- row
    cat(sprintf("  %-16s %-46s to 0.1%%: %6s s  end %6.1f s  passes %6.1f  conv %-5s  res %.1e  rmse %.5g  maxdiff/sd %.1e\n",
                cn, row$spec, if (is.na(t_hit)) "-" else sprintf("%.1f", t_hit), wall,
                f$passes, f$converged, f$resid_exact, row$rmse, row$maxdiff_sd))
  }
}
save_results(do.call(rbind, rows), out)
