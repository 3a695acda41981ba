# Posterior draws by simulate(method = "pathwise"): time and accuracy of the
# draws' variance against the exact posterior variance, by the number of
# random features of each draw's prior (each draw has its own features).
# A Friedman-like target on n uniform points in [0, 1]^2 (n = 6000 by
# default: above the exact method's range), the fit's defaults (tuned
# kernel and lambda, PCG), `nsim` draws at 50 new points; "variance ratio":
# the draws' sample variance over the exact predictive variance (mean and
# range over the 50 points; its Monte Carlo sd is sqrt(2 / nsim)).
#
# Rscript inst/bench/bench_simulate.R [n] [nsim] [features, comma separated]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.numeric(args[1]) else 6000
nsim <- if (length(args) >= 2) as.integer(args[2]) else 200L
feats <- if (length(args) >= 3) as.numeric(strsplit(args[3], ",")[[1]]) else c(256, 1024, 4096)
set.seed(1)
x <- matrix(runif(2 * n), n)
y <- sin(6 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.2)
xn <- matrix(runif(100), 50)
t0 <- proc.time()[["elapsed"]]
fit <- krr(x, y, threads = 2)
cat(sprintf("simulate() pathwise, n = %g, %d draws, 50 points (%s); fit %.1f s (%s)\n", n, nsim,
            format(Sys.time()), proc.time()[["elapsed"]] - t0, class(fit$solver)[1]))
ex <- predict(fit, xn, se.fit = TRUE, method = "exact")$se.fit^2
for (M in feats) {
  t0 <- proc.time()[["elapsed"]]
  s <- as.matrix(simulate(fit, nsim = nsim, seed = 1, newdata = xn, method = "pathwise",
                          features = M))
  secs <- proc.time()[["elapsed"]] - t0
  r <- apply(s, 1, stats::var) / ex
  cat(sprintf("features %5g: %6.2f s; variance ratio mean %.3f (range %.2f-%.2f; MC sd %.3f)\n",
              M, secs, mean(r), min(r), max(r), sqrt(2 / nsim)))
}
