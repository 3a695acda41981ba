# Benchmark (e): threads on an idle and on a busy machine.
#   krr() with the package defaults (RBF, median bandwidth, askotch(), double)
#   except lambda = 1, tol = 0 and a fixed max_passes, so threads = 1 and
#   threads = 2 do exactly the same iterations; median and spread (min-max)
#   of `reps` timed fits after one untimed warm-up fit per configuration,
#   threads = 1 and 2 interleaved.
#   Data: synthetic smooth regression (p = 5) at n = 500 and 5000, mtcars
#   (mpg ~ ., n = 32) and MASS::Boston (medv ~ ., n = 506) when MASS is
#   installed.
#   Loads: "idle" (nothing started) and "busy" (two CPU-bound `yes >
#   /dev/null` processes started by this script and killed at the end, by
#   their process ids).
#   "capacity": cores' worth of CPU the machine gives two concurrent R
#   busy-loops (2 * time alone / time together; ~2 on a quiet 2-core machine,
#   ~1 when the host or other jobs take one core's worth), measured at the
#   start and at the end.
# Usage: Rscript inst/bench/bench_threads.R [label] [reps] [out.csv] [loads]
#   loads: "idle,busy" (default), "idle" or "busy"
#   e.g. R_LIBS=/tmp/rlib-backend Rscript inst/bench/bench_threads.R after 5
#        OMP_WAIT_POLICY=passive Rscript inst/bench/bench_threads.R after-passive 5 "" busy
# Prints one markdown table; `out.csv` (optional) gets one row per fit.
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
label <- if (length(args) >= 1) args[1] else "run"
reps <- if (length(args) >= 2) as.integer(args[2]) else 5L
out_csv <- if (length(args) >= 3) args[3] else ""
loads <- strsplit(if (length(args) >= 4) args[4] else "idle,busy", ",")[[1]]
wait_policy <- Sys.getenv("OMP_WAIT_POLICY", "default")

loadavg <- function() paste(strsplit(readLines("/proc/loadavg"), " ")[[1]][1:3], collapse = " ")

make_synth <- function(n, p = 5, seed = 1) {
  set.seed(seed)
  x <- matrix(runif(n * p), n, p)
  y <- sin(2 * pi * x[, 1]) + x[, 2]^2 - cos(3 * x[, 3]) * x[, 4] + 0.5 * x[, 5] +
    rnorm(n, sd = 0.1)
  list(x = x, y = y)
}
frame_xy <- function(df, resp) {
  list(x = as.matrix(df[, setdiff(names(df), resp)]), y = df[[resp]])
}

# max_passes per data set: a few tenths of a second to a few seconds per fit
sets <- list(
  list(name = "mtcars", n = 32, passes = 50, data = frame_xy(mtcars, "mpg")),
  list(name = "synthetic", n = 500, passes = 20, data = make_synth(500)),
  list(name = "synthetic", n = 5000, passes = 5, data = make_synth(5000))
)
if (requireNamespace("MASS", quietly = TRUE)) {
  boston <- local({ e <- new.env(); utils::data("Boston", package = "MASS", envir = e); e$Boston })
  sets <- append(sets, list(list(name = "Boston", n = 506, passes = 20,
                                 data = frame_xy(boston, "medv"))), after = 1)
} else {
  message("MASS is not installed: Boston left out")
}

fit_once <- function(s, threads) {
  t0 <- proc.time()
  f <- krr(s$data$x, s$data$y, lambda = 1, max_passes = s$passes, tol = 0, seed = 1,
           threads = threads, progress = FALSE)
  dt <- proc.time() - t0
  c(elapsed = dt[["elapsed"]], cpu = dt[["user.self"]] + dt[["sys.self"]],
    passes = f$passes, iterations = f$iterations)
}

start_busy <- function(k = 2) {
  pids <- integer(0)
  for (i in seq_len(k)) {
    pid <- system("yes > /dev/null 2>&1 & echo $!", intern = TRUE)
    pids <- c(pids, as.integer(pid))
  }
  Sys.sleep(1)
  pids
}
stop_busy <- function(pids) for (p in pids) tools::pskill(p)

capacity <- function() {
  rs <- file.path(R.home("bin"), "Rscript")
  loop <- sprintf("'%s' -e 'x <- 0; for (i in 1:3e7) x <- x + i'", rs)
  t1 <- system.time(system(loop))[["elapsed"]]
  t2 <- system.time(system(sprintf("%s & %s; wait", loop, loop)))[["elapsed"]]
  2 * t1 / t2
}

rows <- list()
run_load <- function(load) {
  la0 <- loadavg()
  for (s in sets) {
    for (th in 1:2) invisible(fit_once(s, th))  # warm-up
    for (r in seq_len(reps)) {
      for (th in 1:2) {  # interleaved, so drift hits both thread counts alike
        v <- fit_once(s, th)
        rows[[length(rows) + 1L]] <<- data.frame(
          label = label, load = load, data = s$name, n = s$n, threads = th, rep = r,
          elapsed = v[["elapsed"]], cpu = v[["cpu"]], passes = v[["passes"]],
          iterations = v[["iterations"]])
      }
    }
  }
  cat(sprintf("load %s: loadavg before %s, after %s\n", load, la0, loadavg()))
}

cat(sprintf("bench_threads %s: %s, askotch %s, %s, %d cores\n", label, format(Sys.time(), "%Y-%m-%d %H:%M %Z"),
            as.character(utils::packageVersion("askotch")), R.version.string,
            parallel::detectCores()))
cat(sprintf("OMP_WAIT_POLICY: %s; loadavg %s; capacity %.2f\n", wait_policy, loadavg(), capacity()))
sfx <- if (wait_policy == "default") "" else paste0(", OMP_WAIT_POLICY=", wait_policy)
if ("idle" %in% loads) run_load(paste0("idle", sfx))
if ("busy" %in% loads) {
  pids <- start_busy(2)
  tryCatch(run_load(paste0("busy (2 x yes)", sfx)), finally = stop_busy(pids))
}
cat(sprintf("end: loadavg %s; capacity %.2f\n", loadavg(), capacity()))

res <- do.call(rbind, rows)
if (nzchar(out_csv)) utils::write.csv(res, out_csv, row.names = FALSE)

fmt <- function(x) sprintf("%.3f (%.3f-%.3f)", stats::median(x), min(x), max(x))
cat("\n| load | data | n | passes (iter) | threads = 1: s median (min-max) | threads = 2: s median (min-max) | 2 vs 1 | CPU-s/elapsed, threads = 2 |\n")
cat("|---|---|---:|---:|---:|---:|---:|---:|\n")
for (ld in unique(res$load)) for (s in sets) {
  a <- res[res$load == ld & res$data == s$name & res$n == s$n & res$threads == 1, ]
  b <- res[res$load == ld & res$data == s$name & res$n == s$n & res$threads == 2, ]
  cat(sprintf("| %s | %s | %d | %g (%d) | %s | %s | %.2fx | %.2f |\n", ld, s$name, s$n,
              a$passes[1], as.integer(a$iterations[1]), fmt(a$elapsed), fmt(b$elapsed),
              stats::median(b$elapsed) / stats::median(a$elapsed),
              stats::median(b$cpu / b$elapsed)))
}
