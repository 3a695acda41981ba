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
