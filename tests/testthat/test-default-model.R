# krr()'s default model: the kernel (kernel = "auto") and the input scaling
# (standardize = "auto") chosen by maximum likelihood, each candidate with its
# own maximum-likelihood bandwidth and lambda (tune_select()).

# The profile log likelihood of centred y under s^2 (K + lambda I), s^2
# profiled, in base R (the oracle of the models table)
oracle_profile_loglik <- function(xs, y, kernel, bandwidth, lambda) {
  n <- length(y)
  K <- oracle_kernel(xs, xs, kernel, bandwidth)
  R <- chol(K + lambda * diag(n))
  a <- backsolve(R, y, transpose = TRUE)
  s2 <- sum(a^2) / n
  -n / 2 * (log(2 * pi * s2) + 1) - sum(log(diag(R)))
}

# A rough (Matern 1/2) field on coordinates whose spreads differ 4-fold
sim_field <- function(n, seed) {
  set.seed(seed)
  x <- cbind(lon = runif(n, 0, 8), lat = runif(n, 0, 2))
  D <- as.matrix(dist(x))
  f <- drop(t(chol(exp(-D / 1.5) + 1e-8 * diag(n))) %*% rnorm(n))
  list(x = x, y = f + rnorm(n, sd = 0.2))
}

test_that("the default fit chooses scaling and kernel by the likelihood", {
  d <- sim_field(240, 1)
  fit <- krr(d$x, d$y, seed = 1, threads = 1)
  ms <- fit$tuning$models
  expect_s3_class(ms, "data.frame")
  # the scaling with Matern 3/2, then the other three kernels
  expect_equal(nrow(ms), 5L)
  expect_equal(ms$kernel, c("matern32", "matern32", "matern12", "matern52", "rbf"))
  expect_equal(ms$scaling[1:2], c("columns", "joint"))
  expect_equal(sum(ms$chosen), 1L)
  expect_equal(which(ms$chosen), which.max(ms$loglik))
  # all tuning points were the subsample: the same likelihoods
  expect_equal(ms$loglik_all, ms$loglik)
  expect_equal(ms$n_used, rep(240, 5))
  # on isotropic coordinates one scale wins, and the rough kernel
  expect_identical(fit$standardize, "joint")
  expect_identical(fit$kernel$name, "matern12")
  expect_equal(fit$scale, rep(sqrt(mean(apply(d$x, 2, sd)^2)), 2))
  # every row's likelihood is the profile likelihood (base R) at its estimates
  sc <- oracle_scale(d$x)
  yc <- d$y - mean(d$y)
  for (i in seq_len(nrow(ms))) {
    s <- if (ms$scaling[i] == "joint") rep(sqrt(mean(sc$scale^2)), 2) else sc$scale
    xs <- scale(d$x, sc$center, s)
    ll <- oracle_profile_loglik(xs, yc, ms$kernel[i], ms$bandwidth[i], ms$lambda[i])
    expect_equal(ms$loglik[i], ll, tolerance = 1e-8)
  }
  # the fit is the chosen model's own maximum-likelihood fit (all points here)
  direct <- krr(d$x, d$y, kernel = "matern12", standardize = "joint", seed = 1,
                threads = 1)
  expect_null(direct$tuning$models)
  expect_equal(as.numeric(logLik(fit)), as.numeric(logLik(direct)), tolerance = 1e-6)
  expect_equal(as.numeric(logLik(fit)), max(ms$loglik), tolerance = 1e-8)
  expect_output(print(fit), "chosen by likelihood among 5 candidates")
  expect_output(print(summary(fit)), "chosen by likelihood")
})

test_that("columns in different units keep their own scales", {
  set.seed(2)
  n <- 200
  x <- cbind(a = rnorm(n), b = rnorm(n, sd = 100))
  y <- sin(2 * x[, 1]) + cos(x[, 2] / 50) + rnorm(n, sd = 0.1)
  fit <- krr(x, y, seed = 1, threads = 1)
  expect_true(isTRUE(fit$standardize))
  expect_equal(fit$scale, unname(apply(x, 2, sd)))
  ms <- fit$tuning$models
  expect_gt(ms$loglik[1L], ms$loglik[2L])
})

test_that("a subsample chooses, all tuning points estimate", {
  d <- sim_field(300, 3)
  old <- options(askotch.select_subsample = 120)
  on.exit(options(old), add = TRUE)
  fit <- krr(d$x, d$y, seed = 2, threads = 1)
  ms <- fit$tuning$models
  expect_equal(ms$n_used[1L], 120)
  expect_equal(ms$n_all[1L], 300)
  expect_equal(fit$tuning$n_used, 300)
  # the three best on the subsample are estimated on all points, which decide
  top3 <- order(ms$loglik, decreasing = TRUE)[1:3]
  expect_true(all(is.finite(ms$loglik_all[top3])))
  expect_true(all(is.na(ms$loglik_all[-top3])))
  expect_equal(which(ms$chosen), which.max(ms$loglik_all))
  options(askotch.select_finalists = 1)
  one <- krr(d$x, d$y, seed = 2, threads = 1)$tuning$models
  expect_equal(which(is.finite(one$loglik_all)), top3[1L])
  for (bad in list(0, 1.5, "a", c(2, 3), NA)) {
    options(askotch.select_finalists = bad)
    expect_error(krr(d$x, d$y, seed = 2, threads = 1), "askotch.select_finalists",
                 class = "askotch_error_input")
  }
  options(askotch.select_finalists = NULL)
  expect_equal(as.numeric(logLik(fit)), max(ms$loglik_all, na.rm = TRUE), tolerance = 1e-8)
  # the estimates are the chosen model's on all 300 points
  direct <- krr(d$x, d$y, kernel = fit$kernel$name, standardize = fit$standardize,
                seed = 2, threads = 1)
  expect_equal(as.numeric(logLik(fit)), as.numeric(logLik(direct)), tolerance = 1e-6)
})

test_that("on the rainfall the third of the screen wins on all stations", {
  skip_if_not_installed("fields")
  # seed 3's 500 stations rank Matern 1/2 third; on all 1720 stations it is
  # ahead of the screen's two best by about 49 log-likelihood units
  e <- new.env()
  utils::data("NorthAmericanRainfall", package = "fields", envir = e)
  r <- e$NorthAmericanRainfall
  x <- cbind(lon = r$longitude, lat = r$latitude)
  y <- log10(r$precip)
  fit <- krr(x, y, seed = 3, threads = 1)
  ms <- fit$tuning$models
  expect_identical(fit$kernel$name, "matern12")
  expect_equal(order(ms$loglik, decreasing = TRUE)[3L], which(ms$chosen))
  expect_gt(max(ms$loglik_all, na.rm = TRUE) -
              max(ms$loglik_all[-which(ms$chosen)], na.rm = TRUE), 40)
})

test_that("what is given is not chosen", {
  d <- sim_field(150, 4)
  # a kernel: only the scaling
  f1 <- krr(d$x, d$y, kernel = "matern52", seed = 1, threads = 1)
  expect_equal(f1$tuning$models$kernel, c("matern52", "matern52"))
  expect_identical(f1$kernel$name, "matern52")
  # a scaling: only the kernel
  f2 <- krr(d$x, d$y, standardize = TRUE, seed = 1, threads = 1)
  expect_equal(nrow(f2$tuning$models), 4L)
  expect_true(all(f2$tuning$models$scaling == "columns"))
  # both: nothing to choose
  f3 <- krr(d$x, d$y, kernel = "rbf", standardize = FALSE, seed = 1, threads = 1)
  expect_null(f3$tuning$models)
  expect_identical(f3$kernel$bandwidth_rule, "ml")
  # the papers' setting: the Gaussian kernel and the median heuristic
  f4 <- krr(d$x, d$y, bandwidth = "median", seed = 1, threads = 1)
  expect_identical(f4$kernel$name, "rbf")
  expect_identical(f4$kernel$bandwidth_rule, "median")
  expect_null(f4$tuning$models)
  expect_true(isTRUE(f4$standardize))
  # ARD: the kernel is chosen, the scaling is not (length scales absorb it)
  f5 <- krr(d$x, d$y, bandwidth = "ard", seed = 1, threads = 1)
  expect_equal(nrow(f5$tuning$models), 4L)
  expect_length(f5$length_scales, 2L)
  # a fixed bandwidth: the Gaussian kernel, nothing chosen
  f6 <- krr(d$x, d$y, bandwidth = 0.7, seed = 1, threads = 1)
  expect_identical(f6$kernel$name, "rbf")
  expect_equal(f6$kernel$bandwidth, 0.7)
})

test_that("constant responses and weights fall back to the median heuristic", {
  d <- sim_field(80, 5)
  f <- krr(d$x, rep(2, 80), seed = 1, threads = 1)
  expect_identical(f$kernel$bandwidth_rule, "median")
  expect_equal(unname(predict(f, d$x[1:3, ])), rep(2, 3), tolerance = 1e-10)
  expect_error(krr(d$x, rep(2, 80), bandwidth = "ml", kernel = "rbf", seed = 1),
               class = "askotch_error_input")
  w <- rep(c(1, 2), 40)
  fw <- krr(d$x, d$y, weights = w, seed = 1, threads = 1)
  expect_identical(fw$kernel$name, "rbf")
  expect_identical(fw$kernel$bandwidth_rule, "median")
  expect_null(fw$tuning$models)
})

test_that("bad standardize values and corrupted choice records are refused", {
  d <- sim_field(60, 6)
  expect_error(krr(d$x, d$y, standardize = "both"), class = "askotch_error_input")
  expect_error(krr(d$x, d$y, kernel = "automatic"), class = "askotch_error_input")
  expect_error(krr_loglik(d$x, d$y, lambda = 1, standardize = "auto"), "`standardize`",
               class = "askotch_error_input")
  fit <- krr(d$x, d$y, seed = 1, threads = 1)
  bad <- fit
  bad$tuning$models$chosen <- FALSE
  expect_error(print(bad), class = "askotch_error_object")
  bad <- fit
  bad$tuning <- list(lambda_rule = "magic")
  expect_error(summary(bad), class = "askotch_error_object")
})

test_that("a validation set is traced in the chosen scaling", {
  d <- sim_field(200, 7)
  v <- sim_field(60, 8)
  for (bw in c("ml", "ard")) {
    fit <- krr(d$x, d$y, bandwidth = bw, validation = list(x = v$x, y = v$y),
               solver = askotch(), max_passes = 5, tol = 0, seed = 1, threads = 1)
    expect_equal(utils::tail(fit$trace$validation, 1),
                 sqrt(mean((predict(fit, v$x) - v$y)^2)), tolerance = 1e-10, info = bw)
  }
})
