# The cost of a 10-value lambda path solved at once against single fits, by
# problem size (issue target: a path costs at most 2x a single fit).  The
# first n Friedman 1 points (p = 10, RBF, standardised), lambda = 1e-3 n x
# 10^seq(-1, 1); every fit runs tol = 1e-6 or 30 passes, so path and single
# fits do the same 30 passes per lambda unless one converges earlier.  The
# path is timed with a 10-point validation set (the solve alone: without a
# validation set krr() would choose lambda by 5-fold CV) and with 5000
# points (the per-lambda validation trace that picks lambda); the single fits at the
# smallest and the largest lambda (the fits' cost per pass does not depend on
# lambda; "slowest" is the larger of the two).
#
#   Rscript inst/bench/bench_path.R [n ...]        (default: 10000 40000)
#   ASKOTCH_PATH_SPECS=regex picks methods by name (e.g. "NSAP|cached")
suppressMessages(library(askotch))
args <- as.numeric(commandArgs(TRUE))
sizes <- if (length(args)) args else c(1e4, 4e4)
threads <- 2
friedman1 <- function(n, seed) {
  set.seed(seed)
  x <- matrix(runif(n * 10), n, 10)
  y <- 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 + 10 * x[, 4] + 5 * x[, 5] +
    rnorm(n)
  list(x = x, y = y)
}
val <- friedman1(5000, 2)
val10 <- list(x = val$x[1:10, ], y = val$y[1:10])
specs <- list("Nystrom BCD p = 2000, b = 500" = bcd("nystrom", p = 2000, block_size = 500),
              "random features p = 2000, b = 500, cached" =
                bcd("random", p = 2000, block_size = 500, cache = "yes"),
              "random features p = 2000, b = 500, no cache" =
                bcd("random", p = 2000, block_size = 500, cache = "no"),
              "NSAP (full kernel), b = 500" = sap(block_size = 500),
              "NSAP (full kernel), default b = n / 100" = sap())
pick <- Sys.getenv("ASKOTCH_PATH_SPECS")
if (nzchar(pick)) specs <- specs[grepl(pick, names(specs))]
cat("start:", system("uptime", intern = TRUE), "\n")
rows <- list()
for (n in sizes) {
  d <- friedman1(n, 1)
  lams <- 1e-3 * n * 10^seq(-1, 1, length.out = 10)
  timed <- function(lambda, validation = NULL) {
    gc()
    t <- system.time(f <- suppressWarnings(krr(d$x, d$y, lambda = lambda, solver = sp,
      seed = 1, threads = threads, tol = 1e-6, max_passes = 30, validation = validation)))[[3]]
    list(t = t, f = f)
  }
  for (m in names(specs)) {
    sp <- specs[[m]]
    p0 <- timed(lams, validation = val10)
    p1 <- timed(lams, validation = val)
    s_lo <- timed(lams[1])
    s_hi <- timed(lams[10])
    slowest <- max(s_lo$t, s_hi$t)
    rows[[length(rows) + 1L]] <- data.frame(
      n = n, method = m, path_s = p0$t, path_val_s = p1$t, path_passes = p0$f$passes,
      single_lo_s = s_lo$t, single_hi_s = s_hi$t, single_lo_passes = s_lo$f$passes,
      single_hi_passes = s_hi$f$passes, ratio = p0$t / slowest, ratio_val = p1$t / slowest)
    cat(sprintf("n = %6d %-45s path %6.1f s (with validation %6.1f s, %4.1f passes); single: smallest lambda %6.1f s (%4.1f passes), largest %6.1f s (%4.1f passes); path / slowest %.2f (%.2f with validation)\n",
                n, m, p0$t, p1$t, p0$f$passes, s_lo$t, s_lo$f$passes, s_hi$t, s_hi$f$passes,
                p0$t / slowest, p1$t / slowest))
  }
}
tab <- do.call(rbind, rows)
cat("end:", system("uptime", intern = TRUE), "\n")
print(tab, row.names = FALSE, digits = 3)
# next to the logs when run from the repository root (not the package's top level)
log_dir <- file.path("inst", "bench", "log")
out_dir <- if (dir.exists(log_dir)) log_dir else "."
saveRDS(tab, file.path(out_dir, sprintf("path_results_%s.rds", paste(sizes, collapse = "_"))))
