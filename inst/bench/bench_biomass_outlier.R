#!/usr/bin/env Rscript
# Where the default model loses to the former default on modeldata's biomass
# (bench_defaults_study.R's splits: 80/20, set.seed(1), (2), (3)): the
# held-out errors of krr(x, y) with every default and of the former default
# (Gaussian kernel, median-heuristic bandwidth), with and without the one
# response that is far from its neighbours in composition (97.2% carbon,
# HHV 17.8, where the five nearest samples by composition have HHV 31-34).
# Prints, per split and fit: whether the test set holds that sample, the
# test RMSE, the RMSE without it, and the median absolute error.
#
# Usage: Rscript inst/bench/bench_biomass_outlier.R

suppressPackageStartupMessages(library(askotch))
e <- new.env()
utils::data("biomass", package = "modeldata", envir = e)
bm <- as.data.frame(e$biomass)
x <- as.matrix(bm[, c("carbon", "hydrogen", "oxygen", "nitrogen", "sulfur")])
y <- bm$HHV
odd <- which.max(x[, "carbon"])
d <- sqrt(colSums((t(x) - x[odd, ])^2))
near <- order(d)[2:6]
cat(sprintf("the sample: row %d, %s, HHV %.3f\n", odd,
            paste(colnames(x), x[odd, ], sep = " ", collapse = ", "), y[odd]))
cat("its five nearest samples by composition:\n")
print(cbind(x[near, ], HHV = y[near], distance = round(d[near], 1)))
fits <- list(default = list(), median = list(kernel = "rbf", bandwidth = "median"))
res <- NULL
for (s in 1:3) {
  set.seed(s)
  te <- sample.int(nrow(x), round(0.2 * nrow(x)))
  for (nm in names(fits)) {
    f <- do.call(krr, c(list(x[-te, ], y[-te], threads = 1L, progress = FALSE), fits[[nm]]))
    er <- predict(f, x[te, ]) - y[te]
    keep <- te != odd
    res <- rbind(res, data.frame(split = s, fit = nm, holds_it = !all(keep),
                                 rmse = sqrt(mean(er^2)), rmse_without = sqrt(mean(er[keep]^2)),
                                 median_abs = stats::median(abs(er))))
  }
}
print(res, digits = 4)
cat("\n# means over the three splits\n")
print(stats::aggregate(cbind(rmse, rmse_without, median_abs) ~ fit, res, mean), digits = 4)
