# Uncertainty about the hyperparameters (R/gp-inference.R): the observed
# information against closed forms written here in base R, vcov(),
# confint() (Wald and profile), tidy(conf.int = TRUE), summary(), the
# coverage of the intervals on simulated Gaussian processes, and the
# warning of a default fit whose estimates are implausible.

# The full log likelihood of y ~ N(0, s2 (K + lam I)), RBF kernel of
# bandwidth sig, with its gradient and Hessian in (log sig, log lam, log s2),
# from the squared distances D2: every matrix formed in base R.
rbf_closed_form <- function(D2, y, sig, lam, s2) {
  n <- length(y)
  K <- exp(-D2 / (2 * sig^2))
  U <- D2 / sig^2
  dK <- U * K                      # dK/dlog sig
  d2K <- (U^2 - 2 * U) * K         # d2K/dlog sig^2
  A <- K + diag(lam, n)
  Ai <- solve(A)
  a <- drop(Ai %*% y)
  f <- sum(y * a)
  ll <- -n / 2 * log(2 * pi * s2) - 0.5 * determinant(A)$modulus[[1]] - f / (2 * s2)
  dA <- list(dK, diag(lam, n))
  d2A <- list(list(d2K, 0 * K), list(0 * K, diag(lam, n)))
  g <- c(vapply(dA, function(M) {
    sum(a * (M %*% a)) / (2 * s2) - 0.5 * sum(diag(Ai %*% M))
  }, 0), -n / 2 + f / (2 * s2))
  H <- matrix(0, 3, 3)
  for (i in 1:2) for (j in 1:2) {
    H[i, j] <- -0.5 * sum(diag(Ai %*% d2A[[i]][[j]])) +
      0.5 * sum(diag(Ai %*% dA[[i]] %*% Ai %*% dA[[j]])) -
      (2 * sum(a * (dA[[i]] %*% Ai %*% dA[[j]] %*% a)) -
         sum(a * (d2A[[i]][[j]] %*% a))) / (2 * s2)
  }
  for (i in 1:2) H[i, 3] <- H[3, i] <- -sum(a * (dA[[i]] %*% a)) / (2 * s2)
  H[3, 3] <- -f / (2 * s2)
  list(loglik = ll, gradient = g, hessian = H)
}

test_that("the Hessian equals the closed form (RBF, base R) to 1e-8", {
  set.seed(11)
  n <- 80
  x <- matrix(runif(2 * n), n, 2)
  y <- sin(5 * x[, 1]) + x[, 2] + rnorm(n, sd = 0.1)
  y <- y - mean(y)
  sig <- 0.4
  lam <- 0.03
  s2 <- 0.7
  cf <- rbf_closed_form(as.matrix(dist(x))^2, y, sig, lam, s2)
  ours <- askotch:::gp_hessian_exact(x, matrix(y), list(name = "rbf", bandwidth = sig),
                                     lam, -1L, TRUE, s2 = s2, threads = 1L)
  expect_lt(abs(ours$loglik - cf$loglik) / abs(cf$loglik), 1e-10)
  expect_lt(max(abs(ours$gradient - cf$gradient)) / max(abs(cf$gradient)), 1e-8)
  expect_lt(max(abs(ours$hessian - cf$hessian)) / max(abs(cf$hessian)), 1e-8)
})

test_that("ARD and Matern Hessians equal differences of the gradient", {
  # central differences of the analytic gradient, step 1e-4 in the logs:
  # truncation ~1e-8 |third derivative|, so 1e-6 relative
  set.seed(12)
  n <- 60
  x <- matrix(rnorm(3 * n), n, 3)
  y <- matrix(cos(x[, 1]) + 0.5 * x[, 2] + rnorm(n, sd = 0.2))
  y <- y - mean(y)
  for (kn in c("matern52", "matern32", "rbf")) {
    k <- list(name = kn, bandwidth = 1)
    th0 <- c(log(c(0.8, 1.5, 3)), log(0.05), log(0.9))
    f <- function(th) {
      xs <- sweep(x, 2L, exp(th[1:3]), "/")
      askotch:::gp_hessian_exact(xs, y, k, exp(th[4]), 1:3, TRUE, s2 = exp(th[5]),
                                 threads = 1L)
    }
    H <- f(th0)$hessian
    e <- 1e-4
    Hfd <- sapply(1:5, function(i) {
      d <- replace(numeric(5), i, e)
      (f(th0 + d)$gradient - f(th0 - d)$gradient) / (2 * e)
    })
    expect_lt(max(abs(H - Hfd)) / max(abs(H)), 1e-6, label = kn)
    expect_equal(H, t(H))
    # and the gradient is the derivative of the log likelihood
    gfd <- sapply(1:5, function(i) {
      d <- replace(numeric(5), i, e)
      (f(th0 + d)$loglik - f(th0 - d)$loglik) / (2 * e)
    })
    expect_lt(max(abs(f(th0)$gradient - gfd)) / max(abs(gfd)), 1e-6, label = kn)
  }
})

test_that("vcov() inverts the observed information at the estimate", {
  set.seed(13)
  x <- sort(runif(100, 0, 6))
  y <- sin(2 * x) + rnorm(100, sd = 0.3)
  fit <- krr(x, y, bandwidth = "ml", threads = 1)
  V <- vcov(fit)
  expect_identical(rownames(V), c("bandwidth", "lambda", "signal_var"))
  h <- askotch:::gp_hessian_exact(fit$x, matrix(y - mean(y)), fit$kernel, fit$lambda,
                                  -1L, TRUE, threads = 1L)
  # at the estimate the gradient vanishes (L-BFGS-B's optimum; s2 exactly)
  expect_lt(max(abs(h$gradient)), 1e-2)
  expect_equal(unname(V %*% -h$hessian), diag(3), tolerance = 1e-10)
  expect_equal(h$loglik, as.numeric(logLik(fit)), tolerance = 1e-10)
  expect_true(all(eigen(V)$values > 0))
  # given hyperparameters are left out
  f2 <- krr(x, y, bandwidth = 0.5, lambda = 0.1, threads = 1)
  expect_identical(rownames(vcov(f2)), "signal_var")
  # the information of log s2 is n / 2
  expect_equal(unname(vcov(f2)), matrix(2 / 100), tolerance = 1e-12)
})

test_that("profile intervals end where the likelihood ratio is chi^2_1", {
  set.seed(14)
  x <- sort(runif(90, 0, 5))
  y <- cos(3 * x) + rnorm(90, sd = 0.25)
  fit <- krr(x, y, bandwidth = "ml", threads = 1)
  ci <- confint(fit, method = "profile")
  w <- confint(fit)
  expect_identical(colnames(ci), c("2.5 %", "97.5 %"))
  for (what in c("lambda", "bandwidth")) {
    expect_true(ci[what, 1] < ci[what, 2])
    est <- if (what == "lambda") fit$lambda else fit$kernel$bandwidth
    expect_true(ci[what, 1] < est && est < ci[what, 2], label = what)
    # profile and Wald intervals agree roughly for a well-determined estimate
    expect_lt(max(abs(log(ci[what, ] / w[what, ]))), 0.5, label = what)
  }
  # the lambda end points: refit with lambda given and the bandwidth by ML
  top <- as.numeric(logLik(fit))
  for (lam in ci["lambda", ]) {
    fl <- krr(x, y, lambda = lam, bandwidth = "ml", threads = 1)
    expect_lt(abs(as.numeric(logLik(fl)) - (top - qchisq(0.95, 1) / 2)), 2e-3)
  }
  expect_identical(rownames(w)[4], "noise_var")
  expect_equal(confint(fit, "lambda"), w["lambda", , drop = FALSE])
})

test_that("Wald intervals cover simulated GP hyperparameters at their rate", {
  # 100 draws of a GP (RBF, bandwidth 1, lambda 0.1, s2 2) at 150 points on
  # [0, 20]: the count covered by 95% intervals is Binomial(100, 0.95)
  # (mean 95, sd 2.2) when the intervals are right; 86 is 4 sd below
  set.seed(15)
  n <- 150
  truth <- c(bandwidth = 1, lambda = 0.1, signal_var = 2)
  cover <- c(bandwidth = 0, lambda = 0, signal_var = 0)
  for (r in 1:100) {
    x <- runif(n, 0, 20)
    K <- exp(-outer(x, x, "-")^2 / 2)
    y <- drop(t(chol(truth[3] * (K + diag(truth[2], n)))) %*% rnorm(n)) + 3
    fit <- krr(x, y, kernel = "rbf", bandwidth = "ml", standardize = FALSE, threads = 1)
    ci <- confint(fit)
    cover <- cover + (ci[names(truth), 1] <= truth & truth <= ci[names(truth), 2])
  }
  expect_true(all(cover >= 86), label = paste(cover, collapse = " "))
  expect_true(all(cover <= 100))
})

test_that("tidy(conf.int = TRUE) and summary() report the intervals", {
  set.seed(16)
  x <- matrix(runif(200), 100, 2)
  y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(100, sd = 0.1)
  fit <- krr(x, y, kernel = "matern32", bandwidth = "ard", threads = 1)
  td <- tidy(fit, conf.int = TRUE, conf.level = 0.9)
  expect_identical(td$term, c("bandwidth", "lambda", "length_scale:x1", "length_scale:x2",
                              "signal_var", "noise_var"))
  ci <- confint(fit, level = 0.9)
  expect_equal(td$conf.low[-1], unname(ci[td$term[-1], 1]))
  expect_true(is.na(td$std.error[1]))  # the ARD bandwidth is fixed at 1
  se <- sqrt(diag(vcov(fit)))
  expect_equal(td$std.error[2], fit$lambda * se[["lambda"]])
  expect_identical(tidy(fit)$term, c("bandwidth", "lambda"))
  out <- capture.output(print(summary(fit)))
  expect_true(any(grepl("^Hyperparameters", out)))
  expect_true(any(grepl("^length_scale:x2", out)))
})

test_that("inference on fits without the model is a classed error", {
  set.seed(17)
  x <- matrix(rnorm(80), 40, 2)
  y <- x[, 1] + rnorm(40, sd = 0.3)
  km <- kernel_machine(x, sign(y), loss = "hinge", lambda = 1, threads = 1)
  expect_error(vcov(km), class = "askotch_error_input")
  fit <- krr(x, y, bandwidth = "ml", threads = 1)
  expect_error(confint(fit, level = 1.5), "`level`", class = "askotch_error_input")
  expect_error(confint(fit, method = "bootstrap"), "`method`", class = "askotch_error_input")
  expect_error(tidy(fit, conf.int = TRUE, conf.level = -1), "`conf.level`",
               class = "askotch_error_input")
  withr_opt <- options(askotch.tune_exact_max_n = 20)
  on.exit(options(withr_opt))
  # above the exact sizes: the stochastic likelihood's observed information
  expect_true(all(is.finite(vcov(fit))))
  expect_error(confint(fit, method = "profile"), "wald", class = "askotch_error_input")
})

test_that("a median-bandwidth fit with an implausible signal variance warns", {
  skip_if_not_installed("fields")
  e <- new.env()
  utils::data("NorthAmericanRainfall", package = "fields", envir = e)
  r <- e$NorthAmericanRainfall
  x <- cbind(r$longitude, r$latitude)
  y <- log(r$precip)
  expect_warning(fit <- krr(x, y, bandwidth = "median", threads = 1), "signal variance",
                 class = "askotch_warning_hyper")
  expect_gt(askotch:::gp_signal_var(fit) / var(y), 100)
  # the fit the warning points to does not warn
  expect_no_warning(krr(x[1:600, ], y[1:600], kernel = "matern32", bandwidth = "ml",
                        threads = 1))
  # with nothing of the kernel's to suggest (a Matern kernel, its scales by
  # likelihood) the advice is the scaling alone, in a sentence of its own
  d <- make_regression(300, p = 4, seed = 8)
  w <- tryCatch(krr(d$x, d$y, kernel = "matern52", bandwidth = "ard", threads = 1),
                askotch_warning_hyper = function(w) conditionMessage(w))
  expect_match(w, "too narrow for these data. Check the scaling of `x`.", fixed = TRUE)
})

test_that("time_limit stops the hyperparameter search at its best point", {
  set.seed(18)
  x <- matrix(runif(600), 300, 2)
  y <- sin(5 * x[, 1]) + rnorm(300, sd = 0.1)
  # a clock whose limit has passed stops the search after its first
  # evaluation, which is then the best point
  clock <- askotch:::tune_clock(list(rule = list(time_limit = 0), progress = FALSE))
  k <- kernel_rbf(0.5)
  opt <- askotch:::gp_optimise(x, matrix(y - mean(y)), k, threads = 1L, clock = clock)
  expect_identical(opt$optim$message, "time_limit")
  expect_identical(opt$optim$convergence, 1L)
  expect_equal(opt$kernel$bandwidth, 0.5)
  full <- askotch:::gp_optimise(x, matrix(y - mean(y)), k, threads = 1L)
  expect_identical(full$optim$convergence, 0L)
  expect_gt(full$optim$loglik, opt$optim$loglik)
})
