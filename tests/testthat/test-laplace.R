# GP classification by the Laplace approximation (kernel_machine(posterior =
# "laplace")) against a base R Newton + Laplace implementation.

# the mode by Newton's method on -log p(f | y) with prior covariance K / lambda,
# written from R&W sec. 3.4 directly (no shared code with R/laplace.R)
oracle_laplace <- function(K, y, lambda) {
  n <- length(y)
  Kt <- K / lambda
  t01 <- (y + 1) / 2
  f <- numeric(n)
  for (i in 1:200) {
    p <- plogis(f)
    w <- p * (1 - p)
    # the Newton step f = (Kt^{-1} + W)^{-1} (W f + grad) = Kt a
    a <- solve(diag(n) + w * Kt, w * f + (t01 - p))
    f_new <- drop(Kt %*% a)
    done <- max(abs(f_new - f)) < 1e-13
    f <- f_new
    if (done) break
  }
  p <- plogis(f)
  w <- p * (1 - p)
  a <- t01 - p  # grad log p(y | f) at the mode: f = Kt a
  logq <- -0.5 * sum(a * f) + sum(plogis(y * f, log.p = TRUE)) -
    0.5 * c(determinant(diag(n) + outer(sqrt(w), sqrt(w)) * Kt)$modulus)
  list(f = f, w = w, a = a, logq = logq)
}

test_that("the Newton mode converges at a tiny lambda, where plain Newton diverges", {
  laplace_mode <- getFromNamespace("laplace_mode", "askotch")
  set.seed(3)
  n <- 150
  x <- matrix(rnorm(2 * n), n)
  y <- ifelse(x[, 1] + 0.3 * rnorm(n) > 0, 1, -1)
  K <- unname(exp(-as.matrix(dist(x))^2 / 2))
  # at lambda = 1e-6 R&W's Algorithm 3.1 without a line search runs away
  # (Psi below -1e9 after 100 steps) on these data; the mode solves
  # f = Kt (t - pi(f)), t = (y + 1) / 2, to the accuracy its last Newton
  # step allows: that step's solve with B = I + W^1/2 Kt W^1/2 (condition
  # 2.3e6 at the mode) leaves rounding errors in a, which Kt (rows summing
  # to 7.5e7) turns into up to about 1e-5 of f -- the BLAS's summation order
  # alone moves this residual between 1e-7 and 1e-5; a diverged or
  # unconverged mode is off by order one
  for (f0 in list(numeric(n), -30 * y)) {
    m <- laplace_mode(K, y, 1e-6, f = f0, threads = 1L)
    expect_true(m$converged)
    res <- m$f - drop(K %*% ((y + 1) / 2 - plogis(m$f))) / 1e-6
    expect_lt(max(abs(res)) / max(abs(m$f)), 1e-4)
  }
  # too few steps: reported, not taken for the mode
  expect_false(laplace_mode(K, y, 1e-6, maxit = 3L, threads = 1L)$converged)
})

test_that("mode, latent variance, probabilities and log q are the base R ones", {
  d <- gpc_data()
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        bandwidth = 0.8, lambda = 0.05, standardize = FALSE,
                        tol = 1e-12, threads = 1)
  K <- oracle_kernel(d$x, d$x, "rbf", 0.8)
  o <- oracle_laplace(K, d$s, 0.05)
  expect_equal(unname(predict(fit, type = "decision")), o$f, tolerance = 1e-8)
  ll <- logLik(fit)
  expect_equal(as.numeric(ll), o$logq, tolerance = 1e-8)
  expect_equal(attr(ll, "df"), 0)
  xn <- rbind(c(0, 1), c(-1, 0.5), c(3, 3))
  kx <- oracle_kernel(xn, d$x, "rbf", 0.8)
  v <- (1 - rowSums((kx %*% solve(K + 0.05 * diag(1 / o$w))) * kx)) / 0.05
  mu <- drop(kx %*% o$a) / 0.05
  p <- predict(fit, xn, type = "decision", se.fit = TRUE)
  expect_equal(unname(p$fit), mu, tolerance = 1e-7)
  expect_equal(unname(p$se.fit^2), v, tolerance = 1e-8)
  expect_equal(unname(predict(fit, xn, type = "prob")), oracle_logistic_normal(mu, v),
               tolerance = 1e-7)
  # MacKay's probit approximation is not what is computed: it differs
  # visibly where the latent variance is large
  expect_gt(max(abs(predict(fit, xn, type = "prob") - plogis(mu / sqrt(1 + pi * v / 8)))), 1e-4)
  # far from the data the averaged probability is pulled towards 1/2
  pm <- plogis(predict(fit, xn, type = "decision"))
  expect_lt(abs(predict(fit, xn, type = "prob")[3] - 0.5), abs(pm[3] - 0.5))
})

test_that("a composite kernel: the mode, variance and lambda of the base R Laplace", {
  d <- gpc_data(110, seed = 4)
  k <- kernel_rbf(1.5, dims = 1) * kernel_matern32(2, dims = 2) + 0.5 * kernel_linear(dims = 2)
  d12 <- abs(outer(d$x[, 2], d$x[, 2], "-"))
  K <- exp(-outer(d$x[, 1], d$x[, 1], "-")^2 / (2 * 1.5^2)) *
    (1 + sqrt(3) * d12 / 2) * exp(-sqrt(3) * d12 / 2) + 0.5 * outer(d$x[, 2], d$x[, 2])
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k,
                        tol = 1e-12, threads = 1)
  # lambda maximises the base R log q (the kernel is given: one hyperparameter)
  lq <- function(l) oracle_laplace(K, d$s, l)$logq
  expect_identical(fit$tuning$lambda_rule, "laplace")
  best <- stats::optimize(function(t) -lq(exp(t)), log(c(1e-3, 10)), tol = 1e-8)
  expect_equal(log(fit$lambda), best$minimum, tolerance = 1e-3)
  o <- oracle_laplace(K, d$s, fit$lambda)
  expect_equal(unname(predict(fit, type = "decision")), o$f, tolerance = 1e-7)
  expect_equal(as.numeric(logLik(fit)), o$logq, tolerance = 1e-8)
  # the latent variance at the training points: diag(K - K (K + lambda W^-1)^-1 K) / lambda
  v <- diag(K - K %*% solve(K + fit$lambda * diag(1 / o$w), K)) / fit$lambda
  p <- predict(fit, d$x[1:5, ], type = "decision", se.fit = TRUE)
  expect_equal(unname(p$se.fit^2), v[1:5], tolerance = 1e-7)
})

test_that("a composite's \"ml\" hyperparameters and lambda maximise the base R log q", {
  d <- gpc_data(110, seed = 4)
  k <- kernel_rbf("ml", dims = 1) + kernel_linear(dims = 2, amplitude = "ml")
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k,
                        tol = 1e-12, threads = 1)
  expect_identical(fit$tuning$lambda_rule, "laplace")
  tab <- fit$tuning$composite
  expect_identical(tab$what, c("bandwidth", "amplitude"))
  expect_equal(attr(logLik(fit), "df"), 3)
  # the oracle's kernel: exp(-d^2 / (2 b^2)) + a x2 x2'
  kmat <- function(b, a) exp(-outer(d$x[, 1], d$x[, 1], "-")^2 / (2 * b^2)) +
    a * outer(d$x[, 2], d$x[, 2])
  lq <- function(th) oracle_laplace(kmat(exp(th[1]), exp(th[2])), d$s, exp(th[3]))$logq
  th <- log(c(tab$estimate, fit$lambda))
  # a stationary point: central differences of the oracle's log q
  expect_lt(max(abs(num_grad(lq, th, 1e-4))), 1e-3)
  expect_equal(as.numeric(logLik(fit)), lq(th), tolerance = 1e-8)
  # the fitted kernel is the composite at the estimates
  o <- oracle_laplace(kmat(tab$estimate[1], tab$estimate[2]), d$s, fit$lambda)
  expect_equal(unname(predict(fit, type = "decision")), o$f, tolerance = 1e-7)
  # a given lambda: only the kernel's two are estimated
  fl <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k,
                       lambda = 0.5, tol = 1e-12, threads = 1)
  expect_identical(fl$tuning$lambda_rule, "fixed")
  expect_equal(fl$lambda, 0.5)
  lq2 <- function(th2) lq(c(th2, log(0.5)))
  expect_lt(max(abs(num_grad(lq2, log(fl$tuning$composite$estimate), 1e-4))), 1e-3)
  expect_equal(attr(logLik(fl), "df"), 2)
  # with lambda given, every "ml" amplitude is estimated (lambda cannot
  # carry the latent scale); with lambda estimated the first is held at 1
  k2 <- kernel_rbf(1, dims = 1, amplitude = "ml") + kernel_linear(dims = 2, amplitude = "ml")
  f2 <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k2,
                       lambda = 0.5, threads = 1)
  expect_identical(f2$tuning$composite$what, c("amplitude", "amplitude"))
  f3 <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k2,
                       threads = 1)
  expect_equal(f3$tuning$composite$term, 2)
  # one "ml" amplitude alone: held at 1 with lambda estimated, estimated
  # with lambda given
  k1 <- kernel_rbf(1, amplitude = "ml")
  f4 <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k1,
                       threads = 1)
  expect_equal(f4$kernel$terms[[1]]$amplitude, 1)
  f5 <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k1,
                       lambda = 0.5, threads = 1)
  expect_identical(f5$tuning$composite$what, "amplitude")
  expect_equal(f5$kernel$terms[[1]]$amplitude, f5$tuning$composite$estimate)
  # the Laplace oracle's log q at lambda = 0.5 is stationary in the amplitude
  K1 <- oracle_kernel(d$x, d$x, "rbf", 1)
  lq1 <- function(la) oracle_laplace(exp(la) * K1, d$s, 0.5)$logq
  expect_lt(abs(num_grad(lq1, log(f5$tuning$composite$estimate), 1e-4)), 1e-3)
})

test_that("lambda and the bandwidth maximise the Laplace marginal likelihood", {
  d <- gpc_data(100, seed = 2)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        standardize = FALSE, tol = 1e-10, threads = 1)
  expect_identical(fit$tuning$lambda_rule, "laplace")
  expect_true(any(grepl("(C = [0-9.e+-]+; the Laplace marginal likelihood)",
                        capture.output(print(fit)), fixed = FALSE)))
  expect_equal(attr(logLik(fit), "df"), 2)
  negq <- function(th) -oracle_laplace(oracle_kernel(d$x, d$x, "rbf", exp(th[1])), d$s,
                                       exp(th[2]))$logq
  th <- log(c(fit$kernel$bandwidth, fit$lambda))
  opt <- optim(th, negq, method = "BFGS")
  expect_equal(as.numeric(logLik(fit)), -opt$value, tolerance = 1e-5)
  expect_equal(th, opt$par, tolerance = 2e-2)
})

test_that("vcov() and confint() of the hyperparameters: base R's curvature of log q", {
  d <- gpc_data(100, seed = 2)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        standardize = FALSE, tol = 1e-10, threads = 1)
  V <- vcov(fit)
  expect_identical(rownames(V), c("bandwidth", "lambda"))
  negq <- function(th) -oracle_laplace(oracle_kernel(d$x, d$x, "rbf", exp(th[1])), d$s,
                                       exp(th[2]))$logq
  th <- log(c(fit$kernel$bandwidth, fit$lambda))
  H <- second_differences(negq, th)
  expect_equal(unname(V), solve(H), tolerance = 1e-3)
  ci <- confint(fit, level = 0.9)
  se <- sqrt(diag(solve(H)))
  expect_equal(unname(ci[, 1]), exp(th - qnorm(0.95) * se), tolerance = 1e-4)
  expect_equal(unname(ci[, 2]), exp(th + qnorm(0.95) * se), tolerance = 1e-4)
  expect_identical(colnames(ci), c("5 %", "95 %"))
  tb <- tidy(fit, conf.int = TRUE, conf.level = 0.9)
  expect_equal(tb$conf.high[match(c("bandwidth", "lambda"), tb$term)], unname(ci[, 2]),
               tolerance = 1e-12)
  expect_equal(tb$std.error[tb$term == "lambda"], fit$lambda * se[2], tolerance = 1e-4)
  # summary() shows the same table (95%)
  sm <- summary(fit)
  ci95 <- confint(fit)
  expect_equal(sm$hyper[c("bandwidth", "lambda"), "upper"], unname(ci95[, 2]), tolerance = 1e-12)
  expect_output(print(sm), "Laplace approximate marginal likelihood")
  expect_identical(rownames(confint(fit, "lambda")), "lambda")
  expect_error(confint(fit, method = "profile"), class = "askotch_error_input")
  # given hyperparameters have no covariance
  fg <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                       bandwidth = 1, lambda = 0.1, threads = 1)
  expect_error(vcov(fg), "estimated bandwidth or lambda", class = "askotch_error_input")
})

test_that("vcov() of a classifier tuned on a subsample uses the search's points", {
  d <- gpc_data(100, seed = 3)
  old <- options(askotch.laplace_tune_max_n = 60)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        standardize = FALSE, tol = 1e-10, threads = 1)
  options(old)
  expect_equal(fit$tuning$n_used, 60)
  rows <- askotch:::subsample_rows(100, 60, fit$seed)
  negq <- function(th) -oracle_laplace(oracle_kernel(d$x[rows, ], d$x[rows, ], "rbf",
                                                     exp(th[1])), d$s[rows], exp(th[2]))$logq
  th <- log(c(fit$kernel$bandwidth, fit$lambda))
  H <- second_differences(negq, th)
  # (the option's value now is not the one the search ran with)
  expect_equal(unname(vcov(fit)), solve(H), tolerance = 1e-3)
  bad <- fit
  bad$tuning$n_used <- -1
  expect_error(vcov(bad), "n_used", class = "askotch_error_object")
})

test_that("vcov() of a composite GP classifier: base R's curvature of log q", {
  d <- gpc_data(100, seed = 2)
  k <- kernel_rbf("ml") + kernel_linear(dims = 2, amplitude = "ml")
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace", kernel = k,
                        tol = 1e-10, threads = 1)
  tab <- fit$tuning$composite
  V <- vcov(fit)
  expect_identical(rownames(V), c("rbf[1]:bandwidth", "term[2]:amplitude", "lambda"))
  # log q of the prior covariance (Gaussian kernel of bandwidth b + a x2 x2') / lambda
  negq <- function(th) {
    K <- oracle_kernel(d$x, d$x, "rbf", exp(th[1])) + exp(th[2]) * outer(d$x[, 2], d$x[, 2])
    -oracle_laplace(K, d$s, exp(th[3]))$logq
  }
  th <- log(c(tab$estimate, fit$lambda))
  H <- second_differences(negq, th)
  # on the information scale (its inverse magnifies the differences' error)
  expect_lt(max(abs(solve(V) - H)) / max(abs(H)), 1e-4)
  ci <- confint(fit, level = 0.9)
  expect_identical(rownames(ci), rownames(V))
  expect_equal(unname(ci[, 2]), unname(exp(th + qnorm(0.95) * sqrt(diag(V)))), tolerance = 1e-12)
  tb <- tidy(fit, conf.int = TRUE, conf.level = 0.9)
  i <- match(rownames(V), tb$term)
  expect_equal(tb$std.error[i], exp(th) * sqrt(diag(V)), tolerance = 1e-12, ignore_attr = TRUE)
  expect_equal(tb$conf.low[i], unname(ci[, 1]), tolerance = 1e-12)
  # a table that does not match the kernel is a corrupted fit
  bad <- fit
  bad$tuning$composite$code[1] <- 5L
  expect_error(vcov(bad), "tuning\\$composite", class = "askotch_error_object")
  bad <- fit
  bad$tuning$composite$estimate[2] <- 2 * tab$estimate[2]
  expect_error(confint(bad), "tuning\\$composite", class = "askotch_error_object")
})

test_that("one-vs-rest: one binary GP classifier per class, shared hyperparameters", {
  ir <- iris[c(1:30, 51:80, 101:130), ]
  fit <- kernel_machine(Species ~ ., data = ir, loss = loss_logistic(),
                        posterior = "laplace", bandwidth = 1, lambda = 0.1,
                        tol = 1e-12, threads = 1)
  P <- predict(fit, ir, type = "prob")
  expect_equal(unname(rowSums(P)), rep(1, 90), tolerance = 1e-12)
  expect_identical(colnames(P), levels(iris$Species))
  raw <- sapply(levels(iris$Species), function(l) {
    b <- kernel_machine(Species == l ~ ., data = transform(ir, Species = Species),
                        loss = loss_logistic(), posterior = "laplace", bandwidth = 1,
                        lambda = 0.1, tol = 1e-12, threads = 1)
    predict(b, ir, type = "prob")
  })
  expect_equal(unname(P), unname(raw / rowSums(raw)), tolerance = 1e-7)
  total <- sum(vapply(levels(iris$Species), function(l) {
    b <- kernel_machine(Species == l ~ ., data = ir, loss = loss_logistic(),
                        posterior = "laplace", bandwidth = 1, lambda = 0.1,
                        tol = 1e-12, threads = 1)
    as.numeric(logLik(b))
  }, 0))
  expect_equal(as.numeric(logLik(fit)), total, tolerance = 1e-8)
})

test_that("one-vs-rest with a composite: the summed base R log q is stationary", {
  ir <- iris[c(1:20, 51:70, 101:120), ]
  x <- as.matrix(ir[, 1:4])
  k <- kernel_rbf("ml", dims = 1:2) + kernel_rbf("ml", dims = 3:4, amplitude = "ml")
  fit <- kernel_machine(x, ir$Species, loss = loss_logistic(), posterior = "laplace",
                        kernel = k, tol = 1e-12, threads = 1)
  tab <- fit$tuning$composite
  expect_identical(tab$what, c("bandwidth", "amplitude", "bandwidth"))
  rbf <- function(cols, b) exp(-as.matrix(dist(x[, cols]))^2 / (2 * b^2))
  lq <- function(th) {
    K <- rbf(1:2, exp(th[1])) + exp(th[2]) * rbf(3:4, exp(th[3]))
    sum(vapply(levels(ir$Species), function(l) {
      oracle_laplace(K, ifelse(ir$Species == l, 1, -1), exp(th[4]))$logq
    }, 0))
  }
  th <- log(c(tab$estimate, fit$lambda))
  expect_lt(max(abs(num_grad(lq, th, 1e-4))), 1e-3)
  expect_equal(as.numeric(logLik(fit)), lq(th), tolerance = 1e-8)
})

test_that("the time limit ends the classifiers' searches at their best point", {
  d <- gpc_data(80, seed = 6)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        bandwidth = 0.8, lambda = 0.05, standardize = FALSE, threads = 1)
  # any machine passes 1e-6 s by the first evaluation: the search stops
  # there, at its start (lambda = 1, the given bandwidth)
  clock <- ffi("tune_clock")(list(rule = list(time_limit = 2e-6), progress = FALSE))
  space <- ffi("gpc_space")(d$x, fit$kernel, TRUE, TRUE, 1L, 1L)
  o <- ffi("laplace_search")(space, cbind(d$s), NULL, clock)
  expect_identical(o$optim$message, "time_limit")
  expect_identical(o$optim$convergence, 1L)
  expect_equal(c(o$lambda, o$kernel$bandwidth), c(1, 0.8))
  expect_true(clock$expired())
  # the composite Gaussian likelihood's search too
  k0 <- ffi("as_composite")(kernel_rbf("ml", dims = 1) + kernel_rbf("ml", dims = 2))
  k <- ffi("composite_params")(ffi("composite_resolve")(k0, d$x, NULL, 1, NULL))
  clock <- ffi("tune_clock")(list(rule = list(time_limit = 2e-6), progress = FALSE))
  r <- ffi("composite_optimise")(k$kernel, k$table, c(1, 1), NULL, d$x, cbind(d$s),
                                 threads = 1L, clock = clock)
  expect_identical(r$optim$message, "time_limit")
})

test_that("above the exact sizes: the stochastic log q and the Nystrom variance", {
  d <- gpc_data(300, seed = 3)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        bandwidth = 0.8, lambda = 0.05, standardize = FALSE,
                        tol = 1e-12, threads = 1)
  exact <- logLik(fit)
  xn <- rbind(c(0, 1), c(-1, 0.5))
  ve <- predict(fit, xn, type = "decision", se.fit = TRUE)$se.fit
  old <- options(askotch.tune_exact_max_n = 100, askotch.gp_exact_fallback_n = 100)
  on.exit(options(old))
  st <- logLik(fit)
  expect_lt(abs(as.numeric(st) - as.numeric(exact)), 4 * attr(st, "se") + 1e-8)
  vn <- predict(fit, xn, type = "decision", se.fit = TRUE)$se.fit
  expect_equal(vn, ve, tolerance = 1e-4)
})

test_that("what the Laplace posterior needs is checked with classed errors", {
  d <- gpc_data(60, seed = 4)
  e <- function(...) expect_error(kernel_machine(d$x, d$y, threads = 1, ...),
                                  class = "askotch_error_input")
  e(loss = loss_hinge(), posterior = "laplace")
  e(loss = loss_logistic(), posterior = "laplace", intercept = TRUE)
  e(loss = loss_logistic(), posterior = "laplace", features = 50)
  e(loss = loss_logistic(), posterior = "laplace", weights = rep(1, 60))
  e(loss = loss_logistic(), posterior = "bayes")
  e(loss = loss_logistic(), posterior = "laplace", lambda = "gcv")
  e(loss = loss_logistic(), posterior = "laplace", lambda = "cv")
  e(loss = loss_logistic(), posterior = "ep", lambda = c(0.1, 1))
  expect_equal(kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                              lambda = "paper", threads = 1)$lambda, 60e-6)
  km <- kernel_machine(d$x, d$y, loss = loss_logistic(), lambda = 0.1, threads = 1)
  expect_error(logLik(km), "laplace", class = "askotch_error_input")
  expect_error(predict(km, d$x, type = "decision", se.fit = TRUE), "laplace",
               class = "askotch_error_input")
  gpc <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        lambda = 0.1, bandwidth = 1, threads = 1)
  expect_error(predict(gpc, d$x, type = "class", se.fit = TRUE), "decision",
               class = "askotch_error_input")
  bad <- gpc
  bad$posterior <- "exact"
  expect_error(predict(bad, d$x), "posterior", class = "askotch_error_object")
})

test_that("at small lambda the solver starts from the Newton mode and converges", {
  d <- gpc_data(300, seed = 5)
  fit <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        lambda = 1e-4, bandwidth = 0.5, threads = 1)
  expect_true(fit$converged)
  expect_lte(fit$passes, 2)
  o <- oracle_laplace(oracle_kernel(scale(d$x), scale(d$x), "rbf", 0.5), d$s, 1e-4)
  expect_equal(unname(predict(fit, type = "decision")), o$f, tolerance = 1e-6)
})

test_that("summary() of a GP classifier reports its log marginal likelihood", {
  d <- gpc_data(80, seed = 6)
  gpc <- kernel_machine(d$x, d$y, loss = loss_logistic(), posterior = "laplace",
                        lambda = 0.1, bandwidth = 1, threads = 1)
  s <- summary(gpc)
  expect_match(s$extra[["Posterior"]], "Laplace")
  expect_match(s$extra[["Posterior"]], format(signif(as.numeric(logLik(gpc)), 6)), fixed = TRUE)
  expect_output(print(s), "Laplace approximation")
})

test_that("the gradient of log q matches finite differences of the base R one", {
  d <- gpc_data(60, seed = 7)
  lq <- function(th) {
    oracle_laplace(oracle_kernel(d$x, d$x, "rbf", exp(th[1])), d$s, exp(th[2]))$logq
  }
  th <- log(c(0.7, 0.03))
  num <- num_grad(lq, th, 1e-5)
  k <- kernel_rbf(0.7)
  tstat <- getFromNamespace("kernel_stat_matrix", "askotch")(d$x, "L2")
  ev <- getFromNamespace("native_kernel_eval", "askotch")
  Kt <- ev(k, tstat) / 0.03
  f <- oracle_laplace(ev(k, tstat), d$s, 0.03)$f
  dK <- list(ev(k, tstat, -1L) / 0.03, -Kt)
  g <- getFromNamespace("laplace_grad", "askotch")(Kt, f, d$s, function(W) {
    vapply(dK, function(C) sum(W * C), 0)
  })
  expect_equal(g$logq, lq(th), tolerance = 1e-10)
  expect_equal(g$gradient, num, tolerance = 1e-6)
})
