# plot(): the diagnostic panels, and the exact leave-one-out predictive
# distributions behind the QQ and PIT panels.

gp_loo <- getFromNamespace("gp_loo", "askotch")

test_that("the leave-one-out predictive distributions are the refits' (solve())", {
  d <- make_regression(60, p = 2, seed = 31)
  for (w in list(NULL, seq(0.5, 2, length.out = 60))) {
    fit <- krr(d$x, d$y, kernel = "matern32", bandwidth = 1.2, lambda = 0.05,
               weights = w, solver = cholesky(), threads = 1)
    loo <- gp_loo(fit)
    sc <- oracle_scale(d$x)
    xs <- scale(d$x, sc$center, sc$scale)
    K <- oracle_kernel(xs, xs, "matern32", 1.2)
    wt <- if (is.null(w)) rep(1, 60) else w
    yc <- d$y - fit$y_center
    A <- K + diag(0.05 / wt)
    s2 <- drop(crossprod(yc, solve(A, yc))) / 60
    # each point predicted from the other 59, the mean held at its estimate:
    # the GP's conditional mean and variance of y_i (noise included)
    mu <- sd <- numeric(60)
    for (i in 1:60) {
      v <- solve(A[-i, -i], A[-i, i])
      mu[i] <- fit$y_center + sum(v * yc[-i])
      sd[i] <- sqrt(s2 * (A[i, i] - sum(A[-i, i] * v)))
    }
    expect_lt(rel_err(loo$mean, mu), 1e-9)
    expect_lt(rel_err(loo$sd, sd), 1e-9)
    expect_lt(rel_err(loo$z, (d$y - mu) / sd), 1e-8)
  }
})

test_that("plot() draws the panels that apply to each kind of fit", {
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  d <- make_regression(80, p = 2, seed = 32)
  gp <- krr(d$x, d$y, lambda = 0.1, solver = cholesky(), threads = 1)
  expect_invisible(plot(gp))
  expect_identical(getFromNamespace("plot_which", "askotch")(gp, NULL, NULL),
                   c("residuals", "qq", "fit", "pit"))
  it <- krr(d$x, d$y, lambda = 0.1, solver = askotch(block_size = 20), threads = 1,
            seed = 1, validation = list(x = d$x[1:10, ], y = d$y[1:10]))
  expect_identical(getFromNamespace("plot_which", "askotch")(it, NULL, NULL),
                   c("trace", "residuals", "qq", "fit", "pit"))
  expect_invisible(plot(it, which = c("trace", "fit"), input = 2))
  # by number, in the order of the documentation (residuals and QQ first, as plot.lm())
  expect_identical(getFromNamespace("plot_which", "askotch")(it, c(5, 1, 2, 1), NULL),
                   c("trace", "residuals", "qq"))
  expect_invisible(plot(gp, which = 1:2))
  fo <- krr(mpg ~ wt + hp, data = mtcars, lambda = 0.5, threads = 1)
  expect_invisible(plot(fo, which = "fit", input = "hp", level = 0.8))
  mo <- krr(d$x, cbind(a = d$y, b = -d$y), lambda = 0.1, threads = 1)
  expect_invisible(plot(mo, output = "b"))
  cl <- krr(d$x, factor(d$y > 0), lambda = 0.1, threads = 1)
  expect_identical(getFromNamespace("plot_which", "askotch")(cl, NULL, NULL), "residuals")
  expect_invisible(plot(cl))
  # random features: no leave-one-out panels, the fit without a band
  rf <- suppressWarnings(krr(d$x, d$y, lambda = 0.1, solver = svrg(), threads = 1, seed = 1))
  expect_false(any(c("qq", "pit") %in%
                     getFromNamespace("plot_which", "askotch")(rf, NULL, NULL)))
})

test_that("plot() refuses what it cannot draw with a classed error", {
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  d <- make_regression(50, p = 2, seed = 33)
  gp <- krr(d$x, d$y, lambda = 0.1, threads = 1)
  bad <- list(list(which = 6), list(which = 1.5), list(which = c(1, NA)),
              list(which = "foo"), list(which = character()),
              list(input = 3), list(input = "z"), list(output = 2),
              list(level = 1), list(level = NA))
  for (a in bad) {
    expect_error(do.call(plot, c(list(gp), a)), class = "askotch_error_input")
  }
  cl <- krr(d$x, factor(d$y > 0), lambda = 0.1, threads = 1)
  expect_error(plot(cl, which = "qq"), "leave-one-out", class = "askotch_error_input")
  expect_error(plot(cl, which = "fit"), class = "askotch_error_input")
  old <- options(askotch.plot_loo_points = 5, askotch.gp_exact_max_n = 10)
  on.exit(options(old), add = TRUE)
  expect_error(plot(gp, which = "pit"), "askotch.plot_loo_points",
               class = "askotch_error_input")
})

test_that("above the exact range the LOO distributions are a subsample's, by solves", {
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  d <- make_regression(120, p = 2, seed = 35)
  d$x <- cbind(d$x, seq(0, 1, length.out = 120))
  colnames(d$x) <- c("a", "b", "t")
  fits <- list(
    krr(d$x, d$y, kernel = "matern32", bandwidth = 1.2, lambda = 0.05,
        weights = seq(0.5, 2, length.out = 120), solver = pcg(), tol = 1e-12, threads = 1,
        seed = 3),
    krr(d$x, d$y, kernel = "rbf", bandwidth = 1, lambda = 0.1, solver = cholesky(),
        threads = 1, seed = 4),
    krr(y ~ ., data = data.frame(d$x, y = d$y), mean = ~ t, bandwidth = 1, lambda = 0.1,
        threads = 1, seed = 5))
  for (fit in fits) {
    exact <- gp_loo(fit)
    old <- options(askotch.gp_exact_max_n = 50, askotch.plot_loo_points = 30)
    s <- gp_loo(fit)
    expect_length(s$rows, 30L)
    expect_identical(s$rows, sort(unique(s$rows)))
    expect_lt(rel_err(s$mean, exact$mean[s$rows]), 1e-7)
    expect_lt(rel_err(s$sd, exact$sd[s$rows]), 1e-7)
    expect_lt(rel_err(s$z, exact$z[s$rows]), 1e-6)
    # drawn when asked for, not by default (a solve with 30 right-hand sides)
    expect_false(any(c("qq", "pit") %in%
                       getFromNamespace("plot_which", "askotch")(fit, NULL, NULL)))
    expect_invisible(plot(fit, which = c("qq", "pit")))
    options(old)
  }
})

test_that("a kernel machine plots its convergence only", {
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  d <- make_regression(60, p = 2, seed = 34)
  km <- kernel_machine(d$x, factor(d$y > 0), loss = loss_hinge(), threads = 1,
                       max_passes = 5)
  expect_invisible(suppressWarnings(plot(km)))
  expect_error(plot(km, which = 2), "trace", class = "askotch_error_input")
  expect_error(plot(km, which = "qq"), "trace", class = "askotch_error_input")
})
