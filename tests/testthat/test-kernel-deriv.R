# The kernel matrix's derivatives formed in C from the kernel list
# (src/core/kernel_math.h, src/core/data/kernel_deriv.c) against central
# differences of the kernel matrix itself (ffi_kernel_matrix), for every
# kernel, isotropic (d/dlog sigma) and ARD (d/dlog ell_j, the points divided
# by their length scales).
#
# Tolerance of the finite differences, step h = 1e-4 in log sigma (log
# ell_j): the truncation error h^2 / 6 |d^3 K / dtheta^3| is below 2e-9
# times a third derivative of at most a few units (a polynomial in the
# kernel's argument u times exp(-u)), the rounding error eps / h = 2e-12;
# 1e-7 absolute leaves a wide margin while a wrong formula (a missing
# factor, the wrong power of sigma) errs by O(0.1).

kobj <- function(name, s) askotch:::new_kernel(name, s)
kmat <- function(x1, x2, k) askotch:::native_kernel_matrix(x1, x2, k)
kder <- function(x1, x2, k, cd) askotch:::native_kernel_deriv(x1, x2, k, cd)
krate <- function(k) askotch:::native_kernel_rate(k)

fd_sigma <- function(x1, x2, name, s, h = 1e-4) {
  (kmat(x1, x2, kobj(name, s * exp(h))) -
     kmat(x1, x2, kobj(name, s * exp(-h)))) / (2 * h)
}

# coordinate j of both point sets divided by ell_j = exp(+-h)
fd_ell <- function(x1, x2, name, s, j, h = 1e-4) {
  sc <- function(x, f) {
    x[, j] <- x[, j] * f
    x
  }
  (kmat(sc(x1, exp(-h)), sc(x2, exp(-h)), kobj(name, s)) -
     kmat(sc(x1, exp(h)), sc(x2, exp(h)), kobj(name, s))) / (2 * h)
}

test_that("dK/dlog sigma matches finite differences for every kernel", {
  set.seed(31)
  x1 <- matrix(rnorm(40 * 3), 40, 3)
  x2 <- rbind(x1[1:5, ], matrix(rnorm(25 * 3), 25, 3))  # some pairs at t = 0
  for (k in all_kernels) {
    for (s in c(0.6, 1.7)) {
      got <- kder(x1, x2, kobj(k, s), -1L)
      expect_equal(dim(got), c(40L, 30L, 1L))
      expect_lt(max(abs(got[, , 1] - fd_sigma(x1, x2, k, s))), 1e-7)
      expect_identical(got[cbind(1:5, 1:5, 1L)], rep(0, 5))
    }
  }
})

test_that("dK/dlog ell_j matches finite differences for every kernel", {
  set.seed(32)
  x1 <- matrix(rnorm(30 * 4), 30, 4) * rep(c(0.5, 1, 2, 3), each = 30)
  x2 <- matrix(rnorm(20 * 4), 20, 4) * rep(c(0.5, 1, 2, 3), each = 20)
  for (k in all_kernels) {
    for (s in c(1, 1.7)) {  # ARD fits use bandwidth 1; any bandwidth works
      got <- kder(x1, x2, kobj(k, s), 1:4)
      expect_equal(dim(got), c(30L, 20L, 4L))
      for (j in 1:4) {
        expect_lt(max(abs(got[, , j] - fd_ell(x1, x2, k, s, j))), 1e-7)
      }
      # every log length scale moved together is the log bandwidth moved
      # (the shares t_j / t sum to 1 up to rounding)
      iso <- kder(x1, x2, kobj(k, s), -1L)[, , 1]
      expect_lt(max(abs(apply(got, c(1, 2), sum) - iso)), 1e-14)
    }
  }
})

test_that("code 0 is the kernel matrix and codes come back in their order", {
  set.seed(33)
  x <- matrix(rnorm(25 * 3), 25, 3)
  for (k in all_kernels) {
    got <- kder(x, x, kobj(k, 1.3), c(2L, 0L, -1L))
    # the reference formula and the backend: rounding in the distance sums
    expect_lt(max(abs(got[, , 2] - oracle_kernel(x, x, k, 1.3))), 1e-12)
    expect_lt(max(abs(got[, , 2] - kmat(x, x, kobj(k, 1.3)))),
              1e-12)
    expect_identical(got[, , 1],
                     kder(x, x, kobj(k, 1.3), 2L)[, , 1])
    expect_identical(got[, , 3],
                     kder(x, x, kobj(k, 1.3), -1L)[, , 1])
    expect_identical(got[, , 3], t(got[, , 3]))
  }
})

test_that("derivatives are 0, not NaN, where the kernel underflows", {
  x1 <- matrix(0, 1, 2)
  x2 <- rbind(c(1e3, 0), c(1e150, 1e-3))
  for (k in all_kernels) {
    got <- kder(x1, x2, kobj(k, 1), c(0L, -1L, 1L, 2L))
    expect_identical(as.vector(got), rep(0, 8), info = k)
  }
})

test_that("invalid derivative codes are input errors", {
  x <- matrix(rnorm(6), 3, 2)
  for (code in c(-2L, 3L)) {
    expect_error(kder(x, x, kobj("rbf", 1), code),
                 class = "askotch_error_input")
  }
  expect_error(kder(x, matrix(0, 2, 3), kobj("rbf", 1), -1L),
               class = "askotch_error_input")
  expect_equal(dim(kder(x, x, kobj("rbf", 1), integer())),
               c(3L, 3L, 0L))
})

test_that("the kernel list's text, metric, rate and values reach R", {
  ks <- askotch:::askotch_info()$kernels
  expect_identical(ks$name, all_kernels)
  expect_identical(ks$metric, c("L2", "L1", "L2", "L2", "L2"))
  expect_identical(ks$label[1:2], c("Gaussian (RBF)", "Laplace (L1 distance)"))
  expect_true(all(nzchar(ks$formula)))
  expect_identical(ks$rate_power, c(2L, 1L, 1L, 1L, 1L))
  for (k in all_kernels) {
    ki <- askotch:::kernel_info(k)
    for (s in c(0.01, 0.7, 3, 1e5)) {
      # the rate as the compiled code forms it: a(1) / s^m up to rounding
      expect_equal(krate(kobj(k, s)),
                   ki$rate_unit / s^ki$rate_power, tolerance = 1e-14)
    }
    expect_output(print(kobj(k, 2)), ki$label, fixed = TRUE)
    # values of the statistic (squared L2 or L1 distance) vs the matrix
    set.seed(34)
    x <- matrix(rnorm(8 * 3), 8, 3)
    D <- x[rep(1:8, 8), ] - x[rep(1:8, each = 8), ]
    t <- if (ki$metric == "L1") rowSums(abs(D)) else rowSums(D * D)
    expect_lt(max(abs(askotch:::native_kernel_eval(kobj(k, 0.9), t) -
                        kmat(x, x, kobj(k, 0.9)))), 1e-12)
  }
})

test_that("the contraction weighs s W + U U^T, with the same bits on any thread count", {
  set.seed(36)
  n <- 1100  # 35 blocks of 32 columns: two groups between polls on two threads
  x <- matrix(rnorm(n * 3), n, 3)
  W <- matrix(rnorm(n * n), n, n)
  U <- matrix(rnorm(n * 2), n, 2)
  codes <- c(-1L, 1L, 3L)
  dot <- askotch:::native_kernel_deriv_dot
  for (k in c("rbf", "laplace", "matern32")) {
    kk <- kobj(k, 1.7)
    D <- kder(x, x, kk, codes)
    Wt <- -0.75 * W + tcrossprod(U)
    want <- vapply(seq_along(codes), function(c) sum(Wt * D[, , c]), 0)
    g1 <- dot(x, kk, codes, W, -0.75, U, threads = 1L)
    expect_identical(dot(x, kk, codes, W, -0.75, U, threads = 2L), g1)
    expect_equal(g1, want, tolerance = 1e-10, info = k)
    # the pairs' statistics read from a given matrix
    t <- askotch:::kernel_stat_matrix(x, askotch:::kernel_metric(k))
    expect_equal(dot(x, kk, codes, W, -0.75, U, threads = 2L, tstat = t), want,
                 tolerance = 1e-10, info = k)
  }
  expect_error(dot(x, kk, codes, W, 1, U, tstat = t[-1, ]), class = "askotch_error_input")
  expect_error(dot(x, kk, codes, W, 1, U[-1, ]), class = "askotch_error_input")
  expect_error(dot(x, kk, codes, W, NA_real_), class = "askotch_error_input")
})

test_that("the bandwidth limits invert the rate", {
  for (k in all_kernels) {
    bw <- askotch:::rate_bandwidths(k, 1e-30, 1e30)
    expect_equal(krate(kobj(k, bw[1])), 1e30, tolerance = 1e-12)
    expect_equal(krate(kobj(k, bw[2])), 1e-30, tolerance = 1e-12)
  }
})

test_that("the contracted derivatives equal sums over the formed matrices", {
  set.seed(35)
  x <- matrix(rnorm(30 * 3), 30, 3)
  W <- matrix(rnorm(30 * 30), 30, 30)  # not symmetric: every pair counts
  codes <- c(0L, -1L, 1L, 2L, 3L)
  for (k in all_kernels) {
    kk <- kobj(k, 1.3)
    D <- kder(x, x, kk, codes)
    want <- vapply(seq_along(codes), function(c) sum(W * D[, , c]), 0)
    got <- askotch:::native_kernel_deriv_dot(x, kk, codes, W)
    expect_equal(got, want, tolerance = 1e-12, info = k)
    # the elementwise forms from the statistics: the values and d/dlog s
    t <- askotch:::kernel_stat_matrix(x, askotch:::kernel_metric(k))
    expect_lt(max(abs(askotch:::native_kernel_eval(kk, t) - D[, , 1])), 1e-12)
    expect_lt(max(abs(askotch:::native_kernel_eval(kk, t, -1L) - D[, , 2])), 1e-12)
    expect_identical(dim(askotch:::native_kernel_eval(kk, t)), dim(t))
  }
  expect_error(askotch:::native_kernel_deriv_dot(x, kobj("rbf", 1), 5L, W),
               class = "askotch_error_input")
  expect_error(askotch:::native_kernel_deriv_dot(x, kobj("rbf", 1), 1L, W[, -1]),
               class = "askotch_error_input")
  expect_error(askotch:::native_kernel_eval(kobj("rbf", 1), 1, 2L),
               class = "askotch_error_input")
})
