# Heteroscedastic noise with a latent Gaussian process (krr(noise = ~ gp(z))):
# the likelihood's derivatives in the log noise variances, the posterior
# mode and the Laplace approximation against base R (solve(),
# determinant(), optim()), the fit's optimum, weights and predictions, and
# coverage by region on data drawn with a noise level that rises and falls.

# the noise sd rises in the middle of [0, 1] and falls again: no monotone
# log-linear model fits it
bump_sd <- function(t) exp(-2.3 + 2.5 * exp(-((t - 0.5) / 0.15)^2))
bump_data <- function(n, seed) {
  set.seed(seed)
  t <- sort(runif(n))
  list(x = cbind(t = t), y = sin(5 * t) + rnorm(n, sd = bump_sd(t)), n = n)
}

# the profile log likelihood of y ~ N(1 beta, s^2 (K + lambda diag(exp(h))))
# (beta and s^2 profiled, ML), and the latent's log posterior psi(h)
gpn_ll <- function(K, y, lambda, h) {
  n <- length(y)
  A <- K + lambda * diag(exp(h))
  Ai <- solve(A)
  r <- y - sum(Ai %*% y) / sum(Ai)
  s2 <- sum(r * (Ai %*% r)) / n
  -n / 2 * log(2 * pi * s2) - n / 2 - 0.5 * c(determinant(A)$modulus)
}
gpn_psi <- function(K, Kg, y, lambda, h) gpn_ll(K, y, lambda, h) - 0.5 * sum(h * solve(Kg, h))
# psi's gradient in h: with v = lambda exp(h), dA/dh_i = v_i e_i e_i^T; beta
# and s^2 at their optimum (envelope), so d log s^2 / dh_i = -v_i alpha_i^2 /
# (n s^2) with alpha = A^{-1} r, and d log det A / dh_i = v_i (A^{-1})_ii
gpn_grad <- function(K, Kg, y, lambda, h) {
  n <- length(y)
  v <- lambda * exp(h)
  Ai <- solve(K + diag(v))
  r <- y - sum(Ai %*% y) / sum(Ai)
  alpha <- drop(Ai %*% r)
  v * (alpha^2 / (2 * sum(r * alpha) / n) - diag(Ai) / 2) - solve(Kg, h)
}

# The mode by BFGS on psi and the Laplace approximation with psi's Hessian H
# there by differences of its gradient (optimHess): log p(y) ~ psi - (log det K_g +
# log det(-H)) / 2; and the Fisher information of the profile likelihood
# (s^2 profiled), F = (lambda v) (lambda v)^T o A^{-2} / 2 - c c^T 2 / n, c =
# lambda v o diag(A^{-1}) / 2, for the latent's predictive variance
gpn_oracle <- function(K, Kg, y, lambda) {
  n <- length(y)
  # (a step to a numerically singular A is rejected by a huge value)
  negpsi <- function(h) {
    v <- tryCatch(-gpn_psi(K, Kg, y, lambda, h), error = function(e) NA)
    if (is.finite(v)) v else 1e100
  }
  neggrad <- function(h) {
    g <- tryCatch(-gpn_grad(K, Kg, y, lambda, h), error = function(e) NA)
    if (all(is.finite(g))) g else numeric(n)
  }
  o <- optim(numeric(n), negpsi, neggrad, method = "BFGS",
             control = list(reltol = 1e-15, maxit = 5000))
  h <- o$par
  H <- -stats::optimHess(h, negpsi, neggrad, control = list(ndeps = rep(1e-4, n)))
  lv <- lambda * exp(h)
  Ai <- solve(K + diag(lv))
  Fi <- outer(lv, lv) * Ai^2 / 2 - tcrossprod(lv * diag(Ai) / 2) * (2 / n)
  list(h = h, psi = -o$value, F = Fi,
       lml = -o$value - 0.5 * c(determinant(Kg)$modulus + determinant(-H)$modulus))
}

# The latent's predictive variance at new points: k(z, z) - k^T (K_g +
# F^{-1})^{-1} k
gpn_var <- function(o, Kg, ks, sd) sd^2 - rowSums((ks %*% solve(Kg + solve(o$F))) * ks)

test_that("the likelihood's derivatives in the log noise variances are exact", {
  set.seed(3)
  n <- 30
  x <- matrix(runif(n))
  y <- matrix(sin(4 * x) + rnorm(n, sd = 0.3))
  h <- rnorm(n, sd = 0.5)
  k <- kernel_rbf(0.4)
  for (trend in list(NULL, list(F = cbind(1, x), reml = FALSE),
                     list(F = cbind(1, x), reml = TRUE))) {
    f <- function(h) askotch:::gp_loglik_exact(x, y, k, 0.2, gradient = "info", trend = trend,
                                               noise = list(h = h))
    v <- f(h)
    num_g <- vapply(seq_len(n), function(i) {
      e <- replace(numeric(n), i, 1e-5)
      (f(h + e)$loglik - f(h - e)$loglik) / 2e-5
    }, 0)
    num_H <- vapply(seq_len(n), function(i) {
      e <- replace(numeric(n), i, 1e-5)
      (f(h + e)$gradient_h - f(h - e)$gradient_h) / 2e-5
    }, numeric(n))
    expect_equal(v$gradient_h, num_g, tolerance = 1e-6)
    expect_equal(v$hess_h, -num_H, tolerance = 1e-6)
    # the Fisher information with A^{-1} (ML) or the REML projection P, s^2
    # profiled: the Schur complement of the joint information in (h, s^2)
    A <- oracle_kernel(x, x, "rbf", 0.4) + 0.2 * diag(exp(h))
    P <- solve(A)
    nn <- n
    if (isTRUE(trend$reml)) {
      Fm <- trend$F
      P <- P - P %*% Fm %*% solve(crossprod(Fm, P %*% Fm), crossprod(Fm, P))
      nn <- n - ncol(Fm)
    }
    lv <- 0.2 * exp(h)
    s2 <- v$signal_var
    Ihh <- outer(lv, lv) * P^2 / 2
    Ihs <- lv * diag(P) / (2 * s2)
    expect_equal(v$info_h, Ihh - tcrossprod(Ihs) / (nn / (2 * s2^2)), tolerance = 1e-9)
  }
})

test_that("the latent's mode and the Laplace approximation match base R", {
  d <- bump_data(40, seed = 4)
  z <- d$x
  K <- oracle_kernel(d$x, d$x, "rbf", 0.2)
  # (length scales at which K_g is well conditioned: the oracle's Hessian is
  # by finite differences)
  for (g in list(list(kernel = kernel_matern32(0.12), sd = 1.5, name = "matern32"),
                 list(kernel = kernel_matern12(0.3), sd = 0.8, name = "matern12"))) {
    Kg <- g$sd^2 * oracle_kernel(z, z, g$name, g$kernel$bandwidth)
    # the oracle's own gradient against central differences of psi
    h0 <- sin(7 * z[, 1])
    num <- vapply(seq_len(d$n), function(i) {
      e <- replace(numeric(d$n), i, 1e-5)
      (gpn_psi(K, Kg, d$y, 0.05, h0 + e) - gpn_psi(K, Kg, d$y, 0.05, h0 - e)) / 2e-5
    }, 0)
    expect_equal(gpn_grad(K, Kg, d$y, 0.05, h0), num, tolerance = 1e-6)
    o <- gpn_oracle(K, Kg, d$y, 0.05)
    m <- askotch:::noise_gp_mode(d$x, matrix(d$y), kernel_rbf(0.2), 0.05, z, g,
                                 list(F = matrix(1, d$n, 1), reml = FALSE), NULL, 1L)
    expect_equal(m$h, o$h, tolerance = 1e-5)
    expect_equal(m$psi, o$psi, tolerance = 1e-9)
    expect_equal(m$lml, o$lml, tolerance = 1e-5)
    # the latent's Laplace posterior at new points: mean k^T K_g^{-1} h
    zn <- matrix(c(0.1, 0.45, 0.9))
    ks <- g$sd^2 * oracle_kernel(zn, z, g$name, g$kernel$bandwidth)
    lat <- askotch:::noise_gp_latent(c(g, list(Z = z, a = m$a, C = m$C)), zn)
    expect_equal(lat$mean, drop(ks %*% solve(Kg, o$h)), tolerance = 1e-5)
    expect_equal(lat$var, gpn_var(o, Kg, ks, g$sd), tolerance = 1e-6)
  }
})

test_that("the process's prior has the tail probabilities it is given", {
  # exp(logprior) is the density of (log ell, log sd) up to a constant:
  # normalised by quadrature, P(ell < range) = P(sd > sd0) = 0.05
  for (d in 1:2) for (pr in list(c(range = 0.5, sd = 1), c(range = 2, sd = 0.3))) {
    f_ell <- function(t) exp(vapply(t, function(u)
      askotch:::noise_gp_logprior(c(u, 0), pr, d), 0))
    f_sd <- function(t) exp(vapply(t, function(u)
      askotch:::noise_gp_logprior(c(0, u), pr, d), 0))
    q <- function(f, lo, hi) integrate(f, lo, hi, rel.tol = 1e-10)$value
    expect_equal(q(f_ell, -30, log(pr[["range"]])) / q(f_ell, -30, 80), 0.05,
                 tolerance = 1e-6)
    expect_equal(q(f_sd, log(pr[["sd"]]), 10) / q(f_sd, -30, 10), 0.05, tolerance = 1e-6)
  }
  expect_null(askotch:::noise_gp_prior_spec(FALSE))
  expect_identical(askotch:::noise_gp_prior_spec(c(sd = 2, range = 1)), c(range = 1, sd = 2))
})

test_that("the fit is the Laplace optimum, its weights and predictions are exact", {
  d <- bump_data(60, seed = 5)
  # the default: the posterior mode under the prior; the other checks below
  # are on the fit without it (the Laplace approximation's maximum)
  fp <- krr(d$x, d$y, noise = ~ gp(t), kernel = "rbf", standardize = FALSE, threads = 1)
  expect_identical(fp$tuning$noise_gp$prior, c(range = 0.5, sd = 1))
  expect_true(any(grepl("PC prior: P(length scale < 0.5 sd) = P(gp_sd > 1) = 0.05",
                        capture.output(print(summary(fp))), fixed = TRUE)))
  out <- capture.output(print(fp))
  expect_true(any(grepl("noise: log variance a Matern 3/2 Gaussian process in ~t",
                        out, fixed = TRUE)))
  expect_true(any(grepl(
    "lambda = .*the Laplace approximation with the noise process, under its prior\\)$", out)))
  zp <- (d$x - fp$noise$center) / fp$noise$scale
  post_at <- function(th) {
    K <- oracle_kernel(d$x, d$x, "rbf", exp(th[1]))
    Kg <- exp(th[3])^2 * oracle_kernel(zp, zp, "matern32", exp(th[4]))
    gpn_oracle(K, Kg, d$y, exp(th[2]))$lml +
      askotch:::noise_gp_logprior(th[4:3], c(range = 0.5, sd = 1), 1)
  }
  thp <- log(c(fp$kernel$bandwidth, fp$lambda, fp$noise$gp$sd,
               fp$noise$gp$kernel$bandwidth))
  p0 <- post_at(thp)
  for (j in 1:4) for (s in c(-1, 1)) {
    expect_lt(post_at(thp + s * 0.02 * (seq_len(4) == j)), p0 + 1e-4)
  }
  fit <- krr(d$x, d$y, noise = ~ gp(t, prior = FALSE), kernel = "rbf", standardize = FALSE,
             threads = 1)
  expect_null(fit$tuning$noise_gp$prior)
  nz <- fit$noise
  gp <- nz$gp
  expect_identical(gp$kernel$name, "matern32")
  z <- (d$x - nz$center) / nz$scale
  lml_at <- function(th) {
    K <- oracle_kernel(d$x, d$x, "rbf", exp(th[1]))
    Kg <- exp(th[3])^2 * oracle_kernel(z, z, "matern32", exp(th[4]))
    gpn_oracle(K, Kg, d$y, exp(th[2]))
  }
  th <- log(c(fit$kernel$bandwidth, fit$lambda, gp$sd, gp$kernel$bandwidth))
  o <- lml_at(th)
  # (to the oracle's finite-difference Hessian, less precise where K_g is
  # ill conditioned; the test above has the approximation to 1e-5)
  expect_equal(as.numeric(logLik(fit)), o$lml, tolerance = 1e-3)
  expect_equal(attr(logLik(fit), "df"), 6)  # beta, s^2, bandwidth, lambda, sd, length scale
  # a maximum: no step of 2% in any hyperparameter raises the approximation
  for (j in 1:4) for (s in c(-1, 1)) {
    expect_lt(lml_at(th + s * 0.02 * (seq_len(4) == j))$lml, o$lml + 1e-4)
  }
  # the weights are exp(-h) at the mode; predictions are the weighted GP's
  expect_equal(unname(weights(fit)), exp(-o$h), tolerance = 1e-5)
  xn <- cbind(t = c(0.1, 0.5, 0.93))
  w <- exp(-o$h)
  tro <- trend_oracle(d$x, d$y, matrix(1, d$n), fit$kernel$bandwidth, fit$lambda, xn,
                      matrix(1, 3), w = w)
  p <- predict(fit, xn, se.fit = TRUE)
  expect_equal(unname(p$fit), tro$mu, tolerance = 1e-6)
  expect_equal(unname(p$se.fit), sqrt(tro$var), tolerance = 1e-6)
  # each new point's noise: the log-normal mean of the latent's posterior
  Kg <- gp$sd^2 * oracle_kernel(z, z, "matern32", gp$kernel$bandwidth)
  zn <- (xn - nz$center) / nz$scale
  ks <- gp$sd^2 * oracle_kernel(zn, z, "matern32", gp$kernel$bandwidth)
  mu <- drop(ks %*% solve(Kg, o$h))
  vr <- gpn_var(o, Kg, ks, gp$sd)
  expect_equal(unname(p$residual.scale), sqrt(tro$s2 * fit$lambda * exp(mu + vr / 2)),
               tolerance = 1e-5)
  tb <- tidy(fit)
  expect_equal(tb$estimate[tb$term == "noise:gp_sd"], gp$sd)
  expect_equal(tb$estimate[tb$term == "noise:gp_length_scale:t"],
               unname(gp$kernel$bandwidth * nz$scale))
  expect_equal(tb$estimate[tb$term == "noise:(Intercept)"], log(fit$lambda * tro$s2),
               tolerance = 1e-6)
})

test_that("intervals cover at the nominal rate where the noise rises and falls", {
  inside <- matrix(0, 2, 2, dimnames = list(c("gp", "linear"), c("calm", "noisy")))
  total <- c(calm = 0, noisy = 0)
  for (r in 1:12) {
    d <- bump_data(120, seed = 300 + r)
    set.seed(400 + r)
    tn <- runif(300)
    yn <- sin(5 * tn) + rnorm(300, sd = bump_sd(tn))
    calm <- abs(tn - 0.5) > 0.25
    for (m in c("gp", "linear")) {
      fit <- krr(d$x, d$y, noise = if (m == "gp") ~ gp(t) else ~ t, threads = 1)
      p <- predict(fit, cbind(t = tn), interval = "prediction")
      ok <- yn >= p[, "lwr"] & yn <= p[, "upr"]
      inside[m, ] <- inside[m, ] + c(sum(ok[calm]), sum(ok[!calm]))
    }
    total <- total + c(sum(calm), sum(!calm))
  }
  cover <- sweep(inside, 2L, total, "/")
  expect_true(all(cover["gp", ] >= 0.92 & cover["gp", ] <= 0.98))
  # a log-linear model cannot follow the bump: it over-covers the calm ends
  expect_gt(cover["linear", "calm"], 0.98)
})

test_that("a subsample estimates the process; the formula method; bad input", {
  d <- bump_data(90, seed = 6)
  df <- data.frame(y = d$y, t = d$x[, 1])
  fit <- krr(y ~ t, data = df, noise = ~ gp(t, kernel = "rbf"), threads = 1)
  fm <- krr(d$x, d$y, noise = ~ gp(t, kernel = "rbf"), threads = 1)
  expect_equal(fitted(fit), fitted(fm), tolerance = 1e-12)
  expect_identical(fit$noise$gp$kernel$name, "rbf")
  old <- options(askotch.noise_gp_max_n = 40)
  on.exit(options(old))
  sub <- krr(y ~ t, data = df, noise = ~ gp(t), threads = 1)
  gp <- sub$noise$gp
  expect_length(gp$rows, 40)
  # every point's weight is exp(-h) at the latent's posterior mean
  z <- (d$x - sub$noise$center) / sub$noise$scale
  lat <- askotch:::noise_gp_latent(gp, z)
  expect_equal(unname(weights(sub)), exp(-lat$mean), tolerance = 1e-12)
  expect_error(logLik(sub), "askotch.noise_gp_max_n", class = "askotch_error_input")
  options(old)
  e <- function(...) expect_error(krr(d$x, d$y, threads = 1, ...),
                                  class = "askotch_error_input")
  e(noise = ~ gp(t) + t)
  e(noise = ~ gp())
  e(noise = ~ gp(t, "rbf"))
  e(noise = ~ gp(t, sd = 1))
  e(noise = ~ gp(t, kernel = "laplace"))
  e(noise = ~ gp(t, prior = "yes"))
  e(noise = ~ gp(t, prior = no_such_object))
  e(noise = ~ gp(t, prior = c(1, 2)))
  e(noise = ~ gp(t, prior = c(range = -1, sd = 1)))
  e(noise = ~ gp(t, prior = c(range = 1, sd = Inf)))
  e(noise = ~ gp(t), bandwidth = "ard")
  e(noise = ~ gp(t), lambda = "gcv")
  e(noise = ~ gp(t), kernel = kernel_rbf() + kernel_matern32())
  e(noise = ~ gp(t), weights = rep(1, 90))
  expect_error(krr(d$x, cbind(d$y, d$y), noise = ~ gp(t), threads = 1),
               class = "askotch_error_input")
  expect_error(vcov(fit), "latent noise process", class = "askotch_error_input")
  options(askotch.noise_gp_max_n = Inf)
  expect_length(krr(d$x, d$y, noise = ~ gp(t), threads = 1)$noise$gp$rows, 90)
  options(askotch.noise_gp_max_n = 2.5)
  expect_error(krr(d$x, d$y, noise = ~ gp(t), threads = 1), "askotch.noise_gp_max_n",
               class = "askotch_error_input")
  options(old)
  for (f in c("sd", "a", "C", "Z")) {
    bad <- fit
    bad$noise$gp[[f]] <- bad$noise$gp[[f]][-1]
    expect_error(predict(bad, df), "noise", class = "askotch_error_object")
  }
  bad <- fit
  bad$noise$coef <- c(t = 1)
  expect_error(predict(bad, df), "noise", class = "askotch_error_object")
  for (v in list(1, NULL)) {
    bad <- fit
    bad$noise[c("gp", "Z")][[if (is.null(v)) "Z" else "gp"]] <- list(v)
    bad$noise[["Z"]] <- if (is.null(v)) NULL else bad$noise[["Z"]]
    if (!is.null(v)) bad$noise$gp <- v
    expect_error(predict(bad, df, interval = "prediction"), "noise",
                 class = "askotch_error_object")
  }
})

test_that("simulate(), time_limit and a process the data do not support", {
  d <- bump_data(70, seed = 7)
  fit <- krr(d$x, d$y, noise = ~ gp(t), threads = 1)
  # the noise of new draws at the training points: predict()'s
  s <- simulate(fit, nsim = 4000, seed = 1, noise = TRUE)
  p <- predict(fit, se.fit = TRUE)
  v <- apply(as.matrix(s), 1L, stats::var)
  expect_equal(unname(v / (p$se.fit^2 + p$residual.scale^2)), rep(1, 70), tolerance = 0.15)
  # a search stopped by the clock says so and keeps its best point
  g <- krr(d$x, d$y, noise = ~ gp(t), threads = 1, time_limit = 0.2)
  expect_identical(g$tuning$noise_gp$message, "time_limit")
  expect_true(is.finite(as.numeric(logLik(g))))
  # constant noise: without the prior the process's sd goes to the lower
  # end of its range; with it, the noise stays close to constant
  set.seed(8)
  y0 <- sin(5 * d$x[, 1]) + rnorm(70, sd = 0.2)
  expect_warning(h <- krr(d$x, y0, noise = ~ gp(t, prior = FALSE), threads = 1),
                 "noise process", class = "askotch_warning_hyper")
  expect_true("sd" %in% h$tuning$noise_gp$at_bound)
  expect_no_warning(hp <- krr(d$x, y0, noise = ~ gp(t), threads = 1))
  expect_lt(diff(range(log(weights(hp)))), 0.5)
})
