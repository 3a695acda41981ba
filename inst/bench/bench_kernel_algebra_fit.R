# A fit with a fixed composite kernel at n above the exact range, with the
# default solver: the time users feel from the composite's kernel products.
#   seasonal  rbf(t) + periodic(t) * rbf(t)                 (a Mauna Loa-style series)
#   separable matern32(lon, lat) * rbf(t)                    (space-time)
# Prints one line per case: seconds, passes, convergence and the RMSE of the fit
# against the noise-free truth.
#
# Rscript inst/bench/bench_kernel_algebra_fit.R [n]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(TRUE)
n <- if (length(args) >= 1) as.integer(args[1]) else 20000L
set.seed(1)
tt <- sort(runif(n, 0, 40))
f1 <- 0.05 * tt + sin(2 * pi * tt) * (1 + 0.3 * sin(tt / 5))
seasonal <- list(x = cbind(t = tt), f = f1,
                 k = kernel_rbf(8, dims = "t") +
                   kernel_periodic(period = 1, bandwidth = 1, dims = "t") *
                   kernel_rbf(15, dims = "t"))
s <- cbind(lon = runif(n), lat = runif(n), t = runif(n, 0, 10))
f2 <- sin(3 * s[, "lon"]) * cos(2 * s[, "lat"]) * sin(s[, "t"])
separable <- list(x = s, f = f2,
                  k = kernel_matern32(0.3, dims = c("lon", "lat")) * kernel_rbf(2, dims = "t"))
cat(sprintf("%s, %s, askotch %s, load %s\n", format(Sys.time()), R.version.string,
            utils::packageVersion("askotch"),
            paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
for (nm in c("seasonal", "separable")) {
  cs <- get(nm)
  y <- cs$f + rnorm(n, sd = 0.1)
  tm <- system.time(fit <- krr(cs$x, y, kernel = cs$k, lambda = 1e-2, standardize = FALSE,
                               threads = 2))[["elapsed"]]
  cat(sprintf("%-9s n = %d  %6.2f s  solver %s  passes %.1f  converged %s  RMSE vs truth %.4f\n",
              nm, n, tm, fit$solver$name, fit$passes, fit$converged,
              sqrt(mean((fitted(fit) - cs$f)^2))))
}
