# The stochastic likelihood on all points in C (krr_gp_slq): exact with an
# exact preconditioner, within its stated error otherwise, against base R's
# Cholesky closed forms.

slq <- getFromNamespace("native_gp_slq", "askotch")
new_kernel <- getFromNamespace("new_kernel", "askotch")

slq_data <- function(n = 300, p = 2, seed = 1) {
  set.seed(seed)
  x <- matrix(runif(n * p), n, p)
  y <- sin(6 * x[, 1]) + x[, p] + rnorm(n, sd = 0.1)
  list(x = x, Y = matrix(y - mean(y)))
}

# the profile log likelihood, log det and edf by base R's chol()
closed_form <- function(x, Y, name, bw, lam) {
  n <- nrow(x)
  A <- oracle_kernel(x, x, name, bw) + lam * diag(n)
  R <- chol(A)
  a <- backsolve(R, forwardsolve(t(R), Y))
  ld <- 2 * sum(log(diag(R)))
  list(loglik = -n / 2 * (log(2 * pi * sum(Y * a) / n) + 1) - ld / 2, logdet = ld,
       edf = n - lam * sum(diag(chol2inv(R))), alpha = a)
}

test_that("with an exact preconditioner the estimates are the closed forms", {
  d <- slq_data()
  for (name in c("rbf", "matern32", "laplace")) {
    bw <- 0.3
    lam <- 0.05
    cf <- closed_form(d$x, d$Y, name, bw, lam)
    v <- slq(d$x, d$Y, new_kernel(name, bw), lam, 1L, probes = 4, rank = nrow(d$x),
             maxit = 50, tol = 1e-10, seed = 3)
    expect_lt(rel_err(v$loglik, cf$loglik), 1e-8)
    expect_lt(rel_err(v$logdet, cf$logdet), 1e-8)
    expect_lt(rel_err(v$edf, cf$edf), 1e-7)
    expect_lt(rel_err(v$alpha, cf$alpha), 1e-7)
    expect_true(v$converged)
    # the gradient in log bandwidth and log lambda: central differences of
    # the closed form (their own error about 1e-9)
    h <- 1e-5
    fd <- c((closed_form(d$x, d$Y, name, bw * exp(h), lam)$loglik -
               closed_form(d$x, d$Y, name, bw * exp(-h), lam)$loglik) / (2 * h),
            (closed_form(d$x, d$Y, name, bw, lam * exp(h))$loglik -
               closed_form(d$x, d$Y, name, bw, lam * exp(-h))$loglik) / (2 * h))
    expect_lt(max(abs(v$gradient - fd)) / max(abs(fd)), 1e-6)
  }
})

test_that("the length scales' gradient (ARD) is the closed form's", {
  d <- slq_data(200, p = 3, seed = 2)
  ell <- c(0.5, 1, 2)
  xs <- sweep(d$x, 2L, ell, "/")
  lam <- 0.02
  v <- slq(xs, d$Y, new_kernel("matern52", 1), lam, 3L, probes = 4, rank = 200,
           maxit = 50, tol = 1e-10, seed = 1)
  h <- 1e-5
  fd <- vapply(1:3, function(j) {
    f <- function(s) closed_form(sweep(d$x, 2L, replace(ell, j, ell[j] * exp(s)), "/"),
                                 d$Y, "matern52", 1, lam)$loglik
    (f(h) - f(-h)) / (2 * h)
  }, 0)
  expect_length(v$gradient, 4L)
  expect_lt(max(abs(v$gradient[1:3] - fd)) / max(abs(fd)), 1e-6)
})

test_that("the stochastic estimates fall within their standard errors", {
  d <- slq_data(400, seed = 5)
  k <- new_kernel("matern32", 0.3)
  lam <- 0.05
  cf <- closed_form(d$x, d$Y, "matern32", 0.3, lam)
  z <- t(vapply(1:12, function(s) {
    v <- slq(d$x, d$Y, k, lam, -1L, probes = 16, rank = 20, maxit = 300, tol = 1e-10,
             seed = s)
    c((v$logdet - cf$logdet) / v$logdet_se, (v$edf - cf$edf) / v$edf_se,
      (v$loglik - cf$loglik) / v$se)
  }, numeric(3)))
  # standard normal scores: none beyond 4, and their mean within 4 / sqrt(12)
  expect_true(all(abs(z) < 4))
  expect_true(all(abs(colMeans(z)) < 4 / sqrt(12)))
})

test_that("a kept preconditioner and a warm start give the same estimate", {
  d <- slq_data(300, seed = 7)
  k <- new_kernel("rbf", 0.4)
  a <- slq(d$x, d$Y, k, 0.01, 1L, probes = 8, rank = 30, maxit = 200, tol = 1e-9, seed = 2)
  expect_identical(ncol(a$precond$U), length(a$precond$s))
  b <- slq(d$x, d$Y, k, 0.01, 1L, probes = 8, rank = 30, maxit = 200, tol = 1e-9, seed = 2,
           pc = a$precond, alpha = a$alpha)
  expect_lt(abs(a$loglik - b$loglik), 1e-6 * abs(a$loglik))
  expect_lt(rel_err(a$alpha, b$alpha), 1e-6)
  # the change of the estimate between nearby points (the same probes and
  # preconditioner) is within its standard error, from the probes' terms'
  # differences, of the closed form's change
  k2 <- k
  k2$bandwidth <- 0.41
  cf <- function(bw) closed_form(d$x, d$Y, "rbf", bw, 0.01)$loglik
  z <- vapply(1:6, function(s) {
    u <- slq(d$x, d$Y, k, 0.01, -1L, 8, 30, 200, 1e-9, s)
    v <- slq(d$x, d$Y, k2, 0.01, -1L, 8, 30, 200, 1e-9, s, pc = u$precond)
    se <- stats::sd(v$terms - u$terms) / sqrt(8) / 2
    ((v$loglik - u$loglik) - (cf(0.41) - cf(0.4))) / se
  }, 0)
  expect_true(all(abs(z) < 4))
})

test_that("bad arguments of the stochastic likelihood are classed errors", {
  d <- slq_data(50)
  k <- new_kernel("rbf", 0.4)
  expect_error(slq(d$x, d$Y, k, -1, 1L, 8, 10, 50, 1e-6, 1), class = "askotch_error_input")
  expect_error(slq(d$x, d$Y, k, 0.1, 1L, 1, 10, 50, 1e-6, 1), class = "askotch_error_input")
  expect_error(slq(d$x, d$Y, k, 0.1, 5L, 8, 10, 50, 1e-6, 1), class = "askotch_error_input")
  expect_error(slq(d$x, d$Y[1:10, , drop = FALSE], k, 0.1, 1L, 8, 10, 50, 1e-6, 1),
               class = "askotch_error_input")
  expect_error(slq(d$x, d$Y, k, 0.1, 1L, 8, 10, 50, 1e-6, 1,
                   pc = list(matrix(0, 3, 2), 1)), class = "askotch_error_input")
  expect_error(slq(d$x, d$Y, k, 0.1, 1L, 8, 10, 50, 1e-6, 1, pc = 1:2),
               class = "askotch_error_input")
})

test_that("above the exact sizes vcov() comes from the stochastic likelihood", {
  set.seed(3)
  n <- 400
  x <- matrix(runif(n * 2), n, 2)
  y <- sin(5 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.2)
  f <- krr(x, y, kernel = "matern32", bandwidth = "ml", threads = 1, seed = 1)
  fa <- krr(x, y, bandwidth = "ard", threads = 1, seed = 1)
  V0 <- vcov(f)
  A0 <- vcov(fa)
  old <- options(askotch.tune_exact_max_n = 100)
  on.exit(options(old), add = TRUE)
  V1 <- vcov(f)
  A1 <- vcov(fa)
  expect_identical(dimnames(V1), dimnames(V0))
  # standard errors within 5% of the exact observed information's
  expect_lt(max(abs(sqrt(diag(V1)) / sqrt(diag(V0)) - 1)), 0.05)
  expect_lt(max(abs(sqrt(diag(A1)) / sqrt(diag(A0)) - 1)), 0.05)
  expect_true(all(is.finite(confint(f))))
  expect_error(confint(f, method = "profile"), class = "askotch_error_input")
  fw <- krr(x, y, bandwidth = "median", weights = rep(1:2, n / 2), threads = 1, seed = 1)
  expect_error(vcov(fw), class = "askotch_error_input")
})
