# Stopping rules, trace, validation metric, time limit.

test_that("the trace records passes, time, residuals", {
  d <- make_regression(600, seed = 51)
  fit <- krr(d$x, d$y, lambda = 6, tol = 1e-9, max_passes = 100, seed = 1,
             solver = askotch(), threads = 1)
  tr <- fit$trace
  expect_s3_class(tr, "data.frame")
  expect_named(tr, c("iteration", "passes", "seconds", "resid_est",
                     "block_resid", "resid_exact", "validation"))
  expect_true(all(diff(tr$iteration) > 0))
  expect_true(all(diff(tr$passes) > 0))
  expect_true(all(diff(tr$seconds) >= 0))
  expect_identical(fit$iterations, tail(tr$iteration, 1))
  expect_equal(fit$passes, tail(tr$passes, 1))
  expect_true(all(is.na(tr$validation)))
  expect_false(is.na(fit$resid_exact))
  expect_identical(fit$resid_exact, tail(tr$resid_exact, 1))
  expect_true(fit$converged)
  expect_identical(fit$reason, "tol")
  expect_lte(fit$resid_exact, 1e-9)
})

test_that("max_passes stops the solver", {
  d <- make_regression(1000, seed = 52)
  expect_warning(
    fit <- krr(d$x, d$y, lambda = 1e-6 * 1000, max_passes = 2, seed = 1,
               solver = askotch(), threads = 1),
    class = "askotch_warning_convergence")
  expect_identical(fit$reason, "max_passes")
  expect_false(fit$converged)
  expect_gte(fit$passes, 2)
  expect_lt(fit$passes, 2 + 256 / 1000 + 1e-9)
  expect_false(is.na(fit$resid_exact))
})

test_that("the convergence warning's advice fits the loss", {
  d <- make_regression(300, seed = 53)
  # the squared loss: a direct solve is the remedy for small n
  w <- tryCatch(krr(d$x, d$y, lambda = 1e-4, max_passes = 1, seed = 1, solver = askotch(),
                    threads = 1), askotch_warning_convergence = function(w) w)
  expect_match(conditionMessage(w), "cholesky", fixed = TRUE)
  # other losses have no direct solver: the warning does not offer one
  # (Joker: dcd(), the default here, converges within these passes)
  cls <- factor(d$y > median(d$y))
  w <- tryCatch(kernel_machine(d$x, cls, loss = loss_logistic(), lambda = 1e-3,
                               max_passes = 1, seed = 1, threads = 1, solver = joker()),
                askotch_warning_convergence = function(w) w)
  expect_s3_class(w, "askotch_warning_convergence")
  expect_false(grepl("cholesky", conditionMessage(w), fixed = TRUE))
  expect_match(conditionMessage(w), "larger `lambda`", fixed = TRUE)
  # a fit whose final exact check did not run (time_limit) reports the
  # running estimate as such, with the trace's last exact value
  fit <- suppressWarnings(kernel_machine(d$x, cls, loss = loss_logistic(), lambda = 1e-3,
                                         max_passes = 3, seed = 1, threads = 1,
                                         solver = joker()))
  last <- max(which(!is.na(fit$trace$resid_exact)))
  fit$resid_exact <- NA_real_
  fit$resid_est <- 0.25
  w <- tryCatch(askotch:::warn_not_converged(fit),
                askotch_warning_convergence = function(w) w)
  expect_match(conditionMessage(w), sprintf(
    "gap 0.25 (running estimate; %s at the last exact check, pass %s)",
    format(signif(fit$trace$resid_exact[last], 3)),
    format(signif(fit$trace$passes[last], 3))), fixed = TRUE)
})

test_that("time_limit stops the solver at the first check after the limit", {
  # No assertion on how long anything takes (the machine may be busy): the
  # stop reason, and that the trace ends at the first slice past the limit
  # (less the time kept for the final exact check). On a busy machine the
  # final exact check may not fit in the limit: resid_exact is then NA, never
  # a wrong number.
  d <- make_regression(1500, p = 5, seed = 53)
  fit <- krr(d$x, d$y, lambda = 1e-6 * 1500, tol = 0, max_passes = Inf,
             solver = askotch(), time_limit = 1, seed = 1, threads = 2)
  tr <- fit$trace
  expect_identical(fit$reason, "time_limit")
  expect_false(fit$converged)
  expect_true(is.na(fit$resid_exact) || fit$resid_exact > 0)
  expect_gte(nrow(tr), 1L)
  if (nrow(tr) >= 2L) {
    last <- nrow(tr)
    expect_lt(tr$seconds[last - 1L], 1 + 1e-9 + tr$seconds[last] - tr$seconds[last - 1L])
  }
  expect_identical(fit$iterations, tail(tr$iteration, 1))
  expect_true(all(diff(tr$iteration) > 0))
  expect_lt(fit$passes, Inf)
})

test_that("validation metric is traced: RMSE for regression", {
  d <- make_regression(400, seed = 54)
  v <- make_regression(100, seed = 55)
  fit <- krr(d$x, d$y, lambda = 1, validation = list(x = v$x, y = v$y),
             solver = askotch(), max_passes = 10, tol = 0, seed = 1,
             threads = 1)
  expect_identical(fit$validation_metric, "rmse")
  vm <- fit$trace$validation
  expect_false(is.na(tail(vm, 1)))
  expect_equal(tail(vm, 1), sqrt(mean((predict(fit, v$x) - v$y)^2)),
               tolerance = 1e-10)
  # at most once per pass (and at the end)
  ok <- !is.na(vm)
  expect_lte(sum(ok), ceiling(fit$passes) + 1)
})

test_that("validation metric is traced: accuracy for classification", {
  set.seed(56)
  x <- matrix(rnorm(600), 300, 2)
  y <- factor(ifelse(x[, 1] > x[, 2], "a", "b"))
  fit <- krr(x[1:200, ], y[1:200], lambda = 0.2,
             validation = list(x = x[201:300, ], y = y[201:300]),
             solver = askotch(), max_passes = 20, seed = 1, threads = 1)
  expect_identical(fit$validation_metric, "accuracy")
  acc <- tail(fit$trace$validation, 1)
  expect_equal(acc, mean(predict(fit, x[201:300, ]) == y[201:300]))
  expect_gt(acc, 0.8)
})

test_that("a solver of one pass per iteration is validated at every iteration", {
  # PCG counts one pass per iteration after a fractional setup (the greedy
  # factor's rank / n): the passes between two iterations are 1 up to
  # rounding, and each iteration is a pass, so each gets a validation value
  d <- make_regression(600, seed = 56)
  v <- make_regression(100, seed = 58)
  fit <- krr(d$x, d$y, lambda = 1e-3, validation = list(x = v$x, y = v$y),
             solver = pcg("greedy_cholesky", rank = 37), max_passes = 8, tol = 0,
             seed = 1, threads = 1)
  tr <- fit$trace
  expect_gte(nrow(tr), 5L)
  expect_true(all(diff(tr$passes) > 1 - 1e-9))
  expect_false(anyNA(tr$validation))
})

test_that("cholesky stops with reason 'exact'", {
  d <- make_regression(100, seed = 57)
  fit <- krr(d$x, d$y, lambda = 1, solver = "cholesky", threads = 1)
  expect_identical(fit$reason, "exact")
  expect_true(fit$converged)
  expect_lt(fit$resid_exact, 1e-12)
})

test_that("threads can be read and set", {
  n0 <- askotch_threads()
  expect_true(is.numeric(n0) && n0 >= 1)
  old <- askotch_threads(1)
  expect_identical(askotch_threads(), 1L)
  askotch_threads(old)
  expect_identical(askotch_threads(), as.integer(n0))
  expect_error(askotch_threads(0), class = "askotch_error_input")
})

test_that("the progress bar's total is the passes expected to the tolerance", {
  total <- getFromNamespace("progress_total", "askotch")
  rule <- list(tol = 1e-6, max_passes = 100)
  pb <- new.env()
  expect_identical(total(pb, rule, 2, 1e-2), 100)  # no rate yet
  pb$p1 <- 1
  pb$r1 <- 1e-1
  # the log residual fell by log(100) in 2 passes: log(1000) more takes 3
  expect_equal(total(pb, rule, 3, 1e-3), 6)
  expect_identical(total(pb, list(tol = 1e-6, max_passes = 5), 3, 1e-3), 5)
  expect_identical(total(pb, list(tol = 1e-6, max_passes = Inf), 3, 1e-3), 6)
  expect_identical(total(pb, list(tol = 0, max_passes = Inf), 3, 1e-3), NA_real_)
  expect_identical(total(pb, rule, 3, 0.5), 100)  # not falling: no estimate
  # past the estimate: still above the current count (cli would end the bar)
  expect_equal(total(pb, rule, 7, 1e-7), 7.1)
})

test_that("progress = TRUE drives a cli progress bar, and its errors surface", {
  d <- make_regression(300, seed = 58)
  # cli's logger handler prints every event of the bar (created, updated,
  # terminated) instead of drawing it
  withr_opts <- options(cli.progress_handlers_only = "logger",
                        cli.progress_show_after = 0)
  on.exit(options(withr_opts), add = TRUE)
  out <- capture.output(fit <- krr(d$x, d$y, lambda = 1, progress = TRUE,
                                   max_passes = 5, tol = 0, seed = 1,
                                   solver = askotch(), threads = 1))
  expect_s3_class(fit, "krr")
  expect_true(any(grepl("created", out)))
  expect_true(any(grepl("updated|added", out)))
  expect_true(any(grepl("terminated", out)))
  expect_true(any(grepl("5/5", out)))
  # an error in the progress bar is not swallowed
  suppressMessages(trace("cli_progress_update", tracer = quote(stop("bar broke")),
                         where = asNamespace("cli"), print = FALSE))
  on.exit(suppressMessages(untrace("cli_progress_update", where = asNamespace("cli"))),
          add = TRUE)
  capture.output(expect_error(krr(d$x, d$y, lambda = 1, progress = TRUE,
                                  max_passes = 2, tol = 0, seed = 1,
                                  solver = askotch(), threads = 1),
                              "bar broke"))
  out2 <- capture.output(fit2 <- krr(d$x, d$y, lambda = 1, progress = FALSE,
                                     max_passes = 2, tol = 0, seed = 1,
                                     solver = askotch(), threads = 1))
  expect_identical(out2, character(0))
})

test_that("diverging iterations are an error naming the remedy, not a fit", {
  set.seed(1)
  x <- matrix(stats::rnorm(300 * 5), 300)
  y <- sin(rowSums(x[, 1:3])) + 0.1 * stats::rnorm(300)
  # EigenPro's step from a 99-point subsample with 49 corrected directions is
  # far too large for the 300 points (residual 1e54 after 30 passes, once):
  # the automatic step is now halved on divergence; a step the user gives is
  # kept, and its divergence is the error
  for (prec in c("double", "single")) {
    expect_error(
      krr(x, y, lambda = 0.01, precision = prec, threads = 1, seed = 1,
          solver = eigenpro(subsample = 99, rank = 49, step = 1e6), max_passes = 30,
          tol = 0),
      "diverged|larger `subsample`", class = "askotch_error_numeric")
    f <- krr(x, y, lambda = 0.01, precision = prec, threads = 1, seed = 1,
             solver = eigenpro(subsample = 99, rank = 49), max_passes = 30, tol = 0)
    expect_gte(f$solver$step_halvings, 1L)
    expect_lt(f$resid_exact, 1)
  }
})

test_that("eigenpro(version = 3) corrects at most subsample / 12 directions", {
  set.seed(1)
  x <- matrix(stats::rnorm(1000 * 5), 1000)
  y <- sin(rowSums(x[, 1:3])) + 0.1 * stats::rnorm(1000)
  run <- function(rank) {
    suppressWarnings(krr(x, y, lambda = 0.01, bandwidth = "median", threads = 1, seed = 1,
                         solver = eigenpro(version = 3, rank = rank),
                         max_passes = 20, tol = 0))
  }
  fit <- run(NULL)
  s <- fit$solver$subsample
  expect_identical(fit$solver$rank, as.integer(min(100, max(1, s %/% 12))))
  # the old default, min(100, s - 1) = 100 here, stays far from the solution
  # (0.91 against 0.073 on this problem)
  expect_lt(fit$resid_exact, 0.25 * run(100)$resid_exact)
})

test_that("a fit stopped by max_passes whose final exact residual meets tol has converged", {
  # n = 100, lambda = 0.1: two passes of ASkotch (one block of 100) solve it
  # to rounding, but its running estimate is checked only at slice ends
  set.seed(1)
  x <- matrix(rnorm(200), 100)
  y <- sin(x[, 1]) + rnorm(100) / 10
  expect_no_warning(f <- krr(x, y, lambda = 0.1, seed = 1, threads = 1, solver = askotch(),
                             max_passes = 2))
  expect_identical(f$reason, "tol")
  expect_true(f$converged)
  expect_lte(f$resid_exact, f$tol)
  # one that does not meet it still says so
  expect_warning(g <- krr(x, y, lambda = 1e-4, seed = 1, threads = 1,
                          solver = askotch(block_size = 10, rank = 5), max_passes = 1, tol = 1e-10),
                 class = "askotch_warning_convergence")
  expect_identical(g$reason, "max_passes")
  expect_gt(g$resid_exact, 1e-10)
})
