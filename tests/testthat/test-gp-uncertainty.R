# Predictive uncertainty, posterior samples and the Model section of summary()
# against closed forms written in base R (helper-oracle.R: kernels, scaling).

# The GP oracle: for standardised training points xs, new points xn, centred
# y: s^2 = yc^T A^{-1} yc / n, and the mean-squared error of the fitted
# predictor m(x) = c_x^T y (c_x built explicitly, c_x^T 1 = 1) for mu + f(x):
# s^2 (k(x, x) - 2 c_x^T k_x + c_x^T A c_x), A = K + lambda I.  Also the
# closed form of the docs (GP variance + centring term), to check both agree.
gp_oracle <- function(x, y, xnew, kernel, bw, lambda) {
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  xn <- scale(xnew, sc$center, sc$scale)
  n <- nrow(x)
  K <- oracle_kernel(xs, xs, kernel, bw)
  ks <- oracle_kernel(xs, xn, kernel, bw)
  kss <- oracle_kernel(xn, xn, kernel, bw)
  A <- K + lambda * diag(n)
  Ai <- solve(A)
  y <- as.matrix(y)
  yc <- sweep(y, 2, colMeans(y))
  s2 <- colSums(yc * (Ai %*% yc)) / n
  C <- 1 / n + Ai %*% ks - matrix(colSums(Ai %*% ks) / n, n, ncol(ks),
                                 byrow = TRUE)
  cov_unit <- kss - crossprod(C, ks) - crossprod(ks, C) + crossprod(C, A %*% C)
  b <- (1 - colSums(Ai %*% ks)) / n
  closed <- diag(kss) - colSums(ks * (Ai %*% ks)) +
    b^2 * (sum(K) + n * lambda)
  list(fit = sweep(crossprod(C, y), 2, 0), var_unit = diag(cov_unit),
       closed = closed, cov_unit = cov_unit, s2 = s2,
       fitted = sweep(K %*% Ai %*% yc, 2, colMeans(y), "+"))
}

set_gp <- function(n = 200, nnew = 12, seed = 11) {
  d <- make_regression(n, p = 3, seed = seed)
  set.seed(seed + 1)
  d$xnew <- matrix(stats::runif(nnew * 3, -1.6, 1.6), nnew, 3)
  d
}

test_that("se.fit equals the closed form (Cholesky and converged PCG), 1e-8", {
  d <- set_gp()
  lam <- 0.3
  for (k in c("rbf", "matern32", "laplace")) {
    o <- gp_oracle(d$x, d$y, d$xnew, k, 1.3, lam)
    # the explicit predictor-weight MSE and the documented closed form agree
    expect_lt(max(abs(o$var_unit - o$closed)), 1e-12)
    for (sol in list(cholesky(), pcg(rank = 50))) {
      fit <- krr(d$x, d$y, kernel = k, bandwidth = 1.3, lambda = lam,
                 solver = sol, tol = 1e-13, threads = 1)
      p <- predict(fit, d$xnew, se.fit = TRUE, method = "exact")
      expect_lt(rel_err(p$fit, o$fit), 1e-8)
      expect_lt(rel_err(p$se.fit^2, o$s2 * o$var_unit), 1e-8)
      expect_equal(p$residual.scale, sqrt(lam * o$s2), tolerance = 1e-8)
      expect_identical(names(p), c("fit", "se.fit", "df", "residual.scale"))
      expect_identical(p$df, Inf)
      # auto is exact at this n; the in-sample standard errors too
      expect_equal(predict(fit, d$xnew, se.fit = TRUE)$se.fit, p$se.fit)
      ot <- gp_oracle(d$x, d$y, d$x[1:5, ], k, 1.3, lam)
      expect_lt(rel_err(predict(fit, se.fit = TRUE)$se.fit[1:5]^2,
                        ot$s2 * ot$var_unit), 1e-8)
    }
  }
})

test_that("intervals are fit -/+ qnorm times the standard error", {
  d <- set_gp()
  lam <- 0.5
  fit <- krr(d$x, d$y, bandwidth = 1.1, lambda = lam, solver = cholesky(),
             threads = 1)
  o <- gp_oracle(d$x, d$y, d$xnew, "rbf", 1.1, lam)
  se <- sqrt(o$s2 * o$var_unit)
  for (lev in c(0.95, 0.8)) {
    z <- stats::qnorm((1 + lev) / 2)
    ci <- predict(fit, d$xnew, interval = "confidence", level = lev)
    expect_identical(colnames(ci), c("fit", "lwr", "upr"))
    expect_lt(rel_err(ci[, "lwr"], o$fit - z * se), 1e-8)
    expect_lt(rel_err(ci[, "upr"], o$fit + z * se), 1e-8)
    pi <- predict(fit, d$xnew, interval = "prediction", level = lev)
    sp <- sqrt(se^2 + lam * o$s2)
    expect_lt(rel_err(pi[, "upr"] - pi[, "lwr"], 2 * z * sp), 1e-8)
    expect_true(all(pi[, "upr"] - pi[, "lwr"] > ci[, "upr"] - ci[, "lwr"]))
  }
  # with se.fit: the interval matrix in $fit, se.fit of the mean (as lm)
  p <- predict(fit, d$xnew, se.fit = TRUE, interval = "prediction")
  expect_true(is.matrix(p$fit))
  expect_lt(rel_err(p$se.fit, se), 1e-8)
  # one new point still gives a 1 x 3 matrix; the level widens monotonically
  one <- predict(fit, d$xnew[1, , drop = FALSE], interval = "confidence")
  expect_identical(dim(one), c(1L, 3L))
  w <- sapply(c(0.5, 0.9, 0.99), function(l)
    diff(predict(fit, d$xnew[1, , drop = FALSE], interval = "confidence",
                 level = l)[1, c("lwr", "upr")]))
  expect_true(all(diff(w) > 0))
  # coverage of prediction intervals on data drawn from the fitted model is
  # checked by simulate() below; formula fits pass row names through
  fm <- krr(mpg ~ wt + hp, data = mtcars, lambda = 0.5, solver = cholesky(),
            threads = 1)
  expect_identical(rownames(predict(fm, mtcars[1:3, ], interval = "confidence")),
                   rownames(mtcars)[1:3])
})

test_that("multi-output fits: one s^2 per output, shared shape", {
  d <- set_gp(n = 120)
  Y <- cbind(a = d$y, b = 3 * cos(d$x[, 2]) + stats::rnorm(120, sd = 0.3))
  fit <- krr(d$x, Y, bandwidth = 1.2, lambda = 0.4, solver = cholesky(),
             threads = 1)
  o <- gp_oracle(d$x, Y, d$xnew, "rbf", 1.2, 0.4)
  p <- predict(fit, d$xnew, se.fit = TRUE)
  expect_identical(dim(p$se.fit), c(nrow(d$xnew), 2L))
  expect_lt(rel_err(p$se.fit^2, outer(o$var_unit, o$s2)), 1e-8)
  expect_lt(rel_err(p$residual.scale, sqrt(0.4 * o$s2)), 1e-8)
  ci <- predict(fit, d$xnew, interval = "confidence")
  expect_identical(dim(ci), c(nrow(d$xnew), 3L, 2L))
  expect_lt(rel_err(ci[, "upr", "b"] - ci[, "fit", "b"],
                    stats::qnorm(0.975) * p$se.fit[, "b"]), 1e-12)
})

test_that("Nystrom variances bracket the exact ones; tight at full rank", {
  d <- set_gp(n = 1500, nnew = 40, seed = 5)
  fit <- krr(d$x, d$y, bandwidth = 1, lambda = 0.5, solver = cholesky(),
             threads = 1)
  ex <- predict(fit, d$xnew, se.fit = TRUE, method = "exact")$se.fit^2
  # a rank far too small: the bracket is wide but must hold
  for (r in c(10, 60)) {
    old <- options(askotch.gp_rank = r)
    expect_warning(
      ny <- predict(fit, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit,
      sprintf("rank %d\\) are loose", r), class = "askotch_warning_accuracy")
    options(old)
    rng <- attr(ny, "var_range")
    expect_identical(attr(ny, "rank"), as.integer(r))
    expect_true(all(rng[, "lower"] <= ex * (1 + 1e-9)))
    expect_true(all(rng[, "upper"] >= ex * (1 - 1e-9)))
    # the reported variance is the bracket's lower end (the Nystrom variance)
    expect_equal(as.numeric(ny^2), as.numeric(rng[, "lower"]), tolerance = 1e-12)
  }
  # the default rank (pivoted Cholesky until tr(E) < 1e-6 lambda): no warning
  expect_no_warning(
    ny <- predict(fit, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit)
  rng <- attr(ny, "var_range")
  expect_true(all(rng[, "lower"] <= ex * (1 + 1e-9)))
  expect_true(all(rng[, "upper"] >= ex * (1 - 1e-9)))
  expect_lt(max((rng[, "upper"] - rng[, "lower"]) / ex), 1e-4)
  expect_lt(max(abs(ny^2 / ex - 1)), 1e-4)
  expect_lte(attr(ny, "trace_error"), 1e-6 * 0.5 * 1.01)
  # the package's default lambda = 1e-6 n (rounding in the Woodbury form
  # would show here: the bracket is computed from explicit residuals)
  f0 <- krr(d$x, d$y, bandwidth = 1, lambda = 1e-6 * 1500,
            solver = cholesky(), threads = 1)
  ex0 <- predict(f0, d$xnew, se.fit = TRUE, method = "exact")$se.fit^2
  rng0 <- attr(predict(f0, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit,
               "var_range")
  expect_true(all(rng0[, "lower"] <= ex0 * (1 + 1e-9)))
  expect_true(all(rng0[, "upper"] >= ex0 * (1 - 1e-9)))
  expect_lt(max((rng0[, "upper"] - rng0[, "lower"]) / ex0), 1e-4)
  # auto switches at the documented option
  old <- options(askotch.gp_exact_max_n = 1000)
  au <- predict(fit, d$xnew, se.fit = TRUE)$se.fit
  options(old)
  expect_false(is.null(attr(au, "var_range")))
  # a loose bracket under "auto": the exact variance while n is at most
  # askotch.gp_exact_fallback_n, silently; above it the pathwise estimate
  old <- options(askotch.gp_exact_max_n = 1000, askotch.gp_rank = 10)
  expect_no_warning(au <- predict(fit, d$xnew, se.fit = TRUE)$se.fit)
  expect_null(attr(au, "var_range"))
  expect_lt(max(abs(au^2 / ex - 1)), 1e-10)
  # above it "auto" goes to the pathwise estimate (here straight from the
  # factor: its trace error exceeds lambda), silently; "nystrom" warns
  options(askotch.gp_exact_fallback_n = 1000)
  set.seed(3)
  expect_no_warning(au <- predict(fit, d$xnew, se.fit = TRUE, draws = 50)$se.fit)
  expect_null(attr(au, "var_range"))
  expect_identical(attr(au, "draws"), 50L)
  expect_true(all(abs(au^2 - ex) <= 6 * attr(au, "var_mc_se")))
  expect_warning(ny <- predict(fit, d$xnew, se.fit = TRUE,
                               method = "nystrom")$se.fit,
                 "rank 10", class = "askotch_warning_accuracy")
  expect_identical(attr(ny, "rank"), 10L)
  # a fit that stopped short: the draws' solves (under its max_passes) stop
  # short too, and "auto" reports the bracket with its warning, not an error
  expect_warning(fs <- krr(d$x, d$y, bandwidth = 1, lambda = 0.5,
                           solver = pcg(rank = 5), max_passes = 2, tol = 1e-14,
                           threads = 1), class = "askotch_warning_convergence")
  expect_false(fs$converged)
  expect_warning(au <- predict(fs, d$xnew, se.fit = TRUE, draws = 20)$se.fit,
                 "rank 10", class = "askotch_warning_accuracy")
  expect_identical(attr(au, "rank"), 10L)
  expect_null(attr(au, "draws"))
  expect_error(predict(fs, d$xnew, se.fit = TRUE, method = "pathwise", draws = 20),
               "pathwise standard errors", class = "askotch_error_numeric")
  options(old)
  options(askotch.gp_exact_fallback_n = NULL)
})

test_that("pathwise standard errors: unbiased Monte Carlo estimates of the exact variance", {
  d <- set_gp(n = 300, nnew = 30, seed = 13)
  lam <- 0.1
  o <- gp_oracle(d$x, d$y, d$xnew, "rbf", 1, lam)
  ex <- o$s2 * o$var_unit
  fit <- krr(d$x, d$y, bandwidth = 1, lambda = lam, solver = cholesky(),
             threads = 1)
  N <- 2000
  # the plain estimate first (no control variate: R/gp-pathwise-cv.R)
  old0 <- options(askotch.gp_cv_rank = 0)
  on.exit(options(old0), add = TRUE)
  set.seed(1)
  p <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = N)
  expect_null(attr(p$se.fit, "control_rank"))
  expect_lt(rel_err(p$fit, o$fit), 1e-8)
  v <- p$se.fit^2
  mc <- attr(p$se.fit, "var_mc_se")
  expect_identical(attr(p$se.fit, "draws"), as.integer(N))
  expect_null(attr(p$se.fit, "var_range"))
  # each estimate within 5 of its own Monte Carlo standard errors, and those
  # near the Gaussian case's sqrt(2 / N) of the variance (observed 1.0-1.3
  # times it)
  expect_true(all(abs(v - ex) <= 5 * mc))
  expect_true(all(mc / ex > 0.8 * sqrt(2 / N) & mc / ex < 2 * sqrt(2 / N)))
  # the same seed, the same estimates; intervals from them
  set.seed(1)
  pi <- predict(fit, d$xnew, interval = "confidence", method = "pathwise",
                draws = N)
  expect_equal(unname(pi[, "upr"] - pi[, "fit"]),
               as.numeric(stats::qnorm(0.975) * p$se.fit), tolerance = 1e-12)
  # with the control variate (the default; the factor's rank stops where its
  # trace error is negligible): within 5 of its own, smaller, Monte Carlo
  # standard errors
  options(old0)
  set.seed(1)
  pc <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = N)
  expect_gt(attr(pc$se.fit, "control_rank"), 10L)
  mcc <- attr(pc$se.fit, "var_mc_se")
  expect_true(all(abs(pc$se.fit^2 - ex) <= 5 * mcc))
  expect_lt(stats::median(mcc / mc), 0.8)
  # two random features per draw: each draw's prior is a rank-2 kernel, far
  # from k, but new frequencies for every draw keep the mean unbiased (one
  # shared pair would not: the variance would be that of a rank-2 model)
  old <- options(askotch.gp_pathwise_features = 2)
  on.exit(options(old), add = TRUE)
  set.seed(2)
  p2 <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = 4 * N)
  v2 <- p2$se.fit^2
  expect_null(attr(p2$se.fit, "control_rank"))  # two features a draw: no control variate
  expect_true(all(abs(v2 - ex) <= 5 * attr(p2$se.fit, "var_mc_se")))
  expect_lt(abs(mean(v2 / ex) - 1), 0.1)
  # a weighted fit, a multi-output fit: the same unit-scale estimate per
  # output (one set of draws), scaled by each output's s^2
  Y <- cbind(a = d$y, b = 3 * d$y + stats::rnorm(300))
  fm <- krr(d$x, Y, bandwidth = 1, lambda = lam, solver = cholesky(),
            threads = 1)
  set.seed(4)
  pm <- predict(fm, d$xnew, se.fit = TRUE, method = "pathwise", draws = 200)
  s2 <- askotch:::gp_signal_var(fm)
  expect_identical(dim(pm$se.fit), c(30L, 2L))
  expect_identical(dim(attr(pm$se.fit, "var_mc_se")), c(30L, 2L))
  expect_equal(pm$se.fit[, 2]^2 / s2[2], pm$se.fit[, 1]^2 / s2[1],
               tolerance = 1e-12)
  # away from the data (all new points 6 units off, a broad kernel), where
  # the variance of the estimate of mu is over a third of the total, the
  # draws carry it: their mean within 3% (Monte Carlo sd about 1% here;
  # without the centring of the pseudo-data it would be off by that share)
  dm <- set_gp(n = 80, nnew = 25, seed = 17)
  dm$xnew <- dm$xnew + 6
  om <- gp_oracle(dm$x, dm$y, dm$xnew, "rbf", 2, 2)
  sc <- oracle_scale(dm$x)
  xs <- scale(dm$x, sc$center, sc$scale)
  xn <- scale(dm$xnew, sc$center, sc$scale)
  Km <- oracle_kernel(xs, xs, "rbf", 2)
  ks <- oracle_kernel(xs, xn, "rbf", 2)
  bm <- (1 - colSums(solve(Km + 2 * diag(80), ks))) / 80
  share <- bm^2 * (sum(Km) + 80 * 2) / om$closed
  expect_gt(min(share), 0.3)
  fmu <- krr(dm$x, dm$y, bandwidth = 2, lambda = 2, solver = cholesky(),
             threads = 1)
  set.seed(6)
  pmu <- predict(fmu, dm$xnew, se.fit = TRUE, method = "pathwise", draws = 8000)$se.fit
  exm <- om$s2 * om$var_unit
  expect_lt(abs(mean(pmu^2 / exm) - 1), 0.03)
  expect_true(all(abs(pmu^2 - exm) <= 5 * attr(pmu, "var_mc_se")))
  expect_true(is.na(attr(predict(fmu, dm$xnew[1:2, ], se.fit = TRUE,
                                 method = "pathwise", draws = 1)$se.fit,
                         "var_mc_se")[1]))
  expect_error(predict(fit, d$xnew, se.fit = TRUE, method = "pathwise",
                       draws = 0), "`draws`", class = "askotch_error_input")
  expect_error(predict(fit, d$xnew, se.fit = TRUE, draws = 2.5), "`draws`",
               class = "askotch_error_input")
})

test_that("the pathwise draws are kept and reused; changed fields miss", {
  d <- set_gp(n = 300, nnew = 30, seed = 21)
  fit <- krr(d$x, d$y, bandwidth = 1, lambda = 0.1, solver = cholesky(),
             threads = 1)
  set.seed(3)
  p1 <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  keys <- getFromNamespace("gp_cached_kinds", "askotch")
  expect_identical(keys(fit), "pathwise")
  # the same draws at any points, whatever the RNG: the same variances at
  # the same points, and a subset's are the subset of them
  set.seed(99)
  p2 <- predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  expect_identical(p2$se.fit, p1$se.fit)
  p3 <- predict(fit, d$xnew[5:9, ], se.fit = TRUE, method = "pathwise", draws = 50)
  expect_equal(as.numeric(p3$se.fit), as.numeric(p1$se.fit[5:9]), tolerance = 1e-12)
  # a copy of the fit shares its entries; one whose lambda or points were
  # changed does not read it: its draws are those a fresh fit with that
  # lambda makes from the same RNG state
  f2 <- fit
  f2$lambda <- 0.3
  set.seed(3)
  p4 <- predict(f2, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  fresh <- krr(d$x, d$y, bandwidth = 1, lambda = 0.3, solver = cholesky(),
               threads = 1)
  set.seed(3)
  p5 <- predict(fresh, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  expect_equal(as.numeric(p4$se.fit / sqrt(askotch:::gp_signal_var(f2))),
               as.numeric(p5$se.fit / sqrt(askotch:::gp_signal_var(fresh))),
               tolerance = 1e-8)
  f3 <- fit
  f3$x[1, 1] <- f3$x[1, 1] + 0.5
  set.seed(3)
  p6 <- predict(f3, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  expect_false(isTRUE(all.equal(as.numeric(p6$se.fit), as.numeric(p1$se.fit))))
  # one entry per kind: other draws replace it; the exact factor is kept
  # beside it; above askotch.gp_cache_max numbers nothing is kept
  predict(fit, d$xnew, se.fit = TRUE, method = "pathwise", draws = 20)
  predict(fit, d$xnew, se.fit = TRUE, method = "exact")
  expect_setequal(keys(fit), c("pathwise", "exact"))
  old <- options(askotch.gp_cache_max = 1000)
  on.exit(options(old))
  f4 <- krr(d$x, d$y, bandwidth = 1, lambda = 0.1, solver = cholesky(),
            threads = 1)
  predict(f4, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  expect_length(keys(f4), 0L)
  # a fit without an id (or a corrupted one) computes as before
  f5 <- fit
  f5$gp_id <- NULL
  set.seed(3)
  p7 <- predict(f5, d$xnew, se.fit = TRUE, method = "pathwise", draws = 50)
  expect_equal(as.numeric(p7$se.fit), as.numeric(p1$se.fit), tolerance = 1e-10)
})

test_that("the Nystrom factor with repeated points: pivots stop at the distinct ones", {
  # each of 40 points three times: K has rank 40, the factor must stop
  # there (the repeats are dependent candidates), the bracket still hold
  d <- set_gp(n = 40, nnew = 15, seed = 9)
  x3 <- d$x[rep(seq_len(40), 3), ]
  y3 <- d$y[rep(seq_len(40), 3)] + stats::rnorm(120, sd = 0.05)
  fit <- krr(x3, y3, bandwidth = 1, lambda = 0.2, solver = cholesky(),
             threads = 1)
  ex <- predict(fit, d$xnew, se.fit = TRUE, method = "exact")$se.fit^2
  old <- options(askotch.gp_rank = 120)
  on.exit(options(old))
  ny <- predict(fit, d$xnew, se.fit = TRUE, method = "nystrom")$se.fit
  expect_lte(attr(ny, "rank"), 40L)
  rng <- attr(ny, "var_range")
  expect_true(all(rng[, "lower"] <= ex * (1 + 1e-9)))
  expect_true(all(rng[, "upper"] >= ex * (1 - 1e-9)))
  expect_lt(max(abs(ny^2 / ex - 1)), 1e-6)
})

test_that("bad arguments are classed errors naming them", {
  d <- set_gp(n = 60)
  fit <- krr(d$x, d$y, lambda = 0.5, solver = cholesky(), threads = 1)
  e <- "askotch_error_input"
  expect_error(predict(fit, d$xnew, newx = d$xnew), "`newx`", class = e)
  expect_error(predict(fit, d$xnew, level = 0.9, intervall = "confidence"),
               "`intervall`", class = e)
  for (lv in list(0, 1, 1.5, -0.1, NA, "0.95", c(0.9, 0.95))) {
    expect_error(predict(fit, d$xnew, interval = "confidence", level = lv),
                 "`level`", class = e)
  }
  expect_error(predict(fit, d$xnew, interval = "credible"), "`interval`",
               class = e)
  expect_error(predict(fit, d$xnew, interval = 1), "`interval`", class = e)
  expect_error(predict(fit, d$xnew, se.fit = NA), "`se.fit`", class = e)
  expect_error(predict(fit, d$xnew, se.fit = TRUE, method = "lanczos"),
               "`method`", class = e)
  cls <- krr(Species ~ ., data = iris, lambda = 1, solver = cholesky(),
             threads = 1)
  expect_error(predict(cls, iris, se.fit = TRUE), "regression fit", class = e)
  expect_error(predict(cls, iris, interval = "prediction"), "regression fit",
               class = e)
  expect_error(simulate(cls), "regression fit", class = e)
  fal <- krr(d$x, d$y, lambda = 0.5, solver = falkon(centers = 20),
             threads = 1)
  expect_error(predict(fal, d$xnew, se.fit = TRUE), "full kernel", class = e)
  km <- kernel_machine(d$x, d$y, loss = "huber", lambda = 0.5, threads = 1)
  expect_error(predict.krr(km, d$xnew, se.fit = TRUE), "squared-loss",
               class = e)
  expect_error(simulate(fit, nsim = 0), "`nsim`", class = e)
  expect_error(simulate(fit, nsim = 2, method = "gibbs"), "`method`",
               class = e)
  expect_error(simulate(fit, nsim = 2, newx = d$xnew), "`newx`", class = e)
  # without se.fit / interval the classification path is unchanged
  expect_s3_class(predict(cls, iris[1:3, ]), "factor")
})

# Monte Carlo checks with fixed seeds.  With N draws from N(mu, S):
# N (m - mu)^T S^{-1} (m - mu) ~ chi^2_k, tested below its 1 - 1e-6 quantile;
# the whitened draws' covariance entries have sd ~ 1/sqrt(N) (diagonal
# sqrt(2/N)), tested within 5 sd.
mc_check <- function(S, mu, Sigma, tol_mean = stats::qchisq(1 - 1e-6, length(mu)),
                     sd_mult = 5, extra = 0) {
  N <- ncol(S)
  k <- length(mu)
  R <- chol(Sigma)
  Wn <- backsolve(R, S - mu, transpose = TRUE)
  chi <- N * sum(rowMeans(Wn)^2)
  expect_lt(chi, tol_mean)
  Ce <- tcrossprod(Wn - rowMeans(Wn)) / (N - 1)
  expect_lt(max(abs(diag(Ce) - 1)), sd_mult * sqrt(2 / N) + extra)
  off <- Ce[upper.tri(Ce)]
  expect_lt(max(abs(off)), sd_mult * sqrt(1 / N) + extra)
}

test_that("exact simulate(): moments match the closed form; seed handling", {
  d <- set_gp(n = 100, nnew = 6, seed = 3)
  lam <- 0.3
  fit <- krr(d$x, d$y, bandwidth = 1.2, lambda = lam, solver = cholesky(),
             threads = 1)
  o <- gp_oracle(d$x, d$y, d$xnew, "rbf", 1.2, lam)
  N <- 4000
  s <- simulate(fit, nsim = N, seed = 42, newdata = d$xnew, method = "exact")
  expect_s3_class(s, "data.frame")
  expect_identical(dim(s), c(6L, as.integer(N)))
  expect_identical(names(s)[1:2], c("sim_1", "sim_2"))
  expect_identical(as.numeric(attr(s, "seed")), 42)
  expect_equal(attr(s, "jitter"), 1e-10)
  mc_check(as.matrix(s), o$fit[, 1], o$s2 * o$cov_unit)
  # with noise: covariance + lambda s^2 I
  sn <- simulate(fit, nsim = N, seed = 43, newdata = d$xnew, noise = TRUE)
  mc_check(as.matrix(sn), o$fit[, 1], o$s2 * (o$cov_unit + lam * diag(6)))
  # the same seed, the same draws; the caller's RNG stream is untouched
  set.seed(9)
  a <- stats::runif(1)
  set.seed(9)
  s2 <- simulate(fit, nsim = 3, seed = 42, newdata = d$xnew)
  expect_identical(stats::runif(1), a)
  expect_identical(as.matrix(s2), as.matrix(s)[, 1:3])
  # training points by default, one row per point
  expect_identical(dim(simulate(fit, nsim = 2, seed = 1)), c(100L, 2L))
})

test_that("pathwise simulate(): moments match the exact posterior", {
  d <- set_gp(n = 400, nnew = 5, seed = 8)
  lam <- 0.2
  o <- gp_oracle(d$x, d$y, d$xnew, "matern52", 1.5, lam)
  N <- 1500
  # the pathwise sampler with a converged iterative solver (kept state:
  # left as it was) and with the direct solve
  fit <- krr(d$x, d$y, kernel = "matern52", bandwidth = 1.5, lambda = lam,
             solver = pcg(rank = 100), tol = 1e-10, keep_state = TRUE,
             threads = 1)
  s <- simulate(fit, nsim = N, seed = 5, newdata = d$xnew,
                method = "pathwise")
  expect_s3_class(s, "data.frame")
  # every draw has its own random features, so the draws' covariance is the
  # exact one in expectation: no allowance beyond the Monte Carlo error
  mc_check(as.matrix(s), o$fit[, 1], o$s2 * o$cov_unit)
  # the kept state still solves the fit's own problem
  f2 <- refit(fit, newresp = 2 * d$y)
  expect_lt(rel_err(f2$weights, 2 * fit$weights), 1e-7)
  fc <- krr(d$x, d$y, kernel = "matern52", bandwidth = 1.5, lambda = lam,
            solver = cholesky(), threads = 1)
  sc <- simulate(fc, nsim = N, seed = 6, newdata = d$xnew,
                 method = "pathwise")
  mc_check(as.matrix(sc), o$fit[, 1], o$s2 * o$cov_unit)
})

test_that("summary() Model section: R-squared / accuracy and variances", {
  d <- set_gp(n = 150)
  lam <- 0.4
  fit <- krr(d$x, d$y, bandwidth = 1.2, lambda = lam, solver = cholesky(),
             threads = 1)
  o <- gp_oracle(d$x, d$y, d$xnew, "rbf", 1.2, lam)
  st <- summary(fit)$model
  r2 <- 1 - sum((d$y - o$fitted)^2) / sum((d$y - mean(d$y))^2)
  # (the GP entries of test-gp-likelihood.R follow these)
  expect_identical(names(st)[1:3], c("R-squared (training)",
                                     "Signal variance (s^2, ML)",
                                     "Noise variance (lambda s^2)"))
  expect_equal(unname(st[[1]]), r2, tolerance = 1e-10)
  expect_equal(unname(st[[2]]), unname(o$s2), tolerance = 1e-10)
  expect_equal(unname(st[[3]]), lam * unname(o$s2), tolerance = 1e-10)
  # above option askotch.exact_max_n the residuals come from lambda w
  old <- options(askotch.exact_max_n = 10)
  expect_equal(unname(summary(fit)$model[[1]]), r2, tolerance = 1e-8)
  options(old)
  out <- capture.output(print(summary(fit)))
  expect_true("Model:" %in% out)
  expect_true(any(grepl("^R-squared \\(training\\) +: 0\\.", out)))
  cls <- krr(Species ~ ., data = iris, lambda = 1, solver = cholesky(),
             threads = 1)
  sm <- summary(cls)$model
  expect_identical(names(sm)[1], "Accuracy (training)")
  expect_equal(sm[[1]], mean(predict(cls, iris) == iris$Species))
})

