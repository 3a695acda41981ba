#!/usr/bin/env Rscript
# Benchmark: kernel machines at ordinary sizes with the defaults -- askotch's
# kernel_machine() (solver "auto": dcd() while the kernel matrix fits, the
# Joker solver above) against LIBSVM (e1071::svm) on real data sets.
#
# Sets: kernlab's spam (n = 4601, p = 57), mlbench's PimaIndiansDiabetes
# (768, 8) and Sonar (208, 60); optionally (ASKOTCH_BENCH_FASHION = n)
# Fashion-MNIST, 10 classes, n training images and the first 2000 test
# images.  Each repeat draws an 80/20 split (Fashion: the test images), the
# inputs standardised with the training means and sds for every method.
#
# askotch runs with every default (hinge loss, lambda = 1, i.e. C = 1, the
# RBF kernel at the median-heuristic bandwidth, the automatic solver); LIBSVM
# gets the same kernel (gamma = 1 / (2 s^2) from askotch's fit) and C = 1 /
# lambda; it fits an unpenalised bias, askotch none (the problems are close,
# not equal; what is compared is the test accuracy and the time).  "joker"
# is askotch with solver = joker(), the former default.  Within a repeat the
# methods run in a rotating order (interleaved); askotch on 2 threads, LIBSVM
# on one (it has no threads).  Fashion uses C = 10 (lambda = 0.1) as in
# bench_losses.R.
#
# Usage (from the package root, with askotch, e1071, kernlab and mlbench):
#   Rscript inst/bench/bench_small_n.R            # 5 repeats
#   ASKOTCH_BENCH_REPS=3 ASKOTCH_BENCH_FASHION=10000 Rscript inst/bench/bench_small_n.R
# ASKOTCH_BENCH_METHODS=askotch,e1071 leaves joker() out.
# Prints one table: per set and method, the median (min-max) fit seconds,
# the mean test accuracy, and how many fits converged.

suppressPackageStartupMessages(library(askotch))
now <- function() proc.time()[["elapsed"]]
reps <- as.integer(Sys.getenv("ASKOTCH_BENCH_REPS", "5"))
fashion_n <- as.numeric(Sys.getenv("ASKOTCH_BENCH_FASHION", "0"))
# the methods compared (comma separated; default all three)
methods <- strsplit(Sys.getenv("ASKOTCH_BENCH_METHODS", "askotch,joker,e1071"), ",")[[1]]

# split_set() and the sets spam, pima, sonar (80/20 splits, standardised)
source(system.file("bench", "small_sets.R", package = "askotch"))
sets <- sets[c("spam", "pima", "sonar")]

if (fashion_n > 0) {
  source(system.file("scripts", "read_idx.R", package = "askotch"))
  sets$fashion10 <- function(seed) {
    dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
    f <- function(x) file.path(dir, x)
    xtr <- read_idx(f("train-images-idx3-ubyte.gz"))
    ytr <- read_idx(f("train-labels-idx1-ubyte.gz"))
    set.seed(seed)
    idx <- sort(sample.int(nrow(xtr), fashion_n))
    lab <- function(l) factor(l, levels = 0:9)
    list(x = xtr[idx, ] / 255, y = lab(ytr[idx]),
         xt = read_idx(f("t10k-images-idx3-ubyte.gz"))[1:2000, ] / 255,
         yt = lab(read_idx(f("t10k-labels-idx1-ubyte.gz"))[1:2000]), lambda = 0.1)
  }
}

run_askotch <- function(d, solver = NULL) {
  t0 <- now()
  fit <- withCallingHandlers(
    kernel_machine(d$x, d$y, loss = loss_hinge(), kernel = "rbf", lambda = d$lambda,
                   standardize = FALSE, solver = solver, threads = 2, progress = FALSE),
    warning = function(w) invokeRestart("muffleWarning"))
  list(seconds = now() - t0, acc = mean(predict(fit, d$xt) == d$yt),
       converged = isTRUE(fit$converged), bandwidth = fit$kernel$bandwidth,
       solver = fit$solver$name)
}

run_e1071 <- function(d, bandwidth) {
  t0 <- now()
  fit <- e1071::svm(d$x, d$y, type = "C-classification", kernel = "radial",
                    gamma = 1 / (2 * bandwidth^2), cost = 1 / d$lambda, scale = FALSE)
  list(seconds = now() - t0, acc = mean(predict(fit, d$xt) == d$yt), converged = TRUE)
}

rows <- list()
for (nm in names(sets)) {
  for (r in seq_len(reps)) {
    d <- sets[[nm]](r)
    bw <- run_askotch(d)$bandwidth # warm-up and the kernel for LIBSVM
    order <- methods[(seq_along(methods) + r - 2) %% length(methods) + 1]
    for (m in order) {
      res <- switch(m, askotch = run_askotch(d), joker = run_askotch(d, joker()),
                    e1071 = run_e1071(d, bw))
      rows[[length(rows) + 1]] <- data.frame(set = nm, n = nrow(d$x), method = m,
                                             rep = r, seconds = res$seconds, acc = res$acc,
                                             converged = res$converged)
    }
  }
}
tab <- do.call(rbind, rows)
summ <- do.call(rbind, lapply(split(tab, list(tab$set, tab$method), drop = TRUE), function(t) {
  data.frame(set = t$set[1], n = t$n[1], method = t$method[1],
             seconds = sprintf("%.3f (%.3f-%.3f)", stats::median(t$seconds), min(t$seconds),
                               max(t$seconds)),
             accuracy = round(mean(t$acc), 4),
             converged = sprintf("%d/%d", sum(t$converged), nrow(t)))
}))
summ <- summ[order(summ$set, summ$method), ]
cat(sprintf("# %s, %s, load %s, %d repeats\n",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), Sys.info()[["nodename"]],
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), reps))
print(summ, row.names = FALSE)
