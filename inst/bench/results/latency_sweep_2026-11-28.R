suppressPackageStartupMessages(library(askotch))
set.seed(1)
n <- 8000
x <- matrix(rnorm(n * 5), n)
y <- sin(x[, 1]) + 0.1 * rnorm(n)
cases <- list(
  pcg_rank7500_single = list(solver = pcg(rank = 7500), precision = "single"),
  pcg_rank8000_double = list(solver = pcg(rank = 8000), precision = "double"),
  falkon_6000 = list(solver = falkon(centers = 6000), precision = "double"),
  greedy_4000 = list(solver = pcg("greedy_cholesky", rank = 4000), precision = "double"),
  eigenpro3 = list(solver = eigenpro(version = 3), precision = "double")
)
for (nm in names(cases)) {
  cs <- cases[[nm]]
  for (L in c(1, 3, 6)) {
    t0 <- proc.time()[["elapsed"]]
    res <- tryCatch({
      setTimeLimit(elapsed = L, transient = TRUE)
      krr(x, y, solver = cs$solver, lambda = 1e-3, tol = 0, max_passes = 1, time_limit = 600,
          threads = 2, seed = 1, precision = cs$precision)
      "done"
    }, error = function(e) if (grepl("time limit", conditionMessage(e))) "stopped" else
      substr(conditionMessage(e), 1, 80), finally = setTimeLimit())
    s <- proc.time()[["elapsed"]] - t0
    cat(sprintf("%-22s L = %g: %s after %.2f s (latency %.2f)\n", nm, L, res, s, s - L))
  }
}
