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
  # the specs map onto the compiled solvers (no numeric kind codes in R)
  v1c <- askotch:::solver_c(askotch(variant = "v1"))
  expect_identical(v1c$name, "askotch_v1")
  sc <- askotch:::solver_c(skotch(sampling = "rls"))
  expect_identical(sc$name, "askotch")
  expect_identical(sc$options$accelerated, FALSE)
  expect_identical(sc$options$sampling, "rls")
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
  expect_identical(fit4$solver$step_halvings, 0L)
})

test_that("EigenPro 2.0 halves a diverging automatic step and converges", {
  # 1000 of 4000 points with the default 100 corrected directions: the
  # subsample's step is too large for the whole data (at lambda = 1e-4 the
  # iterates reached a relative residual of 1e8 after 14 passes, an error,
  # before the step was halved on divergence)
  set.seed(1)
  x <- matrix(rnorm(4000 * 5), 4000)
  y <- sin(x[, 1]) + 0.1 * rnorm(4000)
  sv <- eigenpro(version = 2, subsample = 1000)
  f <- krr(x, y, bandwidth = "median",
           solver = sv, lambda = 0.1, tol = 1e-3, max_passes = 300, threads = 1, seed = 1)
  expect_gte(f$solver$step_halvings, 1L)
  expect_true(f$converged)
  expect_lt(f$resid_exact, 1e-3)
  expect_true(isTRUE(f$solver$auto_step))
  # the same bits again (the halving is decided by the iterates, not the clock)
  f2 <- krr(x, y, bandwidth = "median",
            solver = sv, lambda = 0.1, tol = 1e-3, max_passes = 300, threads = 1, seed = 1)
  expect_identical(f2$weights, f$weights)
  # small lambda: slow (as with any subsample), but no longer an error
  f3 <- krr(x, y, bandwidth = "median",
            solver = sv, lambda = 1e-4, tol = 0, max_passes = 40, threads = 1, seed = 1)
  expect_gte(f3$solver$step_halvings, 1L)
  expect_true(all(is.finite(f3$weights)))
  expect_lt(f3$resid_exact, 0.5)
  # a step the user gives is kept: the divergence is then reported
  expect_error(krr(x, y, bandwidth = "median",
                   solver = eigenpro(version = 2, subsample = 1000, step = 5e4),
                   lambda = 1e-4, tol = 0, max_passes = 50, threads = 1, seed = 1),
               class = "askotch_error_numeric")
})

test_that("EigenPro 3.0 gets close to the inducing-point oracle", {
  # SGD with a constant step settles in a neighbourhood of the solution and
  # the projection is inexact (see eigenpro3.c), so this checks closeness
  # after a fixed budget, with bounds about three times what was measured
  # (n = 600, 100 centres, rank 20, 100 epochs: predictions 1.3e-2 from the
  # oracle's and normal-equation residual 8.8e-3 with the automatic batch
  # of 340; with full batches 4.0e-3 and 4.8e-5; single precision with a
  # step of 100 for 20 epochs 1.2e-2; the mean alone is 0.91 away).
  d <- make_regression(600, p = 3, seed = 35)
  lambda <- 1e-3 * 600
  bw <- 1.5
  fit <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
             solver = eigenpro(version = 3, centers = 100, rank = 20),
             tol = 0, max_passes = 100, seed = 3, threads = 1)
  cen <- fit$centers
  expect_length(cen, 100)
  expect_identical(dim(fit$weights), c(100L, 1L))
  ref <- oracle_inducing(d$x, d$y, d$x, "rbf", bw, lambda, cen)
  err <- rel_err(predict(fit, d$x), ref$pred)
  expect_lt(err, 0.04)
  expect_lt(fit$resid_exact, 0.03)
  # it learns: far better than the mean
  expect_lt(err, 0.2 * rel_err(rep(mean(d$y), 600), ref$pred))
  # the same centres as Falkon for the same seed
  ff <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
            solver = falkon(centers = 100), max_passes = 1, tol = 0,
            seed = 3, threads = 1)
  expect_identical(ff$centers, cen)
  # automatic batch and step are stored; full batches get closer
  expect_true(fit$solver$block_size >= 1 && fit$solver$block_size <= 600)
  expect_true(is.finite(fit$solver$step) && fit$solver$step > 0)
  expect_output(print(fit$solver), "EigenPro 3.0 .*100 centres")
  full <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
              solver = eigenpro(version = 3, centers = 100, rank = 20,
                                batch_size = 600),
              tol = 0, max_passes = 100, seed = 3, threads = 1)
  expect_lt(rel_err(predict(full, d$x), ref$pred), 0.012)
  expect_lt(full$resid_exact, 2e-4)
  # single precision, user step, reproducible
  s1 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
            solver = eigenpro(version = 3, centers = 100, rank = 20,
                              step = 100),
            precision = "single", tol = 0, max_passes = 20, seed = 3,
            threads = 1)
  s2 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
            solver = eigenpro(version = 3, centers = 100, rank = 20,
                              step = 100),
            precision = "single", tol = 0, max_passes = 20, seed = 3,
            threads = 1)
  expect_identical(s1$weights, s2$weights)
  expect_identical(s1$solver$step, 100)
  expect_lt(rel_err(predict(s1, d$x), ref$pred), 0.04)
})

test_that("EigenPro 2.0 converges to solve(K + lambda I, y) when well conditioned", {
  # The batch gradients vanish at the KRR solution, so the SGD converges
  # linearly; at lambda = 1e-2 n it reached a residual of 1e-13 in 24 passes
  # (predictions 1.3e-14 from the oracle's). Bound: the double-precision
  # 1e-8 of the other full-KRR solvers.
  d <- make_regression(500, p = 3, seed = 31)
  lambda <- 1e-2 * 500
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", 1.5, lambda)
  fit <- krr(d$x, d$y, bandwidth = 1.5, lambda = lambda,
             solver = eigenpro(subsample = 300, rank = 40), tol = 1e-11,
             max_passes = 1000, seed = 7, threads = 1)
  expect_true(fit$converged)
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-8)
})

test_that("EigenPro 2.0 stores its automatic step and batch", {
  d <- make_regression(300, p = 2, seed = 36)
  fit <- krr(d$x, d$y, lambda = 3, solver = eigenpro(rank = 20),
             max_passes = 2, tol = 0, seed = 1, threads = 1)
  expect_true(is.finite(fit$solver$step) && fit$solver$step > 0)
  expect_true(fit$solver$block_size >= 1)
  expect_output(print(fit$solver), sprintf("step %s",
                                           format(signif(fit$solver$step, 4))))
})

test_that("ASkotch v1 with v1_beta = 1 (uniform block sampling) matches the oracle", {
  d <- make_regression(500, p = 3, seed = 31)
  lambda <- 1e-3 * 500
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", 1.5, lambda)
  fit <- krr(d$x, d$y, bandwidth = 1.5, lambda = lambda,
             solver = askotch(variant = "v1", block_size = 100, rank = 50,
                              v1_beta = 1),
             tol = 1e-10, max_passes = 1000, seed = 7, threads = 1)
  expect_true(fit$converged)
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-8)
  expect_identical(fit$solver$v1_beta, 1)
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
  ie(eigenpro(version = 4), "`version`")
  ie(eigenpro(centers = 10), "`centers`")
  ie(eigenpro(version = 3, centers = c(1, 1)), "`centers`")
  ie(eigenpro(version = 3, centers = 0), "`centers`")
  ie(krr(d$x, d$y, solver = eigenpro(version = 3, centers = 251)),
     "`centers`")
  ie(krr(d$x, d$y, solver = eigenpro(version = 3, centers = 50,
                                     subsample = 51)), "`subsample`")
  ie(krr(d$x, d$y, solver = eigenpro(version = 3, centers = 50, rank = 50)),
     "`rank`")
  ie(askotch(v1_beta = 0.5), "`v1_beta`")
  ie(askotch(variant = "v1", v1_beta = 2), "`v1_beta`")
  ie(askotch(variant = "v1", v1_beta = NA), "`v1_beta`")
  ie(askotch(variant = "v1", v1_beta = "a"), "`v1_beta`")
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
