# Mean functions (universal kriging): GLS trend, its variance, ML / REML,
# against base R closed forms (solve() on the kernel matrix of the oracle in
# helper-oracle.R) and fields::spatialProcess.

trend_data <- function(n = 90, seed = 1) {
  set.seed(seed)
  x <- cbind(a = runif(n), b = runif(n))
  y <- 2 + 3 * x[, 1] - x[, 2] + 0.5 * sin(6 * x[, 1]) + rnorm(n, sd = 0.1)
  list(x = x, y = y, n = n)
}

test_that("the GLS trend, weights, predictions and UK variance are exact", {
  d <- trend_data()
  xn <- cbind(a = c(0.2, 0.9, 1.3), b = c(0.5, 0.1, -0.2))
  for (reml in c(FALSE, TRUE)) {
    fit <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", bandwidth = 0.3,
               lambda = 0.05, solver = cholesky(), standardize = FALSE,
               likelihood = if (reml) "reml" else "ml", threads = 1)
    o <- trend_oracle(d$x, d$y, cbind(1, d$x), 0.3, 0.05, xn, cbind(1, xn), reml = reml)
    expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-10)
    expect_named(coef(fit), c("(Intercept)", "a", "b"))
    expect_equal(unname(coef(fit, type = "weights")), o$alpha, tolerance = 1e-9)
    p <- predict(fit, xn, se.fit = TRUE)
    expect_equal(unname(p$fit), o$mu, tolerance = 1e-10)
    expect_equal(unname(p$se.fit), sqrt(o$var), tolerance = 1e-9)
    expect_equal(as.numeric(logLik(fit)), o$ll, tolerance = 1e-10)
    expect_equal(attr(logLik(fit), "df"), 1 + 3)  # s^2 and the 3 coefficients
    tb <- tidy(fit)
    se <- tb$std.error[match(c("mean:(Intercept)", "mean:a", "mean:b"), tb$term)]
    expect_equal(se, sqrt(diag(o$cov)), tolerance = 1e-9)
    expect_equal(unname(fitted(fit)), drop(d$y - 0.05 * o$alpha), tolerance = 1e-9)
  }
  # simulate()'s draws have the universal-kriging mean and covariance (8000
  # draws: the covariance's relative standard error is about 1.6%)
  sims <- as.matrix(simulate(fit, nsim = 8000, seed = 1, newdata = xn))
  expect_lt(max(abs(rowMeans(sims) - o$mu)), 5 * sqrt(max(o$var) / 8000))
  expect_lt(max(abs(cov(t(sims)) - o$cov_new)), 0.1 * max(diag(o$cov_new)))
})

test_that("a trend without an intercept, factors and poly() terms are exact", {
  d <- trend_data(80, seed = 2)
  fit <- krr(d$x, d$y, mean = ~ poly(a, 2) - 1, kernel = "matern52", bandwidth = 0.5,
             lambda = 0.1, solver = cholesky(), standardize = FALSE, threads = 1)
  P <- poly(d$x[, "a"], 2)
  o <- trend_oracle(d$x, d$y, unclass(P)[, 1:2], 0.5, 0.1, kernel = "matern52")
  expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-10)
  xn <- cbind(a = c(0.3, 0.7), b = c(0.1, 0.2))
  Fn <- predict(P, xn[, "a"])
  kx <- oracle_kernel(xn, d$x, "matern52", 0.5)
  expect_equal(unname(predict(fit, xn)), drop(Fn %*% o$beta + kx %*% o$alpha),
               tolerance = 1e-10)
  # a factor in the formula method, with a variable that is not a predictor
  df <- data.frame(y = d$y, a = d$x[, 1], b = d$x[, 2],
                   g = factor(rep(c("u", "v", "w"), length.out = d$n)))
  fit2 <- krr(y ~ a + b, data = df, mean = ~ g + a, kernel = "rbf", bandwidth = 0.4,
              lambda = 0.2, solver = cholesky(), standardize = FALSE, threads = 1)
  F2 <- model.matrix(~ g + a, df)
  o2 <- trend_oracle(d$x, d$y, F2, 0.4, 0.2)
  expect_equal(unname(coef(fit2)), o2$beta, tolerance = 1e-10)
  expect_named(coef(fit2), colnames(F2))
  nd <- data.frame(a = 0.5, b = 0.5, g = factor("w", levels = c("u", "v", "w")))
  kx <- oracle_kernel(cbind(0.5, 0.5), d$x, "rbf", 0.4)
  expect_equal(unname(predict(fit2, nd)),
               drop(c(1, 0, 1, 0.5) %*% o2$beta + kx %*% o2$alpha), tolerance = 1e-10)
  expect_error(predict(fit2, data.frame(a = 0.5, b = 0.5)), "g",
               class = "askotch_error_input")
})

test_that("subset and na.action drop the same rows of the trend", {
  d <- trend_data(70, seed = 3)
  df <- data.frame(y = d$y, a = d$x[, 1], b = d$x[, 2], z = rnorm(70))
  df$z[c(4, 9)] <- NA
  fit <- krr(y ~ a + b, data = df, mean = ~ z, subset = seq_len(70) != 20,
             na.action = na.exclude, kernel = "rbf", bandwidth = 0.4, lambda = 0.1,
             solver = cholesky(), standardize = FALSE, threads = 1)
  keep <- setdiff(seq_len(70), c(4, 9, 20))
  o <- trend_oracle(d$x[keep, ], d$y[keep], cbind(1, df$z[keep]), 0.4, 0.1)
  expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-10)
  expect_length(fitted(fit), 69)  # na.exclude pads the two NA rows
  expect_true(all(is.na(fitted(fit)[c(4, 9)])))
  p <- predict(fit, df[1:10, ])
  expect_true(all(is.na(p[c(4, 9)])))
  expect_false(anyNA(p[-c(4, 9)]))
})

test_that("observation weights and several outputs follow the closed forms", {
  d <- trend_data(60, seed = 4)
  w <- runif(60, 0.5, 2)
  fit <- krr(d$x, d$y, mean = ~ a, weights = w, kernel = "rbf", bandwidth = 0.3,
             lambda = 0.1, solver = cholesky(), standardize = FALSE, threads = 1)
  xn <- cbind(a = c(0.1, 0.6), b = c(0.4, 0.8))
  o <- trend_oracle(d$x, d$y, cbind(1, d$x[, "a"]), 0.3, 0.1, xn, cbind(1, xn[, "a"]),
                    w = w)
  expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-10)
  p <- predict(fit, xn, se.fit = TRUE)
  expect_equal(unname(p$fit), o$mu, tolerance = 1e-10)
  expect_equal(unname(p$se.fit), sqrt(o$var), tolerance = 1e-9)
  expect_equal(as.numeric(logLik(fit)), o$ll, tolerance = 1e-10)
  Y <- cbind(u = d$y, v = d$x[, 2]^2 + rnorm(60, sd = 0.05))
  fm <- krr(d$x, Y, mean = ~ b, kernel = "rbf", bandwidth = 0.3, lambda = 0.1,
            solver = cholesky(), standardize = FALSE, likelihood = "reml", threads = 1)
  o1 <- trend_oracle(d$x, Y[, 1], cbind(1, d$x[, "b"]), 0.3, 0.1, reml = TRUE)
  o2 <- trend_oracle(d$x, Y[, 2], cbind(1, d$x[, "b"]), 0.3, 0.1, reml = TRUE)
  expect_equal(unname(coef(fm)), cbind(o1$beta, o2$beta), tolerance = 1e-10)
  expect_equal(dimnames(coef(fm)), list(c("(Intercept)", "b"), c("u", "v")))
  expect_equal(as.numeric(logLik(fm)), o1$ll + o2$ll, tolerance = 1e-10)
  expect_true(all(c("mean:u:b", "mean:v:(Intercept)") %in% tidy(fm)$term))
})

test_that("REML with the constant mean estimates it by GLS", {
  d <- trend_data(50, seed = 5)
  fit <- krr(d$x, d$y, likelihood = "reml", kernel = "rbf", bandwidth = 0.3,
             lambda = 0.1, solver = cholesky(), standardize = FALSE, threads = 1)
  o <- trend_oracle(d$x, d$y, matrix(1, 50), 0.3, 0.1, reml = TRUE)
  expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-10)
  expect_equal(as.numeric(logLik(fit)), o$ll, tolerance = 1e-10)
  # without it, type = "mean" is the centring constant
  f0 <- krr(d$x, d$y, kernel = "rbf", bandwidth = 0.3, lambda = 0.1, threads = 1)
  expect_equal(unname(coef(f0, type = "mean")), mean(d$y))
  expect_identical(coef(krr(d$x, d$y, mean = ~ 1, kernel = "rbf", bandwidth = 0.3,
                            lambda = 0.1, threads = 1)), coef(f0))
})

test_that("the likelihood's gradient with a trend matches finite differences", {
  d <- trend_data(40, seed = 6)
  xs <- d$x
  tr <- list(F = cbind(1, d$x[, "a"]), reml = FALSE)
  for (reml in c(FALSE, TRUE)) {
    for (ard in c(FALSE, TRUE)) {
      tr$reml <- reml
      k <- askotch::kernel_matern(2.5, bandwidth = if (ard) 1 else 0.4)
      ell <- c(0.3, 0.6)
      f <- function(th) {
        kk <- k
        x <- xs
        if (ard) x <- sweep(xs, 2L, exp(th[1:2]), "/") else kk$bandwidth <- exp(th[1])
        askotch:::gp_loglik_exact(x, matrix(d$y), kk, exp(th[length(th)]), ard = ard,
                                  trend = tr)
      }
      th <- c(if (ard) log(ell) else log(0.4), log(0.07))
      g <- f(th)$gradient
      num <- vapply(seq_along(th), function(i) {
        e <- replace(numeric(length(th)), i, 1e-5)
        (f(th + e)$loglik - f(th - e)$loglik) / 2e-5
      }, 0)
      expect_equal(g, num, tolerance = 1e-6)
    }
  }
})

test_that("GCV, LOO and edf with a trend are those of the closed forms", {
  d <- trend_data(40, seed = 7)
  Fm <- cbind(1, d$x[, "a"])
  K <- oracle_kernel(d$x, d$x, "rbf", 0.3)
  lam <- 0.05
  eg <- askotch:::gp_eigen(K, matrix(d$y), list(F = Fm, reml = FALSE))
  cr <- askotch:::gp_eigen_criteria(eg, lam)
  # the hat matrix of the universal-kriging fit: I - lambda P
  Ai <- solve(K + lam * diag(40))
  P <- Ai - Ai %*% Fm %*% solve(crossprod(Fm, Ai %*% Fm), crossprod(Fm, Ai))
  H <- diag(40) - lam * P
  expect_equal(cr$edf, sum(diag(H)), tolerance = 1e-9)
  rss <- sum((d$y - H %*% d$y)^2)
  expect_equal(cr$rss, rss, tolerance = 1e-9)
  expect_equal(cr$gcv, rss / 40 / (1 - sum(diag(H)) / 40)^2, tolerance = 1e-9)
  # LOO by refitting without each point (the trend re-estimated)
  loo <- vapply(seq_len(40), function(i) {
    o <- trend_oracle(d$x[-i, ], d$y[-i], Fm[-i, ], 0.3, lam, d$x[i, , drop = FALSE],
                      Fm[i, , drop = FALSE])
    (d$y[i] - o$mu)^2
  }, 0)
  expect_equal(cr$loo, mean(loo), tolerance = 1e-8)
  # and the exact LOO predictive distribution plot() uses: the mean, and the
  # variance s^2 / P_ii of the left-out response
  fit <- krr(d$x, d$y, mean = ~ a, kernel = "rbf", bandwidth = 0.3, lambda = lam,
             solver = cholesky(), standardize = FALSE, threads = 1)
  lo <- askotch:::gp_loo(fit)
  mus <- vapply(seq_len(40), function(i) {
    trend_oracle(d$x[-i, ], d$y[-i], Fm[-i, ], 0.3, lam, d$x[i, , drop = FALSE],
                 Fm[i, , drop = FALSE])$mu
  }, 0)
  expect_equal(lo$mean, mus, tolerance = 1e-8)
  o <- trend_oracle(d$x, d$y, Fm, 0.3, lam)
  expect_equal(lo$sd^2, o$s2 / diag(P), tolerance = 1e-8)
})

test_that("maximum likelihood and REML reach the base R optimum", {
  d <- trend_data(70, seed = 8)
  Fm <- cbind(1, d$x)
  for (lik in c("ml", "reml")) {
    fit <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", standardize = FALSE,
               likelihood = lik, threads = 1)
    negll <- function(th) -trend_oracle(d$x, d$y, Fm, exp(th[1]), exp(th[2]),
                                        reml = lik == "reml")$ll
    th <- log(c(fit$kernel$bandwidth, fit$lambda))
    opt <- optim(th, negll, method = "BFGS")
    expect_equal(-opt$value, as.numeric(logLik(fit)), tolerance = 1e-6)
    expect_equal(th, opt$par, tolerance = 1e-3)
  }
})

test_that("iterative solvers give the GLS trend of the exact solve", {
  d <- trend_data(300, seed = 9)
  ex <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", bandwidth = 0.3, lambda = 0.01,
            solver = cholesky(), threads = 1)
  xn <- cbind(a = c(0.2, 0.5), b = c(0.3, 0.9))
  for (s in list(pcg(), askotch(block_size = 60))) {
    it <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", bandwidth = 0.3, lambda = 0.01,
              solver = s, tol = 1e-10, max_passes = 500, threads = 1)
    expect_true(it$converged)
    expect_equal(coef(it), coef(ex), tolerance = 1e-6)
    expect_equal(predict(it, xn), predict(ex, xn), tolerance = 1e-6)
  }
})

test_that("the Nystrom bracket and the pathwise estimate hold the UK variance", {
  d <- trend_data(200, seed = 10)
  fit <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", bandwidth = 0.3, lambda = 0.02,
             solver = cholesky(), threads = 1)
  xn <- cbind(a = c(0.1, 0.5, 1.2), b = c(0.2, 0.5, 0.9))
  ex <- predict(fit, xn, se.fit = TRUE, method = "exact")$se.fit^2
  ny <- predict(fit, xn, se.fit = TRUE, method = "nystrom")$se.fit
  rng <- attr(ny, "var_range")
  expect_true(all(rng[, "lower"] <= ex * (1 + 1e-8) & ex <= rng[, "upper"] * (1 + 1e-8)))
  set.seed(1)
  pw <- predict(fit, xn, se.fit = TRUE, method = "pathwise", draws = 400)$se.fit
  mc <- attr(pw, "var_mc_se")
  expect_true(all(abs(unname(pw^2) - unname(ex)) < 4 * mc))
})

test_that("fields::spatialProcess's default linear trend: the same likelihood", {
  skip_if_not_installed("fields")
  skip_on_cran()
  suppressPackageStartupMessages(library(fields))
  data("NorthAmericanRainfall", package = "fields", envir = environment())
  d <- NorthAmericanRainfall
  set.seed(11)
  i <- sample(length(d$precip), 500)
  x <- cbind(lon = d$longitude[i], lat = d$latitude[i])
  y <- log10(d$precip[i])
  # its default mean is the linear trend in the coordinates (m = 2)
  sp <- fields::spatialProcess(x, y, cov.args = list(Covariance = "Matern",
                                                     smoothness = 1.5))
  fit <- krr(x, y, mean = ~ lon + lat, kernel = "matern32", bandwidth = "ml",
             standardize = FALSE, threads = 1)
  ll_fields <- sp$summary[["lnProfileLike.FULL"]]
  expect_lt(abs(as.numeric(logLik(fit)) - ll_fields) / abs(ll_fields), 0.01)
  expect_equal(unname(coef(fit)), drop(sp$beta), tolerance = 0.02)
})

test_that("what a mean function does not support is a classed error", {
  d <- trend_data(60, seed = 12)
  e <- function(...) expect_error(krr(d$x, d$y, threads = 1, ...), class = "askotch_error_input")
  e(mean = "a")
  e(mean = y ~ a)
  e(mean = ~ zz)
  e(mean = ~ a + I(2 * a))         # collinear
  e(mean = ~ a, likelihood = "rml")
  e(mean = ~ a, lambda = "cv")
  e(mean = ~ a, solver = falkon())
  e(mean = ~ a, validation = list(x = d$x, y = d$y))
  expect_error(krr(unname(d$x), d$y, mean = ~ a, threads = 1), "column names",
               class = "askotch_error_input")
  expect_error(krr(d$x, factor(d$y > 3), mean = ~ a, threads = 1), "regression",
               class = "askotch_error_input")
  fit <- krr(d$x, d$y, mean = ~ a, kernel = "rbf", bandwidth = 0.3, lambda = 0.1,
             threads = 1)
  expect_error(refit(fit, lambda = 1), "mean function", class = "askotch_error_input")
  expect_error(predict(fit, cbind(b = 1)), class = "askotch_error_input")
  expect_error(coef(fit, type = "slopes"), "type", class = "askotch_error_input")
  bad <- fit
  bad$trend$coef <- bad$trend$coef[-1, , drop = FALSE]
  expect_error(predict(bad, d$x), "trend", class = "askotch_error_object")
  bad <- fit
  bad$y_center <- 1
  expect_error(predict(bad, d$x), "y_center", class = "askotch_error_object")
})

test_that("above the exact sizes: subsample tuning and the SLQ likelihood", {
  old <- options(askotch.tune_exact_max_n = 300, askotch.tune_subsample = 300)
  on.exit(options(old))
  d <- trend_data(700, seed = 13)
  Fm <- cbind(1, d$x)
  for (lik in c("ml", "reml")) {
    fit <- krr(d$x, d$y, mean = ~ a + b, kernel = "rbf", standardize = FALSE,
               likelihood = lik, solver = pcg(), threads = 1)
    expect_identical(fit$tuning$n_used, 300L)
    o <- trend_oracle(d$x, d$y, Fm, fit$kernel$bandwidth, fit$lambda, reml = lik == "reml")
    expect_equal(unname(coef(fit)), o$beta, tolerance = 1e-5)
    ll <- logLik(fit)
    expect_lt(abs(as.numeric(ll) - o$ll), 4 * attr(ll, "se") + 1e-6 * abs(o$ll))
  }
})

# The hyperparameters' covariance of a fit with a mean function: the
# observed information of the likelihood the fit maximised (profiled over
# beta, or REML). Oracle: the likelihood in base R (solve(), determinant())
# and its Hessian by finite differences (optimHess).
test_that("vcov() with a mean function: the profile and the restricted likelihood", {
  d <- trend_data(70, seed = 21)
  Fm <- cbind(1, d$x[, "a"])
  for (lk in c("ml", "reml")) {
    fit <- krr(d$x, d$y, mean = ~ a, kernel = "matern32", standardize = FALSE,
               likelihood = lk, threads = 1)
    V <- vcov(fit)
    expect_identical(rownames(V), c("bandwidth", "lambda", "signal_var"))
    ll <- function(th) {
      A <- oracle_kernel(d$x, d$x, "matern32", exp(th[1])) + exp(th[2]) * diag(70)
      Ai <- solve(A)
      C <- crossprod(Fm, Ai %*% Fm)
      r <- d$y - Fm %*% solve(C, crossprod(Fm, Ai %*% d$y))
      nn <- if (lk == "reml") 70 - 2 else 70
      -nn / 2 * log(2 * pi * exp(th[3])) - sum(r * (Ai %*% r)) / (2 * exp(th[3])) -
        determinant(A)$modulus / 2 - if (lk == "reml") determinant(C)$modulus / 2 else 0
    }
    th <- log(c(fit$kernel$bandwidth, fit$lambda, summary(fit)$model[[
      if (lk == "reml") "Signal variance (s^2, REML)" else "Signal variance (s^2, ML)"]]))
    Vo <- solve(-stats::optimHess(th, ll, control = list(ndeps = rep(1e-4, 3))))
    expect_lt(max(abs(V - Vo) / sqrt(outer(diag(Vo), diag(Vo)))), 1e-3)
    ci <- confint(fit)
    expect_true(all(ci[, 1] < ci[, 2]))
    td <- tidy(fit, conf.int = TRUE)
    expect_equal(td$std.error[td$term == "lambda"], fit$lambda * sqrt(V["lambda", "lambda"]),
                 tolerance = 1e-10)
    expect_true(all(!is.na(td$std.error[grepl("^mean:", td$term)])))
    out <- capture.output(summary(fit))
    expect_true(any(grepl(sprintf("^Hyperparameters \\(%s;",
                                  if (lk == "reml") "REML" else "maximum likelihood"), out)))
  }
  # given bandwidth and lambda: only s^2, whose variance (log scale) is 2 / n
  fit <- krr(d$x, d$y, mean = ~ a, kernel = "rbf", bandwidth = 0.3, lambda = 0.1,
             threads = 1)
  expect_equal(c(vcov(fit)), 2 / 70, tolerance = 1e-8)
})

test_that("print() names the mean function and the noise model", {
  set.seed(41)
  d <- data.frame(t = seq(0, 10, length.out = 60))
  d$y <- 0.5 * d$t + sin(d$t) + rnorm(60, sd = 0.2 + 0.05 * d$t)
  fit <- krr(y ~ t, data = d, mean = ~ t, noise = ~ t, likelihood = "reml",
             kernel = "rbf", threads = 1)
  out <- capture.output(print(fit))
  expect_true("  mean: ~t (generalised least squares, REML)" %in% out)
  expect_true("  noise: log variance linear in ~t" %in% out)
  # a constant mean (kept as a trend by weighted fits) gets no line
  plain <- capture.output(print(krr(y ~ t, data = d, weights = rep(1:2, 30),
                                    lambda = 0.1, threads = 1)))
  expect_false(any(grepl("mean:|noise:", plain)))
})
