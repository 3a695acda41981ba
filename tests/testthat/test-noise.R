# Heteroscedastic noise (krr(noise = ~ z)): the likelihood, its gradient and
# optimum, predictions and intervals against base R closed forms; coverage
# by region on data drawn from the model.

noise_data <- function(n = 100, seed = 1) {
  set.seed(seed)
  x <- cbind(t = sort(runif(n)))
  sd <- exp(-2 + 2.5 * x[, 1])
  y <- sin(5 * x[, 1]) + rnorm(n, sd = sd)
  list(x = x, y = y, n = n)
}

# the exact likelihood of y ~ N(1 beta, s^2 (K + lambda diag(v))), with
# s^2 and beta profiled (ML)
noise_ll <- function(x, y, bw, lambda, v) {
  n <- length(y)
  A <- oracle_kernel(x, x, "rbf", bw) + lambda * diag(v)
  Ai <- solve(A)
  one <- rep(1, n)
  beta <- sum(Ai %*% y) / sum(Ai)
  r <- y - beta
  s2 <- drop(crossprod(r, Ai %*% r)) / n
  -n / 2 * log(2 * pi * s2) - n / 2 - 0.5 * c(determinant(A)$modulus)
}

test_that("the noise model's likelihood, optimum and predictions are exact", {
  d <- noise_data()
  fit <- krr(d$x, d$y, noise = ~ t, kernel = "rbf", standardize = FALSE, threads = 1)
  nz <- fit$noise
  zs <- (d$x[, 1] - nz$center) / nz$scale
  v <- exp(zs * nz$coef)
  bw <- fit$kernel$bandwidth
  expect_equal(unname(1 / weights(fit)), v, tolerance = 1e-12)
  expect_equal(as.numeric(logLik(fit)), noise_ll(d$x, d$y, bw, fit$lambda, v),
               tolerance = 1e-10)
  expect_equal(attr(logLik(fit), "df"), 5)  # s^2, beta, bandwidth, lambda, gamma
  # no lambda record: its criteria would be constant noise's
  expect_null(fit$tuning$path)
  # the base R optimum over (log bandwidth, log lambda, gamma)
  negll <- function(th) -noise_ll(d$x, d$y, exp(th[1]), exp(th[2]), exp(zs * th[3]))
  th <- c(log(bw), log(fit$lambda), nz$coef)
  opt <- optim(th, negll, method = "BFGS")
  expect_equal(-opt$value, as.numeric(logLik(fit)), tolerance = 1e-6)
  expect_equal(unname(th), unname(opt$par), tolerance = 2e-3)
  # predictions, standard errors and intervals with each point's own noise
  xn <- cbind(t = c(0.1, 0.5, 0.95))
  o <- trend_oracle(d$x, d$y, matrix(1, d$n), bw, fit$lambda, xn, matrix(1, 3), w = 1 / v)
  p <- predict(fit, xn, se.fit = TRUE)
  expect_equal(unname(p$fit), o$mu, tolerance = 1e-9)
  expect_equal(unname(p$se.fit), sqrt(o$var), tolerance = 1e-8)
  vn <- exp((xn[, 1] - nz$center) / nz$scale * nz$coef)
  expect_equal(unname(p$residual.scale), sqrt(o$s2 * fit$lambda * vn), tolerance = 1e-9)
  pi <- predict(fit, xn, interval = "prediction", level = 0.9)
  h <- qnorm(0.95) * sqrt(o$var + o$s2 * fit$lambda * vn)
  expect_equal(unname(pi[, "upr"] - pi[, "fit"]), h, tolerance = 1e-8)
  # the log noise variance in the data's units
  tb <- tidy(fit)
  slope <- tb$estimate[tb$term == "noise:t"]
  expect_equal(slope, unname(nz$coef / nz$scale), tolerance = 1e-12)
  expect_equal(tb$estimate[tb$term == "noise:(Intercept)"],
               unname(log(fit$lambda * o$s2) - slope * nz$center), tolerance = 1e-9)
})

test_that("the gradient in the noise coefficients matches finite differences", {
  d <- noise_data(50, seed = 2)
  Z <- cbind(scale(d$x[, 1]), scale(d$x[, 1]^2))
  for (trend in list(NULL, list(F = cbind(1, d$x[, 1]), reml = TRUE))) {
    f <- function(th) {
      k <- kernel_rbf(exp(th[1]))
      askotch:::gp_loglik_exact(d$x, matrix(d$y), k, exp(th[2]), trend = trend,
                                noise = list(Z = Z, gamma = th[3:4]))
    }
    th <- c(log(0.2), log(0.05), 0.3, -0.2)
    num <- vapply(seq_along(th), function(i) {
      e <- replace(numeric(4), i, 1e-5)
      (f(th + e)$loglik - f(th - e)$loglik) / 2e-5
    }, 0)
    expect_equal(f(th)$gradient, num, tolerance = 1e-6)
  }
})

test_that("prediction intervals cover at the nominal rate in calm and noisy regions", {
  # data drawn from the model: 20 fits of 150 points, 300 new points each;
  # the count of the new points inside their 95% intervals, by region
  inside <- c(low = 0, high = 0)
  total <- c(low = 0, high = 0)
  for (r in 1:20) {
    d <- noise_data(150, seed = 100 + r)
    fit <- krr(d$x, d$y, noise = ~ t, threads = 1)
    set.seed(200 + r)
    xn <- cbind(t = runif(300))
    yn <- sin(5 * xn[, 1]) + rnorm(300, sd = exp(-2 + 2.5 * xn[, 1]))
    p <- predict(fit, xn, interval = "prediction")
    ok <- yn >= p[, "lwr"] & yn <= p[, "upr"]
    low <- xn[, 1] < 0.5
    inside <- inside + c(sum(ok[low]), sum(ok[!low]))
    total <- total + c(sum(low), sum(!low))
  }
  cover <- inside / total
  expect_true(all(cover >= 0.92 & cover <= 0.98))
  # the homoscedastic fit over-covers the calm half and under-covers the other
  fit0 <- krr(d$x, d$y, threads = 1)
  p0 <- predict(fit0, xn, interval = "prediction")
  ok0 <- yn >= p0[, "lwr"] & yn <= p0[, "upr"]
  expect_gt(mean(ok0[low]), 0.97)
  expect_lt(mean(ok0[!low]), 0.93)
})

test_that("the formula method, a kept bandwidth and bad input", {
  d <- noise_data(80, seed = 3)
  df <- data.frame(y = d$y, t = d$x[, 1], g = factor(rep(c("a", "b"), 40)))
  fit <- krr(y ~ t, data = df, noise = ~ t + g, bandwidth = 0.3, threads = 1)
  expect_identical(fit$kernel$bandwidth, 0.3)
  expect_named(fit$noise$coef, c("t", "gb"))
  p <- predict(fit, data.frame(t = c(0.2, 0.8), g = c("a", "b")), se.fit = TRUE)
  expect_length(p$residual.scale, 2)
  expect_error(predict(fit, data.frame(t = 0.2)), "g", class = "askotch_error_input")
  e <- function(...) expect_error(krr(d$x, d$y, threads = 1, ...),
                                  class = "askotch_error_input")
  e(noise = ~ t, weights = rep(1, 80))
  e(noise = ~ t, lambda = "gcv")
  e(noise = "t")
  e(noise = ~ 1)
  e(noise = ~ zz)
  e(noise = ~ I(0 * t + 2))  # a constant covariate
  e(noise = ~ t, solver = falkon())
  bad <- fit
  bad$noise$scale <- -1
  expect_error(predict(bad, df), "noise", class = "askotch_error_object")
})

# The hyperparameters' covariance with a noise model: the observed
# information of the likelihood with A = K + lambda diag(exp(z gamma)),
# beta and s^2's estimate as the fit's, in (log bandwidth, log lambda,
# gamma / scale, log s^2). Oracle: the base R likelihood (solve(),
# determinant()) and its Hessian by finite differences (optimHess).
test_that("vcov(), confint() and tidy() with a noise model", {
  d <- noise_data(80, seed = 5)
  fit <- krr(d$x, d$y, noise = ~ t, kernel = "rbf", standardize = FALSE, threads = 1)
  nz <- fit$noise
  zs <- (d$x[, 1] - nz$center) / nz$scale
  ll <- function(th) {
    A <- oracle_kernel(d$x, d$x, "rbf", exp(th[1])) + exp(th[2]) * diag(exp(zs * th[3]))
    Ai <- solve(A)
    r <- d$y - sum(Ai %*% d$y) / sum(Ai)
    -80 / 2 * log(2 * pi * exp(th[4])) - sum(r * (Ai %*% r)) / (2 * exp(th[4])) -
      c(determinant(A)$modulus) / 2
  }
  s2 <- summary(fit)$model[["Signal variance (s^2, ML)"]]
  # the noise variance where the log-linear model is 0 (t at its mean)
  expect_equal(summary(fit)$model[["Noise variance (lambda s^2, the noise model's baseline)"]],
               fit$lambda * s2)
  th <- c(log(fit$kernel$bandwidth), log(fit$lambda), nz$coef, log(s2))
  J <- diag(c(1, 1, 1 / nz$scale, 1))
  Vo <- J %*% solve(-stats::optimHess(th, ll, control = list(ndeps = rep(1e-4, 4)))) %*% J
  V <- vcov(fit)
  expect_identical(rownames(V), c("bandwidth", "lambda", "noise:t", "signal_var"))
  expect_lt(max(abs(V - Vo) / sqrt(outer(diag(Vo), diag(Vo)))), 1e-3)
  # the coefficient's interval is linear (it is a log-scale effect already)
  ci <- confint(fit)
  est <- nz$coef[["t"]] / nz$scale
  expect_equal(unname(ci["noise:t", ]), est + c(-1, 1) * stats::qnorm(0.975) * sqrt(V[3, 3]),
               tolerance = 1e-10)
  td <- tidy(fit, conf.int = TRUE)
  expect_equal(td$std.error[td$term == "noise:t"], sqrt(V[3, 3]), tolerance = 1e-10)
  # the intercept log(lambda s^2) - center * delta, by the delta method
  g <- c(0, 1, -nz$center, 1)
  expect_equal(td$std.error[td$term == "noise:(Intercept)"], sqrt(drop(g %*% V %*% g)),
               tolerance = 1e-10)
  # summary()'s noise table carries the same standard errors
  nt <- summary(fit)$noise
  expect_equal(unname(nt[, "std.error"]),
               td$std.error[match(c("noise:(Intercept)", "noise:t"), td$term)],
               tolerance = 1e-12)
  expect_error(confint(fit, method = "profile"), "noise model", class = "askotch_error_input")
  bad <- fit
  bad$noise$Z <- bad$noise$Z[-1, , drop = FALSE]
  expect_error(vcov(bad), "noise", class = "askotch_error_object")
})
