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

# tol = "average": with r = y - (K + lambda I) w, the fitted values' error at
# the training points is K (K + lambda I)^{-1} r, whose matrix has
# eigenvalues below 1, so its root mean square is at most ||r|| / sqrt(n).
# Oracle: the exact solution by solve() in base R.
test_that("tol = \"average\": 1e-3 for centred targets, fitted values within 1e-3 sd", {
  d <- make_regression(600, seed = 76)
  sdy <- sqrt(mean((d$y - mean(d$y))^2))
  cases <- list(list(lambda = 0.01, s = pcg()),
                list(lambda = 0.1, s = askotch(block_size = 60)))
  for (cs in cases) {
    or <- oracle_krr(d$x, d$y, d$x, "rbf", 1, cs$lambda)
    passes <- c()
    for (rule in c("uniform", "average")) {
      fit <- krr(d$x, d$y, kernel = "rbf", bandwidth = 1, lambda = cs$lambda, tol = rule,
                 solver = cs$s, seed = 1, threads = 1)
      expect_true(fit$converged)
      expect_true(fit$tol_auto)
      expect_identical(fit$tol_rule, rule)
      rms <- sqrt(mean((fitted(fit) - or$pred)^2))
      acc <- summary(fit)$accuracy
      expect_lte(rms, 1e-3 * sdy)
      expect_lte(rms, acc$rms * (1 + 1e-6))
      # the bound is ||r|| / sqrt(n)
      expect_equal(acc$rms, fit$resid_exact * sqrt(sum((d$y - mean(d$y))^2) / 600),
                   tolerance = 1e-10)
      passes[rule] <- fit$passes
    }
    expect_identical(fit$tol, 1e-3)
    expect_lt(passes[["average"]], passes[["uniform"]])
  }
  out <- capture.output(summary(fit))
  expect_true(any(grepl("\"average\": fitted values within 0.001 sd", out)))
  expect_true(any(grepl("^Accuracy \\(fitted\\) .*root mean square", out)))
})

test_that("the fitted-value bound holds at any residual, weighted or with an intercept", {
  d <- make_regression(400, seed = 77)
  w <- stats::runif(400, 0.2, 3)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", 1)
  lam <- 1e-3
  # weighted: (K + lambda W^{-1}) a = y - weighted mean; the weighted root
  # mean square is bounded
  yc <- d$y - sum(w * d$y) / sum(w)
  a <- solve(K + lam * diag(1 / w), yc)
  for (mp in c(1, 2)) {
    fit <- krr(d$x, d$y, kernel = "rbf", bandwidth = 1, lambda = lam, weights = w,
               solver = askotch(block_size = 40), max_passes = mp, tol = 0, seed = 1,
               threads = 1)
    e <- fitted(fit) - (K %*% a + sum(w * d$y) / sum(w))
    acc <- summary(fit)$accuracy
    expect_gt(acc$rms, 0)
    expect_lte(sqrt(sum(w * e^2) / sum(w)), acc$rms * (1 + 1e-6))
    expect_lt(acc$rms, 1e3 * sqrt(sum(w * e^2) / sum(w)))
  }
  # a penalised intercept (targets not centred): the rule's tolerance is
  # 1e-3 sqrt(n) sd(y) / ||y||, below 1e-3
  y <- d$y + 3
  fit <- kernel_machine(d$x, y, loss = loss_squared(), kernel = "rbf", bandwidth = 1,
                        lambda = 0.01, intercept = TRUE, tol = "average", solver = pcg(),
                        seed = 1, threads = 1)
  want <- 1e-3 * sqrt(400) * sqrt(mean((y - mean(y))^2)) / sqrt(sum(y^2))
  expect_equal(fit$tol, want, tolerance = 1e-12)
  Kc <- K + 1
  ex <- Kc %*% solve(Kc + 0.01 * diag(400), y)
  expect_lte(sqrt(mean((fitted(fit) - ex)^2)), 1e-3 * stats::sd(y))
})

test_that("the rule is kept by refit() and Platt scaling, and refused where it means nothing", {
  d <- make_regression(300, seed = 78)
  fit <- krr(d$x, d$y, lambda = 0.05, tol = "average", solver = pcg(), seed = 1,
             threads = 1, keep_state = TRUE)
  f2 <- refit(fit, lambda = 0.005)
  expect_identical(f2$tol_rule, "average")
  expect_identical(f2$tol, 1e-3)
  f3 <- refit(fit, lambda = 0.005, tol = "uniform")
  expect_identical(f3$tol_rule, "uniform")
  expect_lt(f3$tol, 1e-4)
  f4 <- refit(fit, tol = 1e-8)
  expect_false(f4$tol_auto)
  expect_true(is.na(f4$tol_rule))
  expect_error(krr(d$x, d$y, tol = "avg"), "`tol`", class = "askotch_error_input")
  expect_error(krr(d$x, d$y, tol = c("average", "uniform")), "`tol`",
               class = "askotch_error_input")
  cl <- factor(d$y > mean(d$y))
  expect_error(kernel_machine(d$x, cl, loss = loss_hinge(), tol = "average"),
               "duality gap", class = "askotch_error_input")
  expect_error(refit(fit, tol = "sometimes"), "`tol`", class = "askotch_error_input")
  bad <- fit
  bad$tol_rule <- "often"
  expect_error(summary(bad), "tol_rule", class = "askotch_error_object")
})
