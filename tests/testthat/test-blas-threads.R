# The CPU backend sets OpenBLAS's process-wide thread count for its own calls;
# every entry point must put the user's count back (also on error), or R's own
# %*% would run on one thread after krr(threads = 1).

blas_threads <- function(n = 0L) .Call(askotch:::ffi_blas_threads, as.integer(n))

blas_data <- function(n = 300) {
  set.seed(3)
  x <- matrix(runif(2 * n), ncol = 2)
  list(x = x, y = sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1))
}

skip_without_blas_threads <- function() {
  before <- blas_threads()
  skip_if(is.na(before), "the BLAS has no thread control")
  if (!identical(blas_threads(2L), 2L)) {
    blas_threads(before)
    skip("the BLAS thread count cannot be raised to 2")
  }
  before
}

test_that("krr(threads = 1) and predict() leave the BLAS thread count unchanged", {
  before <- skip_without_blas_threads()
  on.exit(blas_threads(before), add = TRUE)
  d <- blas_data()
  # askotch (Nystrom sketch: GEMM, QR, SVD), then an exact-residual pass
  fit <- krr(d$x, d$y, lambda = 1, threads = 1, max_passes = 3, seed = 1)
  expect_identical(blas_threads(), 2L)
  p <- predict(fit, d$x[1:20, ])
  expect_identical(blas_threads(), 2L)
  fit_c <- krr(d$x, d$y, lambda = 1, threads = 1, solver = "cholesky", seed = 1)
  expect_identical(blas_threads(), 2L)
  invisible(predict(fit_c, d$x[1:20, ]))
  expect_identical(blas_threads(), 2L)
})

test_that("a user's single-threaded BLAS stays single-threaded after krr(threads = 2)", {
  before <- skip_without_blas_threads()
  on.exit(blas_threads(before), add = TRUE)
  d <- blas_data()
  blas_threads(1L)
  fit <- krr(d$x, d$y, lambda = 1, threads = 2, max_passes = 3, seed = 1)
  expect_identical(blas_threads(), 1L)
  invisible(predict(fit, d$x))
  expect_identical(blas_threads(), 1L)
})

test_that("the BLAS thread count is restored when a fit fails", {
  before <- skip_without_blas_threads()
  on.exit(blas_threads(before), add = TRUE)
  # repeated points and a negligible ridge: the exact Cholesky factorisation
  # breaks down (askotch_error_numeric, raised from the solver step) after the
  # backend has set the BLAS threads for it
  x <- matrix(rep(c(0.1, 0.2), each = 60), ncol = 2)
  x[1, 1] <- 0.3
  y <- rnorm(60)
  expect_error(krr(x, y, lambda = 1e-300, bandwidth = 1, threads = 1, solver = "cholesky",
                   seed = 1, standardize = FALSE),
               class = "askotch_error_numeric")
  expect_identical(blas_threads(), 2L)
})

test_that("R's own algebra in a fit and its methods runs on the fit's thread count", {
  before <- skip_without_blas_threads()
  on.exit(blas_threads(before), add = TRUE)
  d <- blas_data(200)
  seen <- new.env()
  seen$n <- integer(0)
  # the likelihood search's evaluations (chol(), chol2inv() in R) record the count
  # (and so do the exact Hessian's, vcov())
  for (f in c("gp_loglik_exact", "gp_hessian_exact")) {
    suppressMessages(trace(f, where = asNamespace("askotch"), print = FALSE, tracer = bquote(
      assign("n", c(get("n", .(seen)), .(blas_threads)()), envir = .(seen)))))
  }
  on.exit(suppressMessages({
    untrace("gp_loglik_exact", where = asNamespace("askotch"))
    untrace("gp_hessian_exact", where = asNamespace("askotch"))
  }), add = TRUE)
  fit <- krr(d$x, d$y, kernel = "rbf", threads = 1, seed = 1)
  expect_gt(length(seen$n), 3)
  expect_true(all(seen$n == 1L))
  expect_identical(blas_threads(), 2L)
  seen$n <- integer(0)
  invisible(vcov(fit))
  expect_gt(length(seen$n), 0)
  expect_true(all(seen$n == 1L))
  expect_identical(blas_threads(), 2L)
  # a method that fails after the scope is set puts the count back too
  expect_error(confint(fit, level = 2), class = "askotch_error_input")
  expect_identical(blas_threads(), 2L)
  # threads = NULL: the session's count (askotch_threads())
  old <- askotch_threads(1)
  on.exit(askotch_threads(old), add = TRUE)
  seen$n <- integer(0)
  invisible(krr(d$x, d$y, kernel = "rbf", seed = 1))
  expect_true(length(seen$n) > 3 && all(seen$n == 1L))
  expect_identical(blas_threads(), 2L)
})
