# Benchmark (c): time to the exact solution's test error.
#   ASkotch vs exact Cholesky vs kernlab::gausspr at n in {5e3, 2e4};
#   ASkotch alone at n in {2e5, 1e6} (p = 10), with peak memory beyond the data.
# Data: mlbench::mlbench.friedman1 (p = 10, noise sd 1), RBF kernel, median
# bandwidth, lambda = 1e-6 n (askotch's default), 5000 test points.
# Usage: Rscript inst/bench/bench_solvers.R [small|large|one N]   (prints tables)
#        SKIP_GAUSSPR=1 leaves kernlab out (NA in its columns).
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
mode <- if (length(args)) args[1] else "small"
threads <- askotch_threads()

mem_kb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1", grep(paste0("^", field, ":"), s, value = TRUE)))
}
make_data <- function(n, seed = 1) {
  set.seed(seed)
  d <- mlbench::mlbench.friedman1(n + 5000, sd = 1)
  list(x = d$x[1:n, ], y = d$y[1:n], xt = d$x[-(1:n), ], yt = d$y[-(1:n)])
}
rmse <- function(a, b) sqrt(mean((a - b)^2))

bench_small <- function(n, budget = 600) {
  d <- make_data(n)
  lambda <- 1e-6 * n
  t0 <- proc.time()[["elapsed"]]
  ex <- krr(d$x, d$y, lambda = lambda, solver = cholesky(), seed = 1, progress = FALSE)
  t_chol <- proc.time()[["elapsed"]] - t0
  target <- rmse(predict(ex, d$xt), d$yt)
  bw <- ex$kernel$bandwidth
  # kernlab on the same standardised inputs, same kernel and ridge
  xs <- scale(d$x, ex$center, ex$scale); xts <- scale(d$xt, ex$center, ex$scale)
  skip_gp <- nzchar(Sys.getenv("SKIP_GAUSSPR"))  # it takes ~10 min at n = 2e4
  t0 <- proc.time()[["elapsed"]]
  gp <- if (!skip_gp) kernlab::gausspr(xs, d$y - mean(d$y), kernel = "rbfdot",
                         kpar = list(sigma = 1 / (2 * bw^2)), var = lambda, scaled = FALSE,
                         type = "regression")
  t_gp <- if (skip_gp) NA else proc.time()[["elapsed"]] - t0
  gp_err <- if (skip_gp) NA else rmse(kernlab::predict(gp, xts) + mean(d$y), d$yt)
  t0 <- proc.time()[["elapsed"]]
  fit <- krr(d$x, d$y, lambda = lambda, seed = 1, progress = FALSE, tol = 1e-12,
             max_passes = 500, time_limit = budget, validation = list(x = d$xt, y = d$yt))
  tr <- fit$trace
  hit <- which(tr$validation <= target * (1 + 1e-3))[1]
  t_ask <- if (is.na(hit)) NA else tr$seconds[hit]
  data.frame(n = n, exact_test_rmse = target, cholesky_s = t_chol, gausspr_s = t_gp,
             gausspr_rmse = gp_err, askotch_s_to_target = t_ask,
             askotch_passes_to_target = if (is.na(hit)) NA else tr$passes[hit],
             askotch_final_rmse = tail(tr$validation, 1),
             speedup_vs_gausspr = t_gp / t_ask, speedup_vs_cholesky = t_chol / t_ask)
}

bench_large <- function(n, budget = 300) {
  d <- make_data(n)
  gc()
  rss0 <- mem_kb("VmRSS")
  fit <- krr(d$x, d$y, seed = 1, progress = FALSE, time_limit = budget, max_passes = 1000,
             validation = list(x = d$xt[1:1000, ], y = d$yt[1:1000]))
  peak <- mem_kb("VmHWM")
  tr <- fit$trace
  data.frame(n = n, block_size = fit$solver$block_size, iterations = fit$iterations,
             seconds = round(fit$seconds, 1), s_per_iter = fit$seconds / fit$iterations,
             passes = fit$passes, test_rmse_1000 = tail(tr$validation, 1),
             resid_est = fit$resid_est,
             peak_MiB_beyond_data = round((peak - rss0) / 1024, 1))
}

cat(sprintf("askotch benchmark (c), %s, %s, %d threads\n", format(Sys.time(), "%Y-%m-%d"),
            sub("model name\t: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
            threads))
if (mode == "small") {
  res <- do.call(rbind, lapply(c(5000, 20000), bench_small))
  print(res, digits = 4, row.names = FALSE)
} else if (mode == "large") {
  res <- do.call(rbind, lapply(c(2e5, 1e6), bench_large))
  print(res, digits = 4, row.names = FALSE)
} else if (mode == "one") {
  n <- as.numeric(args[2])
  print(if (n <= 2e4) bench_small(n) else bench_large(n), digits = 4, row.names = FALSE)
}
