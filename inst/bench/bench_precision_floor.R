#!/usr/bin/env Rscript
# Single precision and its rounding floor: Fashion-MNIST, 10 classes one-vs-rest,
# n = 5000 (the first 5000 of a fixed random subset), lambda = 0.076 (the ML
# choice of the main job), median bandwidth, automatic tol. Each solver is run
# (a) with the defaults (it stops at the tolerance or at the precision floor)
# and (b) with tol = 0 for 100 passes (what a fit did before the floor stop:
# run to max_passes); the residual reached and the test accuracy are compared.
#   Rscript inst/bench/bench_precision_floor.R [reps]
suppressPackageStartupMessages(library(askotch))
source(system.file("scripts", "read_idx.R", package = "askotch"))
dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
reps <- as.integer(commandArgs(TRUE)[1L])
if (is.na(reps)) reps <- 2L
x <- read_idx(file.path(dir, "train-images-idx3-ubyte.gz")) / 255
y <- factor(read_idx(file.path(dir, "train-labels-idx1-ubyte.gz")))
xt <- read_idx(file.path(dir, "t10k-images-idx3-ubyte.gz"))[1:5000, ] / 255
yt <- factor(read_idx(file.path(dir, "t10k-labels-idx1-ubyte.gz"))[1:5000])
set.seed(2026)
idx <- sort(sample.int(nrow(x), 5000))
x <- x[idx, ]
y <- y[idx]
cat("uptime:", system("uptime", intern = TRUE), "\n")
solvers <- list(askotch = askotch(), pcg = pcg())
rows <- list()
for (nm in names(solvers)) {
  for (mode in c("default", "100 passes")) {
    for (r in seq_len(if (mode == "default") reps else 1L)) {
      t <- system.time(fit <- suppressWarnings(krr(
        x, y, lambda = 0.076, precision = "single", solver = solvers[[nm]],
        tol = if (mode == "default") NULL else 0,
        max_passes = 100, seed = 1, threads = 2)))[["elapsed"]]
      acc <- mean(predict(fit, xt) == yt)
      rows[[length(rows) + 1L]] <- data.frame(
        solver = nm, mode = mode, rep = r, reason = fit$reason,
        passes = round(fit$passes, 1), seconds = round(t, 1),
        residual = signif(fit$resid_exact, 3),
        floor = signif(fit$resid_floor, 2), test_acc = round(acc, 4))
      print(rows[[length(rows)]])
    }
  }
}
res <- do.call(rbind, rows)
print(res, row.names = FALSE)
cat("uptime:", system("uptime", intern = TRUE), "\n")
