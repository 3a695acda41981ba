# Choosing lambda and the bandwidth: the choices against brute-force
# criteria written here with solve(); solver = "auto" and the data-driven
# defaults; the classed convergence warning.

# closed-form criteria of KRR at one lambda (y centred)
oracle_criteria <- function(K, yc, lambda) {
  n <- length(yc)
  A <- K + lambda * diag(n)
  H <- K %*% solve(A)
  r <- drop(yc - H %*% yc)
  edf <- sum(diag(H))
  a <- solve(A, yc)
  list(gcv = mean(r^2) / (1 - edf / n)^2,
       loo = mean((r / (1 - diag(H)))^2),
       loglik = -n / 2 * log(2 * pi * sum(yc * a) / n) - n / 2 -
         as.numeric(determinant(A)$modulus) / 2)
}

test_that("lambda = 'gcv', 'loo' and 'ml' minimise the brute-force criteria", {
  d <- make_regression(150, p = 2, seed = 8)
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  yc <- d$y - mean(d$y)
  grid <- 10^seq(-5, 1, by = 0.05)
  for (rule in c("gcv", "loo", "ml")) {
    fit <- krr(d$x, d$y, bandwidth = 1, lambda = rule, threads = 1)
    expect_s3_class(fit$solver, "askotch_solver_cholesky")
    K <- oracle_kernel(xs, xs, "rbf", 1)
    crit <- function(l) {
      cr <- oracle_criteria(K, yc, l)
      if (rule == "ml") -cr$loglik else cr[[rule]]
    }
    brute <- vapply(grid, crit, 0)
    best <- crit(fit$lambda)
    # the continuous optimum is at least as good as the best grid point
    expect_lte(best, min(brute) + 1e-8 * abs(min(brute)))
    # and it lies next to the grid's best point
    expect_lt(abs(log10(fit$lambda) - log10(grid[which.min(brute)])), 0.1)
    expect_identical(fit$tuning$lambda_rule, rule)
    expect_true(any(fit$tuning$path$selected))
    # the recorded path is the closed form
    p1 <- fit$tuning$path[1, ]
    cr1 <- oracle_criteria(K, yc, p1$lambda)
    expect_lt(abs(p1$gcv - cr1$gcv) / cr1$gcv, 1e-8)
    expect_lt(abs(p1$loo - cr1$loo) / cr1$loo, 1e-8)
    expect_lt(abs(p1$loglik - cr1$loglik) / abs(cr1$loglik), 1e-8)
  }
})

test_that("a lambda path is scored by K-fold CV, exactly and with warm starts", {
  d <- make_regression(120, p = 2, seed = 9)
  path <- c(1, 0.1, 0.01, 0.001)
  fit <- krr(d$x, d$y, bandwidth = 1.5, lambda = path, seed = 3, threads = 1)
  tab <- fit$tuning$path
  expect_equal(tab$lambda, sort(path, decreasing = TRUE))
  # brute force: the same folds (drawn from the fit's seed), solve() per fold
  folds <- getFromNamespace("with_seed", "askotch")(
    3 + 11, sample(rep_len(1:5, 120)))
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  yc <- d$y - mean(d$y)
  # the mean squared CV error at each lambda of `lams`, given the held-out
  # predictions of a fit on the centred fold targets: predict_fold(l, tr, yt)
  cv_oracle <- function(lams, predict_fold) vapply(lams, function(l) {
    sse <- 0
    for (f in 1:5) {
      tr <- folds != f
      mu <- mean(yc[tr])
      sse <- sse + sum((predict_fold(l, tr, yc[tr] - mu) + mu - yc[!tr])^2)
    }
    sse / 120
  }, 0)
  cv <- cv_oracle(tab$lambda, function(l, tr, yt) {
    K <- oracle_kernel(xs[tr, ], xs[tr, ], "rbf", 1.5)
    oracle_kernel(xs[!tr, ], xs[tr, ], "rbf", 1.5) %*% solve(K + l * diag(sum(tr)), yt)
  })
  expect_lt(rel_err(tab$cv, cv), 1e-8)
  expect_equal(fit$lambda, tab$lambda[which.min(cv)])
  expect_equal(tab$selected, tab$lambda == fit$lambda)
  # the same path with the iterative solver along warm starts (folds above
  # the exact size)
  withr_opt <- options(askotch.tune_exact_max_n = 50)
  on.exit(options(withr_opt), add = TRUE)
  fit2 <- krr(d$x, d$y, bandwidth = 1.5, lambda = path, seed = 3,
              solver = pcg(rank = 50), tol = 1e-10, threads = 1)
  expect_lt(rel_err(fit2$tuning$path$cv, cv), 1e-6)
  expect_equal(fit2$lambda, fit$lambda)
  # an inducing-point solver along warm starts predicts from its centres:
  # each fold's CV error against a separate fit on the fold with the same
  # seed (the same centres), predicted at the held-out rows
  fit3 <- krr(d$x, d$y, bandwidth = 1.5, lambda = path, seed = 3,
              solver = falkon(centers = 40), tol = 1e-10, threads = 1)
  cv3 <- cv_oracle(fit3$tuning$path$lambda, function(l, tr, yt) {
    ff <- suppressWarnings(krr(xs[tr, ], yt, bandwidth = 1.5, lambda = l,
                               solver = falkon(centers = 40), seed = 3, tol = 1e-12,
                               standardize = FALSE, threads = 1))
    predict(ff, xs[!tr, ])
  })
  expect_lt(rel_err(fit3$tuning$path$cv, cv3), 1e-6)
})

test_that("bandwidth = 'ml' and 'ard' maximise the likelihood; predict applies the length scales", {
  d <- make_regression(100, p = 3, seed = 12)
  fit <- krr(d$x, d$y, bandwidth = "ml", lambda = "ml", threads = 1)
  ll <- as.numeric(logLik(fit))
  g <- krr_loglik(d$x, d$y, bandwidth = fit$kernel$bandwidth,
                  lambda = fit$lambda, threads = 1)
  expect_equal(g$loglik, ll, tolerance = 1e-10)
  expect_lt(max(abs(g$gradient)), 1e-2)  # a stationary point
  for (f in c(0.8, 1.25)) {
    expect_gt(ll, krr_loglik(d$x, d$y, bandwidth = fit$kernel$bandwidth * f,
                             lambda = fit$lambda, threads = 1)$loglik)
    expect_gt(ll, krr_loglik(d$x, d$y, bandwidth = fit$kernel$bandwidth,
                             lambda = fit$lambda * f, threads = 1)$loglik)
  }
  expect_equal(attr(logLik(fit), "df"), 4)
  # ARD nests the isotropic model: at least its likelihood
  ard <- krr(d$x, d$y, bandwidth = "ard", threads = 1)
  expect_length(ard$length_scales, 3L)
  expect_equal(ard$kernel$bandwidth, 1)
  expect_gte(as.numeric(logLik(ard)), ll - 1e-6 * abs(ll))
  expect_equal(attr(logLik(ard), "df"), 2 + 1 + 3)
  # the irrelevant third column gets a longer length scale than the first
  expect_gt(ard$length_scales[3], ard$length_scales[1])
  # predictions: KRR on x / ell (after standardisation), bandwidth 1
  sc <- oracle_scale(d$x)
  xnew <- matrix(runif(15, -1, 1), 5)
  ell <- ard$length_scales
  xl <- sweep(scale(d$x, sc$center, sc$scale), 2, ell, "/")
  xnl <- sweep(scale(xnew, sc$center, sc$scale), 2, ell, "/")
  w <- solve(oracle_kernel(xl, xl, "rbf", 1) + ard$lambda * diag(100),
             d$y - mean(d$y))
  ref <- oracle_kernel(xnl, xl, "rbf", 1) %*% w + mean(d$y)
  expect_lt(rel_err(predict(ard, xnew), ref), 1e-8)
  # the summary reports the length scales and the rule
  expect_true("Length scales" %in% names(summary(ard)$model))
  expect_output(print(summary(ard)), "maximum likelihood")
})

test_that("solver = 'auto' is Cholesky for small n, PCG (greedy) in the middle, ASkotch above", {
  d <- make_regression(100, p = 2, seed = 1)
  fit <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", threads = 1)
  expect_s3_class(fit$solver, "askotch_solver_cholesky")
  expect_identical(fit$reason, "exact")
  old <- options(askotch.auto_exact_max_n = 50)
  on.exit(options(old), add = TRUE)
  fit2 <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", seed = 1, threads = 1)
  expect_s3_class(fit2$solver, "askotch_solver_pcg")
  expect_identical(fit2$solver$preconditioner, "greedy_cholesky")
  expect_true(fit2$converged)
  # (the automatic tolerance: within 0.001 sd of the exact fit)
  expect_lt(rel_err(predict(fit2, d$x), predict(fit, d$x)), 1e-5)
  # above askotch.auto_pcg_max_n: ASkotch
  old2 <- options(askotch.auto_pcg_max_n = 80)
  on.exit(options(old2), add = TRUE)
  fit3 <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", seed = 1, threads = 1)
  expect_s3_class(fit3$solver, "askotch_solver_askotch")
  options(old)
  options(old2)
  # a memory limit below the n x n factor also leaves the exact solve
  fit4 <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", mem_limit = 8 * 100^2 - 1, seed = 1,
              threads = 1)
  expect_s3_class(fit4$solver, "askotch_solver_pcg")
  expect_lt(rel_err(predict(fit3, d$x), predict(fit, d$x)), 1e-5)
  expect_lt(rel_err(predict(fit4, d$x), predict(fit, d$x)), 1e-5)
})

test_that("solver = 'auto' above auto_pcg_max_n: PCG while its memory allows the least rank, else ASkotch", {
  d <- make_regression(100, p = 2, seed = 1)
  exact <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", threads = 1)
  old <- options(askotch.auto_exact_max_n = 50, askotch.auto_pcg_max_n = 80,
                 askotch.auto_pcg_large = c(max_n = 1000, min_rank = 40))
  on.exit(options(old), add = TRUE)
  # the automatic rank's cap: 98 (all n = 100 rows but the cost cap), 77
  # within half of 1e6 bytes (the compiled solver's own estimate): PCG
  for (ml in list(NULL, 1e6)) {
    f <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", seed = 1, threads = 1, mem_limit = ml)
    expect_s3_class(f$solver, "askotch_solver_pcg")
    expect_gte(f$solver$rank_cap, 40)
    expect_null(attr(f$solver, "auto_min_rank"))
    expect_lt(rel_err(predict(f, d$x), predict(exact, d$x)), 1e-5)
  }
  # 4e5 bytes afford a rank below 40: ASkotch, which converges to the same fit
  f <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median", seed = 1, threads = 1, mem_limit = 4e5)
  expect_s3_class(f$solver, "askotch_solver_askotch")
  expect_match(format(f$solver), "^ASkotch")
  expect_lt(pcg_rank_cap <- krr(d$x, d$y, lambda = 0.1, bandwidth = "median",
                                seed = 1, threads = 1, mem_limit = 4e5,
                                solver = pcg("greedy_cholesky"))$solver$rank_cap, 40)
  expect_true(f$converged)
  expect_lt(rel_err(predict(f, d$x), predict(exact, d$x)), 1e-5)
  # a larger least rank, or n above max_n: ASkotch at any memory
  options(askotch.auto_pcg_large = c(max_n = 1000, min_rank = 99))
  expect_s3_class(krr(d$x, d$y, lambda = 0.1, bandwidth = "median",
                      seed = 1, threads = 1, max_passes = 2)$solver,
                  "askotch_solver_askotch")
  options(askotch.auto_pcg_large = c(max_n = 99, min_rank = 1))
  expect_s3_class(krr(d$x, d$y, lambda = 0.1, bandwidth = "median",
                      seed = 1, threads = 1, max_passes = 2)$solver,
                  "askotch_solver_askotch")
})

test_that("solver = 'auto' keeps PCG up to 1e6 points on a GPU, 5e5 on the CPU", {
  auto <- getFromNamespace("auto_solver", "askotch")
  for (n in c(3e5, 5e5, 6e5, 1e6, 1.5e6)) {
    cpu <- auto(n, device = "cpu")
    gpu <- auto(n, device = "cuda")
    expect_s3_class(cpu, if (n <= 5e5) "askotch_solver_pcg" else "askotch_solver_askotch")
    expect_s3_class(gpu, if (n <= 1e6) "askotch_solver_pcg" else "askotch_solver_askotch")
    if (n > 2e5 && n <= 1e6) expect_equal(attr(gpu, "auto_min_rank"), 1000)
  }
  # an option without max_n_cuda: the same range on both
  old <- options(askotch.auto_pcg_large = c(max_n = 4e5, min_rank = 10))
  on.exit(options(old), add = TRUE)
  expect_s3_class(auto(5e5, device = "cuda"), "askotch_solver_askotch")
  expect_equal(attr(auto(4e5, device = "cuda"), "auto_min_rank"), 10)
})

test_that("the default lambda is the ML one; on a subsample for large n; 'paper' is 1e-6 n", {
  d <- make_regression(300, p = 2, seed = 4)
  # the Gaussian kernel at its median bandwidth: lambda is the only estimate
  fit <- krr(d$x, d$y, bandwidth = "median", threads = 1)
  ml <- krr(d$x, d$y, bandwidth = "median", lambda = "ml", seed = fit$seed, threads = 1)
  expect_equal(fit$lambda, ml$lambda)
  expect_identical(fit$tuning$lambda_rule, "ml")
  expect_equal(attr(logLik(fit), "df"), 3)  # mean, s^2, lambda
  expect_output(print(fit), "lambda = .*maximum likelihood")
  # a lambda given to refit() is not estimated any more
  fit_r <- refit(fit, lambda = 0.5)
  expect_equal(attr(logLik(fit_r), "df"), 2)
  expect_identical(fit_r$tuning$lambda_rule, "fixed")
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", fit$kernel$bandwidth)
  yc <- d$y - mean(d$y)
  nll <- function(l) -oracle_criteria(K, yc, l)$loglik
  expect_lte(nll(fit$lambda), min(nll(fit$lambda * 1.01),
                                  nll(fit$lambda / 1.01)))
  # lambda is a noise-to-signal ratio: rescaling y does not change it
  fit_s <- krr(d$x, 1000 * d$y, bandwidth = "median", seed = fit$seed, threads = 1)
  expect_equal(fit_s$lambda, fit$lambda, tolerance = 1e-6)
  # above the exact size: ML on a subsample of `askotch.tune_subsample` points
  old <- options(askotch.tune_exact_max_n = 100, askotch.tune_subsample = 100)
  on.exit(options(old), add = TRUE)
  fit_sub <- krr(d$x, d$y, bandwidth = "median", seed = 2, threads = 1)
  expect_equal(fit_sub$tuning$n_used, 100)
  expect_equal(fit_sub$tuning$n_total, 300)
  expect_lt(abs(log10(fit_sub$lambda / fit$lambda)), 1)
  expect_output(print(summary(fit_sub)), "subsample of 100 points")
  options(old)
  fit_p <- krr(d$x, d$y, bandwidth = "median", lambda = "paper", threads = 1)
  expect_equal(fit_p$lambda, 1e-6 * 300)
  expect_null(fit_p$tuning)
})

test_that("classification: the default lambda is the ML one of the +1/-1 targets", {
  fit <- krr(Species ~ ., data = iris, threads = 1)
  expect_identical(fit$tuning$lambda_rule, "ml")
  expect_gt(mean(predict(fit, iris) == iris$Species), 0.95)
  # kernel_machine's other losses keep lambda = 1
  km <- kernel_machine(Species ~ ., data = iris[51:150, ], loss = "hinge",
                       threads = 1, seed = 1)
  expect_equal(km$lambda, 1)
})

test_that("a fit that stops early warns with a classed warning", {
  d <- make_regression(400, p = 3, seed = 2)
  expect_warning(krr(d$x, d$y, lambda = 1e-4, solver = askotch(block_size = 50),
                     max_passes = 1, seed = 1, threads = 1),
                 class = "askotch_warning_convergence")
  # tol = 0 asks for a fixed budget: no warning
  expect_no_warning(krr(d$x, d$y, lambda = 1e-4,
                        solver = askotch(block_size = 50), tol = 0,
                        max_passes = 1, seed = 1, threads = 1))
  fit <- suppressWarnings(krr(d$x, d$y, lambda = 0.1, solver = "askotch",
                              max_passes = 1, seed = 1, keep_state = TRUE,
                              threads = 1))
  expect_warning(refit(fit, lambda = 1e-4, max_passes = 1),
                 class = "askotch_warning_convergence")
})

test_that("bad lambda and bandwidth rules are classed errors naming the argument", {
  d <- make_regression(40, p = 2, seed = 1)
  expect_error(krr(d$x, d$y, lambda = "best"), "lambda",
               class = "askotch_error_input")
  expect_error(krr(d$x, d$y, lambda = c(1, -1)), "lambda",
               class = "askotch_error_input")
  expect_error(krr(d$x, d$y, lambda = c(1, NA)), "lambda",
               class = "askotch_error_input")
  expect_error(krr(d$x, d$y, bandwidth = "mle"), "bandwidth",
               class = "askotch_error_input")
  cls <- factor(d$y > 0)
  expect_error(kernel_machine(d$x, cls, loss = "hinge", lambda = "ml"),
               "lambda", class = "askotch_error_input")
  expect_error(kernel_machine(d$x, cls, loss = "hinge", bandwidth = "ml"),
               "bandwidth", class = "askotch_error_input")
})

test_that("defaults are close to the tuned fit on mtcars (sanity; see inst/bench)", {
  set.seed(1)
  folds <- sample(rep_len(1:4, nrow(mtcars)))
  rmse <- function(...) {
    e <- unlist(lapply(1:4, function(f) {
      fit <- krr(mpg ~ ., data = mtcars[folds != f, ], threads = 1, ...)
      predict(fit, mtcars[folds == f, ]) - mtcars$mpg[folds == f]
    }))
    sqrt(mean(e^2))
  }
  def <- rmse()
  grid <- expand.grid(lambda = 10^seq(-3, 1, by = 0.5), bandwidth = c(2, 3, 4, 6))
  tuned <- min(mapply(function(l, b) rmse(lambda = l, bandwidth = b),
                      grid$lambda, grid$bandwidth))
  expect_lt(def, 1.15 * tuned)
  # the papers' setting interpolates this noisy response
  expect_lt(def, rmse(lambda = "paper", bandwidth = "median"))
})

test_that("askotch.ml_method = 'stochastic' refines the subsample's ML choice on all points", {
  skip_on_cran()
  d <- make_regression(600, p = 2, seed = 14)
  ll <- function(f) krr_loglik(d$x, d$y, bandwidth = f$kernel$bandwidth,
                               lambda = f$lambda, method = "exact",
                               gradient = FALSE, threads = 1)$loglik
  ex <- krr(d$x, d$y, bandwidth = "ml", seed = 1, threads = 1)  # exact, all points
  old <- options(askotch.tune_exact_max_n = 200, askotch.tune_subsample = 200)
  on.exit(options(old), add = TRUE)
  sub <- krr(d$x, d$y, bandwidth = "ml", seed = 1, threads = 1)
  expect_null(sub$tuning$stochastic)
  old <- c(old, options(askotch.ml_method = "stochastic"))  # restored on exit too
  st <- krr(d$x, d$y, bandwidth = "ml", seed = 1, threads = 1)
  expect_false(is.null(st$tuning$stochastic))
  expect_output(print(st), "stochastic, all 600 points")
  # the refined choice is (nearly) the exact maximiser: its exact likelihood
  # within 3 standard errors of the estimate plus the optimiser's stopping
  # tolerance (relative changes of about 2e-6)
  expect_lt(ll(ex) - ll(st), 3 * st$tuning$stochastic$se + 1e-5 * abs(ll(ex)))
  # much closer than the subsample's choice
  expect_lt(ll(ex) - ll(st), 0.1 * (ll(ex) - ll(sub)))
  expect_gte(ll(st), ll(sub) - 1e-6 * abs(ll(sub)))
})

test_that("cross-validation that runs out of time keeps the folds it finished", {
  # the second fold's setup runs out of its share of time_limit (a stand-in
  # for a slow setup, so that the test does not depend on the clock)
  real <- getFromNamespace("cv_fold", "askotch")
  abort <- getFromNamespace("abort_askotch", "askotch")
  calls <- 0L
  assignInNamespace("cv_fold", function(fd, kernel, lambdas, set) {
    calls <<- calls + 1L
    if (calls == 2L) abort("no time left", "time_limit")
    real(fd, kernel, lambdas, set)
  }, "askotch")
  on.exit(assignInNamespace("cv_fold", real, "askotch"), add = TRUE)
  d <- make_regression(120, p = 2, seed = 9)
  path <- c(1, 0.1, 0.01, 0.001)
  expect_warning(fit <- krr(d$x, d$y, bandwidth = 1.5, lambda = path, seed = 3,
                            threads = 1),
                 "1 of the 5 folds", class = "askotch_warning_time_limit")
  expect_identical(calls, 2L)
  # the criterion is the first fold's mean squared error alone (solve())
  folds <- getFromNamespace("with_seed", "askotch")(3 + 11, sample(rep_len(1:5, 120)))
  sc <- oracle_scale(d$x)
  xs <- scale(d$x, sc$center, sc$scale)
  yc <- d$y - mean(d$y)
  tr <- folds != 1
  mu <- mean(yc[tr])
  K <- oracle_kernel(xs[tr, ], xs[tr, ], "rbf", 1.5)
  Kv <- oracle_kernel(xs[!tr, ], xs[tr, ], "rbf", 1.5)
  tab <- fit$tuning$path
  cv <- vapply(tab$lambda, function(l) {
    mean((Kv %*% solve(K + l * diag(sum(tr)), yc[tr] - mu) + mu - yc[!tr])^2)
  }, 0)
  expect_lt(rel_err(tab$cv, cv), 1e-8)
  expect_equal(fit$lambda, tab$lambda[which.min(cv)])
  # out of time in the first fold: nothing to choose from, the classed error
  calls <- 1L
  expect_error(krr(d$x, d$y, bandwidth = 1.5, lambda = path, seed = 3, threads = 1),
               "no time left", class = "askotch_error_time_limit")
})

test_that("cross-validation shares the time limit: half of it over the folds", {
  share <- getFromNamespace("budget_share", "askotch")
  now <- getFromNamespace("now", "askotch")
  expect_identical(share(Inf, 3L), Inf)
  # an equal part of what is left (a busy machine moves the clock a little)
  s <- share(now() + 1e6, 5L)
  expect_true(s <= 2e5 && s > 2e5 - 100)
  # a deadline already passed leaves each part a hundredth of a second
  expect_identical(share(now() - 5, 2L), 0.01)
  # folds whose solver cannot even set up in their share: the fit's classed
  # time-limit error, as for a single fit
  d <- make_regression(3000, p = 3, seed = 4)
  expect_error(krr(d$x, d$y, lambda = "cv", solver = pcg(), time_limit = 1e-3,
                   threads = 1, seed = 1), "time_limit",
               class = "askotch_error_time_limit")
})
