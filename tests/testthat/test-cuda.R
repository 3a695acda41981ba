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

# The R layer's paths on a device context: every squared-loss solver, the
# default fit (lambda by maximum likelihood, solver "auto"), standard errors
# and posterior draws, a refit at a new lambda with the kept state, a lambda
# path, the other losses and random features.  Each against the CPU backend
# on the same call (same seed, same blocks): converged fits agree to 1e-7
# relative in predictions (double); fits stopped after a fixed number of
# passes follow the same iterates up to rounding, 1e-6.
test_that("every squared-loss solver agrees between CPU and CUDA", {
  skip_if_not(has_cuda(), "no CUDA device")
  d <- make_regression(1500, seed = 63)
  solvers <- list(askotch = askotch(), skotch = skotch(), sap = sap(),
                  pcg = pcg(), pcg_gc = pcg("greedy_cholesky"),
                  falkon = falkon(), eigenpro = eigenpro(), bcd = bcd())
  for (nm in names(solvers)) {
    args <- list(d$x, d$y, lambda = 5, bandwidth = 1.5, solver = solvers[[nm]],
                 max_passes = 5, tol = 0, seed = 2)
    f_cpu <- suppressWarnings(do.call(krr, c(args, device = "cpu")))
    f_gpu <- suppressWarnings(do.call(krr, c(args, device = "cuda")))
    expect_identical(f_gpu$device, "cuda")
    expect_lt(rel_err(predict(f_gpu, d$x), predict(f_cpu, d$x)), 1e-6,
              label = nm)
  }
})

test_that("the default GP analysis runs on the device and agrees with the CPU", {
  skip_if_not(has_cuda(), "no CUDA device")
  d <- make_regression(3000, seed = 64)
  xt <- make_regression(200, seed = 65)$x
  f_cpu <- krr(d$x, d$y, device = "cpu", seed = 1)
  f_gpu <- krr(d$x, d$y, device = "cuda", seed = 1)
  expect_identical(f_gpu$device, "cuda")
  expect_equal(f_gpu$lambda, f_cpu$lambda, tolerance = 1e-8)
  p_cpu <- predict(f_cpu, xt, se.fit = TRUE, method = "exact")
  p_gpu <- predict(f_gpu, xt, se.fit = TRUE, method = "exact")
  expect_lt(rel_err(p_gpu$fit, p_cpu$fit), 1e-7)
  expect_lt(rel_err(p_gpu$se.fit, p_cpu$se.fit), 1e-6)
  s_gpu <- simulate(f_gpu, nsim = 3, seed = 4, newdata = xt[1:20, ])
  s_cpu <- simulate(f_cpu, nsim = 3, seed = 4, newdata = xt[1:20, ])
  expect_lt(rel_err(as.matrix(s_gpu), as.matrix(s_cpu)), 1e-6)
  # a refit at a new lambda from the kept state, and a lambda path
  k_gpu <- krr(d$x, d$y, lambda = 2, bandwidth = 1, solver = pcg(),
               device = "cuda", keep_state = TRUE, tol = 1e-10, seed = 1)
  k_cpu <- krr(d$x, d$y, lambda = 2, bandwidth = 1, solver = pcg(),
               device = "cpu", keep_state = TRUE, tol = 1e-10, seed = 1)
  r_gpu <- refit(k_gpu, lambda = 20)
  r_cpu <- refit(k_cpu, lambda = 20)
  expect_lt(rel_err(predict(r_gpu, xt), predict(r_cpu, xt)), 1e-7)
  path_gpu <- krr(d$x, d$y, lambda = c(1, 10, 100), bandwidth = 1,
                  solver = pcg(), device = "cuda", tol = 1e-10, seed = 1)
  path_cpu <- krr(d$x, d$y, lambda = c(1, 10, 100), bandwidth = 1,
                  solver = pcg(), device = "cpu", tol = 1e-10, seed = 1)
  expect_lt(rel_err(predict(path_gpu, xt), predict(path_cpu, xt)), 1e-7)
})

test_that("the other losses and random features run on the device", {
  skip_if_not(has_cuda(), "no CUDA device")
  d <- make_regression(1200, seed = 66)
  cls <- factor(ifelse(d$y > stats::median(d$y), "a", "b"))
  # dcd() (the default here: K formed on the device, the steps on the host)
  # and Joker
  for (sname in c("dcd", "joker")) for (loss in list(loss_hinge(), loss_logistic(),
                                                     loss_huber(), loss_svr())) {
    yy <- if (loss$name %in% c("hinge", "logistic")) cls else d$y
    args <- list(d$x, yy, lambda = 1, bandwidth = 1.5, loss = loss, solver = sname,
                 max_passes = 3, tol = 0, seed = 3)
    f_cpu <- suppressWarnings(do.call(kernel_machine, c(args, device = "cpu")))
    f_gpu <- suppressWarnings(do.call(kernel_machine, c(args, device = "cuda")))
    expect_identical(f_gpu$device, "cuda")
    expect_lt(rel_err(predict(f_gpu, d$x, type = "decision"),
                      predict(f_cpu, d$x, type = "decision")), 1e-6,
              label = paste(sname, loss$name))
  }
  args <- list(d$x, d$y, lambda = 1, bandwidth = 1.5,
               solver = bcd("random", p = 500), max_passes = 3, tol = 0,
               seed = 3)
  f_cpu <- suppressWarnings(do.call(krr, c(args, device = "cpu")))
  f_gpu <- suppressWarnings(do.call(krr, c(args, device = "cuda")))
  expect_lt(rel_err(predict(f_gpu, d$x), predict(f_cpu, d$x)), 1e-6)
})

# Composite kernels on the device: the tiles' primitives (kernel_block,
# kcomp_map, loss_map MUL, gather_rows, GEMM) against the CPU backend, the
# fused path of a sum, the pairwise families, and a fit.
test_that("composite kernels agree between CPU and CUDA", {
  skip_if_not(has_cuda(), "no CUDA device")
  set.seed(64)
  x1 <- cbind(a = runif(900), b = runif(900), c = runif(900))
  x2 <- cbind(a = runif(1300), b = runif(1300), c = runif(1300))
  v <- matrix(rnorm(1300 * 2), 1300, 2)
  res <- function(k) ffi("composite_resolve")(k, x1, colnames(x1), 1, NULL)
  kernels <- list(
    sum = kernel_rbf(0.3, dims = 1:2) + kernel_matern32(0.5, dims = 3),
    product = kernel_rbf(0.3, dims = 1:2) * kernel_matern32(0.5, dims = 3),
    pairwise = kernel_periodic(0.5, 1, dims = 3) * kernel_matern(nu = 1.3, bandwidth = 0.4) +
      0.5 * kernel_polynomial(2, 0.5, 1, dims = c(1, 3)))
  for (nm in names(kernels)) {
    k <- res(kernels[[nm]])
    for (prec in c("double", "single")) {
      cpu <- ffi("native_kernel_apply")(x1, x2, v, k, prec, "cpu")
      gpu <- ffi("native_kernel_apply")(x1, x2, v, k, prec, "cuda")
      expect_lt(rel_err(gpu, cpu), if (prec == "double") 1e-12 else 1e-5)
    }
  }
  y <- sin(6 * x1[, 1]) + x1[, 2] * x1[, 3] + rnorm(900, sd = 0.05)
  k <- kernels$pairwise
  f_cpu <- krr(x1, y, kernel = k, lambda = 0.1, solver = pcg(), tol = 1e-11, device = "cpu")
  f_gpu <- krr(x1, y, kernel = k, lambda = 0.1, solver = pcg(), tol = 1e-11, device = "cuda")
  expect_lt(rel_err(predict(f_gpu, x2), predict(f_cpu, x2)), 1e-8)
})
