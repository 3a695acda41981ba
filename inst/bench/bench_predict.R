# Benchmark (g): predict() against the rate of the same kernel product in the
# C benchmark of table (a) (inst/bench/bench_kernel_mv.c, q = 1).
#   Fits (RBF, package defaults otherwise; one pass at most, so the weights are
#   whatever one pass gives: only the cost of the product is measured) on
#   n_train = 2e4 points, then predict() on n_new = 1e4 new points:
#     - Fashion-MNIST (p = 784; Debian package dataset-fashion-mnist): the first
#       2e4 training images, the first 1e4 test images; binary task (T-shirt/top
#       vs the rest, one weight column) and, with "multiclass" in `what`, the 10
#       classes one-vs-rest (10 weight columns, type = "decision");
#     - synthetic Gaussian points, p = 10, a smooth regression target.
#   For each precision the fit is made in that precision; the thread count of
#   a prediction is the fit's `threads` (set on the fit object for the
#   threads = 1 rows: a prediction honours the fit's setting).
#   predict() is timed `reps` times (wall clock and process CPU time); the
#   kernel_mv rate is measured in the same run by the C benchmark for the
#   same kernel, p and threads (`bench_kernel_mv threads rbf p`, built here
#   with make if missing).  "pairs/s" = n_train * n_new / seconds; in brackets
#   the same per CPU-second / threads (the rate while the threads ran: what a
#   quiet machine would give, as in table (a)).
# Usage (from the repository root, the package installed):
#   Rscript inst/bench/bench_predict.R [threads] [reps] [what]
#   what: comma list of "fashion", "multiclass", "synthetic" (default all)
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
threads_max <- if (length(args) >= 1) as.integer(args[1]) else 2L
reps <- if (length(args) >= 2) as.integer(args[2]) else 3L
what <- strsplit(if (length(args) >= 3) args[3] else "fashion,multiclass,synthetic", ",")[[1]]
n_train <- 20000L
n_new <- 10000L

loadavg <- function() paste(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3], collapse = " ")

# ---- the kernel_mv rate of the C benchmark (table (a)) ----------------------
bench_bin <- file.path("inst", "bench", "build", "bench_kernel_mv")
if (!file.exists(bench_bin)) system2("make", c("-s", "-C", file.path("inst", "bench")))
mv_rate <- function(p, threads) {
  out <- system2(bench_bin, c(threads, "rbf", p), stdout = TRUE)
  row <- grep(sprintf("^\\| rbf \\| %d \\|", p), out, value = TRUE)
  cells <- trimws(strsplit(row, "|", fixed = TRUE)[[1]])
  num <- function(cell) {
    v <- as.numeric(regmatches(cell, gregexpr("[0-9.]+e[+-][0-9]+", cell))[[1]])
    c(wall = v[1], cpu = v[2])
  }
  list(single = num(cells[4]), double = num(cells[6]))
}

# ---- data ---------------------------------------------------------------
source(system.file("scripts", "read_idx.R", package = "askotch"))  # read_idx()
sets <- list()
fdir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
if (any(c("fashion", "multiclass") %in% what)) {
  if (file.exists(file.path(fdir, "train-images-idx3-ubyte.gz"))) {
    x <- read_idx(file.path(fdir, "train-images-idx3-ubyte.gz"))[seq_len(n_train), ] / 255
    lab <- read_idx(file.path(fdir, "train-labels-idx1-ubyte.gz"))[seq_len(n_train)]
    xt <- read_idx(file.path(fdir, "t10k-images-idx3-ubyte.gz"))[seq_len(n_new), ] / 255
    if ("fashion" %in% what)
      sets$fashion <- list(x = x, y = factor(lab == 0L), xt = xt, type = "response")
    if ("multiclass" %in% what)
      sets$multiclass <- list(x = x, y = factor(lab), xt = xt, type = "decision")
  } else {
    message("Fashion-MNIST not found under ", fdir, ": left out")
  }
}
if ("synthetic" %in% what) {
  set.seed(1)
  x <- matrix(rnorm(n_train * 10), n_train, 10)
  sets$synthetic <- list(x = x, y = sin(x[, 1]) + x[, 2] * x[, 3] + rnorm(n_train, sd = 0.1),
                         xt = matrix(rnorm(n_new * 10), n_new, 10), type = "response")
}

cat(sprintf("bench_predict: %s, load average at start %s, threads up to %d, %d reps\n\n",
            format(Sys.time(), "%Y-%m-%d %H:%M %Z"), loadavg(), threads_max, reps))
rows <- list()
rates <- list()
for (nm in names(sets)) {
  s <- sets[[nm]]
  p <- ncol(s$x)
  for (prec in c("single", "double")) {
    fit <- krr(s$x, s$y, precision = prec, max_passes = 1, tol = 0, time_limit = 5,
               threads = threads_max, progress = FALSE, seed = 1)
    q <- ncol(fit$weights)
    for (th in unique(c(1L, threads_max))) {
      fit$threads <- th
      key <- paste(p, th)
      if (is.null(rates[[key]])) rates[[key]] <- mv_rate(p, th)
      invisible(predict(fit, s$xt[1:100, , drop = FALSE], type = s$type)) # warm-up
      tm <- t(replicate(reps, {
        t0 <- proc.time()
        invisible(predict(fit, s$xt, type = s$type))
        d <- proc.time() - t0
        c(d[["elapsed"]], d[["user.self"]] + d[["sys.self"]])
      }))
      pairs <- as.numeric(n_train) * n_new
      r_wall <- pairs / min(tm[, 1])
      r_cpu <- pairs / (min(tm[, 2]) / th)
      ref <- rates[[key]][[prec]]
      rows[[length(rows) + 1L]] <- data.frame(
        data = nm, n_train = n_train, n_new = n_new, p = p, q = q, precision = prec,
        threads = th, t_min = min(tm[, 1]), t_med = stats::median(tm[, 1]),
        rate = r_wall, rate_cpu = r_cpu, mv = ref[["wall"]], mv_cpu = ref[["cpu"]])
      r <- rows[[length(rows)]]
      message(sprintf("%s %s threads %d: %.3f s (load %s)", nm, prec, th, r$t_min, loadavg()))
    }
  }
}
res <- do.call(rbind, rows)
cat("| data | n_train | n_new | p | q | precision | threads | predict s (min / median) |",
    "pairs/s [CPU-time] | kernel_mv pairs/s [CPU-time] | % of kernel_mv [CPU-time] |\n")
cat("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
for (i in seq_len(nrow(res))) {
  r <- res[i, ]
  cat(sprintf("| %s | %d | %d | %d | %d | %s | %d | %.3f / %.3f | %.3g [%.3g] | %.3g [%.3g] | %.0f%% [%.0f%%] |\n",
              r$data, r$n_train, r$n_new, r$p, r$q, r$precision, r$threads, r$t_min, r$t_med,
              r$rate, r$rate_cpu, r$mv, r$mv_cpu, 100 * r$rate / r$mv, 100 * r$rate_cpu / r$mv_cpu))
}
cat(sprintf("\nload average at end %s\n", loadavg()))
