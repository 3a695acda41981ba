#!/usr/bin/env Rscript
# The maximum-likelihood searches of the default krr(x, y), three ways,
# interleaved in one process, `reps` times in rotating order:
#   "plain, 2"     L-BFGS-B in log bandwidth and log lambda, the screening's
#                  two best candidates estimated on all tuning points (the
#                  former default: options(askotch.ml_whiten = FALSE,
#                  askotch.select_finalists = 2))
#   "whitened, 2"  the search in the whitened variables (R/tune-ml.R,
#                  gp_whitening()), two finalists
#   "whitened, 3"  the default: whitened, three finalists
# Prints per set and way: the seconds of the whole krr() call (median,
# min-max), the likelihood evaluations of the winner's search on all tuning
# points, the chosen kernel and the maximised log likelihood.
#
# Sets: Friedman 1 (p = 10, noise sd 1) at n = 500, 2000, 5000 and
# fields' NorthAmericanRainfall (1720 stations, log10 precipitation ~
# longitude, latitude).
#
# Usage: Rscript inst/bench/bench_ml_search.R [reps]   (default 3)

suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
reps <- if (length(args)) as.integer(args[1]) else 3L
now <- function() proc.time()[["elapsed"]]

friedman1 <- function(n, seed = 1) {
  set.seed(seed)
  x <- matrix(stats::runif(n * 10), n, 10)
  list(x = x, y = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] +
         5 * x[, 5] + stats::rnorm(n))
}
sets <- list(friedman_500 = friedman1(500), friedman_2000 = friedman1(2000),
             friedman_5000 = friedman1(5000))
if (requireNamespace("fields", quietly = TRUE)) {
  e <- new.env()
  utils::data("NorthAmericanRainfall", package = "fields", envir = e)
  r <- e$NorthAmericanRainfall
  sets$rainfall <- list(x = cbind(lon = r$longitude, lat = r$latitude), y = log10(r$precip))
}

cat(sprintf("# ML search, %s, askotch %s, load %s, %d repeats\n",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"),
            utils::packageVersion("askotch"),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), reps))
ways <- c("plain, 2", "whitened, 2", "whitened, 3")
rows <- list()
for (nm in names(sets)) {
  d <- sets[[nm]]
  for (r in seq_len(reps)) {
    for (way in ways[(seq_along(ways) + r - 2) %% length(ways) + 1]) {
      old <- options(askotch.ml_whiten = grepl("whitened", way),
                     askotch.select_finalists = as.integer(sub(".*, ", "", way)))
      t0 <- now()
      fit <- suppressWarnings(krr(d$x, d$y, progress = FALSE, seed = 1))
      secs <- now() - t0
      options(old)
      rows[[length(rows) + 1L]] <- data.frame(
        set = nm, search = way, seconds = secs, evaluations = fit$tuning$optim$evaluations,
        kernel = fit$kernel$name, loglik = as.numeric(logLik(fit)))
    }
  }
}
tab <- do.call(rbind, rows)
summ <- do.call(rbind, lapply(split(tab, list(tab$set, tab$search), drop = TRUE), function(t) {
  data.frame(set = t$set[1], search = t$search[1],
             seconds = sprintf("%.2f (%.2f-%.2f)", stats::median(t$seconds), min(t$seconds),
                               max(t$seconds)),
             evaluations = t$evaluations[1], kernel = t$kernel[1],
             loglik = sprintf("%.4f", t$loglik[1]))
}))
print(summ[order(summ$set, summ$search), ], row.names = FALSE)
