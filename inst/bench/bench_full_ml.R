#!/usr/bin/env Rscript
# Hyperparameters by maximum likelihood on all points against the
# subsample's: krr(x, y) with every default (above 2000 points the
# likelihood searches run on a 2000-point subsample) and the same with
# options(askotch.ml_method = "stochastic"), which refines the estimates on
# all n points by the stochastic likelihood (krr_gp_slq). Friedman 1 (p = 10,
# noise sd 1), 5000 test points. Prints, per fit: seconds, the chosen kernel,
# bandwidth and lambda, logLik() (above 2000 points the stochastic estimate on
# all points, with its standard error; the same probes for both), and the
# held-out RMSE, mean negative log predictive density and 95% coverage.
# The two fits alternate (A B A B ...) over `reps` repetitions.
#
# Usage: Rscript inst/bench/bench_full_ml.R [n] [reps] (default 5000 1)

suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 5000
reps <- if (length(args) >= 2L) as.integer(args[2L]) else 1L
threads <- 2L

friedman1 <- function(n, seed) {
  set.seed(seed)
  x <- matrix(stats::runif(n * 10), n, 10)
  f <- 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] + 5 * x[, 5]
  list(x = x, y = f + stats::rnorm(n))
}

cat(sprintf("# full-data ML vs subsample, Friedman 1, n = %d, %s, askotch %s, load %s\n",
            n, format(Sys.time()), utils::packageVersion("askotch"),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
tr <- friedman1(n, 1)
te <- friedman1(5000, 99)

one <- function(method) {
  old <- options(askotch.ml_method = method)
  on.exit(options(old))
  t0 <- proc.time()[["elapsed"]]
  f <- suppressWarnings(krr(tr$x, tr$y, threads = threads, seed = 1))
  secs <- proc.time()[["elapsed"]] - t0
  p <- predict(f, te$x, interval = "prediction", level = 0.95)
  sd <- (p[, "upr"] - p[, "lwr"]) / (2 * stats::qnorm(0.975))
  ll <- logLik(f) # above 2000 points: the stochastic estimate, the fit's seed
  data.frame(method = method, seconds = round(secs, 1), kernel = f$kernel$name,
             bandwidth = signif(f$kernel$bandwidth, 4), lambda = signif(f$lambda, 3),
             loglik_all = round(as.numeric(ll), 1), loglik_se = signif(attr(ll, "se"), 2),
             rmse = round(sqrt(mean((p[, "fit"] - te$y)^2)), 4),
             nlpd = round(mean(-stats::dnorm(te$y, p[, "fit"], sd, log = TRUE)), 4),
             coverage = round(mean(te$y >= p[, "lwr"] & te$y <= p[, "upr"]), 3))
}

rows <- list()
for (r in seq_len(reps)) {
  for (m in c("subsample", "stochastic")) {
    rows[[length(rows) + 1L]] <- cbind(rep = r, one(m))
    print(rows[[length(rows)]], row.names = FALSE)
  }
}
cat("\n")
print(do.call(rbind, rows), row.names = FALSE)
