#!/usr/bin/env Rscript
# Benchmark: choosing C from the data -- askotch's kernel_machine(lambda =
# "cv") against LIBSVM's grid search (e1071::tune.svm) over the same grid,
# and single fits along that grid.
#
# Sets: kernlab's spam (n = 4601, p = 57) and mlbench's PimaIndiansDiabetes
# (768, 8).  Each repeat draws an 80/20 split, the inputs standardised with
# the training means and sds.  Both searches use the RBF kernel at askotch's
# median-heuristic bandwidth (gamma = 1 / (2 s^2) for LIBSVM), the nine
# values C = 10^(-1, -0.5, ..., 3) (askotch's default path, lambda = 1 / C)
# and 5-fold cross-validation of the misclassification rate, then a fit on
# all the training data at the chosen C (tune.svm's best.model).  LIBSVM fits
# an unpenalised bias, askotch none.  askotch runs on 2 threads, LIBSVM on
# one (it has none); within a repeat the methods run in rotating order.
#
#   "askotch cv (hinge)"    kernel_machine(loss = loss_hinge(), lambda = "cv")
#   "askotch cv (logistic)" the same with loss_logistic() (LIBSVM has no peer)
#   "LIBSVM tune.svm"       e1071::tune.svm(cost = 1 / lambdas, cross = 5)
#   "askotch fit (hinge)"   one default fit (C = 1), the unit of the ratio
#
# Then, on the first split, single fits at each C (askotch hinge, LIBSVM):
# seconds and passes, to show where along the grid the time goes.
#
# Usage (from the package root, with askotch, e1071, kernlab and mlbench):
#   Rscript inst/bench/bench_cv_path.R            # 3 repeats
#   ASKOTCH_BENCH_REPS=5 Rscript inst/bench/bench_cv_path.R
#   ASKOTCH_BENCH_GAPCHECK=1 ...   # also the folds' tolerance against 1e-6

suppressPackageStartupMessages(library(askotch))
now <- function() proc.time()[["elapsed"]]
reps <- as.integer(Sys.getenv("ASKOTCH_BENCH_REPS", "3"))
lambdas <- 10^seq(1, -3, by = -0.5)

# split_set() and the sets spam, pima, sonar (80/20 splits, standardised)
source(system.file("bench", "small_sets.R", package = "askotch"))
sets <- sets[c("spam", "pima")]

quiet <- function(expr) withCallingHandlers(expr, warning = function(w) {
  invokeRestart("muffleWarning")
})

run_askotch <- function(d, loss, lambda) {
  t0 <- now()
  fit <- quiet(kernel_machine(d$x, d$y, loss = loss, lambda = lambda, standardize = FALSE,
                              threads = 2, progress = FALSE, seed = 1))
  list(seconds = now() - t0, acc = mean(predict(fit, d$xt) == d$yt), C = 1 / fit$lambda,
       converged = isTRUE(fit$converged), passes = fit$passes,
       bandwidth = fit$kernel$bandwidth)
}

run_tune <- function(d, bandwidth) {
  t0 <- now()
  tu <- e1071::tune.svm(d$x, d$y, kernel = "radial", gamma = 1 / (2 * bandwidth^2),
                        cost = 1 / lambdas, scale = FALSE,
                        tunecontrol = e1071::tune.control(sampling = "cross", cross = 5))
  list(seconds = now() - t0, acc = mean(predict(tu$best.model, d$xt) == d$yt),
       C = tu$best.parameters$cost, converged = TRUE, passes = NA)
}

run_e1071 <- function(d, bandwidth, C) {
  t0 <- now()
  fit <- e1071::svm(d$x, d$y, type = "C-classification", kernel = "radial",
                    gamma = 1 / (2 * bandwidth^2), cost = C, scale = FALSE)
  list(seconds = now() - t0, acc = mean(predict(fit, d$xt) == d$yt), C = C, converged = TRUE,
       passes = NA)
}

methods <- c("askotch cv (hinge)", "askotch cv (logistic)", "LIBSVM tune.svm",
             "askotch fit (hinge)")
rows <- list()
for (nm in names(sets)) {
  for (r in seq_len(reps)) {
    d <- sets[[nm]](r)
    bw <- run_askotch(d, loss_hinge(), 1)$bandwidth # warm-up and the kernel for LIBSVM
    order <- methods[(seq_along(methods) + r - 2) %% length(methods) + 1]
    for (m in order) {
      res <- switch(m,
                    "askotch cv (hinge)" = run_askotch(d, loss_hinge(), "cv"),
                    "askotch cv (logistic)" = run_askotch(d, loss_logistic(), "cv"),
                    "LIBSVM tune.svm" = run_tune(d, bw),
                    "askotch fit (hinge)" = run_askotch(d, loss_hinge(), 1))
      rows[[length(rows) + 1]] <- data.frame(set = nm, n = nrow(d$x), method = m, rep = r,
                                             seconds = res$seconds, acc = res$acc, C = res$C)
    }
  }
}
tab <- do.call(rbind, rows)
unit <- tapply(tab$seconds[tab$method == "askotch fit (hinge)"],
               tab$set[tab$method == "askotch fit (hinge)"], stats::median)
summ <- do.call(rbind, lapply(split(tab, list(tab$set, tab$method), drop = TRUE), function(t) {
  data.frame(set = t$set[1], n = t$n[1], method = t$method[1],
             seconds = sprintf("%.2f (%.2f-%.2f)", stats::median(t$seconds), min(t$seconds),
                               max(t$seconds)),
             single_fits = round(stats::median(t$seconds) / unit[[t$set[1]]], 1),
             accuracy = round(mean(t$acc), 4),
             C = paste(signif(t$C, 3), collapse = " "))
}))
summ <- summ[order(summ$set, summ$method), ]
cat(sprintf("# %s, %s, load %s, %d repeats\n",
            format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"), Sys.info()[["nodename"]],
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = ""), reps))
print(summ, row.names = FALSE)

# single fits along the grid, first spam split
d <- sets$spam(1)
bw <- run_askotch(d, loss_hinge(), 1)$bandwidth
grid <- do.call(rbind, lapply(rev(lambdas), function(l) {
  a <- run_askotch(d, loss_hinge(), l)
  e <- run_e1071(d, bw, 1 / l)
  data.frame(C = 1 / l, askotch_s = round(a$seconds, 3), passes = round(a$passes, 1),
             converged = a$converged, LIBSVM_s = round(e$seconds, 3),
             acc_askotch = round(a$acc, 4), acc_LIBSVM = round(e$acc, 4))
}))
cat("\n# spam, split 1: single hinge fits along the grid\n")
print(grid, row.names = FALSE)

# The folds' tolerance (ASKOTCH_BENCH_GAPCHECK=1): the CV error rates with the
# folds solved to the default relative duality gap (option
# askotch.cv_gap_tol, 1e-3) against 1e-6, on the first two splits of each set.
if (nzchar(Sys.getenv("ASKOTCH_BENCH_GAPCHECK"))) {
  cv_at <- function(d, loss, gap) {
    old <- options(askotch.cv_gap_tol = gap)
    on.exit(options(old))
    t0 <- now()
    fit <- quiet(kernel_machine(d$x, d$y, loss = loss, lambda = "cv", standardize = FALSE,
                                threads = 2, progress = FALSE, seed = 1))
    list(seconds = now() - t0, cv = fit$tuning$path$cv, C = 1 / fit$lambda,
         acc = mean(predict(fit, d$xt) == d$yt))
  }
  cat("\n# the folds' duality gap: 1e-3 (default) against 1e-6\n")
  for (nm in names(sets)) for (r in 1:2) for (ln in c("hinge", "logistic")) {
    d <- sets[[nm]](r)
    loss <- if (ln == "hinge") loss_hinge() else loss_logistic()
    a <- cv_at(d, loss, 1e-3)
    b <- cv_at(d, loss, 1e-6)
    cat(sprintf(paste("%s split %d %s: seconds %.2f / %.2f, chosen C %s / %s, test accuracy",
                      "%.4f / %.4f, largest CV error change %.4f\n"), nm, r, ln, a$seconds,
                b$seconds, signif(a$C, 3), signif(b$C, 3), a$acc, b$acc, max(abs(a$cv - b$cv))))
  }
}
