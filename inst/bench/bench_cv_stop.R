#!/usr/bin/env Rscript
# Benchmark: where kernel_machine(lambda = "cv")'s path may end.  The path
# runs from the most regularised C = 1 / lambda up and ends once each of the
# last two values (option askotch.cv_patience) has a CV error above the least
# so far by more than its standard error.  Each set, split and loss is
# cross-validated with the rule (patience 2) and over the whole path
# (patience Inf), interleaved, both then fitted at their chosen C: seconds,
# values solved, the chosen C and the test accuracy (regression: test RMSE).
#
# Sets (small_sets.R, 80/20 splits): spam, Pima, Sonar, Ionosphere, Vehicle
# (4 classes) and Glass (6 classes) with the hinge and logistic losses,
# Boston with the SVR loss (epsilon 0.1 on standardised medv).
#
# Usage (from the package root, with askotch, kernlab, mlbench and MASS):
#   Rscript inst/bench/bench_cv_stop.R            # 3 splits
#   ASKOTCH_BENCH_REPS=5 Rscript inst/bench/bench_cv_stop.R

suppressPackageStartupMessages(library(askotch))
now <- function() proc.time()[["elapsed"]]
reps <- as.integer(Sys.getenv("ASKOTCH_BENCH_REPS", "3"))
source(system.file("bench", "small_sets.R", package = "askotch"))

quiet <- function(expr) withCallingHandlers(expr, warning = function(w) {
  invokeRestart("muffleWarning")
})

run_cv <- function(d, loss, patience) {
  old <- options(askotch.cv_patience = patience)
  on.exit(options(old))
  y <- d$y
  if (is.numeric(y)) y <- (y - mean(d$y)) / stats::sd(d$y)
  t0 <- now()
  fit <- quiet(kernel_machine(d$x, y, loss = loss, lambda = "cv", standardize = FALSE,
                              threads = 2, progress = FALSE, seed = 1))
  s <- now() - t0
  p <- predict(fit, d$xt)
  score <- if (is.numeric(d$y)) sqrt(mean((p * stats::sd(d$y) + mean(d$y) - d$yt)^2)) else
    mean(p == d$yt)
  list(seconds = s, values = sum(!is.na(fit$tuning$path$cv)), C = 1 / fit$lambda,
       score = score)
}

jobs <- rbind(
  expand.grid(set = c("spam", "pima", "sonar", "ionosphere", "vehicle", "glass"),
              loss = c("hinge", "logistic"), stringsAsFactors = FALSE),
  data.frame(set = "boston", loss = "svr"))
rows <- list()
for (j in seq_len(nrow(jobs))) {
  nm <- jobs$set[j]
  loss <- switch(jobs$loss[j], hinge = loss_hinge(), logistic = loss_logistic(),
                 svr = loss_svr(epsilon = 0.1))
  for (r in seq_len(reps)) {
    d <- sets[[nm]](r)
    pats <- if (r %% 2 == 1) c(2, Inf) else c(Inf, 2)
    res <- lapply(pats, function(p) run_cv(d, loss, p))
    names(res) <- as.character(pats)
    rows[[length(rows) + 1]] <- data.frame(
      set = nm, loss = jobs$loss[j], split = r, n = nrow(d$x),
      s_rule = res[["2"]]$seconds, s_all = res[["Inf"]]$seconds,
      values = res[["2"]]$values, C_rule = res[["2"]]$C, C_all = res[["Inf"]]$C,
      score_rule = res[["2"]]$score, score_all = res[["Inf"]]$score)
  }
}
tab <- do.call(rbind, rows)
cat(sprintf("# %s, %s, load %s, %d splits\n",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), Sys.info()[["nodename"]],
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), reps))
cat("# per split: seconds with the rule / the whole path, values solved of 9,",
    "chosen C, test accuracy (svr: RMSE)\n")
print(transform(tab, s_rule = round(s_rule, 3), s_all = round(s_all, 3),
                C_rule = signif(C_rule, 3), C_all = signif(C_all, 3),
                score_rule = round(score_rule, 4), score_all = round(score_all, 4)),
      row.names = FALSE)
summ <- do.call(rbind, lapply(split(tab, list(tab$set, tab$loss), drop = TRUE), function(t) {
  data.frame(set = t$set[1], loss = t$loss[1], n = t$n[1],
             seconds_rule = round(stats::median(t$s_rule), 3),
             seconds_all = round(stats::median(t$s_all), 3),
             values = paste(t$values, collapse = " "),
             same_C = sprintf("%d/%d", sum(t$C_rule == t$C_all), nrow(t)),
             score_rule = round(mean(t$score_rule), 4),
             score_all = round(mean(t$score_all), 4))
}))
cat("\n# summary: median seconds, values solved per split, splits choosing the same C,",
    "mean test accuracy (svr: RMSE)\n")
print(summ[order(summ$loss, summ$set), ], row.names = FALSE)
