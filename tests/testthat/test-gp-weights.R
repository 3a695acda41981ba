# Gaussian-process statistics of fits with observation weights (noise
# variance lambda s^2 / w_i) against base-R closed forms, and against the
# same data with each point of weight k repeated k times.

# The weighted GP oracle: A = K + lambda W^{-1}, mu by the weighted mean
# pi^T y; the predictor's weight vector c_x = A^{-1} k_x + beta_x pi built
# explicitly and its MSE s^2 (k(x,x) - 2 c^T k_x + c^T A c).
gpw_oracle <- function(x, y, w, xnew, bw, lambda) {
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  xn <- scale(xnew, sc$center, sc$scale)
  n <- nrow(x)
  K <- oracle_kernel(xs, xs, "rbf", bw)
  ks <- oracle_kernel(xs, xn, "rbf", bw)
  kss <- oracle_kernel(xn, xn, "rbf", bw)
  A <- K + lambda * diag(1 / w)
  Ai <- solve(A)
  pw <- w / sum(w)
  yc <- y - sum(pw * y)
  s2 <- sum(yc * (Ai %*% yc)) / n
  beta <- 1 - colSums(Ai %*% ks)
  C <- Ai %*% ks + outer(pw, beta)
  cov_unit <- kss - crossprod(C, ks) - crossprod(ks, C) + crossprod(C, A %*% C)
  ll <- -n / 2 * log(2 * pi * s2) - n / 2 -
    as.numeric(determinant(A, logarithm = TRUE)$modulus) / 2
  list(var_unit = diag(cov_unit), cov_unit = cov_unit, s2 = s2, loglik = ll,
       fit = drop(crossprod(C, y)))
}

gpw_data <- function(n = 150, seed = 21) {
  d <- make_regression(n, p = 3, seed = seed)
  set.seed(seed + 1)
  d$w <- sample(1:3, n, replace = TRUE)
  d$xnew <- matrix(stats::runif(10 * 3, -1.5, 1.5), 10, 3)
  d
}

test_that("weighted se.fit, intervals and logLik equal the closed forms", {
  d <- gpw_data()
  lam <- 0.2
  o <- gpw_oracle(d$x, d$y, d$w, d$xnew, 1.2, lam)
  fit <- krr(d$x, d$y, weights = d$w, bandwidth = 1.2, lambda = lam,
             solver = cholesky(), threads = 1)
  p <- predict(fit, d$xnew, se.fit = TRUE, method = "exact")
  expect_lt(rel_err(p$fit, o$fit), 1e-9)
  expect_lt(rel_err(p$se.fit^2, o$s2 * o$var_unit), 1e-9)
  expect_equal(p$residual.scale, sqrt(lam * o$s2), tolerance = 1e-9)
  pi95 <- predict(fit, d$xnew, interval = "prediction", method = "exact")
  expect_lt(rel_err(pi95[, "upr"] - pi95[, "fit"],
                    stats::qnorm(0.975) * sqrt(o$s2 * (o$var_unit + lam))),
            1e-9)
  expect_equal(as.numeric(logLik(fit)), o$loglik, tolerance = 1e-9)
  # an iterative solver's fit gives the same to its tolerance
  fp <- krr(d$x, d$y, weights = d$w, bandwidth = 1.2, lambda = lam,
            solver = pcg(rank = 50), tol = 1e-12, threads = 1)
  expect_lt(rel_err(predict(fp, d$xnew, se.fit = TRUE)$se.fit^2,
                    o$s2 * o$var_unit), 1e-8)
})

test_that("a weight k is k repeated points (same unit-scale variance)", {
  d <- gpw_data(80, seed = 22)
  rep_idx <- rep(seq_len(80), d$w)
  fw <- krr(d$x, d$y, weights = d$w, bandwidth = 1.1, lambda = 0.3,
            standardize = FALSE, solver = cholesky(), threads = 1)
  fr <- krr(d$x[rep_idx, ], d$y[rep_idx], bandwidth = 1.1, lambda = 0.3,
            standardize = FALSE, solver = cholesky(), threads = 1)
  pw <- predict(fw, d$xnew, se.fit = TRUE, method = "exact")
  pr <- predict(fr, d$xnew, se.fit = TRUE, method = "exact")
  expect_lt(rel_err(pw$fit, pr$fit), 1e-9)
  # the same posterior for f and the same mean estimate: the unit-scale
  # variances agree; s^2 divides the same quadratic form by n or sum(w)
  s2w <- sum((fw$y[, 1] - fw$y_center) * fw$weights[, 1]) / fw$n
  s2r <- sum((fr$y[, 1] - fr$y_center) * fr$weights[, 1]) / fr$n
  expect_equal(s2w * fw$n, s2r * fr$n, tolerance = 1e-9)
  expect_lt(rel_err(pw$se.fit^2 / s2w, pr$se.fit^2 / s2r), 1e-9)
})

test_that("the Nystrom bracket holds the exact weighted variance", {
  d <- gpw_data(300, seed = 23)
  fit <- krr(d$x, d$y, weights = d$w, bandwidth = 0.8, lambda = 0.05,
             solver = cholesky(), threads = 1)
  ex <- predict(fit, d$xnew, se.fit = TRUE, method = "exact")$se.fit^2
  old <- options(askotch.gp_rank = 40)
  on.exit(options(old))
  # rank 40 is far too small here: the bracket is wide, and says so
  expect_warning(
    ny <- predict(fit, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit,
    "loose at", class = "askotch_warning_accuracy")
  rng <- attr(ny, "var_range")
  expect_true(all(rng[, "lower"] <= ex * (1 + 1e-9)))
  expect_true(all(rng[, "upper"] >= ex * (1 - 1e-9)))
  # full rank: the bracket closes on the exact variance
  options(askotch.gp_rank = 300)
  expect_no_warning(
    ny <- predict(fit, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit)
  expect_lt(rel_err(ny^2, ex), 1e-7)
  # the pathwise estimate of the weighted variance (the training noise
  # lambda s^2 / w_i in the pseudo-data, the weighted mean in the centring)
  set.seed(7)
  pw <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise",
                draws = 2000)$se.fit
  expect_true(all(abs(pw^2 - ex) <= 5 * attr(pw, "var_mc_se")))
  expect_lt(abs(mean(pw^2 / ex) - 1), 0.05)
})

test_that("weighted logLik by stochastic quadrature is near the exact one", {
  d <- gpw_data(400, seed = 24)
  fit <- krr(d$x, d$y, weights = d$w, bandwidth = 1, lambda = 0.1,
             solver = cholesky(), threads = 1)
  ex <- logLik(fit)
  old <- options(askotch.tune_exact_max_n = 100)
  on.exit(options(old))
  st <- logLik(fit)
  expect_false(is.null(attr(st, "se")))
  expect_lt(abs(as.numeric(st) - as.numeric(ex)),
            max(4 * attr(st, "se"), 1e-6 * abs(as.numeric(ex))))
})

test_that("weighted posterior draws have the weighted covariance", {
  d <- gpw_data(100, seed = 25)
  fit <- krr(d$x, d$y, weights = d$w, bandwidth = 1.2, lambda = 0.2,
             solver = cholesky(), threads = 1)
  o <- gpw_oracle(d$x, d$y, d$w, d$xnew[1:3, ], 1.2, 0.2)
  target <- o$s2 * o$cov_unit
  sx <- simulate(fit, nsim = 4000, seed = 1, newdata = d$xnew[1:3, ],
                 method = "exact")
  S <- stats::cov(t(as.matrix(sx)))
  # Monte Carlo: the variances within 10% (4000 draws: sd of a sample
  # variance about 2.2%)
  expect_lt(max(abs(diag(S) / diag(target) - 1)), 0.1)
  # the pathwise draws solve (K + lambda W^{-1}) v = r with the fit's own
  # solver: their variances within 20% (500 draws: a sample variance's sd
  # about 6.3%, a little more for the random-feature priors' mixture)
  sp <- simulate(fit, nsim = 500, seed = 2, newdata = d$xnew[1:3, ],
                 method = "pathwise")
  Sp <- stats::cov(t(as.matrix(sp)))
  expect_lt(max(abs(diag(Sp) / diag(target) - 1)), 0.2)
  # noise at the training points is lambda s^2 / w_i
  sn <- simulate(fit, nsim = 3000, seed = 3, method = "exact", noise = TRUE)
  sf <- simulate(fit, nsim = 3000, seed = 3, method = "exact", noise = FALSE)
  extra <- apply(as.matrix(sn), 1, stats::var) - apply(as.matrix(sf), 1, stats::var)
  expect_lt(abs(stats::median(extra * d$w) / (0.2 * o$s2) - 1), 0.1)
})
