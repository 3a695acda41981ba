# The rest of the solver family in the R API: ASkotch with ridge-leverage-score
# sampling, ASkotch v1 (fixed partition, NU_ACDM) and EigenPro 2.0, against
# the base-R oracle solve(K + lambda I, y) of helper-oracle.R.
#
# Tolerances. At the training points the prediction error of weights w with
# relative residual r = ||(K + lambda I) w - y|| / ||y|| is
#   K (w - w*) = K (K + lambda I)^{-1} ((K + lambda I) w - y),
# and ||K (K + lambda I)^{-1}|| <= 1, so it is at most r ||y|| whatever the
# conditioning: relative to the predictions (which carry ~ all of ||y|| here,
# R^2 ~ 0.99) it is ~ r. Double: fitted to tol = 1e-10, compared at 1e-8
# (two digits of margin for the oracle's own rounding, cond(K + lambda I) <=
# (n + lambda) / lambda ~ 1e3 at lambda = 1e-3 n times eps ~ 1e-13).
# Single: the default single-precision tol 1e-5 plus float rounding in the
# kernel sums (~1e-6 relative): compared at 1e-3.
# EigenPro is SGD: it is only asked for a relative residual below 1e-3 on an
# easy problem (lambda = 1e-2 n), which bounds the prediction error by ~1e-3;
# compared at 1e-2.

local({
  d <- make_regression(500, p = 3, seed = 31)
  lambda <- 1e-3 * 500
  bw <- 1.5
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", bw, lambda)
  specs <- list(
    rls = function() askotch(sampling = "rls", block_size = 100, rank = 50,
                             rls_subsample = 300),
    rls_skotch = function() skotch(sampling = "rls", block_size = 100,
                                   rank = 50),
    v1 = function() askotch(variant = "v1", block_size = 100, rank = 50))
  for (s in names(specs)) {
    for (prec in c("double", "single")) {
      test_that(sprintf("askotch %s / %s matches solve(K + lambda I, y)", s,
                        prec), {
        fit <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
                   solver = specs[[s]](), precision = prec,
                   tol = if (prec == "double") 1e-10 else 1e-5,
                   max_passes = 1000, seed = 7, threads = 1)
        expect_true(fit$converged)
        expect_lt(rel_err(predict(fit, d$x), ref$pred),
                  if (prec == "double") 1e-8 else 1e-3)
      })
    }
  }
})

test_that("RLS sampling and v1 resolve their options and print them", {
  d <- make_regression(250, p = 2, seed = 32)
  fit <- krr(d$x, d$y, lambda = 1, solver = askotch(sampling = "rls"),
             max_passes = 2, tol = 0, seed = 1, threads = 1)
  expect_identical(fit$solver$sampling, "rls")
  expect_equal(fit$solver$rls_subsample, 250)  # min(n, 2000)
  expect_output(print(fit$solver), "RLS sampling \\(subsample 250\\)")
  # v1: 250 points in blocks of at most 100 -> 3 blocks of 83 or 84; the
  # default rank is capped at the smallest block
  fit1 <- krr(d$x, d$y, lambda = 1,
              solver = askotch(variant = "v1", block_size = 100),
              max_passes = 2, tol = 0, seed = 1, threads = 1)
  expect_identical(fit1$solver$name, "askotch_v1")
  expect_identical(fit1$solver$rank, 83L)
  expect_output(print(fit1$solver), "ASkotch v1")
  expect_s3_class(askotch(variant = "v1"), "askotch_solver_askotch_v1")
  expect_identical(askotch(variant = "v1")$kind, 8L)
  expect_identical(skotch(sampling = "rls")$kind, 1L)
  expect_identical(skotch(variant = "journal")$name, "skotch")
  expect_identical(as_solver("askotch_v1")$name, "askotch_v1")
  expect_identical(as_solver("eigenpro")$name, "eigenpro")
  # same seed, same iterates
  fit2 <- krr(d$x, d$y, lambda = 1, solver = askotch(sampling = "rls"),
              max_passes = 2, tol = 0, seed = 1, threads = 1)
  expect_identical(fit$weights, fit2$weights)
})

test_that("EigenPro 2.0 reduces the residual below 1e-3 and is reproducible", {
  d <- make_regression(600, p = 3, seed = 33)
  lambda <- 1e-2 * 600
  bw <- 1.5
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", bw, lambda)
  spec <- eigenpro(subsample = 300, rank = 40)
  fit <- krr(d$x, d$y, bandwidth = bw, lambda = lambda, solver = spec,
             tol = 1e-3, max_passes = 200, seed = 11, threads = 1)
  expect_true(fit$converged)
  expect_lt(fit$resid_exact, 1e-3)
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-2)
  expect_identical(fit$solver$subsample, 300)
  expect_output(print(fit$solver), "EigenPro 2.0")
  fit2 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda, solver = spec,
              tol = 1e-3, max_passes = 200, seed = 11, threads = 1)
  expect_identical(fit$weights, fit2$weights)
  # a fixed pass budget in single precision, user batch and step
  fit3 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
              solver = eigenpro(subsample = 300, rank = 40, batch_size = 200),
              precision = "single", tol = 0, max_passes = 5, seed = 11,
              threads = 1)
  expect_identical(fit3$reason, "max_passes")
  expect_lt(fit3$resid_exact, 1)
  # default rank capped below the subsample on tiny data
  fit4 <- krr(d$x[1:40, ], d$y[1:40], lambda = 1, solver = "eigenpro",
              max_passes = 2, tol = 0, seed = 1, threads = 1)
  expect_identical(fit4$solver$rank, 39L)
})

test_that("bad values of the new solver options are input errors", {
  d <- make_regression(250, p = 2, seed = 34)
  ie <- function(expr, pattern) {
    expect_error(expr, pattern, class = "askotch_error_input")
  }
  # askotch(): sampling, variant, rls_subsample
  ie(askotch(sampling = "leverage"), "`sampling`")
  ie(askotch(sampling = 1), "`sampling`")
  ie(askotch(sampling = c("uniform", "rls")), "`sampling`")
  ie(askotch(variant = "v2"), "`variant`")
  ie(askotch(variant = NA_character_), "`variant`")
  ie(askotch(sampling = "rls", rls_subsample = 0), "`rls_subsample`")
  ie(askotch(sampling = "rls", rls_subsample = 2.5), "`rls_subsample`")
  ie(askotch(sampling = "rls", rls_subsample = "all"), "`rls_subsample`")
  ie(askotch(rls_subsample = 100), "`rls_subsample`")
  ie(askotch(variant = "v1", sampling = "rls"), "`variant = \"v1\"`")
  ie(askotch(variant = "v1", accelerated = FALSE), "`accelerated = FALSE`")
  ie(askotch(variant = "v1", nu = 3), "`nu`")
  ie(skotch(variant = "v1"), "`variant`")
  ie(krr(d$x, d$y, solver = askotch(sampling = "rls", rls_subsample = 251)),
     "`rls_subsample`")
  ie(krr(d$x, d$y, solver = askotch(variant = "v1", block_size = 251)),
     "`block_size`")
  # 250 points, blocks of at most 100: smallest block 83 < rank 100
  ie(krr(d$x, d$y, solver = askotch(variant = "v1", block_size = 100,
                                    rank = 84)), "`rank`")
  # eigenpro()
  ie(eigenpro(version = 3), "EigenPro 3.0 .*not implemented")
  ie(eigenpro(version = 1), "`version`")
  ie(eigenpro(version = "2"), "`version`")
  ie(eigenpro(version = NA), "`version`")
  ie(eigenpro(subsample = 0), "`subsample`")
  ie(eigenpro(subsample = 1), "`subsample`")
  ie(eigenpro(subsample = 10.5), "`subsample`")
  ie(eigenpro(batch_size = 0), "`batch_size`")
  ie(eigenpro(batch_size = 1.5), "`batch_size`")
  ie(eigenpro(step = -1), "`step`")
  ie(eigenpro(step = Inf), "`step`")
  ie(eigenpro(step = "auto"), "`step`")
  ie(eigenpro(rank = 0), "`rank`")
  ie(eigenpro(subsample = 50, rank = 50), "`rank`")
  ie(krr(d$x, d$y, solver = eigenpro(subsample = 251)), "`subsample`")
  ie(krr(d$x, d$y, solver = eigenpro(batch_size = 251)), "`batch_size`")
  ie(krr(d$x, d$y, solver = eigenpro(rank = 250)), "`rank`")
  ie(krr(d$x, d$y, solver = "eigenpro3"), "`solver`")
})
