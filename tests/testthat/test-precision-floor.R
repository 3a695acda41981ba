# The precision floor: a fit whose residual cannot go lower in its precision
# stops (reason "precision") instead of running to max_passes, truthfully.

floor_data <- function(n = 3000, seed = 7) {
  set.seed(seed)
  x <- matrix(stats::rnorm(n * 8), n)
  list(x = x, y = sin(rowSums(x[, 1:3])) + 0.1 * stats::rnorm(n))
}

test_that("single precision stops at its floor, with a warning that says so", {
  d <- floor_data()
  args <- list(d$x, d$y, lambda = 0.05, bandwidth = "median", precision = "single",
               solver = sap(), max_passes = 300, threads = 1, seed = 3)
  expect_warning(fit <- do.call(krr, c(args, tol = 1e-7)),
                 "rounding floor of single precision",
                 class = "askotch_warning_convergence")
  expect_identical(fit$reason, "precision")
  expect_false(fit$converged)
  expect_lt(fit$passes, 300)
  expect_true(is.finite(fit$resid_floor) && fit$resid_floor > 1e-7)
  expect_lte(fit$resid_exact, 2 * fit$resid_floor)
  # the residual of the returned weights in double precision (independent
  # base-R kernel) is within the stated floor too
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", fit$kernel$bandwidth)
  yc <- d$y - mean(d$y)
  w <- as.numeric(fit$weights)
  r <- yc - K %*% w - fit$lambda * w
  expect_lte(sqrt(sum(r^2)) / sqrt(sum(yc^2)), 2 * fit$resid_floor)
  # stopping there lost nothing: twice the passes do not halve the residual
  longer <- suppressWarnings(do.call(krr, c(
    utils::modifyList(args, list(max_passes = 2 * fit$passes)), tol = 0)))
  expect_gt(longer$resid_exact, 0.5 * fit$resid_exact)
  # the same problem in double precision goes far below the single floor
  dbl <- do.call(krr, c(utils::modifyList(args, list(precision = "double")),
                        tol = 1e-10))
  expect_identical(dbl$reason, "tol")
  expect_lte(dbl$resid_exact, 1e-10)
})

test_that("single-precision Falkon stops at the floor of its normal equations", {
  # its criterion is the residual of H a = b, H = K_nm^T K_nm + lambda K_mm,
  # whose kernel products run in single precision: without a floor it would
  # level off near 2e-3 here and run to max_passes (drifting up, to about
  # 0.02 after 100 passes on Friedman 1 at n = 2e4)
  d <- floor_data(6000, seed = 7)
  args <- list(d$x, d$y, lambda = 1e-3, bandwidth = "median", solver = falkon(), max_passes = 100,
               threads = 1, seed = 1)
  fit <- do.call(krr, c(args, precision = "single"))
  expect_true(fit$converged)
  expect_identical(fit$reason, "precision")
  expect_lt(fit$passes, 100)
  expect_true(is.finite(fit$resid_floor) && fit$resid_floor > 1e-5)
  expect_lte(fit$resid_exact, 2 * fit$resid_floor)
  # with a tolerance below the floor it says so
  expect_warning(do.call(krr, c(args, precision = "single", tol = 1e-7)),
                 "rounding floor of single precision",
                 class = "askotch_warning_convergence")
  # what it returns predicts as the double-precision fit does
  dbl <- do.call(krr, c(args, precision = "double"))
  expect_identical(dbl$reason, "tol")
  p1 <- predict(fit, d$x[1:500, ])
  p2 <- predict(dbl, d$x[1:500, ])
  expect_lt(sqrt(mean((p1 - p2)^2)) / sqrt(mean(p2^2)), 1e-2)
})

test_that("cross-validation with single-precision Falkon stops its fold fits at the floor", {
  # the tuning loop passes each fold's targets, so Falkon's floor applies
  # there too (a first version, without them, failed at once; with the
  # floor off in the loop 49 of these 75 fold fits ran to max_passes)
  op <- options(askotch.tune_exact_max_n = 100)
  on.exit(options(op))
  d <- floor_data(800, seed = 7)
  ws <- character(0)
  f <- withCallingHandlers(
    krr(d$x, d$y, lambda = "cv", solver = falkon(), precision = "single",
        threads = 1, seed = 1),
    warning = function(w) {
      ws <<- c(ws, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  expect_true(is.finite(f$lambda))
  expect_true(all(is.finite(f$weights)))
  hit <- regmatches(ws, regexpr("^[0-9]+ of the [0-9]+ cross-validation", ws))
  unconverged <- if (length(hit)) as.integer(sub(" .*", "", hit)) else 0L
  expect_lte(unconverged, 7L)
})

test_that("a budget fit (tol = 0) runs its budget", {
  d <- floor_data(2000, seed = 5)
  fit <- krr(d$x, d$y, lambda = 0.05, bandwidth = "median", precision = "single",
             solver = sap(), tol = 0, max_passes = 60, threads = 1, seed = 3)
  expect_identical(fit$reason, "max_passes")
  expect_gte(fit$passes, 60)
})

test_that("with the automatic tolerance a floor stop is a converged fit", {
  d <- floor_data()
  expect_no_warning(
    fit <- krr(d$x, d$y, lambda = 0.05, precision = "single",
               solver = askotch(), max_passes = 300, threads = 1, seed = 3))
  expect_true(fit$converged)
  expect_true(fit$reason %in% c("tol", "precision"))
  expect_lt(fit$passes, 300)
  expect_match(paste(capture.output(print(summary(fit))), collapse = "\n"),
               "Converged")
})

test_that("the floor stop does not depend on the slice length", {
  d <- floor_data(2000, seed = 8)
  run <- function(sl) {
    old <- options(askotch.slice_seconds = sl)
    on.exit(options(old))
    suppressWarnings(krr(d$x, d$y, lambda = 0.05, bandwidth = "median", precision = "single",
                         solver = sap(), tol = 1e-7, max_passes = 300,
                         threads = 1, seed = 4))
  }
  a <- run(1e-4)
  b <- run(5)
  expect_identical(a$reason, "precision")
  expect_identical(a$iterations, b$iterations)
  expect_identical(a$weights, b$weights)
})

test_that("single-precision eigendecompositions above 2^24 workspace work", {
  # ssyevd's workspace 2 s^2 + 6 s + 1 exceeds 2^24 for s > 2896; its size
  # query rounds it in single precision (LAPACK < 3.11) and the call failed
  d <- make_regression(3000, seed = 9)
  fit <- krr(d$x, d$y, lambda = 0.1, precision = "single",
             solver = eigenpro(subsample = 3000), tol = 0, max_passes = 1,
             threads = 1, seed = 1)
  expect_true(is.finite(fit$resid_exact))
  expect_lt(fit$resid_exact, 1)
})
