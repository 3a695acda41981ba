# CPU vs CUDA parity; skipped when no CUDA device is present.
# Tolerances: the two backends evaluate the same kernels with different
# summation orders (tiles, fused kernels), so results agree to rounding:
# kernel products 1e-12 (double) / 1e-5 (single) relative; converged fits
# (tol 1e-11, cond ~ 21) to 1e-8 relative in predictions.

test_that("kernel products agree between CPU and CUDA", {
  skip_if_not(has_cuda(), "no CUDA device")
  set.seed(61)
  x1 <- matrix(rnorm(500 * 6), 500, 6)
  x2 <- matrix(rnorm(700 * 6), 700, 6)
  v <- matrix(rnorm(700 * 2), 700, 2)
  for (k in all_kernels) {
    for (prec in 0:1) {
      cpu <- .Call(ffi("ffi_kernel_apply"), x1, x2, v, kernel_code[[k]], 2,
                   prec, 0L, 1L)
      gpu <- .Call(ffi("ffi_kernel_apply"), x1, x2, v, kernel_code[[k]], 2,
                   prec, 1L, 1L)
      expect_lt(rel_err(gpu, cpu), if (prec == 1L) 1e-12 else 1e-5)
    }
  }
})

test_that("fits agree between CPU and CUDA", {
  skip_if_not(has_cuda(), "no CUDA device")
  d <- make_regression(1000, seed = 62)
  for (s in list(askotch(), cholesky())) {
    f_cpu <- krr(d$x, d$y, lambda = 50, bandwidth = 1.5, solver = s,
                 tol = 1e-11, device = "cpu", seed = 1)
    f_gpu <- krr(d$x, d$y, lambda = 50, bandwidth = 1.5, solver = s,
                 tol = 1e-11, device = "cuda", seed = 1)
    expect_identical(f_gpu$device, "cuda")
    expect_lt(rel_err(predict(f_gpu, d$x), predict(f_cpu, d$x)), 1e-8)
    # a CUDA fit predicts on the CPU too (e.g. after readRDS elsewhere)
    expect_lt(rel_err(predict(f_gpu, d$x, device = "cpu"),
                      predict(f_cpu, d$x)), 1e-8)
  }
  f32 <- krr(d$x, d$y, lambda = 50, bandwidth = 1.5, precision = "single",
             device = "cuda", seed = 1)
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", 1.5, 50)
  expect_lt(rel_err(predict(f32, d$x), ref$pred), 1e-4)
})
