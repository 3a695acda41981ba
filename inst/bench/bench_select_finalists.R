#!/usr/bin/env Rscript
# How many screened candidates the default krr(x, y) must estimate again on
# all tuning points to find the kernel and scaling of the largest
# likelihood. Every candidate is estimated on all tuning points
# (options(askotch.select_finalists = 5)), and the run counts, over the
# seeds (each draws its own 500-point screening subsample), how often the
# best of them on all points was not among the top 2, or top 3, of the
# screening, and the log likelihood lost then.
#
# Sets with more than 500 points (fewer are screened on all of them):
# fields' NorthAmericanRainfall (1720), modeldata's concrete (1030) and
# biomass (536), MASS's Boston (506).
#
# Usage: Rscript inst/bench/bench_select_finalists.R [seeds]   (default 10)

suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
seeds <- seq_len(if (length(args)) as.integer(args[1]) else 10L)
e <- new.env()
sets <- list()
utils::data("NorthAmericanRainfall", package = "fields", envir = e)
r <- e$NorthAmericanRainfall
sets$rainfall <- list(x = cbind(lon = r$longitude, lat = r$latitude), y = log10(r$precip))
utils::data("concrete", package = "modeldata", envir = e)
cc <- as.data.frame(e$concrete)
sets$concrete <- list(x = as.matrix(cc[, names(cc) != "compressive_strength"]),
                      y = cc$compressive_strength)
utils::data("biomass", package = "modeldata", envir = e)
bm <- as.data.frame(e$biomass)
sets$biomass <- list(x = as.matrix(bm[, c("carbon", "hydrogen", "oxygen", "nitrogen", "sulfur")]),
                     y = bm$HHV)
utils::data("Boston", package = "MASS", envir = e)
sets$boston <- list(x = as.matrix(e$Boston[, -14]), y = e$Boston$medv)

cat(sprintf("# screening finalists, %s, askotch %s, load %s, seeds %d\n",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"),
            utils::packageVersion("askotch"),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), length(seeds)))
options(askotch.select_finalists = 5L)
for (nm in names(sets)) {
  d <- sets[[nm]]
  lost <- sapply(seeds, function(s) {
    tb <- suppressWarnings(krr(d$x, d$y, progress = FALSE, seed = s))$tuning$models
    best <- max(tb$loglik_all)
    top <- order(-tb$loglik)
    c(top2 = best - max(tb$loglik_all[top[1:2]]), top3 = best - max(tb$loglik_all[top[1:3]]),
      winner = which.max(tb$loglik_all))
  })
  for (k in c("top2", "top3")) {
    miss <- lost[k, ] > 1e-6
    cat(sprintf(paste("%-9s n = %4d: the best on all points outside the screening's %s",
                      "in %d of %d seeds%s\n"), nm, nrow(d$x), k, sum(miss), length(seeds),
                if (any(miss)) sprintf(" (log likelihood lost: %s)",
                                       paste(round(lost[k, miss], 1), collapse = ", ")) else ""))
  }
}
