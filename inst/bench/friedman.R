# Friedman's first function (Friedman 1991; p = 10 uniform inputs, five of
# them used), for the benchmark scripts: friedman_data(n) draws n training
# and nt test points with noise sd 1 from the seed (the same draws in every
# script that asks for the same n).
friedman <- function(m) {
  x <- matrix(runif(m * 10), m, 10)
  list(x = x, f = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 +
         10 * x[, 4] + 5 * x[, 5])
}
friedman_data <- function(n, nt = 1e4, seed = 1) {
  set.seed(seed)
  tr <- friedman(n)
  y <- tr$f + rnorm(n)
  te <- friedman(nt)
  list(x = tr$x, y = y, xt = te$x, yt = te$f + rnorm(nt))
}
