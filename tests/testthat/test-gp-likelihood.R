# The GP marginal likelihood, its gradient, edf, GCV and LOO against closed
# forms written here in base R (solve(), chol(), determinant()) from the
# kernel formulas of ?kernels (oracle_kernel() in helper-oracle.R).

# d k / d log sigma of each kernel as a function of the scaled distance,
# written from the formulas: with u the kernel's argument
oracle_dk_dlogsigma <- function(x, kernel, s) {
  K <- oracle_kernel(x, x, kernel, s)
  if (kernel == "laplace") {
    d1 <- as.matrix(stats::dist(x, "manhattan"))
    return(K * d1 / s)
  }
  d <- as.matrix(stats::dist(x))
  switch(kernel,
         rbf = K * d^2 / s^2,
         matern12 = K * d / s,
         matern32 = {u <- sqrt(3) * d / s; u^2 * exp(-u)},
         matern52 = {u <- sqrt(5) * d / s; u^2 * (1 + u) / 3 * exp(-u)})
}

# d K / d log ell_j for x / ell (the points given already scaled): the
# isotropic derivative times D_j^2 / d^2 (L2) or |D_j| / d_1 (L1)
oracle_dk_dlogell <- function(x, kernel, s, j) {
  dK <- oracle_dk_dlogsigma(x, kernel, s)
  Dj <- abs(outer(x[, j], x[, j], "-"))
  if (kernel == "laplace") {
    tot <- as.matrix(stats::dist(x, "manhattan"))
    frac <- ifelse(tot > 0, Dj / tot, 0)
  } else {
    tot <- as.matrix(stats::dist(x))^2
    frac <- ifelse(tot > 0, Dj^2 / tot, 0)
  }
  dK * frac
}

# -n/2 log(2 pi s2) - n/2 - 1/2 log det A, s2 = y^T A^{-1} y / n, and the
# gradient n/2 a^T dA a / (y^T a) - 1/2 tr(A^{-1} dA), per output column
oracle_loglik <- function(K, Y, lambda, dKs) {
  Y <- as.matrix(Y)
  n <- nrow(K)
  A <- K + lambda * diag(n)
  Ai <- solve(A)
  ld <- as.numeric(determinant(A, logarithm = TRUE)$modulus)
  ll <- 0
  g <- numeric(length(dKs) + 1L)
  for (c in seq_len(ncol(Y))) {
    y <- Y[, c]
    a <- Ai %*% y
    yAy <- sum(y * a)
    ll <- ll - n / 2 * log(2 * pi * yAy / n) - n / 2 - ld / 2
    dAs <- c(dKs, list(lambda * diag(n)))
    g <- g + vapply(dAs, function(dA)
      n / 2 * drop(t(a) %*% dA %*% a) / yAy - sum(diag(Ai %*% dA)) / 2, 0)
  }
  list(loglik = ll, gradient = g)
}

test_that("the exact log likelihood and its gradient match the closed forms", {
  d <- make_regression(120, p = 3, seed = 11)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  yc <- d$y - mean(d$y)
  for (k in all_kernels) {
    s <- 1.7
    lam <- 0.03
    got <- krr_loglik(d$x, d$y, kernel = k, bandwidth = s, lambda = lam,
                      threads = 1)
    K <- oracle_kernel(xs, xs, k, s)
    ref <- oracle_loglik(K, yc, lam, list(oracle_dk_dlogsigma(xs, k, s)))
    expect_lt(abs(got$loglik - ref$loglik) / abs(ref$loglik), 1e-8)
    expect_lt(rel_err(got$gradient, ref$gradient), 1e-8)
    expect_named(got$gradient, c("log_bandwidth", "log_lambda"))
    # ARD: length scales per column, bandwidth 1
    ell <- c(0.8, 1.5, 2.5)
    got <- krr_loglik(d$x, d$y, kernel = k, length_scales = ell, lambda = lam,
                      threads = 1)
    xl <- sweep(xs, 2, ell, "/")
    K <- oracle_kernel(xl, xl, k, 1)
    ref <- oracle_loglik(K, yc, lam, lapply(1:3, function(j)
      oracle_dk_dlogell(xl, k, 1, j)))
    expect_lt(abs(got$loglik - ref$loglik) / abs(ref$loglik), 1e-8)
    expect_lt(rel_err(got$gradient, ref$gradient), 1e-8)
    expect_length(got$gradient, 4L)
  }
})

test_that("the likelihood's Cholesky factor is chol()'s, on any thread count", {
  # above 512 rows the compiled factor runs in panels (linalg/chol.c)
  set.seed(5)
  n <- 700
  x <- matrix(runif(2 * n), n)
  A <- exp(-as.matrix(stats::dist(x))^2 / 0.5) + diag(1e-4, n)
  native_chol <- askotch:::native_chol
  R1 <- native_chol(A, 1L)
  expect_lt(max(abs(R1 - chol(A))), 1e-10 * max(abs(R1)))
  expect_true(all(R1[lower.tri(R1)] == 0))
  expect_identical(native_chol(A, 2L), R1)
  # not positive definite (an indefinite diagonal entry or a NaN): NULL
  B <- A
  B[n, n] <- -1
  expect_null(native_chol(B, 1L))
  B[n, n] <- NaN
  expect_null(native_chol(B, 2L))
  expect_null(native_chol(-diag(3), 1L))
  # the likelihood there: -Inf, no gradient
  k <- askotch:::new_kernel("rbf", "ml")
  k$bandwidth <- 1
  v <- askotch:::gp_loglik_exact(x[1:3, ], matrix(1:3 - 2), k, -2, threads = 1L)
  expect_identical(v$loglik, -Inf)
  # and where K + lambda I is singular to working precision (two points
  # 2e-8 apart, lambda below n eps: the factor exists, its last pivot is
  # rounding): -Inf, not the rounding's determinant
  xd <- rbind(x[1:20, ], x[1, ] + 2e-8)
  yd <- matrix(sin(3 * xd[, 1]))
  Kd <- askotch:::kernel_mat(xd, xd, k, 1L) + diag(1e-18, 21)
  expect_false(is.null(native_chol(Kd, 1L)))
  expect_identical(askotch:::gp_loglik_exact(xd, yd, k, 1e-18, threads = 1L)$loglik, -Inf)
  expect_true(is.finite(askotch:::gp_loglik_exact(xd, yd, k, 1e-6, threads = 1L)$loglik))
})

test_that("several outputs add their likelihoods (one signal variance each)", {
  d <- make_regression(80, p = 2, seed = 3)
  Y <- cbind(d$y, cos(3 * d$x[, 1]) + rnorm(80, sd = 0.2))
  got <- krr_loglik(d$x, Y, bandwidth = 1, lambda = 0.1, threads = 1)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", 1)
  ref <- oracle_loglik(K, scale(Y, scale = FALSE), 0.1,
                       list(oracle_dk_dlogsigma(xs, "rbf", 1)))
  expect_lt(abs(got$loglik - ref$loglik) / abs(ref$loglik), 1e-8)
  expect_lt(rel_err(got$gradient, ref$gradient), 1e-8)
})

test_that("the search's whitening is the average information of the closed forms", {
  ll <- getFromNamespace("gp_loglik_exact", "askotch")
  stat <- getFromNamespace("kernel_stat_matrix", "askotch")
  d <- make_regression(90, p = 3, seed = 5)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  Y <- cbind(d$y - mean(d$y), cos(2 * d$x[, 1]))
  Y[, 2] <- Y[, 2] - mean(Y[, 2])
  white <- getFromNamespace("gp_whitening", "askotch")
  lam <- 0.05
  for (k in c("rbf", "matern32")) {
    s <- 1.3
    # S_ij = n / (2 Q) (u_i' A^{-1} u_j - (u_i' a)(u_j' a) / Q) per output,
    # u_i = dA_i a, a = A^{-1} y, Q = y' a
    S_of <- function(K, dKs) {
      A <- K + lam * diag(nrow(K))
      Ai <- solve(A)
      Reduce(`+`, lapply(1:2, function(c) {
        a <- Ai %*% Y[, c]
        Q <- sum(Y[, c] * a)
        U <- sapply(c(dKs, list(lam * diag(nrow(K)))), function(M) M %*% a)
        ua <- drop(crossprod(U, a))
        nrow(K) / (2 * Q) * (crossprod(U, Ai %*% U) - tcrossprod(ua) / Q)
      }))
    }
    kern <- askotch:::new_kernel(k, "ml")
    kern$bandwidth <- s
    S <- S_of(oracle_kernel(xs, xs, k, s), list(oracle_dk_dlogsigma(xs, k, s)))
    # from the likelihood's own factor, dK from the points and from the
    # isotropic statistics
    v0 <- ll(xs, Y, kern, lam, threads = 1L)
    for (tstat in list(NULL, stat(xs, "L2"))) {
      v <- ll(xs, Y, kern, lam, threads = 1L, tstat = tstat, ai = TRUE)
      # the same likelihood and gradient whether K and the contraction come
      # from the points or from their distances
      expect_equal(v[c("loglik", "gradient")], v0[c("loglik", "gradient")], tolerance = 1e-10)
      expect_lt(max(abs(v$ai - S)), 1e-9 * max(abs(S)))
      W <- white(v$ai)
      expect_lt(max(abs(crossprod(W, S %*% W) - diag(2))), 1e-8)
    }
    # not with a mean function
    tr <- list(F = cbind(1, xs[, 1]), reml = FALSE)
    expect_null(ll(xs, Y, kern, lam, threads = 1L, trend = tr, ai = TRUE)$ai)
    # ARD: one scale per column
    ell <- c(0.7, 1.4, 2.2)
    xl <- sweep(xs, 2, ell, "/")
    kern$bandwidth <- 1
    W <- white(ll(xl, Y, kern, lam, ard = TRUE, threads = 1L, ai = TRUE)$ai)
    S <- S_of(oracle_kernel(xl, xl, k, 1), lapply(1:3, function(j) oracle_dk_dlogell(xl, k, 1, j)))
    expect_lt(max(abs(crossprod(W, S %*% W) - diag(4))), 1e-8)
  }
})

test_that("the whitened search reaches the plain search's optimum, in fewer evaluations", {
  d <- make_regression(300, p = 4, seed = 8)
  fit_both <- function(...) {
    old <- options(askotch.ml_whiten = FALSE)
    on.exit(options(old))
    plain <- krr(d$x, d$y, ..., threads = 1)
    options(askotch.ml_whiten = TRUE)
    list(plain = plain, white = krr(d$x, d$y, ..., threads = 1))
  }
  for (args in list(list(kernel = "rbf", bandwidth = "ml"),
                    list(kernel = "matern32", bandwidth = "ml"))) {
    f <- do.call(fit_both, args)
    ll <- vapply(f, function(z) as.numeric(logLik(z)), 0)
    # the same maximum (L-BFGS-B's stopping rule: to about 1e-8 relative)
    expect_lt(abs(ll[["white"]] - ll[["plain"]]), 1e-6 * abs(ll[["plain"]]))
    expect_lt(f$white$tuning$optim$evaluations, f$plain$tuning$optim$evaluations)
  }
  # a search that stops on the flat continuation beyond a bound (here the
  # bandwidth's lower one, from the median start) is redone plainly: the
  # better optimum of the two (draw 39 of the coverage test's simulation)
  set.seed(15)
  for (r in 1:39) {
    x <- runif(150, 0, 20)
    K <- exp(-outer(x, x, "-")^2 / 2)
    y <- drop(t(chol(2 * (K + diag(0.1, 150)))) %*% rnorm(150)) + 3
  }
  g <- krr(x, y, kernel = "rbf", bandwidth = "ml", standardize = FALSE, threads = 1)
  old <- options(askotch.ml_whiten = FALSE)
  h <- krr(x, y, kernel = "rbf", bandwidth = "ml", standardize = FALSE, threads = 1)
  options(old)
  expect_gte(as.numeric(logLik(g)), as.numeric(logLik(h)) - 1e-6)
  expect_gt(g$kernel$bandwidth, 0.5)
})

test_that("logLik, edf, GCV, LOO, deviance and nobs of a fit match the closed forms", {
  d <- make_regression(200, p = 3, seed = 5)
  for (k in c("rbf", "matern32")) {
    fit <- krr(d$x, d$y, kernel = k, bandwidth = 2, lambda = 0.05,
               solver = "cholesky", threads = 1)
    sc <- oracle_scale(d$x)
    xs <- scale(d$x, sc$center, sc$scale)
    yc <- d$y - mean(d$y)
    n <- 200
    K <- oracle_kernel(xs, xs, k, 2)
    H <- K %*% solve(K + 0.05 * diag(n))
    r <- drop(yc - H %*% yc)
    edf <- sum(diag(H))
    gcv <- mean(r^2) / (1 - edf / n)^2
    loo <- mean((r / (1 - diag(H)))^2)
    ref <- oracle_loglik(K, yc, 0.05, list())
    ll <- logLik(fit)
    expect_lt(abs(as.numeric(ll) - ref$loglik) / abs(ref$loglik), 1e-8)
    # lambda and the bandwidth were given: df = the mean + the signal variance
    expect_equal(attr(ll, "df"), 2)
    expect_equal(attr(ll, "nobs"), n)
    expect_equal(AIC(fit), -2 * ref$loglik + 2 * 2, tolerance = 1e-8)
    expect_equal(BIC(fit), -2 * ref$loglik + log(n) * 2, tolerance = 1e-8)
    expect_equal(nobs(fit), n)
    expect_lt(abs(deviance(fit) - sum(r^2)) / sum(r^2), 1e-8)
    st <- summary(fit)$model
    expect_lt(abs(st[["Effective degrees of freedom"]] - edf) / edf, 1e-8)
    stats <- getFromNamespace("gp_fit_stats", "askotch")(fit)
    expect_lt(abs(stats$edf - edf) / edf, 1e-8)
    expect_lt(abs(stats$gcv - gcv) / gcv, 1e-8)
    expect_lt(abs(stats$loo - loo) / loo, 1e-8)
    # the signal variance s^2 = y^T A^{-1} y / n
    s2 <- sum(yc * solve(K + 0.05 * diag(n), yc)) / n
    expect_lt(abs(st[["Signal variance (s^2, ML)"]] - s2) / s2, 1e-6)
  }
})

test_that("logLik refuses fits whose model is not the GP one", {
  d <- make_regression(60, p = 2, seed = 2)
  fit <- krr(d$x, d$y, lambda = 1, solver = falkon(centers = 20), seed = 1,
             threads = 1)
  expect_error(logLik(fit), class = "askotch_error_input")
  expect_false(any(c("Log marginal likelihood", "Effective degrees of freedom")
                   %in% names(summary(fit)$model)))
})

test_that("the stochastic log determinant and edf are within their error bound", {
  skip_on_cran()
  set.seed(21)
  n <- 1500
  x <- matrix(runif(n * 3, -1, 1), n)
  y <- sin(2 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1)
  lam <- 0.01
  st <- krr_loglik(x, y, bandwidth = 1, lambda = lam, method = "stochastic",
                   probes = 30, rank = 200, seed = 4, threads = 1)
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", 1)
  A <- K + lam * diag(n)
  R <- chol(A)
  ld <- 2 * sum(log(diag(R)))
  yc <- y - mean(y)
  Ai <- chol2inv(R)
  edf <- n - lam * sum(diag(Ai))
  # documented bound: |error| <= 3 se (the quadrature error is negligible
  # at convergence), and the preconditioner makes se small
  expect_lt(abs(st$logdet - ld), 3 * st$logdet_se + 1e-8 * abs(ld))
  expect_lt(st$logdet_se / abs(ld), 1e-3)
  expect_lt(abs(st$edf - edf), 3 * st$edf_se + 1e-8 * edf)
  ex <- krr_loglik(x, y, bandwidth = 1, lambda = lam, method = "exact",
                   threads = 1)
  expect_lt(abs(st$loglik - ex$loglik), 3 * st$se + 1e-6 * abs(ex$loglik))
  # the stochastic gradient (Hutchinson traces) near the exact one
  expect_lt(rel_err(st$gradient, ex$gradient), 0.02)
})

test_that("above the exact size, summary() and logLik() use the stochastic estimates", {
  d <- make_regression(300, p = 2, seed = 6)
  fit <- krr(d$x, d$y, bandwidth = 1, lambda = 0.05, threads = 1, seed = 2)
  ex <- getFromNamespace("gp_fit_stats", "askotch")(fit)
  old <- options(askotch.tune_exact_max_n = 100)
  on.exit(options(old), add = TRUE)
  st <- getFromNamespace("gp_fit_stats", "askotch")(fit)
  expect_identical(st$method, "stochastic")
  ll <- logLik(fit)
  expect_lt(abs(as.numeric(ll) - ex$loglik), 3 * attr(ll, "se") + 1e-8)
  # GCV from the estimated edf; no LOO
  expect_lt(abs(st$edf - ex$edf) / ex$edf, 0.01)
  expect_lt(abs(st$gcv - ex$gcv) / ex$gcv, 0.01)
  m <- summary(fit)$model
  expect_match(m[["Log marginal likelihood"]], "SLQ estimate")
  expect_null(m[["LOO error"]])
  options(askotch.gp_summary_max_n = 200)
  expect_match(summary(fit)$model[["Log marginal likelihood"]], "not computed")
})

test_that("maximum likelihood agrees with fields::spatialProcess (Matern 3/2)", {
  skip_if_not_installed("fields")
  # spatialProcess() looks its covariance function up by name
  suppressPackageStartupMessages(library(fields))
  set.seed(3)
  n <- 150
  x <- matrix(runif(2 * n), n)
  S <- 2 * fields::Matern(fields::rdist(x), range = 0.2, smoothness = 1.5)
  y <- 5 + drop(t(chol(S + 1e-8 * diag(n))) %*% rnorm(n)) + rnorm(n, sd = 0.3)
  sp <- fields::spatialProcess(x, y, cov.args = list(Covariance = "Matern",
                                                     smoothness = 1.5),
                               mKrig.args = list(m = 1))
  fit <- krr(x, y, kernel = "matern32", bandwidth = "ml", lambda = "ml",
             standardize = FALSE, threads = 1)
  ll_fields <- sp$summary[["lnProfileLike.FULL"]]
  # fields' Matern(range = a, smoothness 3/2) is (1 + d/a) exp(-d/a): our
  # bandwidth sigma = sqrt(3) a; fields' lambda = tau^2 / sigma2 is ours;
  # fields estimates the constant by GLS, we centre by the mean
  expect_lt(abs(as.numeric(logLik(fit)) - ll_fields) / abs(ll_fields), 0.01)
  expect_lt(abs(log(fit$kernel$bandwidth / sqrt(3) / sp$summary[["aRange"]])),
            0.1)
  expect_lt(abs(log(fit$lambda / sp$summary[["lambda"]])), 0.2)
  # fields' likelihood at our hyperparameters is (nearly) its maximum
  mk <- fields::mKrig(x, y, cov.function = "stationary.cov",
                      cov.args = list(Covariance = "Matern", smoothness = 1.5,
                                      aRange = fit$kernel$bandwidth / sqrt(3)),
                      lambda = fit$lambda, m = 1)
  expect_lt(ll_fields - mk$summary[["lnProfileLike.FULL"]], 0.01)
  expect_equal(attr(logLik(fit), "df"), 4)  # mean, s^2, lambda, bandwidth
})

test_that("bad input to krr_loglik() is a classed error naming the argument", {
  d <- make_regression(30, p = 2, seed = 1)
  expect_error(krr_loglik(d$x, d$y), "lambda", class = "askotch_error_input")
  expect_error(krr_loglik(d$x, d$y, lambda = -1), "lambda",
               class = "askotch_error_input")
  expect_error(krr_loglik(d$x, d$y, lambda = 1, length_scales = 1:3),
               "length_scales", class = "askotch_error_input")
  expect_error(krr_loglik(d$x, d$y, lambda = 1, method = "magic"), "method",
               class = "askotch_error_input")
  expect_error(krr_loglik(d$x, d$y, lambda = 1, probes = 1), "probes",
               class = "askotch_error_input")
})

test_that("a search over many columns forms the distances once, to the same maximum", {
  set.seed(7)
  n <- 60
  x <- matrix(rnorm(n * 201), n)
  Y <- matrix(x[, 1] - x[, 2] + rnorm(n, sd = 0.3))
  Y <- Y - mean(Y)
  ss <- getFromNamespace("search_stats", "askotch")
  expect_null(ss(x[, 1:200], "L2"))
  expect_equal(dim(ss(x, "L2")), c(n, n))
  opt <- getFromNamespace("gp_optimise", "askotch")
  kern <- askotch:::new_kernel("matern32", "ml")
  kern$bandwidth <- sqrt(2 * 201)
  a <- opt(x, Y, kern, threads = 1L)
  # the same search with K from the points
  assignInNamespace("search_stats", function(xs, metric) NULL, "askotch")
  on.exit(assignInNamespace("search_stats", ss, "askotch"))
  b <- opt(x, Y, kern, threads = 1L)
  expect_equal(a$optim$loglik, b$optim$loglik, tolerance = 1e-8)
  expect_equal(a$theta, b$theta, tolerance = 1e-3)
  expect_gt(a$optim$evaluations, 2L)
})
