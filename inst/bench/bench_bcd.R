# Tu et al.'s block coordinate descent in feature space (bcd()) beside the
# full-kernel ASkotch and Falkon: test metric against seconds, and the cost
# of a lambda path solved at once against separate fits.
#
#  1. Fashion-MNIST, 10 classes one-vs-rest jointly (n = 20000 training
#     images, 5000 test images, p = 784 pixels scaled to [0, 1]); RBF kernel
#     with the median-heuristic bandwidth, lambda = 1e-5 n. Each method runs
#     with a time limit (BENCH_SECONDS, default 120) and a validation trace
#     on the test images: the accuracy it reaches and the first time it came
#     within 0.001 of the best accuracy any method reached.
#  2. Friedman 1 regression (mlbench, n = 20000, 10 inputs, noise sd 1,
#     5000 test points), lambda = 1e-3 n, the same methods and limit; RMSE.
#  3. A 10-value lambda path (10^seq(-1, 1) * 1e-3 n) solved at once
#     against 10 separate fits with the same solver, each to tol = 1e-6 or
#     30 passes, on the first 10000 points of task 2: Nystrom BCD (p = 2000
#     centres, blocks of 500) and random-feature BCD (p = 2000, blocks of
#     500) with and without the feature cache; NSAP (blocks of 500) on the
#     full kernel.
#
#   Rscript inst/bench/bench_bcd.R [out.rds]   (about 40 minutes on 2 cores)
#   BENCH_METHODS=regex runs only the methods whose names match (tasks 1, 2);
#   BENCH_TASKS=fashion,friedman,path picks the tasks (default: all three)
suppressMessages(library(askotch))
source(system.file("scripts", "read_idx.R", package = "askotch"))
secs <- as.numeric(Sys.getenv("BENCH_SECONDS", "120"))
out_file <- commandArgs(TRUE)[1]
if (is.na(out_file)) out_file <- "bcd_results.rds"
threads <- 2L
cat(sprintf("%s; %s\nload: %s\n", format(Sys.time(), tz = "UTC", usetz = TRUE),
            paste(system("nproc", intern = TRUE), "cores"), system("uptime", intern = TRUE)))

dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
X <- read_idx(file.path(dir, "train-images-idx3-ubyte.gz")) / 255
lab <- read_idx(file.path(dir, "train-labels-idx1-ubyte.gz"))
Xt <- read_idx(file.path(dir, "t10k-images-idx3-ubyte.gz")) / 255
labt <- read_idx(file.path(dir, "t10k-labels-idx1-ubyte.gz"))
set.seed(1)
tr <- sample(nrow(X), 20000); te <- sample(nrow(Xt), 5000)
fm <- list(x = X[tr, ], y = factor(lab[tr]), xt = Xt[te, ], yt = factor(labt[te]),
           lambda = 1e-5 * 20000, metric = "accuracy")
rm(X, Xt)

fr <- mlbench::mlbench.friedman1(25000, sd = 1)
frd <- list(x = fr$x[1:20000, ], y = fr$y[1:20000], xt = fr$x[20001:25000, ],
            yt = fr$y[20001:25000], lambda = 1e-3 * 20000, metric = "rmse")

methods <- list(
  "askotch (full kernel)" = askotch(),
  "falkon, 1000 centres" = falkon(centers = 1000),
  "falkon, 5000 centres" = falkon(centers = 5000),
  "Nystrom BCD, p = 1000 (one block)" = bcd("nystrom", p = 1000),
  "falkon, 10000 centres" = falkon(centers = 10000),
  "Nystrom BCD, p = 5000, b = 1000" = bcd("nystrom", p = 5000, block_size = 1000),
  "Nystrom BCD, p = 10000, b = 1000" = bcd("nystrom", p = 10000, block_size = 1000),
  "random-feature BCD, p = 1000" = bcd("random", p = 1000),
  "random-feature BCD, p = 10000, b = 1000" = bcd("random", p = 10000, block_size = 1000))

pick <- Sys.getenv("BENCH_METHODS")
if (nzchar(pick)) methods <- methods[grepl(pick, names(methods))]
tasks <- strsplit(Sys.getenv("BENCH_TASKS", "fashion,friedman,path"), ",")[[1]]

run_task <- function(task, name) {
  rows <- list()
  for (m in names(methods)) {
    gc()
    t0 <- proc.time()[[3]]
    fit <- tryCatch(suppressWarnings(krr(task$x, task$y, lambda = task$lambda,
      solver = methods[[m]], seed = 1, threads = threads, time_limit = secs,
      max_passes = Inf, validation = list(x = task$xt, y = task$yt))),
      error = function(e) e)
    wall <- proc.time()[[3]] - t0
    if (inherits(fit, "error")) {
      cat(sprintf("%s / %s: error %s\n", name, m, conditionMessage(fit)))
      next
    }
    tr <- fit$trace[!is.na(fit$trace$validation), ]
    rows[[m]] <- data.frame(task = name, method = m, metric = utils::tail(tr$validation, 1),
                            seconds = fit$seconds, wall = wall, passes = fit$passes,
                            converged = fit$converged, resid = fit$resid_exact)
    attr(rows[[m]], "trace") <- tr[, c("seconds", "validation")]
    cat(sprintf("%s / %-40s %s %.4f  %.1f s  %.1f passes  %s\n", name, m, task$metric,
                rows[[m]]$metric, fit$seconds, fit$passes,
                if (fit$converged) "converged" else fit$reason))
  }
  traces <- lapply(rows, attr, "trace")
  tab <- do.call(rbind, rows)
  best <- if (task$metric == "accuracy") max(tab$metric) else min(tab$metric)
  tab$t_to_best <- vapply(traces, function(tr) {
    ok <- if (task$metric == "accuracy") tr$validation >= best - 0.001 else
      tr$validation <= best * 1.001
    if (any(ok)) tr$seconds[which(ok)[1L]] else NA_real_
  }, 0)
  list(table = tab, traces = traces)
}

res <- list()
if ("fashion" %in% tasks) res$fashion <- run_task(fm, "Fashion-MNIST 10-class")
if ("friedman" %in% tasks) res$friedman <- run_task(frd, "Friedman 1")

if ("path" %in% tasks) {
# 3. the lambda path
np <- 10000
px <- frd$x[1:np, ]; py <- frd$y[1:np]
lams <- 1e-3 * np * 10^seq(-1, 1, length.out = 10)
path_specs <- list("Nystrom BCD p = 2000, b = 500" = bcd("nystrom", p = 2000, block_size = 500),
                   "random-feature BCD p = 2000, b = 500, cached" =
                     bcd("random", p = 2000, block_size = 500, cache = "yes"),
                   "random-feature BCD p = 2000, b = 500, no cache" =
                     bcd("random", p = 2000, block_size = 500, cache = "no"),
                   "NSAP (full kernel), b = 500" = sap(block_size = 500))
prow <- list()
for (m in names(path_specs)) {
  sp <- path_specs[[m]]
  gc()
  tp <- system.time(fp <- suppressWarnings(krr(px, py, lambda = lams, solver = sp,
    seed = 1, threads = threads, tol = 1e-6, max_passes = 30,
    validation = list(x = frd$xt, y = frd$yt))))[[3]]
  singles <- lapply(lams, function(l) {
    gc()
    t <- system.time(f <- suppressWarnings(krr(px, py, lambda = l, solver = sp, seed = 1,
      threads = threads, tol = 1e-6, max_passes = 30)))[[3]]
    list(t = t, conv = f$converged, passes = f$passes)
  })
  ts <- vapply(singles, `[[`, 0, "t")
  prow[[m]] <- data.frame(method = m, path_s = tp, path_passes = fp$passes,
                          path_converged = fp$converged, single_max_s = max(ts),
                          single_sum_s = sum(ts),
                          singles_converged = sum(vapply(singles, `[[`, TRUE, "conv")),
                          single_passes = sum(vapply(singles, `[[`, 0, "passes")),
                          selected_lambda = fp$lambda)
  cat(sprintf("path / %-45s at once %.1f s (%.1f passes, converged %s); separate: max %.1f s, sum %.1f s (%d of 10 converged, %.0f passes in all)\n",
              m, tp, fp$passes, fp$converged, max(ts), sum(ts), prow[[m]]$singles_converged,
              prow[[m]]$single_passes))
}
res$path <- do.call(rbind, prow)
}
res$uptime_end <- system("uptime", intern = TRUE)
saveRDS(res, out_file)
cat("load at the end:", res$uptime_end, "\n")
if (!is.null(res$fashion)) print(res$fashion$table[, -c(5)], row.names = FALSE, digits = 4)
if (!is.null(res$friedman)) print(res$friedman$table[, -c(5)], row.names = FALSE, digits = 4)
if (!is.null(res$path)) print(res$path, row.names = FALSE, digits = 4)
