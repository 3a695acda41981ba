# The stopping decision belongs to an iteration, not to the wall-clock length
# of a slice: the same seed and thread count give the same bits whatever the
# slicing (option askotch.slice_seconds; in real use the machine's load).

fit_sliced <- function(slice_s, ..., FUN = krr) {
  old <- options(askotch.slice_seconds = slice_s)
  on.exit(options(old))
  FUN(...)
}

test_that("fits stopped by tol are bitwise reproducible across slicings", {
  d <- make_regression(1500, p = 4, seed = 81)
  solvers <- list(askotch(block_size = 100), skotch(block_size = 100),
                  pcg(), eigenpro())
  for (k in seq_along(solvers)) {
    s <- solvers[[k]]
    a <- fit_sliced(1e-9, d$x, d$y, lambda = 0.05, bandwidth = "median",
                    solver = s, seed = 3, threads = 1, max_passes = 500)
    b <- fit_sliced(10, d$x, d$y, lambda = 0.05, bandwidth = "median",
                    solver = s, seed = 3, threads = 1, max_passes = 500)
    expect_identical(a$reason, "tol")
    expect_identical(a$iterations, b$iterations)
    expect_identical(a$weights, b$weights)
    # the slicings did differ (a block method's pass has many iterations)
    if (k <= 2L) expect_gt(nrow(a$trace), nrow(b$trace))
  }
})

test_that("kernel machines (duality gap) are bitwise reproducible across slicings", {
  set.seed(82)
  x <- matrix(rnorm(800), 400, 2)
  y <- factor(ifelse(x[, 1]^2 + x[, 2] > 0.5, "a", "b"))
  a <- fit_sliced(1e-9, x, y, loss = loss_logistic(), lambda = 0.05,
                  solver = joker(block_size = 50), seed = 4, threads = 1,
                  tol = 1e-3, max_passes = 200, FUN = kernel_machine)
  b <- fit_sliced(10, x, y, loss = loss_logistic(), lambda = 0.05,
                  solver = joker(block_size = 50), seed = 4, threads = 1,
                  tol = 1e-3, max_passes = 200, FUN = kernel_machine)
  expect_identical(a$reason, "tol")
  expect_identical(a$iterations, b$iterations)
  expect_identical(a$weights, b$weights)
  expect_gt(nrow(a$trace), nrow(b$trace))
})

test_that("huge thread counts and memory limits are capped, not crashes", {
  d <- make_regression(200, seed = 83)
  ref <- krr(d$x, d$y, lambda = 0.5, solver = cholesky(), threads = 1)
  for (th in c(.Machine$integer.max, 1e5, 1e10)) {
    fit <- krr(d$x, d$y, lambda = 0.5, solver = cholesky(), threads = th)
    expect_equal(fit$weights, ref$weights, tolerance = 1e-10)
  }
  fit <- krr(d$x, d$y, lambda = 0.5, solver = cholesky(), mem_limit = 1e300,
             threads = 1)
  expect_equal(fit$weights, ref$weights, tolerance = 1e-12)
  old <- askotch_threads()
  on.exit(askotch_threads(old))
  askotch_threads(.Machine$integer.max)
  expect_lte(askotch_threads(), max(1L, parallel::detectCores()))
  expect_equal(predict(ref, d$x[1:3, ]), predict(ref, d$x)[1:3],
               tolerance = 1e-12)
})

# On the CPU the thread count changes no bit of a result: the kernel
# product's column groups and the dense product's slices are fixed by the
# problem's sizes, never by the team (src/cpu). Sizes where the products run
# on two threads (about 1e6 kernel pairs per thread), every solver and loss,
# exact kernel and random features, both precisions.
test_that("every solver and loss gives the same bits for 1 and 2 threads", {
  skip_if(parallel::detectCores() < 2L, "one core: threads = 2 is capped to 1")
  d <- make_regression(2000, p = 5, seed = 84)
  both <- function(FUN, ...) {
    lapply(1:2, function(t) suppressWarnings(FUN(..., threads = t, seed = 3)))
  }
  solvers <- list(askotch(), askotch(variant = "v1"), pcg(), falkon(), eigenpro(),
                  eigenpro(version = 3), bcd(), bcd(features = "random"), svrg(),
                  cholesky())
  for (s in solvers) {
    for (prec in if (inherits(s, "askotch_solver_svrg")) "double" else c("double", "single")) {
      f <- both(krr, d$x, d$y, lambda = 1e-3, bandwidth = 1, solver = s, max_passes = 3,
                precision = prec)
      expect_identical(f[[2]]$threads, 2L)
      expect_identical(f[[1]]$weights, f[[2]]$weights, label = paste(format(s), prec))
    }
  }
  yc <- factor(ifelse(d$x[, 1] + d$x[, 2]^2 > 0.3, "a", "b"))
  # the SVR loss shares Joker's code with Huber and is slower to set up
  for (L in list(loss_logistic(), loss_hinge(), loss_squared_hinge(), loss_huber())) {
    yy <- if (L$name == "huber") d$y else yc
    for (feat in list(NULL, 300)) {
      f <- both(kernel_machine, d$x, yy, loss = L, features = feat, max_passes = 3)
      expect_identical(f[[1]]$weights, f[[2]]$weights,
                       label = paste(L$name, if (is.null(feat)) "exact" else "features"))
    }
  }
})
