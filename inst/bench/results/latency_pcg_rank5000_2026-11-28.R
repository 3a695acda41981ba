# setTimeLimit latency through pcg(rank = 5000)'s setup in double (its
# 5000 x 5000 eigensystem, all pairs: the polled divide and conquer of
# session 18), n = 8000, p = 5, 2 threads; limits on a 1 s grid across the fit,
# or on the given limits (comma-separated, e.g. 1,2,4,6,8,12,16,20,25: the
# re-run after the fix, without the whole-fit run first).
#   R_LIBS=/tmp/lib Rscript latency_pcg_rank5000.R [limits]
suppressPackageStartupMessages(library(askotch))
set.seed(1)
n <- 8000
x <- matrix(rnorm(n * 5), n)
y <- sin(x[, 1]) + 0.1 * rnorm(n)
cat("uptime:", system("uptime", intern = TRUE), "\n")
lat_of <- function(L) {
  t0 <- proc.time()[["elapsed"]]
  res <- tryCatch({
    setTimeLimit(elapsed = L, transient = TRUE)
    krr(x, y, solver = pcg(rank = 5000), lambda = 1e-3, tol = 0, max_passes = 1,
        time_limit = 600, threads = 2, seed = 1)
    "done"
  }, error = function(e) if (grepl("time limit", conditionMessage(e))) "stopped" else
    conditionMessage(e), finally = setTimeLimit())
  list(res = res, s = proc.time()[["elapsed"]] - t0)
}
given <- commandArgs(TRUE)[1L]
if (is.na(given)) {
  full <- lat_of(Inf)
  cat(sprintf("whole fit (setup + 1 pass) %.2f s (%s)\n", full$s, full$res))
  grid <- seq(1, full$s, by = 1)
} else {
  grid <- as.numeric(strsplit(given, ",", fixed = TRUE)[[1L]])
}
lat <- vapply(grid, function(L) {
  r <- lat_of(L)
  cat(sprintf("L = %5.1f: %s after %.2f s, latency %.3f s\n", L, r$res, r$s, r$s - L))
  if (r$res == "stopped") r$s - L else NA_real_
}, 0)
cat(sprintf("limits %g..%g s: latency median %.3f, max %.3f s (at L = %g); %d of %d stopped\n",
            min(grid), max(grid), median(lat, na.rm = TRUE), max(lat, na.rm = TRUE),
            grid[which.max(lat)], sum(!is.na(lat)), length(grid)))
cat("uptime:", system("uptime", intern = TRUE), "\n")
