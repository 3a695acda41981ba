# SAP / NSAP, PCG (each preconditioner) and Falkon against base-R oracles.
# Same well-conditioned problem and tolerances as test-solvers.R
# (cond(K + lambda I) ~ 21: double predictions 1e-8 relative after tol 1e-11,
# single 1e-4).

local({
  d <- make_regression(300, p = 3, seed = 21)
  lambda <- 0.05 * 300
  bw <- 1.5
  specs <- list(sap = function() sap(accelerated = FALSE, block_size = 100),
                nsap = function() sap(block_size = 100),
                pcg_nystrom = function() pcg("nystrom", rank = 50),
                pcg_rpchol = function() pcg("rpcholesky", rank = 50),
                pcg_greedy = function() pcg("greedy_cholesky", rank = 50),
                pcg_none = function() pcg("none"))
  for (k in c("rbf", "laplace")) {
    ref <- oracle_krr(d$x, d$y, d$x, k, bw, lambda)
    for (s in names(specs)) {
      for (prec in c("double", "single")) {
        test_that(sprintf("%s / %s / %s matches solve(K + lambda I, y)", k, s,
                          prec), {
          fit <- krr(d$x, d$y, kernel = k, bandwidth = bw, lambda = lambda,
                     solver = specs[[s]](), precision = prec,
                     tol = if (prec == "double") 1e-11 else 1e-6,
                     max_passes = 300, seed = 42, threads = 1)
          expect_lt(rel_err(predict(fit, d$x), ref$pred),
                    if (prec == "double") 1e-8 else 1e-4)
          if (prec == "double") expect_true(fit$converged)
        })
      }
    }
  }
})

test_that("Falkon matches its base-R oracle on the sampled centres", {
  d <- make_regression(400, p = 3, seed = 22)
  lambda <- 4
  bw <- 1.5
  fit <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
             solver = falkon(centers = 80), tol = 1e-12, max_passes = 500,
             seed = 1, threads = 1)
  cen <- fit$centers
  expect_length(cen, 80)
  expect_true(all(cen >= 1 & cen <= 400) && !anyDuplicated(cen))
  expect_identical(dim(fit$weights), c(80L, 1L))
  pred <- oracle_inducing(d$x, d$y, d$x, "rbf", bw, lambda, cen)$pred
  expect_lt(rel_err(predict(fit, d$x), pred), 1e-6)
  expect_lt(rel_err(fitted(fit), pred), 1e-6)
  # between the CG's residual replacements (every 50 steps by default) the
  # weights are updated from its steps: the exact residual check of the
  # fit's end passes on them, before any replacement
  expect_lt(fit$iterations, 50)
  fit8 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda, solver = falkon(centers = 80),
              tol = 1e-8, max_passes = 500, seed = 1, threads = 1)
  expect_true(fit8$converged)
  expect_lt(fit8$iterations, 50)
  expect_lt(rel_err(predict(fit8, d$x), pred), 1e-6)
  # two outputs (each column's weights updated from its own CG steps; the
  # residual replacements in between are checked in driver/test_solvers.c)
  Y <- cbind(d$y, sin(d$x[, 1]) + d$x[, 2])
  fit_m <- krr(d$x, Y, bandwidth = bw, lambda = lambda, solver = falkon(centers = 80),
               tol = 1e-12, max_passes = 500, seed = 1, threads = 1)
  expect_true(fit_m$converged)
  expect_identical(fit_m$centers, cen)
  for (j in 1:2) {
    pj <- oracle_inducing(d$x, Y[, j], d$x, "rbf", bw, lambda, cen)$pred
    expect_lt(rel_err(predict(fit_m, d$x)[, j], pj), 1e-6)
  }
  # user-given centres are used as given
  fit2 <- krr(d$x, d$y, bandwidth = bw, lambda = lambda,
              solver = falkon(centers = c(5, 1:3, 400)), max_passes = 50,
              threads = 1)
  expect_identical(sort(fit2$centers), c(1L, 2L, 3L, 5L, 400L))
  expect_error(krr(d$x, d$y, solver = falkon(centers = 401)),
               class = "askotch_error_input")
  expect_error(falkon(centers = c(1, 1)), class = "askotch_error_input")
  expect_error(falkon(centers = -2), class = "askotch_error_input")
  expect_error(pcg("ichol"), class = "askotch_error_input")
  expect_error(krr(d$x, d$y, solver = pcg(rank = 500)),
               class = "askotch_error_input")
  expect_output(print(falkon()), "Falkon")
  expect_output(print(pcg()), "PCG")
  expect_output(print(sap()), "NSAP")
})

test_that("pcg('greedy_cholesky') picks its rank: stops by the trace, within the cap and the memory", {
  d <- make_regression(600, p = 3, seed = 23)
  bw <- 1.5
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", bw, 0.5)
  fit <- krr(d$x, d$y, bandwidth = bw, lambda = 0.5, solver = pcg("greedy_cholesky"),
             tol = 1e-11, max_passes = 100, seed = 1, threads = 1)
  expect_lt(rel_err(predict(fit, d$x), ref$pred), 1e-8)
  r <- fit$solver$rank_effective
  # cap: ceiling(sqrt(3 n (2 p + 44) / 3.4)) = 163 at n = 600, p = 3
  cap <- as.integer(ceiling(sqrt(3 * 600 * (2 * 3 + 44) / 3.4)))
  expect_true(r >= 1 && r <= cap)
  expect_identical(fit$solver$rank_cap, cap)
  expect_null(fit$solver$rank) # stays automatic for later fits
  # more right-hand sides make an iteration dearer: 20 outputs, a larger cap
  Y20 <- sapply(1:20, function(j) d$y + 0.1 * j * d$x[, 1])
  f20 <- krr(d$x, Y20, bandwidth = bw, lambda = 0.5, solver = pcg("greedy_cholesky"),
             max_passes = 100, seed = 1, threads = 1)
  expect_identical(f20$solver$rank_cap,
                   as.integer(ceiling(sqrt(3 * 600 * (2 * 3 + 44 + 2.5 * 19) / 3.4))))
  expect_output(print(fit$solver), sprintf("greedy_cholesky preconditioner, rank %d\\)", r))
  # it stops where the trace of the residual K - F F^T first falls below
  # lambda: the greedy pivoted Cholesky of LAPACK (dpstrf, one pivot at a
  # time) reaches that at r_star; the blocked pivots may differ a little
  ch <- suppressWarnings(chol(ref$K, pivot = TRUE))
  tr_res <- sum(diag(ref$K)) - cumsum(rowSums(ch^2))
  r_star <- which(tr_res <= 0.5)[1]
  expect_false(is.na(r_star))
  expect_lt(r_star, cap)
  expect_lte(abs(r - r_star), 0.1 * r_star + 5)
  # a larger lambda stops it earlier
  fit2 <- krr(d$x, d$y, bandwidth = bw, lambda = 50, solver = pcg("greedy_cholesky"),
              max_passes = 100, seed = 1, threads = 1)
  expect_lt(fit2$solver$rank_effective, r)
  # refit() without the kept state chooses the rank again for its lambda
  fit2b <- refit(fit, lambda = 50)
  expect_identical(fit2b$solver$rank_effective, fit2$solver$rank_effective)
  expect_null(fit2b$solver$rank)
  # a memory limit caps the automatic rank instead of refusing the fit
  fit3 <- krr(d$x, d$y, bandwidth = bw, lambda = 0.5, solver = pcg("greedy_cholesky"),
              mem_limit = 2 * (8 * 600 * 40 + 2e6), tol = 1e-11, max_passes = 100,
              seed = 1, threads = 1)
  expect_lt(fit3$solver$rank_cap, cap)
  expect_lt(rel_err(predict(fit3, d$x), ref$pred), 1e-6)
})
