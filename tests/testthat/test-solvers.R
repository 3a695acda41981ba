# Every kernel x solver x precision against the exact base-R solution
# solve(K + lambda I, y) (helper-oracle.R, independent of the C kernels).
#
# Problem: n = 300 uniform points in [-1, 1]^3, bandwidth 1.5 (standardised
# scale), lambda = 0.05 * n = 15. The eigenvalues of K lie in [0, ~n], so
# cond(K + lambda I) <= (n + lambda) / lambda ~ 21: well conditioned, so the
# iterative solvers converge quickly in both precisions.
# Tolerances on the relative error of the training-point predictions:
# * double: 1e-8. The solver stops at relative residual tol = 1e-11; the
#   prediction error is bounded by cond * residual ~ 2e-10, plus rounding
#   (1e-13).
# * single: 1e-4. fp32 unit roundoff is 6e-8; kernel entries, products and the
#   solve each lose a few ulps, amplified by cond ~ 21 and sqrt(n)-sized sums
#   (kept in double by the core): ~1e-5 expected, 1e-4 allowed.

solver_specs <- list(
  askotch = function() askotch(),
  skotch = function() skotch(),
  cholesky = function() cholesky()
)

local({
  d <- make_regression(300, p = 3, seed = 21)
  lambda <- 0.05 * 300
  bw <- 1.5
  for (k in all_kernels) {
    ref <- oracle_krr(d$x, d$y, d$x, k, bw, lambda)
    for (s in names(solver_specs)) {
      for (prec in c("double", "single")) {
        test_that(sprintf("%s / %s / %s matches solve(K + lambda I, y)", k, s,
                          prec), {
          tol <- if (prec == "double") 1e-11 else 1e-6
          fit <- krr(d$x, d$y, kernel = k, bandwidth = bw, lambda = lambda,
                     solver = solver_specs[[s]](), precision = prec,
                     tol = if (s == "cholesky") NULL else tol,
                     max_passes = 200, seed = 42, threads = 2)
          bound <- if (prec == "double") 1e-8 else 1e-4
          expect_lt(rel_err(predict(fit, d$x), ref$pred), bound)
          expect_lt(rel_err(coef(fit), ref$w), if (prec == "double") 1e-8 else
            1e-3)
          if (prec == "double") {
            expect_true(fit$converged)
            expect_lte(fit$resid_exact, if (s == "cholesky") 1e-12 else tol)
          }
          expect_identical(fit$precision, prec)
        })
      }
    }
  }
})

test_that("ASkotch reaches relative residual 1e-10 in double precision (n = 2000)", {
  d <- make_regression(2000, p = 4, seed = 5)
  lambda <- 1e-3 * 2000
  fit <- krr(d$x, d$y, kernel = "rbf", bandwidth = "median", lambda = lambda, tol = 1e-10,
             solver = askotch(), max_passes = 300, seed = 1, threads = 2)
  expect_true(fit$converged)
  expect_identical(fit$reason, "tol")
  expect_lte(fit$resid_exact, 1e-10)
  # independent check of the residual in base R
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", fit$kernel$bandwidth)
  yc <- d$y - mean(d$y)
  r <- K %*% coef(fit) + lambda * coef(fit) - yc
  expect_lte(sqrt(sum(r^2)) / sqrt(sum(yc^2)), 2e-10)
  # the trace has exact residuals at checkpoints, and decreases overall
  expect_true(any(!is.na(fit$trace$resid_exact)))
  expect_lt(tail(fit$trace$resid_est, 1), fit$trace$resid_est[1])
})

test_that("single precision ASkotch is stable on a harder problem", {
  d <- make_regression(1000, p = 3, seed = 8)
  fit <- suppressWarnings(  # stops at max_passes
    krr(d$x, d$y, lambda = 1e-4 * 1000, precision = "single",
        solver = askotch(), max_passes = 30, seed = 3, threads = 2))
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", fit$kernel$bandwidth, 1e-4 * 1000)
  expect_true(all(is.finite(coef(fit))))
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-2)
})

test_that("solver options are passed and resolved", {
  d <- make_regression(400, seed = 2)
  fit <- krr(d$x, d$y, lambda = 20, bandwidth = 1.5,
             solver = askotch(block_size = 50, rank = 20,
                              rho = "regularization", power_iters = 5),
             tol = 1e-10, max_passes = 200, seed = 1, threads = 1)
  expect_identical(fit$solver$block_size, 50)
  expect_identical(fit$solver$rank, 20L)
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", 1.5, 20)
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-8)
  fit2 <- krr(d$x, d$y, lambda = 20, bandwidth = 1.5,
              solver = skotch(block_size = 100, rho = 25), tol = 1e-10,
              max_passes = 200, seed = 1, threads = 1)
  expect_lt(rel_err(predict(fit2, d$x), ref$pred), 1e-8)
  # default block size min(n, max(256, n / 100)) and rank capped at it
  fit3 <- krr(d$x[1:60, ], d$y[1:60], lambda = 1, max_passes = 2,
              solver = askotch(), tol = 0, threads = 1)
  expect_identical(fit3$solver$block_size, 60)
  expect_lte(fit3$solver$rank, 60L)
  expect_identical(krr(d$x, d$y, lambda = 1e-6 * 400, solver = askotch(),
                       tol = 0, max_passes = 1, threads = 1)$solver$block_size,
                   256)
})

test_that("fits are deterministic given the seed and thread count", {
  d <- make_regression(500, seed = 9)
  f <- function(seed) krr(d$x, d$y, lambda = 0.5, max_passes = 3, tol = 0,
                          solver = askotch(), seed = seed, threads = 2)
  a <- f(123)
  b <- f(123)
  expect_identical(a$weights, b$weights)
  expect_identical(a$trace$resid_est, b$trace$resid_est)
  c2 <- f(124)
  expect_false(identical(a$weights, c2$weights))
  # seed = NULL draws from R's RNG, so set.seed() makes fits reproducible
  set.seed(99)
  g1 <- krr(d$x, d$y, lambda = 0.5, max_passes = 3, tol = 0,
            solver = askotch(), threads = 2)
  set.seed(99)
  g2 <- krr(d$x, d$y, lambda = 0.5, max_passes = 3, tol = 0,
            solver = askotch(), threads = 2)
  expect_identical(g1$weights, g2$weights)
  expect_identical(g1$seed, g2$seed)
})
