# Tu et al.'s block coordinate descent in feature space: bcd().
# Oracles: the exact inducing-point solve written in base R (helper-oracle.R,
# its own kernel formulas) for Nystrom BCD, and ridge regression in the
# package's random features solved by base R's solve() for random-feature
# BCD.  Tolerances: the fits run to tol = 1e-11 (relative residual of the
# normal equations / of the features system); on these well-conditioned
# problems (lambda = 1; bandwidth 0.15 for Nystrom, 0.5-0.7 for random
# features, on standardised 2-d data) that bounds the coefficient error far
# below the 1e-7 asked.  Plain block Gauss-Seidel on the Nystrom normal
# equations is slow when the centres overlap (wider kernels): at bandwidth
# 0.3 with 40 centres in blocks of 10 it is still at 2e-6 after 2000
# passes (60 000 iterations), so the Nystrom tests use narrow kernels.

bcd_data <- function(n = 300, seed = 4) {
  set.seed(seed)
  x <- matrix(runif(2 * n), ncol = 2)
  y <- cbind(sin(4 * x[, 1]) + x[, 2]^2, cos(3 * x[, 2])) + rnorm(2 * n, sd = 0.1)
  list(x = x, y = y)
}

test_that("Nystrom BCD converges to the exact inducing-point solution with the same centres", {
  d <- bcd_data()
  for (kern in c("rbf", "matern32")) {
    fit <- krr(d$x, d$y, kernel = kern, bandwidth = 0.15, lambda = 1,
               solver = bcd("nystrom", p = 30, block_size = 10), seed = 2,
               threads = 1, tol = 1e-11, max_passes = 1e4)
    expect_true(fit$converged)
    expect_equal(length(fit$centers), 30L)
    or <- oracle_inducing(d$x, d$y, d$x[1:30, ], kern, 0.15, 1, fit$centers)
    expect_lt(rel_err(fit$weights, or$a), 1e-7)
    expect_lt(rel_err(predict(fit, d$x[1:30, ]), or$pred), 1e-8)
    expect_equal(fit$solver$blocks, 3L)
    expect_equal(fit$solver$block_size, 10L)
    # the same problem as falkon() with the same seed: the same centres
    fk <- krr(d$x, d$y, kernel = kern, bandwidth = 0.15, lambda = 1,
              solver = falkon(centers = 30), seed = 2, threads = 1, tol = 1e-11)
    expect_identical(fk$centers, fit$centers)
    expect_lt(rel_err(predict(fit, d$x), predict(fk, d$x)), 1e-8)
  }
})

test_that("Nystrom BCD with gamma > 0 solves Tu et al.'s regularised problem", {
  d <- bcd_data()
  lam <- 1; gam <- 0.5
  fit <- krr(d$x, d$y, bandwidth = 0.15, lambda = lam,
             solver = bcd(p = 30, block_size = 10, gamma = gam), seed = 3,
             threads = 1, tol = 1e-11, max_passes = 1e4)
  expect_true(fit$converged)
  xs <- scale(d$x, colMeans(d$x), apply(d$x, 2, sd))
  Knm <- oracle_kernel(xs, xs[fit$centers, ], "rbf", 0.15)
  Yc <- sweep(d$y, 2, colMeans(d$y))
  a <- solve(crossprod(Knm) + lam * Knm[fit$centers, ] + lam * gam * diag(30),
             crossprod(Knm, Yc))
  expect_lt(rel_err(fit$weights, a), 1e-7)
  expect_equal(fit$solver$gamma, gam)
})

test_that("one block (the default for up to 1024 centres) is a direct solve", {
  d <- bcd_data()
  one <- krr(d$x, d$y, bandwidth = 0.5, lambda = 1, solver = bcd(p = 40),
             seed = 2, threads = 1, tol = 1e-11)
  expect_true(one$converged)
  expect_equal(one$solver$block_size, 40L)
  expect_equal(one$solver$blocks, 1L)
  expect_lte(one$iterations, 3L)
  or <- oracle_inducing(d$x, d$y, d$x, "rbf", 0.5, 1, one$centers)
  expect_lt(rel_err(one$weights, or$a), 1e-9)
})

test_that("random-feature BCD converges to ridge regression in the same features", {
  d <- bcd_data()
  M <- 80; lam <- 1
  for (cache in c("yes", "no")) {
    fit <- krr(d$x, d$y, kernel = "matern52", bandwidth = 0.7, lambda = lam,
               solver = bcd("random", p = M, block_size = 20, cache = cache),
               seed = 5, threads = 1, tol = 1e-11, max_passes = 1e4)
    expect_true(fit$converged)
    expect_equal(fit$features, M)
    expect_equal(fit$solver$cached, cache == "yes")
    xs <- askotch:::apply_scaling(d$x, fit$center, fit$scale)
    Z <- .Call(askotch:::ffi_features_apply, xs, diag(M),
               as.integer(fit$kernel$code), as.numeric(fit$kernel$bandwidth),
               M, as.numeric(fit$seed), 1L, 0L, 1L)
    Yc <- sweep(d$y, 2L, colMeans(d$y))
    w <- solve(crossprod(Z) + lam * diag(M), crossprod(Z, Yc))
    expect_equal(dim(fit$weights), c(M, 2L))
    expect_lt(rel_err(fit$weights, w), 1e-8)
    expect_lt(rel_err(predict(fit, d$x[1:25, ]),
                      sweep(Z[1:25, ] %*% w, 2L, colMeans(d$y), "+")), 1e-9)
    expect_lt(rel_err(fitted(fit), sweep(Z %*% w, 2L, colMeans(d$y), "+")), 1e-9)
  }
  # the same as kernel_machine(features = M) solved directly
  km <- kernel_machine(d$x, d$y[, 1], kernel = "matern52", bandwidth = 0.7,
                       lambda = lam, features = M, solver = cholesky(), seed = 5,
                       threads = 1)
  rf <- krr(d$x, d$y[, 1], kernel = "matern52", bandwidth = 0.7, lambda = lam,
            solver = bcd("random", p = M, block_size = 20), seed = 5,
            threads = 1, tol = 1e-11, max_passes = 1e4)
  expect_lt(rel_err(predict(rf, d$x), predict(km, d$x)), 1e-8)
})

test_that("bcd() in single precision converges without NaN", {
  d <- bcd_data()
  for (sp in list(bcd(p = 30, block_size = 10), bcd("random", p = 60, block_size = 20))) {
    fit <- krr(d$x, d$y, bandwidth = 0.15, lambda = 1, solver = sp,
               precision = "single", seed = 2, threads = 1, max_passes = 1e4)
    expect_true(fit$converged)
    expect_true(all(is.finite(fit$weights)))
    dbl <- krr(d$x, d$y, bandwidth = 0.15, lambda = 1, solver = sp, seed = 2,
               threads = 1, tol = 1e-10, max_passes = 1e4)
    expect_lt(rel_err(predict(fit, d$x), predict(dbl, d$x)), 1e-3)
  }
})

test_that("refit() with a new lambda drops the cached block factors", {
  # (random-feature BCD: the same is checked in the C driver, test_features;
  # refit() does not take random-feature fits)
  d <- bcd_data()
  rf <- krr(d$x, d$y, lambda = 1, solver = bcd("random", p = 20), seed = 2,
            threads = 1, keep_state = TRUE)
  expect_error(refit(rf, lambda = 3), class = "askotch_error_input",
               regexp = "random-feature")
  for (sp in list(bcd(p = 30, block_size = 10))) {
    fit <- krr(d$x, d$y, bandwidth = 0.15, lambda = 1, solver = sp, seed = 2,
               threads = 1, tol = 1e-11, max_passes = 1e4, keep_state = TRUE)
    again <- refit(fit, lambda = 3)
    fresh <- krr(d$x, d$y, bandwidth = 0.15, lambda = 3, solver = sp, seed = 2,
                 threads = 1, tol = 1e-11, max_passes = 1e4)
    expect_true(again$converged)
    expect_lt(rel_err(predict(again, d$x), predict(fresh, d$x)), 1e-8)
  }
})

test_that("bcd() options are checked with classed errors naming the argument", {
  expect_error(bcd("exact"), class = "askotch_error_input", regexp = "features")
  expect_error(bcd(p = -3), class = "askotch_error_input", regexp = "`p`")
  expect_error(bcd("random", p = 2.5), class = "askotch_error_input", regexp = "`p`")
  expect_error(bcd("random", gamma = 1), class = "askotch_error_input", regexp = "gamma")
  expect_error(bcd(cache = "yes"), class = "askotch_error_input", regexp = "cache")
  expect_error(bcd(gamma = -1), class = "askotch_error_input", regexp = "gamma")
  expect_error(bcd("random", cache = "sometimes"), class = "askotch_error_input",
               regexp = "cache")
  expect_error(bcd(block_size = 0), class = "askotch_error_input", regexp = "block_size")
  d <- bcd_data(60)
  expect_error(krr(d$x, d$y, lambda = 1, solver = bcd(p = 10, block_size = 20),
                   threads = 1), class = "askotch_error_input", regexp = "block_size")
  expect_error(kernel_machine(d$x, d$y[, 1], lambda = 1, features = 50,
                              solver = bcd("random", p = 40), threads = 1),
               class = "askotch_error_input", regexp = "disagree")
  expect_error(krr(d$x, d$y, lambda = 1, solver = bcd("random", p = 20),
                   kernel = "linear", threads = 1), class = "askotch_error")
  expect_s3_class(krr(d$x, d$y, lambda = 1, solver = bcd, threads = 1, seed = 1),
                  "krr")
  expect_match(format(bcd("random", p = 100)), "Random-feature BCD")
  expect_match(format(bcd(p = 100, gamma = 0.1)), "gamma")
})

test_that("a lambda path solved at once equals separate fits; the validation set chooses", {
  d <- bcd_data(300, seed = 7)
  set.seed(8)
  xv <- matrix(runif(200), ncol = 2)
  yv <- cbind(sin(4 * xv[, 1]) + xv[, 2]^2, cos(3 * xv[, 2])) + rnorm(200, sd = 0.1)
  lams <- c(3, 1, 0.5, 8)
  for (sp in list(bcd("random", p = 60, block_size = 20), bcd(p = 30, block_size = 10))) {
    bw <- if (sp$features == "random") 0.5 else 0.15
    fit <- krr(d$x, d$y, bandwidth = bw, lambda = lams, solver = sp, seed = 2,
               threads = 1, tol = 1e-11, max_passes = 1e5,
               validation = list(x = xv, y = yv))
    expect_true(fit$converged)
    expect_equal(fit$lambda_path$lambda, sort(lams, decreasing = TRUE))
    expect_equal(fit$tuning$lambda_rule, "validation")
    sep <- lapply(fit$lambda_path$lambda, function(l)
      krr(d$x, d$y, bandwidth = bw, lambda = l, solver = sp, seed = 2,
          threads = 1, tol = 1e-11, max_passes = 1e5))
    rmse <- vapply(sep, function(f) sqrt(mean((predict(f, xv) - yv)^2)), 0)
    for (i in seq_along(sep)) {
      l <- fit$lambda_path$lambda[i]
      expect_lt(rel_err(predict(fit, xv, lambda = l), predict(sep[[i]], xv)), 1e-8)
      expect_lt(rel_err(fit$path_weights[[i]], sep[[i]]$weights), 1e-7)
    }
    expect_equal(fit$lambda_path$validation, rmse, tolerance = 1e-7)
    expect_equal(fit$lambda, fit$lambda_path$lambda[which.min(rmse)])
    expect_equal(which(fit$lambda_path$selected), which.min(rmse))
    expect_equal(predict(fit, xv), predict(fit, xv, lambda = fit$lambda))
    expect_equal(ncol(fit$validation_path), length(lams))
    expect_error(predict(fit, xv, lambda = 2), class = "askotch_error_input",
                 regexp = "not on the fit's path")
  }
  plain <- krr(d$x, d$y, lambda = 1, solver = bcd(p = 20), threads = 1, seed = 1)
  expect_error(predict(plain, xv, lambda = 1), class = "askotch_error_input",
               regexp = "no lambda path")
})

test_that("without a validation set, cross-validation solves each fold's path at once", {
  old <- options(askotch.tune_exact_max_n = 50) # the solver branch of the CV
  on.exit(options(old))
  d <- bcd_data(200, seed = 9)
  lams <- c(0.3, 3, 30)
  sp <- bcd("random", p = 40, block_size = 20)
  fit <- krr(d$x, d$y[, 1], bandwidth = 0.5, lambda = lams, solver = sp, seed = 4,
             threads = 1, tol = 1e-11, max_passes = 1e5)
  # the CV errors by hand: the same folds (seed + 11) of the standardised
  # inputs, a separate fit per fold and lambda
  fold <- askotch:::with_seed(fit$seed + 11, sample(rep_len(1:5, 200)))
  xs <- scale(d$x, colMeans(d$x), apply(d$x, 2, sd))
  cv <- vapply(sort(lams, decreasing = TRUE), function(l) {
    sse <- 0
    for (f in 1:5) {
      tr <- fold != f
      ff <- krr(xs[tr, ], d$y[tr, 1], bandwidth = 0.5, lambda = l, solver = sp,
                seed = 4, threads = 1, tol = 1e-11, max_passes = 1e5,
                standardize = FALSE)
      sse <- sse + sum((predict(ff, xs[!tr, ]) - d$y[!tr, 1])^2)
    }
    sse / 200
  }, 0)
  expect_true(fit$converged)
  expect_equal(fit$lambda_path$cv, cv, tolerance = 1e-7)
  expect_equal(fit$lambda, sort(lams, decreasing = TRUE)[which.min(cv)])
  expect_equal(length(fit$path_weights), 3L)
})

test_that("sap() solves a full-kernel lambda path at once", {
  d <- bcd_data(150, seed = 12)
  set.seed(13)
  xv <- matrix(runif(100), ncol = 2)
  yv <- sin(4 * xv[, 1]) + xv[, 2]^2 + rnorm(50, sd = 0.1)
  # three lambdas: each block's K_BB + lambda I is factored per lambda; eight:
  # K_BB is reduced once to tridiagonal form (the LDL^T factors per lambda)
  for (lams in list(c(0.1, 1, 10), 10^seq(-1.5, 1, length.out = 8)))
  for (acc in c(FALSE, TRUE)) {
    fit <- krr(d$x, d$y[, 1], lambda = lams, solver = sap(block_size = 30, accelerated = acc),
               seed = 1, threads = 1, tol = 1e-11, max_passes = 1e4,
               validation = list(x = xv, y = yv))
    expect_true(fit$converged)
    for (l in lams) {
      or <- oracle_krr(d$x, d$y[, 1], xv, "rbf", fit$kernel$bandwidth, l)
      expect_lt(rel_err(predict(fit, xv, lambda = l), or$pred), 1e-8)
    }
    rmse <- vapply(fit$lambda_path$lambda, function(l)
      sqrt(mean((oracle_krr(d$x, d$y[, 1], xv, "rbf", fit$kernel$bandwidth, l)$pred - yv)^2)), 0)
    expect_equal(fit$lambda, fit$lambda_path$lambda[which.min(rmse)])
  }
  # ASkotch (Nystrom blocks) does not solve a path at once: the path is
  # cross-validated with sequential warm-started fits, as before
  lams <- c(0.1, 1, 10)
  ak <- krr(d$x, d$y[, 1], lambda = lams, solver = askotch(block_size = 30), seed = 1,
            threads = 1)
  expect_equal(ak$tuning$lambda_rule, "path")
  expect_null(ak$path_weights)
})

test_that("observation weights: bcd() solves the weighted problems", {
  set.seed(31)
  n <- 200
  x <- matrix(runif(2 * n), ncol = 2)
  y <- sin(4 * x[, 1]) + rnorm(n, sd = 0.1)
  w <- runif(n, 0.5, 2)
  # Nystrom with every point a centre is exact weighted KRR
  ny <- krr(x, y, lambda = 1, weights = w, solver = bcd(p = n), threads = 1, seed = 1,
            tol = 1e-12)
  ex <- krr(x, y, lambda = 1, weights = w, solver = cholesky(), threads = 1)
  expect_lt(rel_err(predict(ny, x), predict(ex, x)), 1e-10)
  # random features: weighted ridge in the package's features
  M <- 50
  rf <- krr(x, y, lambda = 1, weights = w, solver = bcd("random", p = M, block_size = 10),
            threads = 1, seed = 1, tol = 1e-12, max_passes = 1e4)
  xs <- askotch:::apply_scaling(x, rf$center, rf$scale)
  Z <- .Call(askotch:::ffi_features_apply, xs, diag(M), as.integer(rf$kernel$code),
             as.numeric(rf$kernel$bandwidth), M, as.numeric(rf$seed), 1L, 0L, 1L)
  th <- solve(crossprod(Z, w * Z) + diag(M), crossprod(Z, w * (y - rf$y_center)))
  expect_lt(rel_err(rf$weights, th), 1e-8)
})
