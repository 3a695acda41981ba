# C kernels against the base-R oracle (helper-oracle.R).
# Tolerances: double 1e-12 absolute (entries are in [0, 1]; the only error is
# rounding in the distance sums, ~1e-15 times p); single 1e-6 (fp32 unit
# roundoff 6e-8 times a few operations, distances accumulated in double).

test_that("ffi_kernel_matrix matches the R oracle and K(x, x) == 1", {
  set.seed(11)
  x1 <- matrix(rnorm(40 * 5), 40, 5)
  x2 <- matrix(rnorm(30 * 5), 30, 5)
  for (k in all_kernels) {
    s <- 1.7
    want <- oracle_kernel(x1, x2, k, s)
    got <- .Call(ffi("ffi_kernel_matrix"), x1, x2, kernel_code[[k]], s, 1L, 1L)
    expect_equal(dim(got), c(40L, 30L))
    expect_lt(max(abs(got - want)), 1e-12)
    got32 <- .Call(ffi("ffi_kernel_matrix"), x1, x2, kernel_code[[k]], s, 0L,
                   1L)
    expect_lt(max(abs(got32 - want)), 1e-6)
    for (prec in 0:1) {
      kxx <- .Call(ffi("ffi_kernel_matrix"), x1, x1, kernel_code[[k]], s,
                   prec, 1L)
      expect_identical(diag(kxx), rep(1, 40), info = paste(k, prec))
      expect_true(all(kxx <= 1 & kxx >= 0), info = k)
    }
  }
})

test_that("kernels are accurate for nearly identical points", {
  x1 <- matrix(c(1000, 2000, 3000), 1, 3)
  x2 <- x1 + 1e-6
  for (k in all_kernels) {
    want <- oracle_kernel(x1, x2, k, 0.5)
    got <- .Call(ffi("ffi_kernel_matrix"), x1, x2, kernel_code[[k]], 0.5, 1L,
                 1L)
    expect_lt(abs(got - want), 1e-9)
  }
})

test_that("ffi_kernel_apply equals K %*% v without forming K", {
  set.seed(12)
  x1 <- matrix(rnorm(70 * 4), 70, 4)
  x2 <- matrix(rnorm(90 * 4), 90, 4)
  v <- matrix(rnorm(90 * 3), 90, 3)
  for (k in all_kernels) {
    K <- oracle_kernel(x1, x2, k, 2)
    want <- K %*% v
    got <- .Call(ffi("ffi_kernel_apply"), x1, x2, v, kernel_code[[k]], 2, 1L,
                 0L, 1L)
    expect_equal(dim(got), c(70L, 3L))
    expect_lt(max(abs(got - want)) / max(abs(want)), 1e-12)
    got32 <- .Call(ffi("ffi_kernel_apply"), x1, x2, v, kernel_code[[k]], 2,
                   0L, 0L, 1L)
    expect_lt(max(abs(got32 - want)) / max(abs(want)), 1e-5)
  }
})

test_that("kernel constructors validate and print", {
  expect_s3_class(kernel_rbf(), "askotch_kernel")
  expect_identical(kernel_matern(nu = 1/2)$name, "matern12")
  expect_identical(kernel_matern(nu = "5/2", bandwidth = 2)$name, "matern52")
  expect_identical(kernel_matern32(3)$bandwidth, 3)
  expect_identical(kernel_laplace()$metric, "L1")
  expect_identical(kernel_matern(nu = 1)$name, "matern")  # any nu: a composite component
  expect_error(kernel_matern(nu = 0), class = "askotch_error_input")
  expect_error(kernel_rbf(-1), class = "askotch_error_input")
  expect_error(kernel_rbf(NA_real_), class = "askotch_error_input")
  expect_error(kernel_rbf("mean"), class = "askotch_error_input")
  expect_output(print(kernel_matern52(1.5)), "Matern 5/2")
  expect_output(print(kernel_rbf()), "median")
})

test_that("median bandwidth is the median pairwise distance in the kernel metric", {
  d <- make_regression(150, p = 4)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  fit2 <- krr(d$x, d$y, kernel = "matern32", bandwidth = "median", lambda = 1,
              solver = cholesky(), threads = 1, seed = 1)
  expect_equal(fit2$kernel$bandwidth, median(dist(xs)), tolerance = 1e-12)
  fit1 <- krr(d$x, d$y, kernel = "laplace", bandwidth = "median", lambda = 1,
              solver = cholesky(), threads = 1, seed = 1)
  expect_equal(fit1$kernel$bandwidth, median(dist(xs, "manhattan")),
               tolerance = 1e-12)
  # numeric bandwidth is kept, and an explicit `bandwidth` overrides the object's
  fit3 <- krr(d$x, d$y, kernel = kernel_rbf(0.7), lambda = 1,
              solver = cholesky(), threads = 1)
  expect_identical(fit3$kernel$bandwidth, 0.7)
  fit4 <- krr(d$x, d$y, kernel = kernel_rbf(0.7), bandwidth = 2, lambda = 1,
              solver = cholesky(), threads = 1)
  expect_identical(fit4$kernel$bandwidth, 2)
})

test_that("the compiled median distance equals median(dist()) with ties and duplicates", {
  md <- askotch:::native_median_distance
  set.seed(11)
  for (n in c(2, 3, 4, 7, 10, 51, 200)) for (p in c(1, 5)) for (l1 in c(FALSE, TRUE)) {
    for (kind in c("normal", "integers", "duplicates")) {
      x <- switch(kind, normal = matrix(rnorm(n * p), n, p),
                  integers = matrix(as.numeric(sample(0:2, n * p, TRUE)), n, p),
                  duplicates = matrix(rep(rnorm(2 * p), each = ceiling(n / 2)),
                                      ncol = p)[seq_len(n), , drop = FALSE])
      d <- as.vector(dist(x, method = if (l1) "manhattan" else "euclidean"))
      want <- if (median(d) > 0) median(d) else if (any(d > 0)) median(d[d > 0]) else 0
      expect_identical(md(x, l1), want, label = sprintf("%s n=%d p=%d l1=%s", kind, n, p, l1))
    }
  }
  expect_identical(md(matrix(1, 4, 3), FALSE), 0)
  expect_identical(md(matrix(1, 1, 3), FALSE), 0)
  expect_error(krr(matrix(1, 20, 2), rnorm(20), lambda = 1), "identical",
               class = "askotch_error_input")
})

test_that("median bandwidth subsample is deterministic given the seed", {
  set.seed(3)
  x <- matrix(rnorm(1500 * 2), 1500, 2)
  y <- rnorm(1500)
  bw <- function(seed) {
    krr(x, y, lambda = 1, bandwidth = "median", max_passes = 1, seed = seed,
        threads = 1)$kernel$bandwidth
  }
  expect_identical(bw(5), bw(5))
  expect_false(identical(bw(5), bw(6)))
})
