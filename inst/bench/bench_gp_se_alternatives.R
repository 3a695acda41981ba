#!/usr/bin/env Rscript
# Standard errors at n = 5000, p = 10 (Friedman 1), 300 test points, against
# the exact variance (Cholesky): the Nystrom bracket's lower end (what
# predict() reports), the DTC / subset-of-regressors variance from the same
# pivots, and the bracket clamped; then (100 test points) the variance given
# only the m nearest training points, an upper bound on the exact one.
#   R_LIBS=/tmp/lib Rscript inst/bench/bench_gp_se_alternatives.R
suppressPackageStartupMessages(library(askotch))
# the data (seed 1) and nt test points, and for one lambda the exact fit, the
# exact unit-scale variance and the standardised points
make_data <- function(nt) {
  set.seed(1); n <- 5000; p <- 10
  x <- matrix(runif(n*p), n, p); y <- 10*sin(pi*x[,1]*x[,2]) + 20*(x[,3]-.5)^2 + 10*x[,4] + 5*x[,5] + rnorm(n)
  list(x = x, y = y, xt = matrix(runif(nt*p), nt, p), n = n, p = p)
}
exact_at <- function(d, lam) {
  fit <- krr(d$x, d$y, lambda = lam, solver = cholesky())
  list(fit = fit, ex = predict(fit, d$xt, se.fit = TRUE, method = "exact")$se.fit^2 /
         askotch:::gp_signal_var(fit),
       xs = askotch:::gp_xs(fit), xts = askotch:::new_features(fit, d$xt)$xs)
}
d <- make_data(300); n <- d$n; p <- d$p; x <- d$x; y <- d$y; xt <- d$xt
for (lam in c(0.006, 0.05)) {
e <- exact_at(d, lam); fit <- e$fit; ex <- e$ex; xs <- e$xs; xts <- e$xts
for (r in c(100, 300, 1000)) {
  options(askotch.gp_rank = r)
  ny <- predict(fit, xt, se.fit = TRUE, method = "nystrom")$se.fit
  rng <- attr(ny, "var_range") / askotch:::gp_signal_var(fit)
  pc <- .Call(askotch:::ffi_pivoted_cholesky, xs, as.integer(fit$kernel$code), fit$kernel$bandwidth, NULL, as.integer(r), 0, 1e-12, 0L)
  j <- pc$rank; L <- pc$L[, 1:j]; S <- pc$pivots
  sv <- svd(L, nu = 0, nv = j)
  KS <- askotch:::gp_kmat(fit, xs[S, , drop = FALSE], xts)
  cc <- forwardsolve(L[S, ], KS)
  z <- crossprod(sv$v, cc)
  q <- colSums(z^2 * sv$d^2 / (sv$d^2 + lam))
  h <- drop(crossprod(svd(L, nu = j, nv = 0)$u, rep(1, n)))
  t <- colSums(h * sv$d * z / (sv$d^2 + lam))
  c0 <- sum(askotch:::gp_kmat(fit, xs, xs)) + n * lam
  dtc <- 1 - q + (1 - t)^2 * c0 / n^2
  cl <- pmin(pmax(dtc, rng[, "lower"]), rng[, "upper"])
  f <- function(v) sprintf("%.3f", median(abs(v/ex - 1)))
  cat(sprintf("lam %.3g r %d: median rel err lower %s  dtc %s  clamped %s  | frac lower==0 %.2f  bracket width med %.3g, ex med %.3g\n",
      lam, r, f(rng[, "lower"]), f(dtc), f(cl), mean(rng[,"lower"] <= 0), median(rng[,"upper"]-rng[,"lower"]), median(ex)))
}}
d <- make_data(100); n <- d$n; p <- d$p; x <- d$x; y <- d$y; xt <- d$xt
for (lam in c(0.006, 0.05)) {
e <- exact_at(d, lam); fit <- e$fit; ex <- e$ex; xs <- e$xs; xts <- e$xts
K <- askotch:::gp_kmat(fit, xs, xs); diag(K) <- diag(K) + lam; R <- chol(K)
Kx <- askotch:::gp_kmat(fit, xs, xts); gpv <- 1 - colSums(backsolve(R, Kx, transpose = TRUE)^2)
cat(sprintf("lam %.3g: exact (with mean term) med %.4g, GP part med %.4g, bw %.3g\n", lam, median(ex), median(gpv), fit$kernel$bandwidth))
for (m in c(200, 500, 1000, 2000)) {
  v <- sapply(seq_len(nrow(xts)), function(i) {
    d2 <- colSums((t(xs) - xts[i, ])^2); T <- order(d2)[1:m]
    KT <- K[T, T]; kT <- Kx[T, i]
    1 - sum(kT * solve(KT, kT))
  })
  cat(sprintf("  m %d: median rel err local NN %.3f, max %.3f\n", m, median(v/gpv - 1), max(v/gpv - 1)))
}}
