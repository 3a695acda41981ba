# The automatic tolerance and the accuracy bound it rests on: with
# r = y - (K + lambda I) w, |f(x) - f*(x)| <= ||r|| / (2 sqrt(lambda)) at
# every x (k(x, x) = 1). Oracle: the exact solution by solve() in base R.

bound_case <- function(n, lambda, kernel, bw, seed, ...) {
  d <- make_regression(n, seed = seed)
  xnew <- matrix(stats::runif(200 * 3, -1.5, 1.5), 200, 3)
  fit <- krr(d$x, d$y, kernel = kernel, bandwidth = bw, lambda = lambda,
             seed = 1, threads = 1, ...)
  or <- oracle_krr(d$x, d$y, rbind(d$x, xnew), kernel, bw, lambda)
  err <- max(abs(predict(fit, rbind(d$x, xnew)) - or$pred))
  list(fit = fit, err = err, d = d)
}

test_that("the default tolerance is 2 sqrt(lambda) 1e-3 sd(y) / ||y - mean(y)||", {
  d <- make_regression(300, seed = 71)
  for (lambda in c(3e-4, 0.3, 30)) {
    fit <- krr(d$x, d$y, lambda = lambda, seed = 1, threads = 1)
    yc <- d$y - mean(d$y)
    want <- 2 * sqrt(lambda) * 1e-3 * sqrt(mean(yc^2)) / sqrt(sum(yc^2))
    want <- min(max(want, 1e-12), 1e-3)
    expect_equal(fit$tol, want, tolerance = 1e-12)
    expect_true(fit$tol_auto)
  }
  # single precision: never below what float can reach
  fit <- krr(d$x, d$y, lambda = 3e-4, precision = "single", seed = 1,
             threads = 1)
  expect_identical(fit$tol, 1e-5)
  # a tolerance the user sets keeps its meaning
  fit <- krr(d$x, d$y, lambda = 0.3, tol = 1e-9, seed = 1, threads = 1)
  expect_identical(fit$tol, 1e-9)
  expect_false(fit$tol_auto)
  expect_lte(fit$resid_exact, 1e-9)
})

test_that("default fits predict within 1e-3 sd(y) of the exact solution, everywhere", {
  # (ASkotch where it converges in a few passes at this small n; PCG for the
  # ill-conditioned cases, where ASkotch's default needs hundreds of passes)
  cases <- list(list(n = 400, lambda = 1e-6 * 400, kernel = "rbf", bw = 1, s = pcg()),
                list(n = 400, lambda = 0.1, kernel = "matern32", bw = 1.5, s = askotch()),
                list(n = 600, lambda = 5, kernel = "laplace", bw = 2, s = askotch()),
                list(n = 600, lambda = 1e-2, kernel = "rbf", bw = 0.5, s = pcg()))
  for (cs in cases) {
    r <- bound_case(cs$n, cs$lambda, cs$kernel, cs$bw, seed = 72, solver = cs$s)
    expect_true(r$fit$converged)
    sdy <- stats::sd(r$d$y)
    expect_lte(r$err, 1e-3 * sdy)
    acc <- summary(r$fit)$accuracy
    expect_identical(acc$from, "exact")
    expect_lte(r$err, acc$bound * (1 + 1e-6))
  }
})

test_that("the accuracy bound holds at any residual, converged or not", {
  for (mp in c(1, 3)) {
    r <- bound_case(500, 1e-3, "rbf", 1, seed = 73, max_passes = mp, tol = 0,
                    solver = askotch(block_size = 50))
    expect_identical(r$fit$reason, "max_passes")
    acc <- summary(r$fit)$accuracy
    expect_gt(acc$bound, 0)
    expect_lte(r$err, acc$bound * (1 + 1e-6))
    # and it is not vacuous: within a factor of the error actually made
    expect_lt(acc$bound, 1e4 * r$err)
  }
  # refit() with a new lambda recomputes the automatic tolerance
  fit <- krr(make_regression(300, seed = 74)$x, make_regression(300, seed = 74)$y,
             lambda = 1, seed = 1, threads = 1, keep_state = TRUE,
             solver = pcg())
  f2 <- refit(fit, lambda = 0.01)
  expect_equal(f2$tol, fit$tol * sqrt(0.01), tolerance = 1e-10)
  expect_true(f2$tol_auto)
  f3 <- refit(fit, lambda = 0.01, tol = 1e-7)
  expect_identical(f3$tol, 1e-7)
  expect_false(f3$tol_auto)
  expect_error(refit(fit, tol = -1), class = "askotch_error_input")
})

test_that("summary() states the tolerance rule and the accuracy reached", {
  d <- make_regression(200, seed = 75)
  fit <- krr(d$x, d$y, lambda = 0.2, solver = askotch(), seed = 1,
             threads = 1)
  out <- capture.output(summary(fit))
  expect_true(any(grepl("automatic: predictions within 0.001 sd", out)))
  expect_true(any(grepl("^Accuracy .*at every x", out)))
  fit <- krr(d$x, d$y, lambda = 0.2, solver = cholesky(), threads = 1)
  expect_null(summary(fit)$accuracy)
})

test_that("several outputs: the worst column's residual, and each output's bound", {
  # outputs of very different scales: the Frobenius residual would let the
  # small column's error through; the per-column criterion and tolerance
  # bound every output by 1e-3 of its own sd
  d <- make_regression(500, seed = 75)
  Y <- cbind(big = 100 * d$y, small = 0.01 * sin(3 * d$x[, 2]) +
               stats::rnorm(500, sd = 0.001))
  lam <- 0.05
  fit <- krr(d$x, Y, lambda = lam, bandwidth = "median", solver = pcg(), seed = 1,
             threads = 1)
  Yc <- sweep(Y, 2, colMeans(Y))
  sds <- sqrt(colMeans(Yc^2))
  want <- 2 * sqrt(lam) * 1e-3 * min(sds / sqrt(colSums(Yc^2)))
  expect_equal(fit$tol, min(max(want, 1e-12), 1e-3), tolerance = 1e-12)
  # the exact criterion is the worst column's relative residual (base R)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", fit$kernel$bandwidth)
  R <- Yc - K %*% fit$weights - lam * fit$weights
  crit <- max(sqrt(colSums(R^2)) / sqrt(colSums(Yc^2)))
  expect_equal(fit$resid_exact, crit, tolerance = 1e-6)
  expect_lte(fit$resid_exact, fit$tol)
  # every output within 1e-3 of its sd of the exact solution, and within the
  # bound summary() states (in sd units, the worst output)
  or <- oracle_krr(d$x, Y, d$x, "rbf", fit$kernel$bandwidth, lam)
  err_sd <- apply(abs(predict(fit, d$x) - or$pred), 2, max) / sds
  expect_true(all(err_sd <= 1e-3))
  expect_lte(max(err_sd), summary(fit)$accuracy$relative * (1 + 1e-6))
})
