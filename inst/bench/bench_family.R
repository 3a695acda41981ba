#!/usr/bin/env Rscript
# Benchmark: the askotch solver family at equal rank r = 100 and an equal time
# budget, for the vignette "Choosing a solver".
#
# Data
#  (a) Fashion-MNIST, class 0 ("T-shirt/top") against the rest: a random
#      training subset of n = 10000 images (p = 784, pixels / 255) and the
#      first 2000 test images. Debian's dataset-fashion-mnist idx files under
#      /usr/share/datasets/fashion-mnist (or ASKOTCH_FASHION_DIR).
#  (b) mlbench::mlbench.friedman1 (p = 10, noise sd 1): n = 10000 training
#      and 2000 test points.
# Both with krr() defaults otherwise: RBF kernel, median bandwidth (same seed,
# so the same bandwidth for every solver), lambda = 1e-6 n, standardised
# columns, double precision, CPU, askotch_threads() threads.
#
# Solvers (rank / preconditioner size 100 wherever there is one):
#   askotch(rank = 100), askotch(sampling = "rls", rank = 100),
#   askotch(variant = "v1", rank = 100), skotch(rank = 100),
#   sap() (= NSAP, exact blocks, default block size),
#   pcg("nystrom", rank = 100), pcg("rpcholesky", rank = 100),
#   falkon(centers = 1000), eigenpro(rank = 100, subsample = 2000),
#   eigenpro(version = 3, rank = 100, centers = 1000) (the same 1000 centres
#   as Falkon: same seed).
# EigenPro's default subsample min(n, 4000) costs a dense 4000 x 4000
# eigendecomposition (~25 s on the 2-core machine, most of the budget);
# 2000 costs ~3 s.
#
# Each solver runs in a fresh Rscript process (so peak memories do not mix)
# with tol = 1e-10, time_limit = budget (40 s on Fashion-MNIST, 20 s on
# Friedman 1, where a pass is ~15 times cheaper) and validation on the test
# set (test accuracy / RMSE recorded about once per pass). `seconds_solver`
# in the trace subtracts the time of the validation predictions (measured
# after the fit, median of 3, times the number of validations so far), so it
# is solver time. The exact residual checks of krr() are switched off during the
# timed fit (option askotch.exact_max_n = 0) and the full-KRR relative
# residual ||(K + lambda I) w - y|| / ||y|| of the final weights is computed
# afterwards (NA for Falkon and EigenPro 3.0, whose weights live on their
# centres and solve a different system).
#
# Memory: separate runs without validation, stopped after the setup and the
# first slice of iterations (time_limit = 1 s), at n = 5000 and n = 10000.
# The peak-RSS counter (VmHWM) is reset through /proc/self/clear_refs when
# krr() enters its solver loop (a trace() on the internal fit_solver(), after
# a gc() that frees krr()'s temporary copies of x made by the R-level
# preprocessing); peak_MiB = VmHWM - VmRSS at that point: everything the
# solver allocates, including the core's point-major copy of x (n p 8 bytes,
# column data_copy_MiB) that every solver makes.
#
# Usage (from the package root, with askotch installed):
#   Rscript inst/bench/bench_family.R          # full run, ~12 min on 2 cores
#   Rscript inst/bench/bench_family.R quick    # smoke test: n = 1000, 3 s each
# Environment: ASKOTCH_BENCH_N (10000), ASKOTCH_BENCH_NSMALL (5000),
# ASKOTCH_BENCH_BUDGET (seconds per solver: "fashion,friedman1", default
# "40,20"), ASKOTCH_BENCH_OUT (inst/bench/family_results.rds; quick: a
# temporary file), ASKOTCH_BENCH_RERUN ("dataset:solver,...": rerun only
# these and replace them in ASKOTCH_BENCH_OUT).
# cpu_share in the summary: the timed fit's CPU time / (wall time x
# threads), about 1 on an otherwise idle machine, lower when other work
# competed for the cores.
# Internal: Rscript bench_family.R child <data.rds> <solver> <budget>
#   <trace 0|1> <out.rds>

suppressPackageStartupMessages(library(askotch))

# (n: the number of training points; only the quick smoke test has n < 2000)
solver_specs <- list(
  askotch      = function(n) askotch(rank = 100),
  askotch_rls  = function(n) askotch(sampling = "rls", rank = 100),
  askotch_v1   = function(n) askotch(variant = "v1", rank = 100),
  skotch       = function(n) skotch(rank = 100),
  nsap         = function(n) sap(),
  pcg_nystrom  = function(n) pcg("nystrom", rank = 100),
  pcg_rpchol   = function(n) pcg("rpcholesky", rank = 100),
  falkon       = function(n) falkon(centers = min(1000, n %/% 2)),
  eigenpro     = function(n) eigenpro(rank = 100, subsample = min(2000, n)),
  eigenpro3    = function(n) eigenpro(version = 3, rank = 100,
                                      centers = min(1000, n %/% 2))
)
solver_labels <- c(
  askotch = "askotch()", askotch_rls = "askotch(sampling = \"rls\")",
  askotch_v1 = "askotch(variant = \"v1\")", skotch = "skotch()",
  nsap = "sap() [NSAP]", pcg_nystrom = "pcg(\"nystrom\")",
  pcg_rpchol = "pcg(\"rpcholesky\")", falkon = "falkon(centers = 1000)",
  eigenpro = "eigenpro(subsample = 2000)",
  eigenpro3 = "eigenpro(version = 3, centers = 1000)")

status_kb <- function(field) {
  s <- readLines("/proc/self/status")
  as.numeric(sub("[^0-9]*([0-9]+).*", "\\1",
                 grep(paste0("^", field, ":"), s, value = TRUE)))
}
now <- function() proc.time()[["elapsed"]]

# ---- child: one solver on one prepared data set ---------------------------
# Reset the peak-RSS counter (VmHWM) and record the resident memory at the
# start of the solver loop, i.e. after krr()'s R-level preprocessing (whose
# temporary copies of x are collected by gc() first).
mem_mark <- new.env()
reset_hwm <- function() {
  invisible(gc())
  mem_mark$reset <- tryCatch({
    cat("5", file = "/proc/self/clear_refs")
    TRUE
  }, error = function(e) FALSE, warning = function(w) FALSE)
  mem_mark$rss0 <- status_kb("VmRSS")
}

run_child <- function(data_file, solver, budget, trace, out_file) {
  d <- readRDS(data_file)
  options(askotch.exact_max_n = 0)
  n <- nrow(d$x)
  spec <- solver_specs[[solver]](n)
  if (!trace) {
    # memory run: measure from the start of the solver loop
    ok <- tryCatch({
      suppressMessages(trace("fit_solver", tracer = quote(
        get("reset_hwm", envir = globalenv())()),
        where = asNamespace("askotch"), print = FALSE))
      TRUE
    }, error = function(e) FALSE)
    if (!ok) reset_hwm()
  }
  pt0 <- proc.time()
  fit <- krr(d$x, d$y, solver = spec, tol = 1e-10, max_passes = 1e6,
             time_limit = budget, seed = 1, progress = FALSE,
             validation = if (trace) list(x = d$xt, y = d$yt) else NULL)
  pt <- proc.time() - pt0
  res <- list(cpu_share = (pt[["user.self"]] + pt[["sys.self"]]) /
                (pt[["elapsed"]] * askotch_threads()),solver = solver, n = n, p = ncol(d$x),
              format = format(fit$solver), reason = fit$reason,
              seconds = fit$seconds, passes = fit$passes,
              iterations = fit$iterations, resid_est = fit$resid_est,
              bandwidth = fit$kernel$bandwidth, lambda = fit$lambda)
  if (!trace) {
    res$peak_MiB <- (status_kb("VmHWM") - mem_mark$rss0) / 1024
    res$hwm_reset <- isTRUE(mem_mark$reset)
  } else {
    # cost of one validation: the kernel product krr() does per validation
    # (on test points already standardised), median of three
    ns <- asNamespace("askotch")
    t_val <- tryCatch({
      xts <- ns$apply_scaling(d$xt, fit$center, fit$scale)
      dimnames(xts) <- NULL
      stats::median(replicate(3L, {
        t1 <- now()
        invisible(ns$krr_scores(fit, xts))
        now() - t1
      }))
    }, error = function(e) {
      t1 <- now()
      invisible(predict(fit, d$xt))
      now() - t1
    })
    tr <- fit$trace
    nval <- cumsum(!is.na(tr$validation))
    tr$seconds_solver <- pmax(tr$seconds - nval * t_val, 0)
    res$trace <- tr
    res$t_val <- t_val
    # full-KRR relative residual of the final weights (not for Falkon)
    res$relres <- NA_real_
    if (is.null(fit$centers)) {
      f <- as.matrix(fitted(fit))
      Y <- fit$y
      yc <- sweep(Y, 2L, fit$y_center, "-", check.margin = FALSE)
      r <- f + fit$lambda * fit$weights - Y
      res$relres <- sqrt(sum(r^2)) / sqrt(sum(yc^2))
    }
  }
  saveRDS(res, out_file)
}

# ---- parent ---------------------------------------------------------------
source(system.file("scripts", "read_idx.R", package = "askotch"))  # read_idx()

make_fashion <- function(n, n_test = 2000) {
  dir <- Sys.getenv("ASKOTCH_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
  f <- function(x) file.path(dir, x)
  if (!file.exists(f("train-images-idx3-ubyte.gz"))) {
    stop("Fashion-MNIST not found under ", dir, " (Debian package ",
         "dataset-fashion-mnist, or set ASKOTCH_FASHION_DIR)", call. = FALSE)
  }
  lab <- function(l) factor(ifelse(l == 0L, "tshirt", "other"),
                            levels = c("other", "tshirt"))
  xtr <- read_idx(f("train-images-idx3-ubyte.gz"))
  ytr <- read_idx(f("train-labels-idx1-ubyte.gz"))
  set.seed(2026)
  idx <- sort(sample.int(nrow(xtr), n))
  x <- xtr[idx, , drop = FALSE] / 255
  y <- lab(ytr[idx])
  rm(xtr)
  xte <- read_idx(f("t10k-images-idx3-ubyte.gz"))[seq_len(n_test), ] / 255
  yte <- lab(read_idx(f("t10k-labels-idx1-ubyte.gz"))[seq_len(n_test)])
  list(x = x, y = y, xt = xte, yt = yte)
}

make_friedman <- function(n, n_test = 2000) {
  set.seed(1)
  d <- mlbench::mlbench.friedman1(n + n_test, sd = 1)
  tr <- seq_len(n)
  list(x = d$x[tr, ], y = d$y[tr], xt = d$x[-tr, ], yt = d$y[-tr])
}

subset_data <- function(d, n) {
  list(x = d$x[seq_len(n), , drop = FALSE], y = d$y[seq_len(n)], xt = d$xt,
       yt = d$yt)
}

script_path <- function() {
  a <- grep("^--file=", commandArgs(FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", a[1L]))
}

run_one <- function(data_file, solver, budget, trace) {
  out <- tempfile(fileext = ".rds")
  st <- system2(file.path(R.home("bin"), "Rscript"),
                c(shQuote(script_path()), "child", shQuote(data_file), solver,
                  budget, as.integer(trace), shQuote(out)),
                stdout = "", stderr = "")
  if (!file.exists(out)) {
    warning(sprintf("%s failed (status %s)", solver, st), call. = FALSE)
    return(NULL)
  }
  readRDS(out)
}

# time to reach the best final test metric of the full-KRR solvers (within
# 2 test images for accuracy, 0.1% for RMSE)
time_to_target <- function(tr, target, metric) {
  ok <- !is.na(tr$validation) & if (metric == "accuracy")
    tr$validation >= target - 0.001 else tr$validation <= target * 1.001
  if (!any(ok)) NA_real_ else tr$seconds_solver[which(ok)[1L]]
}

main <- function(args) {
  quick <- length(args) >= 1L && args[1L] == "quick"
  n <- as.numeric(Sys.getenv("ASKOTCH_BENCH_N", if (quick) "1000" else "10000"))
  n_small <- as.numeric(Sys.getenv("ASKOTCH_BENCH_NSMALL",
                                   if (quick) "500" else "5000"))
  # seconds per solver: Fashion-MNIST (p = 784, ~3 s per pass at n = 10000
  # on 2 idle cores), Friedman 1 (p = 10, ~0.2 s per pass)
  budget <- as.numeric(strsplit(Sys.getenv(
    "ASKOTCH_BENCH_BUDGET", if (quick) "3,3" else "40,20"), ",")[[1L]])
  budget <- stats::setNames(rep_len(budget, 2L), c("fashion", "friedman1"))
  out_file <- Sys.getenv("ASKOTCH_BENCH_OUT", if (quick)
    tempfile("family_quick", fileext = ".rds") else
      file.path("inst", "bench", "family_results.rds"))
  # ASKOTCH_BENCH_RERUN="fashion:askotch,fashion:askotch_rls": rerun only
  # these (dataset:solver) pairs and replace them in the existing results
  # file ASKOTCH_BENCH_OUT (e.g. after a run disturbed by other load)
  rerun <- Sys.getenv("ASKOTCH_BENCH_RERUN", "")
  rerun <- if (nzchar(rerun)) strsplit(rerun, ",")[[1L]] else NULL
  old <- if (!is.null(rerun)) readRDS(out_file) else NULL
  started <- Sys.time()
  load0 <- readLines("/proc/loadavg")
  cpu <- sub("model name\t: ", "",
             grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1L])
  cat(sprintf(paste("askotch solver family benchmark, %s UTC, %s, %d cores,",
                    "askotch %s, %d threads, n = %d, budget %s s/solver\n"),
              format(started, tz = "UTC"), cpu, parallel::detectCores(),
              format(utils::packageVersion("askotch")), askotch_threads(), n,
              paste(budget, collapse = " / ")))

  tmp <- tempfile("bench_family")
  dir.create(tmp)
  sets <- list(fashion = make_fashion(n), friedman1 = make_friedman(n))
  metric <- c(fashion = "accuracy", friedman1 = "rmse")
  traces <- list()
  runs <- list()
  mem <- list()
  for (ds in names(sets)) {
    f_big <- file.path(tmp, paste0(ds, "_big.rds"))
    f_small <- file.path(tmp, paste0(ds, "_small.rds"))
    saveRDS(sets[[ds]], f_big, compress = FALSE)
    saveRDS(subset_data(sets[[ds]], n_small), f_small, compress = FALSE)
    for (s in names(solver_specs)) {
      if (!is.null(rerun) && !paste0(ds, ":", s) %in% rerun) next
      cat(sprintf("  %-10s %-12s ", ds, s))
      r <- run_one(f_big, s, budget[[ds]], TRUE)
      if (is.null(r)) next
      tr <- r$trace
      traces[[length(traces) + 1L]] <- data.frame(
        dataset = ds, solver = s, n = r$n, iteration = tr$iteration,
        passes = tr$passes, seconds = tr$seconds,
        seconds_solver = tr$seconds_solver, resid_est = tr$resid_est,
        metric = metric[[ds]], validation = tr$validation)
      runs[[length(runs) + 1L]] <- data.frame(
        dataset = ds, solver = s, label = solver_labels[[s]],
        spec = r$format, n = r$n, reason = r$reason,
        seconds = r$seconds, passes = r$passes, iterations = r$iterations,
        final_metric = utils::tail(tr$validation[!is.na(tr$validation)], 1L),
        best_metric = if (metric[[ds]] == "accuracy")
          max(tr$validation, na.rm = TRUE) else
            min(tr$validation, na.rm = TRUE),
        resid_est = r$resid_est, relres = r$relres, t_val = r$t_val,
        cpu_share = if (is.null(r$cpu_share)) NA_real_ else r$cpu_share,
        bandwidth = r$bandwidth, lambda = r$lambda)
      cat(sprintf("%5.1f passes, %s %.4f, resid_est %.1e", r$passes,
                  metric[[ds]], runs[[length(runs)]]$final_metric,
                  r$resid_est))
      for (f in c(f_small, f_big)) {
        m <- run_one(f, s, 1, FALSE)
        if (is.null(m)) next
        mem[[length(mem) + 1L]] <- data.frame(
          dataset = ds, solver = s, n = m$n, p = m$p, peak_MiB = m$peak_MiB,
          data_copy_MiB = m$n * m$p * 8 / 2^20,
          run_seconds = m$seconds, hwm_reset = m$hwm_reset)
        cat(sprintf(", peak %.0f MiB at n = %d", m$peak_MiB, m$n))
      }
      cat("\n")
    }
  }
  traces <- do.call(rbind, traces)
  runs <- do.call(rbind, runs)
  mem <- do.call(rbind, mem)
  if (!is.null(rerun)) {
    # replace the rerun (dataset, solver) pairs in the previous results
    if (is.null(old$summary$cpu_share)) old$summary$cpu_share <- NA_real_
    key <- function(d) paste0(d$dataset, ":", d$solver)
    keep <- function(d) d[!key(d) %in% rerun, , drop = FALSE]
    drop_cols <- c("target", "seconds_to_target", "peak_MiB_small",
                   "peak_MiB")
    old_runs <- keep(old$summary)
    old_runs <- old_runs[, setdiff(names(old_runs), drop_cols)]
    ord <- function(d) d[order(match(d$dataset, names(sets)),
                               match(d$solver, names(solver_specs))), ]
    runs <- ord(rbind(old_runs, runs))
    traces <- ord(rbind(keep(old$traces), traces))
    mem <- ord(rbind(keep(old$memory), mem))
    rownames(runs) <- rownames(traces) <- rownames(mem) <- NULL
  }
  # summary: time to the best final metric of the full-KRR solvers
  runs$target <- NA_real_
  runs$seconds_to_target <- NA_real_
  for (ds in unique(runs$dataset)) {
    i <- runs$dataset == ds
    full <- i & !runs$solver %in% c("falkon", "eigenpro3")
    tgt <- if (metric[[ds]] == "accuracy") max(runs$final_metric[full]) else
      min(runs$final_metric[full])
    runs$target[i] <- tgt
    for (k in which(i)) {
      runs$seconds_to_target[k] <- time_to_target(
        traces[traces$dataset == ds & traces$solver == runs$solver[k], ],
        tgt, metric[[ds]])
    }
  }
  pk <- function(ds, s, nn) {
    v <- mem$peak_MiB[mem$dataset == ds & mem$solver == s & mem$n == nn]
    if (length(v)) v[1L] else NA_real_
  }
  runs$peak_MiB_small <- mapply(pk, runs$dataset, runs$solver, n_small)
  runs$peak_MiB <- mapply(pk, runs$dataset, runs$solver, n)
  meta <- list(
    date = format(started, "%Y-%m-%d %H:%M UTC", tz = "UTC"),
    machine = sprintf("%s, %d cores, CPU only", cpu, parallel::detectCores()),
    threads = askotch_threads(), n = n, n_small = n_small, n_test = 2000,
    budget = budget, loadavg_start = load0,
    loadavg_end = readLines("/proc/loadavg"),
    R = R.version.string,
    askotch = format(utils::packageVersion("askotch")),
    command = "Rscript inst/bench/bench_family.R",
    wall_minutes = as.numeric(difftime(Sys.time(), started, units = "mins")))
  if (!is.null(rerun)) {
    meta <- old$meta
    meta$reruns <- c(meta$reruns, sprintf(
      "%s rerun at %s (load average %s -> %s, %.1f min)",
      paste(rerun, collapse = ", "),
      format(started, "%Y-%m-%d %H:%M UTC", tz = "UTC"), load0,
      readLines("/proc/loadavg"),
      as.numeric(difftime(Sys.time(), started, units = "mins"))))
  }
  res <- list(meta = meta, summary = runs, traces = traces, memory = mem)
  saveRDS(res, out_file, compress = "xz")
  cat(sprintf("\nwrote %s (%.0f KB) in %.1f min\n\n", out_file,
              file.size(out_file) / 1024, meta$wall_minutes))
  tab <- runs[, c("dataset", "solver", "passes", "final_metric",
                  "best_metric", "seconds_to_target", "resid_est", "relres",
                  "peak_MiB_small", "peak_MiB")]
  names(tab)[9:10] <- c(sprintf("MiB_n%d", n_small), sprintf("MiB_n%d", n))
  print(tab, digits = 4, row.names = FALSE)
  invisible(res)
}

args <- commandArgs(TRUE)
if (length(args) >= 1L && args[1L] == "child") {
  run_child(args[2L], args[3L], as.numeric(args[4L]), args[5L] == "1",
            args[6L])
} else {
  main(args)
}
