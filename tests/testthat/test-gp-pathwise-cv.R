# The Nystrom control variate of the pathwise variance (R/gp-pathwise-cv.R):
# its closed-form expectation against base R, its draws' second moment, and
# the estimate against the exact variance.

cv_fit <- function(n = 150, weights = NULL) {
  d <- make_regression(n, p = 2, seed = 5)
  krr(d$x, d$y, kernel = "rbf", bandwidth = 0.7, lambda = 0.05, standardize = FALSE,
      solver = cholesky(), threads = 1, weights = weights)
}

test_that("the Nystrom model's variance is the closed form with K_hat (base R)", {
  fit <- cv_fit()
  old <- options(askotch.gp_cv_rank = 12)
  on.exit(options(old))
  set.seed(1)
  S <- 3000L
  dr <- askotch:::gp_pathwise_draws(fit, S, 256, cv_rank = askotch:::gp_cv_rank(150))
  cv <- dr$cv
  expect_identical(cv$rank, 12L)
  set.seed(2)
  xn <- matrix(runif(40, -1.2, 1.2), 20, 2)
  ev <- askotch:::gp_cv_eval(fit, cv, xn)
  # K_hat = K_XP K_PP^{-1} K_PX, its cross-kernel and diagonal at the new points
  X <- fit$x
  n <- nrow(X)
  Kxp <- oracle_kernel(X, cv$xp, "rbf", 0.7)
  Kpp <- oracle_kernel(cv$xp, cv$xp, "rbf", 0.7)
  Kpn <- oracle_kernel(cv$xp, xn, "rbf", 0.7)
  A <- Kxp %*% solve(Kpp, t(Kxp)) + diag(0.05, n)
  kx <- Kxp %*% solve(Kpp, Kpn)
  u <- solve(A, kx)
  tau <- 1 - colSums(u)
  v <- colSums(Kpn * solve(Kpp, Kpn)) - colSums(kx * u) + tau^2 * sum(A) / n^2
  expect_equal(ev$var, v, tolerance = 1e-8)
  # the model's draws (prior: f's conditional mean given f at the pivots,
  # the exact draws' noise) have that second moment: within 4.5 Monte Carlo
  # standard errors at each of the 20 points
  D2 <- ev$draws^2
  z <- (rowMeans(D2) - ev$var) / (apply(D2, 1L, stats::sd) / sqrt(S))
  expect_lt(max(abs(z)), 4.5)
})

test_that("the controlled estimate is unbiased for the exact variance, with less spread", {
  fit <- cv_fit()
  old <- options(askotch.gp_cv_rank = 40)
  on.exit(options(old))
  set.seed(3)
  xn <- matrix(runif(60, -1.2, 1.2), 30, 2)
  p <- predict(fit, xn, se.fit = TRUE, method = "pathwise", draws = 200)
  # (the factor stops at pivots below 1% of lambda)
  expect_true(attr(p$se.fit, "control_rank") > 10L && attr(p$se.fit, "control_rank") <= 40L)
  s2 <- p$residual.scale^2 / fit$lambda
  ex <- askotch:::gp_var_exact(fit, xn)$var * s2
  mc <- attr(p$se.fit, "var_mc_se")
  expect_lt(max(abs(p$se.fit^2 - ex) / mc), 4.5)
  # the plain estimate from the same draws spreads more
  dr <- askotch:::gp_pathwise_draws(fit, 200L, 256)
  plain <- askotch:::gp_cv_estimate(askotch:::gp_pathwise_eval(fit, dr, xn)^2)
  expect_gt(stats::median(plain$mc_se * s2 / mc), 3)
})

test_that("weighted fits and small ranks keep the plain estimate", {
  n <- 150
  fw <- cv_fit(n, weights = rep(c(1, 2), n / 2))
  set.seed(4)
  xn <- matrix(runif(10, -1, 1), 5, 2)
  p <- predict(fw, xn, se.fit = TRUE, method = "pathwise", draws = 20)
  expect_null(attr(p$se.fit, "control_rank"))
  expect_length(attr(p$se.fit, "var_mc_se"), 5L)
  old <- options(askotch.gp_cv_rank = 5, askotch.gp_cv_max_bytes = 2^31,
                 askotch.gp_pathwise_features = 256)
  on.exit(options(old))
  expect_null(askotch:::gp_cv_rank(n))
  expect_false(askotch:::gp_cv_applies(cv_fit(n)))
  options(askotch.gp_cv_rank = 2000, askotch.gp_cv_max_bytes = 8 * n * 60)
  expect_identical(askotch:::gp_cv_rank(n), 60L)
  # draws of a few random features: the plain estimate
  expect_true(askotch:::gp_cv_applies(cv_fit(n)))
  options(askotch.gp_pathwise_features = 32)
  expect_false(askotch:::gp_cv_applies(cv_fit(n)))
})
