#!/usr/bin/env Rscript
# Time to a useful answer above 1e4 points, side by side with FalkonML
# (Meanti, Carratino, Rosasco and Rudi, NeurIPS 2020; CPU build).
#
# Data: Friedman 1 (p = 10, noise sd 1), n training and 1e4 test points.
# First krr(x, y, kernel = "rbf") with every other default: its
# hyperparameters (maximum likelihood on a subsample, the input scaling) are
# then given to every method below, on the same scaled inputs:
#
#   "askotch krr"       krr() with solver "auto" and the automatic tolerance
#                       (the exact system, (K + lambda I) w = y)
#   "askotch falkon M"  krr(solver = falkon(centers = M)), M uniform centres
#   "FalkonML M"        falkon.Falkon(GaussianKernel(sigma), penalty =
#                       lambda / n, M uniform centres, maxiter = 20), float64
#
# Each repeat runs the methods in turn (the order rotates); each reports its
# seconds (fit only), its test RMSE, and the seconds until its test RMSE was
# first within 0.1% of FalkonML's final one (askotch: the validation trace,
# whose own evaluations are counted in its seconds; FalkonML: a second,
# untimed run with its per-iteration error callback, whose "Elapsed" excludes
# the callback). Both use 2 threads.
#
# Usage (from the package root; FalkonML from its repository, CPU only:
#   FORCE_ONLY_CPU=1 pip install --no-build-isolation <falkon checkout>):
#   Rscript inst/bench/bench_falkonml.R [n] [M, comma separated] [reps]
# Without FalkonML the askotch rows still run.

suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 1e5
Ms <- if (length(args) >= 2L) as.numeric(strsplit(args[2L], ",")[[1L]]) else 3641
reps <- if (length(args) >= 3L) as.integer(args[3L]) else 2L
threads <- 2L
now <- function() proc.time()[["elapsed"]]
# friedman_data(): Friedman 1, n training and 1e4 test points (seed 1)
source(system.file("bench", "friedman.R", package = "askotch"))
d <- friedman_data(n)
cat(sprintf("%s; %s; load: %s\n", format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"),
            sub(".*: *", "", grep("Model name", system("lscpu", intern = TRUE),
                                  value = TRUE)),
            sub(".*load average: ", "", system("uptime", intern = TRUE))))

t0 <- now()
fit0 <- krr(d$x, d$y, kernel = "rbf", seed = 1, threads = threads)
t_default <- now() - t0
rmse <- function(p) sqrt(mean((p - d$yt)^2))
cat(sprintf(paste("krr(x, y, kernel = \"rbf\"), every other default: %.1f s",
                  "(the solver %.1f s), test RMSE %.5f\n  %s\n"),
            t_default, fit0$seconds, rmse(predict(fit0, d$xt)), format(fit0$solver)))
h <- fit0$kernel$bandwidth
lambda <- fit0$lambda
sc <- function(x) sweep(sweep(x, 2L, fit0$center), 2L, fit0$scale, "/")
xs <- sc(d$x)
xts <- sc(d$xt)
yc <- d$y - mean(d$y)
cat(sprintf("hyperparameters: bandwidth %.5g, lambda %.5g (FalkonML penalty %.5g)\n\n",
            h, lambda, lambda / n))

# FalkonML's input files
dir <- tempfile("falkonml")
dir.create(dir)
writeBin(as.vector(t(xs)), file.path(dir, "xtr.bin"))
writeBin(yc, file.path(dir, "ytr.bin"))
writeBin(as.vector(t(xts)), file.path(dir, "xte.bin"))
writeBin(d$yt - mean(d$y), file.path(dir, "yte.bin"))
writeLines(paste(format(c(n, 10, 1e4), scientific = FALSE, trim = TRUE), collapse = " "),
           file.path(dir, "dims.txt"))
# (R's LD_LIBRARY_PATH, which puts the system's library folder first, can
# make a Python built with a shared libpython load another one, without its
# site-packages: the children run without it)
Sys.unsetenv("LD_LIBRARY_PATH")
py <- Sys.getenv("ASKOTCH_PYTHON", "python3")
peer <- system.file("bench", "falkonml_peer.py", package = "askotch")
if (!nzchar(peer)) peer <- "inst/bench/falkonml_peer.py"
has_falkon <- system2(py, c("-c", shQuote("import falkon")), stdout = FALSE,
                      stderr = FALSE) == 0L
if (!has_falkon) cat("FalkonML is not installed: its rows are skipped\n")

run_falkonml <- function(M, trace = FALSE) {
  env <- if (trace) "ASKOTCH_FALKON_TRACE=1" else character()
  out <- system2(py, c(peer, dir, h, lambda / n, M, 20, threads), stdout = TRUE,
                 stderr = FALSE, env = env)
  main <- grep("^falkonml seconds", out, value = TRUE)
  v <- as.numeric(strsplit(main, " ")[[1L]][c(3L, 5L)])
  it <- grep("^Iteration", out, value = TRUE)
  list(seconds = v[1L], rmse = v[2L],
       trace = if (trace) data.frame(
         seconds = as.numeric(sub(".*Elapsed ([0-9.]+)s.*", "\\1", it)),
         rmse = as.numeric(sub(".*rmse: ", "", it))))
}
run_askotch <- function(solver) {
  t0 <- now()
  f <- krr(xs, yc, kernel = "rbf", bandwidth = h, lambda = lambda, standardize = FALSE,
           solver = solver, seed = 1, threads = threads,
           validation = list(x = xts, y = d$yt - mean(d$y)))
  secs <- now() - t0
  tr <- f$trace[!is.na(f$trace$validation), ]
  list(seconds = secs, rmse = rmse(predict(f, xts) + mean(d$y)),
       trace = data.frame(seconds = tr$seconds, rmse = tr$validation),
       info = format(f$solver))
}

methods <- c(list("askotch krr" = function() run_askotch("auto")),
             stats::setNames(lapply(Ms, function(M) function() run_askotch(falkon(centers = M))),
                             paste("askotch falkon", Ms)),
             if (has_falkon)
               stats::setNames(lapply(Ms, function(M) function() run_falkonml(M)),
                               paste("FalkonML", Ms)))
res <- list()
for (r in seq_len(reps)) {
  ord <- (seq_along(methods) + r - 2L) %% length(methods) + 1L
  for (k in ord) {
    nm <- names(methods)[k]
    v <- methods[[k]]()
    res[[length(res) + 1L]] <- list(method = nm, rep = r, seconds = v$seconds, rmse = v$rmse,
                                    trace = v$trace, info = v$info)
    cat(sprintf("  rep %d %-20s %7.1f s  RMSE %.5f\n", r, nm, v$seconds, v$rmse))
  }
}
ftr <- if (has_falkon) lapply(Ms, function(M) run_falkonml(M, trace = TRUE)$trace)

# the target: FalkonML's final test RMSE at the largest M (median over the
# repeats), else the exact solution's
target_of <- function(nm) median(vapply(Filter(function(x) x$method == nm, res),
                                        function(x) x$rmse, 0))
target <- if (has_falkon) target_of(paste("FalkonML", max(Ms))) else target_of("askotch krr")
reach <- function(tr) {
  k <- which(tr$rmse <= target * 1.001)
  if (length(k)) tr$seconds[k[1L]] else NA_real_
}
spread <- function(v) sprintf("%.1f (%.1f-%.1f)", median(v), min(v), max(v))
cat(sprintf("\nn = %g, p = 10, %d repeats; target test RMSE %.5f (+0.1%%)\n\n", n, reps,
            target))
cat("| method | seconds, median (min-max) | test RMSE | seconds to the target |\n")
cat("|---|---|---|---|\n")
for (nm in names(methods)) {
  rs <- Filter(function(x) x$method == nm, res)
  secs <- vapply(rs, function(x) x$seconds, 0)
  to <- if (startsWith(nm, "FalkonML")) {
    reach(ftr[[match(sub("FalkonML ", "", nm), as.character(Ms))]])
  } else median(vapply(rs, function(x) reach(x$trace), 0))
  cat(sprintf("| %s | %s | %.5f | %s |\n", nm, spread(secs),
              median(vapply(rs, function(x) x$rmse, 0)),
              if (is.na(to)) "not reached" else sprintf("%.1f", to)))
}
cat(sprintf("\naskotch krr's solver: %s\n", res[[which(vapply(res, function(x)
  x$method == "askotch krr", TRUE))[1L]]]$info))
unlink(dir, recursive = TRUE)
