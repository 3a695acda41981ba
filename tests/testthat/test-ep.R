# GP classification by expectation propagation (kernel_machine(posterior =
# "ep")) against a base R sequential EP written from Rasmussen and Williams
# (2006), Algorithm 3.5 and sec. 3.6, with the tilted moments by
# stats::integrate(): no shared code with R/ep.R, which updates all sites
# together and integrates by the trapezoidal rule.

# the tilted distribution sigma(y f) N(f; m, v): its normaliser, mean, variance
# (in the standardised variable z = (f - m) / sqrt(v))
oracle_tilted <- function(y, m, v) {
  s <- sqrt(v)
  g <- function(k, c = 0) {
    integrate(function(z) (z - c)^k * plogis(y * (m + s * z)) * dnorm(z), -12, 12,
              rel.tol = 1e-12, abs.tol = 1e-15, subdivisions = 500L)$value
  }
  z <- g(0)
  ez <- g(1) / z
  list(z = z, mean = m + s * ez, var = v * g(2, ez) / z)
}

# sequential EP (R&W Algorithm 3.5) for the prior covariance Kt, +1/-1 y;
# log Z_EP from its definition: log N(mu~; 0, Kt + S~^-1) plus the sites'
# normalisers
oracle_ep <- function(Kt, y) {
  n <- length(y)
  tt <- nt <- numeric(n)
  Sigma <- Kt
  mu <- numeric(n)
  for (sweep in 1:100) {
    old <- c(tt, nt)
    for (i in seq_len(n)) {
      tc <- 1 / Sigma[i, i] - tt[i]
      nc <- mu[i] / Sigma[i, i] - nt[i]
      h <- oracle_tilted(y[i], nc / tc, 1 / tc)
      dt <- 1 / h$var - tc - tt[i]
      tt[i] <- tt[i] + dt
      nt[i] <- h$mean / h$var - nc
      s <- Sigma[, i]
      Sigma <- Sigma - outer(s, s) / (1 / dt + s[i])
      mu <- drop(Sigma %*% nt)
    }
    Sigma <- solve(solve(Kt) + diag(tt))
    mu <- drop(Sigma %*% nt)
    if (max(abs(c(tt, nt) - old)) < 1e-12) break
  }
  vc <- 1 / (1 / diag(Sigma) - tt)              # cavity variances
  mc <- vc * (mu / diag(Sigma) - nt)            # cavity means
  mt <- nt / tt                                  # site means, site variances 1 / tt
  C <- Kt + diag(1 / tt)
  lz <- vapply(seq_len(n), function(i) log(oracle_tilted(y[i], mc[i], vc[i])$z), 0)
  logz <- sum(lz + 0.5 * log(vc + 1 / tt) + (mc - mt)^2 / (2 * (vc + 1 / tt))) -
    0.5 * c(determinant(C)$modulus) - 0.5 * sum(mt * solve(C, mt))
  list(tau = tt, nu = nt, mu = mu, Sigma = Sigma, logz = logz, C = C, mt = mt)
}

test_that("EP's latent mean, variance, probabilities and log Z are the base R ones", {
  old <- options(askotch.ep_tol = 1e-11)
  on.exit(options(old))
  d <- gpc_data(40)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep", bandwidth = 0.8,
                        lambda = 0.05, standardize = FALSE, tol = 1e-12, threads = 1)
  K <- oracle_kernel(d$x, d$x, "rbf", 0.8)
  o <- oracle_ep(K / 0.05, d$s)
  expect_equal(drop(fit$ep$tau), o$tau, tolerance = 1e-8)
  expect_equal(as.numeric(logLik(fit)), o$logz, tolerance = 1e-8)
  xn <- rbind(c(0, 1), c(-1, 0.5), c(3, 3), d$x[1:2, ])
  kx <- oracle_kernel(xn, d$x, "rbf", 0.8) / 0.05
  mu <- drop(kx %*% solve(o$C, o$mt))
  v <- 1 / 0.05 - rowSums((kx %*% solve(o$C)) * kx)
  p <- predict(fit, xn, type = "decision", se.fit = TRUE)
  expect_equal(unname(p$fit), mu, tolerance = 1e-7)
  expect_equal(unname(p$se.fit^2), v, tolerance = 1e-7)
  expect_equal(unname(p$fit[4:5]), o$mu[1:2], tolerance = 1e-7)
  expect_equal(unname(p$se.fit[4:5]^2), diag(o$Sigma)[1:2], tolerance = 1e-7)
  expect_equal(unname(predict(fit, xn, type = "prob")), oracle_logistic_normal(mu, v),
               tolerance = 1e-7)
  expect_identical(as.character(predict(fit, xn)), ifelse(mu > 0, "b", "a"))
  # the weights stay the posterior mode's (the logistic fit, its duality gap)
  lap <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        bandwidth = 0.8, lambda = 0.05, standardize = FALSE, tol = 1e-12,
                        threads = 1)
  expect_equal(fit$weights, lap$weights, tolerance = 1e-10)
  # EP's probabilities lie further from 1/2 than the Laplace approximation's
  # (its Gaussian sits at the mode, nearer zero than the posterior mean)
  pl <- predict(lap, d$x, type = "prob")
  pe <- predict(fit, d$x, type = "prob")
  expect_gt(mean(abs(pe - 0.5)), mean(abs(pl - 0.5)))
})

test_that("the compiled tilted moments are stats::integrate()'s", {
  tilted <- getFromNamespace("native_ep_tilted", "askotch")
  # sds from 1e-3 to 100, cavities on the right side and far on the wrong one
  cases <- rbind(c(1, 0.3, 0.01), c(-1, 2, 1), c(1, -3, 25), c(-1, 40, 400),
                 c(1, -50, 4), c(1, 5, 1e4), c(-1, -1, 1e-6))
  out <- tilted(cases[, 1], cases[, 2], cases[, 3])
  for (i in seq_len(nrow(cases))) {
    h <- oracle_tilted(cases[i, 1], cases[i, 2], cases[i, 3])
    expect_equal(out[i, 1], log(h$z), tolerance = 1e-10)
    expect_equal(out[i, 2], h$mean, tolerance = 1e-9)
    expect_equal(out[i, 3], h$var, tolerance = 1e-8)
  }
  expect_error(tilted(1, 0, 0), class = "askotch_error")
  expect_error(tilted(0, 0, 1), class = "askotch_error")
  expect_error(tilted(c(1, -1), 0, 1), class = "askotch_error")
})

test_that("the compiled site posterior is the base R closed form", {
  sites <- getFromNamespace("native_gp_sites", "askotch")
  set.seed(11)
  n <- 60
  x <- matrix(rnorm(2 * n), n)
  K <- unname(40 * exp(-as.matrix(dist(x))^2 / 2))
  # precisions from zero (a site that says nothing) to large, and tiny ones,
  # whose variances the closed form below keeps to full accuracy
  tau <- c(0, 1e-10, 1e-6, runif(n - 3, 0, 3))
  nu <- rnorm(n)
  sw <- sqrt(tau)
  B <- diag(n) + outer(sw, sw) * K
  Sigma <- K - K %*% diag(sw) %*% solve(B, diag(sw) %*% K)
  alpha <- nu - sw * solve(B, sw * drop(K %*% nu))
  p <- sites(K, tau, nu, threads = 1L)
  q <- sites(K, tau, nu, var = FALSE)
  expect_null(q$var)
  expect_equal(q[c("mean", "alpha", "L")], p[c("mean", "alpha", "L")], tolerance = 1e-14)
  expect_equal(p$var, diag(Sigma), tolerance = 1e-10)
  expect_equal(p$alpha, alpha, tolerance = 1e-10)
  expect_equal(p$mean, drop(K %*% alpha), tolerance = 1e-10)
  expect_equal(p$L, chol(B), tolerance = 1e-12)
  # the posterior mean equals Sigma's product with the shifts
  expect_equal(p$mean, drop(Sigma %*% nu), tolerance = 1e-9)
  bad <- tau
  bad[5] <- -1
  expect_error(sites(K, bad, nu), class = "askotch_error")
  expect_error(sites(K, tau[-1], nu), class = "askotch_error")
  # a prior covariance that is not positive semidefinite
  expect_error(sites(-K, tau, nu), class = "askotch_error")
  K[3, 1] <- NaN
  expect_error(sites(K, tau, nu), class = "askotch_error")
})

test_that("with one point EP is the exact posterior", {
  ep_column <- getFromNamespace("ep_column", "askotch")
  sites <- getFromNamespace("native_gp_sites", "askotch")
  for (cf in list(c(1, 2, 0.3), c(-1, 50, 1.2), c(1, 0.01, -0.5))) {
    e <- ep_column(matrix(cf[2]), cf[1], cf[3])
    p <- sites(matrix(cf[2]), e$tau, e$nu)
    h <- oracle_tilted(cf[1], 0, cf[2])
    expect_equal(p$mean, h$mean, tolerance = 1e-9)
    expect_equal(p$var, h$var, tolerance = 1e-9)
    expect_equal(e$logz, log(h$z), tolerance = 1e-10)
  }
})

test_that("one-vs-rest EP: one binary EP per class, probabilities normalised", {
  old <- options(askotch.ep_tol = 1e-10)
  on.exit(options(old))
  ir <- iris[c(1:15, 51:65, 101:115), ]
  fit <- kernel_machine(Species ~ ., data = ir, loss = loss_logistic(), posterior = "ep",
                        bandwidth = 1, lambda = 0.1, tol = 1e-12, threads = 1)
  P <- predict(fit, ir, type = "prob")
  expect_equal(unname(rowSums(P)), rep(1, 45), tolerance = 1e-12)
  xs <- scale(as.matrix(ir[, 1:4]))
  K <- oracle_kernel(xs, xs, "rbf", 1) / 0.1
  raw <- sapply(levels(ir$Species), function(l) {
    o <- oracle_ep(K, ifelse(ir$Species == l, 1, -1))
    v <- diag(o$Sigma)
    oracle_logistic_normal(o$mu, v)
  })
  expect_equal(unname(P), unname(raw / rowSums(raw)), tolerance = 1e-6)
  expect_length(fit$ep$sweeps, 3L)
})

test_that("the hyperparameters maximise EP's marginal likelihood under the scale prior", {
  d <- gpc_data(40, seed = 2)
  ep <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                       standardize = FALSE, threads = 1)
  expect_identical(ep$tuning$lambda_rule, "ep")
  expect_identical(ep$tuning$bandwidth_rule, "ml")
  y <- ifelse(d$y == levels(d$y)[2], 1, -1)
  # log Z_EP (the oracle's) plus the log density of log lambda under the
  # prior sd_f = lambda^(-1/2) ~ exponential, P(sd_f > 30) = 0.05
  objective <- function(th) {
    Kt <- oracle_kernel(d$x, d$x, "rbf", exp(th[1])) / exp(th[2])
    r <- -log(0.05) / 30
    oracle_ep(Kt, y)$logz - r * exp(-th[2] / 2) - th[2] / 2
  }
  th <- log(c(ep$kernel$bandwidth, ep$lambda))
  # the optimiser's stationary point: the gradient within 1e-3 of zero
  # (its second derivatives here are of order 1-10)
  expect_lt(max(abs(num_grad(objective, th, 1e-3))), 1e-3)
  expect_equal(as.numeric(logLik(ep)), oracle_ep(oracle_kernel(d$x, d$x, "rbf",
    ep$kernel$bandwidth) / ep$lambda, y)$logz, tolerance = 1e-6)
})

test_that("a composite's \"ml\" hyperparameters maximise EP's marginal likelihood; vcov()", {
  d <- gpc_data(40, seed = 2)
  k <- kernel_rbf("ml") + kernel_linear(dims = 2, amplitude = "ml")
  ep <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep", kernel = k,
                       threads = 1)
  expect_identical(ep$tuning$lambda_rule, "ep")
  tab <- ep$tuning$composite
  expect_identical(tab$what, c("bandwidth", "amplitude"))
  y <- ifelse(d$y == levels(d$y)[2], 1, -1)
  # the oracle's log Z_EP for the Gaussian kernel of bandwidth b plus
  # a x2 x2', and lambda, plus each term's scale prior (above) on the log
  # of its latent sd: -log(lambda) / 2 and (log a - log lambda) / 2
  prior <- function(th) {
    ls <- c(-th[3], th[2] - th[3]) / 2
    sum(ls - -log(0.05) / 30 * exp(ls))
  }
  objective <- function(th) {
    K <- oracle_kernel(d$x, d$x, "rbf", exp(th[1])) + exp(th[2]) * outer(d$x[, 2], d$x[, 2])
    oracle_ep(K / exp(th[3]), y)$logz + prior(th)
  }
  th <- log(c(tab$estimate, ep$lambda))
  expect_lt(max(abs(num_grad(objective, th, 1e-3))), 1e-3)
  expect_equal(as.numeric(logLik(ep)) + prior(th), objective(th), tolerance = 1e-6)
  expect_equal(ep$tuning$optim$log_prior, prior(th), tolerance = 1e-10)
  # vcov(): the inverse curvature of that objective, compared on the
  # information scale
  expect_identical(ep$tuning$search, "ep")
  V <- vcov(ep)
  expect_identical(rownames(V), c("rbf[1]:bandwidth", "term[2]:amplitude", "lambda"))
  H <- -second_differences(objective, th)
  expect_lt(max(abs(solve(V) - H)) / max(abs(H)), 1e-4)
  ci <- confint(ep)
  expect_true(all(ci[, 1] < exp(th) & exp(th) < ci[, 2]))
  # the fit's own prior scale, not the option's value now
  old <- options(askotch.ep_sd_prior = 5)
  on.exit(options(old), add = TRUE)
  expect_equal(vcov(ep), V, tolerance = 1e-12)
  bad <- ep
  bad$tuning$optim$sd_prior <- -1
  expect_error(vcov(bad), "sd_prior", class = "askotch_error_object")
  bad <- ep
  bad$tuning$search <- "newton"
  expect_error(vcov(bad), "search", class = "askotch_error_object")
})

test_that("on separable data the scale prior keeps lambda inside its range", {
  set.seed(4)
  x <- rbind(matrix(rnorm(40, -3), 20), matrix(rnorm(40, 3), 20))
  y <- factor(rep(c("a", "b"), each = 20))
  ep <- kernel_machine(x, y, loss = loss_logistic(), posterior = "ep", threads = 1)
  # without the prior the marginal likelihood grows as lambda -> 0, and the
  # search ends at its lower bound, 1e-6
  expect_gt(ep$lambda, 1e-4)
  expect_true(all(ep$ep$converged))
  expect_identical(ep$tuning$optim$convergence, 0L)
  # a composite: each term's latent sd has the prior, so no amplitude runs
  # off (the Laplace search's does, on these data)
  k <- kernel_rbf("ml", dims = 1) + kernel_rbf("ml", dims = 2, amplitude = "ml")
  ec <- suppressWarnings(kernel_machine(x, y, loss = loss_logistic(), posterior = "ep",
                                        kernel = k, threads = 1))
  expect_true(all(ec$ep$converged))
  expect_identical(ec$tuning$lambda_rule, "ep")
  amp <- ec$tuning$composite$estimate[ec$tuning$composite$what == "amplitude"]
  expect_lt(sqrt(max(1, amp) / ec$lambda), 300)
})

test_that("with option askotch.ep_tune = FALSE the hyperparameters are Laplace's", {
  old <- options(askotch.ep_tune = FALSE)
  on.exit(options(old))
  d <- gpc_data(60, seed = 2)
  lap <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        standardize = FALSE, threads = 1)
  ep <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                       standardize = FALSE, threads = 1)
  expect_identical(ep$tuning$lambda_rule, "laplace")
  expect_equal(ep$lambda, lap$lambda)
  expect_equal(ep$kernel$bandwidth, lap$kernel$bandwidth)
  expect_match(summary(ep)$extra[["Posterior"]], "expectation propagation")
  expect_output(print(summary(ep)), format(signif(as.numeric(logLik(ep)), 6)), fixed = TRUE)
})

test_that("EP's limits and failures are classed errors and warnings", {
  d <- gpc_data(30, seed = 3)
  e <- function(...) expect_error(kernel_machine(d$x, d$y, threads = 1, ...),
                                  class = "askotch_error_input")
  e(loss = loss_hinge(), posterior = "ep")
  e(loss = loss_logistic(), posterior = "ep", intercept = TRUE)
  e(loss = loss_logistic(), posterior = "ep", probability = TRUE)
  old <- options(askotch.ep_max_n = 20, askotch.ep_max_sweeps = 1L, askotch.ep_tol = 1e-14,
                 askotch.ep_sd_prior = NULL)
  on.exit(options(old))
  expect_error(kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                              threads = 1), "askotch.ep_max_n", class = "askotch_error_input")
  options(askotch.ep_max_n = NULL)
  expect_warning(fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                                       lambda = 0.01, bandwidth = 0.5, threads = 1),
                 "propagation did not converge", class = "askotch_warning_convergence")
  expect_false(fit$ep$converged)
  # when EP fails at the Laplace search's optimum, its values are kept
  lap <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", threads = 1)
  expect_warning(fit2 <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                                        threads = 1),
                 "propagation did not converge", class = "askotch_warning_convergence")
  expect_identical(fit2$tuning$lambda_rule, "laplace")
  expect_match(fit2$tuning$optim$message, "EP failed")
  expect_equal(c(fit2$lambda, fit2$kernel$bandwidth), c(lap$lambda, lap$kernel$bandwidth))
  options(askotch.ep_tol = "small")
  expect_error(kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                              threads = 1), "askotch.ep_tol", class = "askotch_error_input")
  options(askotch.ep_tol = NULL, askotch.ep_max_sweeps = NULL, askotch.ep_sd_prior = -1)
  expect_error(kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                              threads = 1), "askotch.ep_sd_prior", class = "askotch_error_input")
  options(askotch.ep_sd_prior = NULL, askotch.ep_tune = "no")
  expect_error(kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                              threads = 1), "askotch.ep_tune", class = "askotch_error_input")
  options(askotch.ep_tune = NULL)
  bad <- fit
  bad$ep$tau[1] <- -1
  expect_error(predict(bad, d$x, type = "prob"), "ep", class = "askotch_error_object")
  bad <- fit
  bad$ep <- NULL
  expect_error(predict(bad, d$x, type = "prob"), "ep", class = "askotch_error_object")
})

test_that("refit() recomputes EP's sites at the new lambda", {
  old <- options(askotch.ep_tol = 1e-10)
  on.exit(options(old))
  d <- gpc_data(40, seed = 5)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep", bandwidth = 0.8,
                        lambda = 0.05, standardize = FALSE, tol = 1e-12, threads = 1)
  r <- refit(fit, lambda = 0.2)
  direct <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "ep",
                           bandwidth = 0.8, lambda = 0.2, standardize = FALSE, tol = 1e-12,
                           threads = 1)
  expect_equal(r$ep$tau, direct$ep$tau, tolerance = 1e-7)
  expect_equal(predict(r, d$x[1:5, ], type = "prob"), predict(direct, d$x[1:5, ], type = "prob"),
               tolerance = 1e-7)
  expect_equal(as.numeric(logLik(r)), as.numeric(logLik(direct)), tolerance = 1e-8)
})
