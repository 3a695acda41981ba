# Prediction blocked over the new points (krr_kernel_apply_host) against the
# kernel matrix: ffi_kernel_matrix(X1, X2) %*% W (the materialised kernel, in
# double) and, for small sizes, the base-R oracle of helper-oracle.R.
# ASKOTCH_APPLY_BLOCK sets the rows per block so that small data crosses many
# block boundaries (and the kernels' row tiles of 64 / 256 rows and column
# tiles of 512 points).
# Tolerances, relative to max |K W|: double 1e-12 (rounding in the distance
# sums and the K W sums, ~1e-15 p); single 1e-5 (fp32 unit roundoff 6e-8 times
# the kernel's error growth; sums in double across tiles).

with_block <- function(rows, code) {
  old <- Sys.getenv("ASKOTCH_APPLY_BLOCK", unset = NA)
  if (is.null(rows)) Sys.unsetenv("ASKOTCH_APPLY_BLOCK") else
    Sys.setenv(ASKOTCH_APPLY_BLOCK = rows)
  on.exit(if (is.na(old)) Sys.unsetenv("ASKOTCH_APPLY_BLOCK") else
    Sys.setenv(ASKOTCH_APPLY_BLOCK = old))
  force(code)
}

rel_err <- function(got, want) max(abs(got - want)) / max(abs(want))

test_that("blocked kernel products equal the kernel matrix times W", {
  set.seed(21)
  n1 <- 700L
  n2 <- 600L
  # p = 5: direct-difference path; p = 40: GEMM path (p > 32)
  for (p in c(5L, 40L)) {
    x1 <- matrix(rnorm(n1 * p), n1, p)
    x2 <- matrix(rnorm(n2 * p), n2, p)
    s <- sqrt(p)
    for (k in c("rbf", "matern32", "laplace")) {
      K <- .Call(ffi("ffi_kernel_matrix"), x1, x2, kernel_code[[k]], s, 1L, 1L)
      if (p == 5L) expect_lt(max(abs(K - oracle_kernel(x1, x2, k, s))), 1e-12)
      for (q in c(1L, 3L, 6L)) { # fused q = 1, dot products, per-tile GEMM
        w <- matrix(rnorm(n2 * q), n2, q)
        want <- K %*% w
        for (th in 1:2) {
          for (blk in list(NULL, 97L, 300L)) {
            info <- paste(k, "p", p, "q", q, "threads", th, "block", format(blk))
            got <- with_block(blk, .Call(ffi("ffi_kernel_apply"), x1, x2, w,
                                         kernel_code[[k]], s, 1L, 0L, th))
            expect_equal(dim(got), c(n1, q))
            expect_lt(rel_err(got, want), 1e-12, label = info)
            got32 <- with_block(blk, .Call(ffi("ffi_kernel_apply"), x1, x2, w,
                                           kernel_code[[k]], s, 0L, 0L, th))
            expect_lt(rel_err(got32, want), 1e-5, label = info)
          }
        }
      }
    }
  }
})

test_that("the default block size splits wide data and stays exact", {
  # p = 4100: 2^22 / p < 1024, so blocks are at most 1024 rows: n1 = 1100 goes
  # in two blocks of 550
  set.seed(22)
  p <- 4100L
  x1 <- matrix(runif(1100 * p), 1100, p)
  x2 <- matrix(runif(50 * p), 50, p)
  w <- matrix(rnorm(50 * 2), 50, 2)
  s <- sqrt(p) / 2
  K <- oracle_kernel(x1, x2, "rbf", s)
  want <- K %*% w
  for (th in 1:2) {
    got <- with_block(NULL, .Call(ffi("ffi_kernel_apply"), x1, x2, w,
                                  kernel_code[["rbf"]], s, 1L, 0L, th))
    expect_lt(rel_err(got, want), 1e-12)
    got32 <- with_block(NULL, .Call(ffi("ffi_kernel_apply"), x1, x2, w[, 1, drop = FALSE],
                                    kernel_code[["rbf"]], s, 0L, 0L, th))
    expect_lt(rel_err(got32, want[, 1, drop = FALSE]), 1e-5)
  }
})

test_that("predict() across blocks and threads equals the closed form", {
  set.seed(23)
  d <- make_regression(300, p = 6)
  xnew <- matrix(rnorm(650 * 6), 650, 6)
  ref <- oracle_krr(d$x, d$y, xnew, "rbf", 2, lambda = 0.5)
  for (prec in c("double", "single")) {
    fit <- krr(d$x, d$y, kernel = kernel_rbf(2), lambda = 0.5, solver = cholesky(),
               precision = prec, threads = 1)
    # the fit's own weights through the blocked product, against K w in R
    sc <- oracle_scale(d$x)
    xn <- scale(xnew, sc$center, sc$scale)
    want <- oracle_kernel(xn, scale(d$x, sc$center, sc$scale), "rbf", 2) %*%
      fit$weights + fit$y_center
    tol <- if (prec == "double") 1e-12 else 1e-5
    for (th in 1:2) {
      fit$threads <- th
      got <- with_block(71L, predict(fit, xnew))
      expect_lt(rel_err(got, want[, 1]), tol, label = paste(prec, th))
      expect_identical(with_block(71L, predict(fit, xnew)), got)
      expect_lt(rel_err(with_block(NULL, predict(fit, xnew)), want[, 1]), tol)
    }
    # and the solve itself against the exact oracle (Cholesky)
    expect_lt(rel_err(predict(fit, xnew), ref$pred[, 1]),
              if (prec == "double") 1e-8 else 1e-3)
  }
})

test_that("apply_scaling is the two sweeps, bit for bit", {
  set.seed(24)
  x <- matrix(rnorm(400 * 7), 400, 7, dimnames = list(NULL, letters[1:7]))
  ctr <- colMeans(x)
  sds <- apply(x, 2, stats::sd)
  want <- sweep(sweep(x, 2L, ctr, "-"), 2L, sds, "/")
  expect_identical(askotch:::apply_scaling(x, ctr, sds), want)
  expect_identical(askotch:::apply_scaling(x, rep(0, 7), rep(1, 7)), x)
  xi <- matrix(1:12, 4, 3)
  expect_identical(askotch:::apply_scaling(xi, c(1, 2, 3), c(2, 2, 2)),
                   sweep(sweep(xi, 2L, c(1, 2, 3)), 2L, c(2, 2, 2), "/"))
})

test_that("infinite newdata is still refused, huge finite values are not", {
  set.seed(25)
  d <- make_regression(60, p = 3)
  fit <- krr(d$x, d$y, lambda = 1, solver = cholesky(), threads = 1)
  xnew <- d$x[1:5, ]
  xnew[2, 3] <- Inf
  expect_error(predict(fit, xnew), class = "askotch_error_input")
  expect_error(predict(fit, xnew), "row 2, column 3", class = "askotch_error_input")
  xnew[2, 3] <- NA # a missing value: that row is predicted as NA
  expect_identical(which(is.na(predict(fit, xnew))), 2L)
  big <- d$x[1:3, ]
  big[, 1] <- 1e308 # the sum overflows; every entry is finite
  expect_true(all(is.finite(predict(fit, big))))
})
