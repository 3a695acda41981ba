# svrg(): sketched preconditioned SVRG (Gonen et al. 2016) and plain SVRG on
# explicit features. Oracles: base R solve() of the normal equations on the
# same standardised features.

# the package's standardised x and centred y (as krr() builds them)
svrg_data <- function(x, y) {
  xs <- scale(x)
  dimnames(xs) <- NULL
  attr(xs, "scaled:center") <- attr(xs, "scaled:scale") <- NULL
  list(xs = xs, yc = y - mean(y))
}

test_that("svrg (sketched and plain) reaches the exact linear ridge solution", {
  set.seed(11)
  n <- 400; d <- 8
  x <- matrix(rnorm(n * d), n) %*% diag(seq(1, 3, length.out = d))
  y <- drop(x %*% rnorm(d)) + rnorm(n, sd = 0.5)
  lam <- 10
  D <- svrg_data(x, y)
  w <- solve(crossprod(D$xs) + lam * diag(d), crossprod(D$xs, D$yc))
  for (pc in c(TRUE, FALSE)) for (smp in c("smoothness", "uniform")) {
    fit <- krr(x, y, lambda = lam, seed = 1, threads = 1, tol = 1e-12,
               solver = svrg(features = "linear", rank = 3,
                             precondition = pc, sampling = smp))
    expect_true(fit$converged)
    expect_identical(fit$reason, "tol")
    # well-conditioned problem: 1e-8 relative in the weights
    expect_lt(max(abs(fit$weights - w)) / max(abs(w)), 1e-8)
    expect_equal(unname(drop(predict(fit, x))),
                 drop(D$xs %*% w) + mean(y), tolerance = 1e-8)
    expect_equal(unname(coef(fit)), drop(fit$weights))
    expect_length(coef(fit), d)
  }
  expect_s3_class(fit$solver, "askotch_solver_svrg")
  expect_identical(fit$solver$epoch_length, 2 * (n + d))
  expect_equal(fit$solver$step, 0.1)
  expect_output(print(fit), "SVRG \\(linear features, d = 8\\)")
})

test_that("svrg on random features reaches the exact ridge solution in those features", {
  set.seed(12)
  n <- 300; M <- 60
  x <- matrix(runif(2 * n), ncol = 2)
  y <- cbind(sin(4 * x[, 1]) + x[, 2]^2, cos(3 * x[, 2])) + rnorm(2 * n, sd = 0.1)
  lam <- 0.5
  fit <- krr(x, y, kernel = "laplace", lambda = lam, seed = 3, threads = 1,
             tol = 1e-12, solver = svrg(p = M, rank = 10, step = 0.3))
  expect_true(fit$converged)
  xs <- askotch:::apply_scaling(x, fit$center, fit$scale)
  # the features of the same seed, from the package's random-feature map
  Z <- .Call(askotch:::ffi_features_apply, xs, diag(M),
             as.integer(fit$kernel$code), as.numeric(fit$kernel$bandwidth),
             M, as.numeric(fit$seed), 1L, 0L, 1L)
  Yc <- sweep(y, 2L, colMeans(y))
  w <- solve(crossprod(Z) + lam * diag(M), crossprod(Z, Yc))
  expect_equal(dim(fit$weights), c(M, 2L))
  expect_lt(max(abs(fit$weights - w)) / max(abs(w)), 1e-8)
  p <- predict(fit, x[1:20, ])
  expect_equal(unname(p), unname(sweep(Z[1:20, ] %*% w, 2L, colMeans(y), "+")),
               tolerance = 1e-8)
})

test_that("the sketched preconditioner needs fewer epochs on a fast-decaying spectrum", {
  set.seed(2)
  n <- 2000; d <- 50
  Q <- qr.Q(qr(matrix(rnorm(d * d), d)))
  x <- matrix(rnorm(n * d), n) %*% diag(1 / (1:d)^1.5) %*% t(Q)
  y <- drop(x %*% rnorm(d)) + rnorm(n, sd = 0.1)
  lam <- n * 1e-4  # the paper's averaged lambda_G = 1e-4
  D <- svrg_data(x, y)
  w <- solve(crossprod(D$xs) + lam * diag(d), crossprod(D$xs, D$yc))
  fstar <- (sum((D$xs %*% w - D$yc)^2) + lam * sum(w^2)) / (2 * n)
  epochs_to <- function(pc) {
    fit <- suppressWarnings(krr(x, y, lambda = lam, seed = 1, threads = 1,
                                tol = 1e-14, solver = svrg(features = "linear",
                                rank = 10, precondition = pc, epochs = 30,
                                step = 0.3)))
    # the trace's objective is the paper's averaged objective
    expect_equal(fit$trace$objective[1], sum(D$yc^2) / (2 * n))
    sub <- (fit$trace$objective - fstar) / fstar
    hit <- which(sub < 1e-6)
    if (length(hit) == 0L) Inf else fit$trace$epoch[hit[1L]]
  }
  e_sk <- epochs_to(TRUE)
  e_plain <- epochs_to(FALSE)
  expect_lt(e_sk, 30)
  # plain SVRG needs more than 30 epochs here (measured: more than 1.5x)
  expect_gt(e_plain, 1.5 * e_sk)
})

test_that("svrg fits are reproducible by seed and differ across seeds", {
  set.seed(4)
  x <- matrix(rnorm(600), ncol = 3)
  y <- x[, 1] - x[, 2] + rnorm(200)
  f <- function(seed) krr(x, y, lambda = 1, seed = seed, threads = 1,
                          solver = svrg(features = "linear", rank = 2,
                                        epochs = 2), tol = 1e-14)
  a <- suppressWarnings(f(5)); b <- suppressWarnings(f(5))
  c2 <- suppressWarnings(f(6))
  expect_identical(a$weights, b$weights)
  expect_identical(a$trace$objective, b$trace$objective)
  expect_false(identical(a$weights, c2$weights))
  expect_warning(f(5), class = "askotch_warning_convergence")
})

test_that("bad svrg options give classed errors naming the argument", {
  expect_error(svrg(rank = 0), "`rank`", class = "askotch_error_input")
  expect_error(svrg(rank = 2.5), "`rank`", class = "askotch_error_input")
  expect_error(svrg(epochs = -1), "`epochs`", class = "askotch_error_input")
  expect_error(svrg(epoch_length = "a"), "`epoch_length`",
               class = "askotch_error_input")
  expect_error(svrg(step = 0), "`step`", class = "askotch_error_input")
  expect_error(svrg(step = Inf), "`step`", class = "askotch_error_input")
  expect_error(svrg(precondition = NA), "`precondition`",
               class = "askotch_error_input")
  expect_error(svrg(features = "orthogonal"), "`features`",
               class = "askotch_error_input")
  expect_error(svrg(features = "linear", p = 10), "`p`",
               class = "askotch_error_input")
  expect_error(svrg(sampling = "leverage"), "`sampling`",
               class = "askotch_error_input")
  expect_error(svrg(p = 0), "`p`", class = "askotch_error_input")
  x <- matrix(rnorm(40), 20)
  expect_error(kernel_machine(x, rnorm(20), loss = "huber", solver = svrg()),
               "`solver`", class = "askotch_error_input")
  # what svrg() fits do not do is refused, naming the argument
  y20 <- rnorm(20)
  sv <- svrg(features = "linear")
  expect_error(krr(x, y20, solver = sv), "`lambda`", class = "askotch_error_input")
  expect_error(krr(x, y20, lambda = 1, bandwidth = "ml", solver = svrg()),
               "`bandwidth", class = "askotch_error_input")
  expect_error(krr(x, y20, lambda = 1, solver = sv, precision = "single"),
               "`precision", class = "askotch_error_input")
  expect_error(krr(x, y20, lambda = 1, solver = sv,
                   validation = list(x = x, y = y20)),
               "`validation`", class = "askotch_error_input")
  expect_error(krr(x, y20, lambda = 1, solver = sv, weights = runif(20)),
               "`weights`", class = "askotch_error_input")
  f <- krr(x, y20, lambda = 1, solver = sv, seed = 1, threads = 1)
  expect_error(refit(f, lambda = 2), "svrg", class = "askotch_error_input")
  # solver = "svrg" is the default spec
  fit <- krr(x, rnorm(20), lambda = 1, solver = "svrg", seed = 1, threads = 1)
  expect_identical(fit$solver$features, "random")
  expect_identical(fit$solver$d, 20)
})

test_that("the block Lanczos sketch finds the top eigenvalues of C = Z'Z / n", {
  set.seed(7)
  n <- 500; d <- 40
  Q <- qr.Q(qr(matrix(rnorm(d * d), d)))
  x <- matrix(rnorm(n * d), n) %*% diag(1 / (1:d)) %*% t(Q)
  y <- rnorm(n)
  D <- svrg_data(x, y)
  ev <- eigen(crossprod(D$xs) / n, symmetric = TRUE, only.values = TRUE)$values
  sk <- function(q) suppressWarnings(krr(x, y, lambda = 1, seed = 2, threads = 1,
    solver = svrg(features = "linear", rank = 5, epochs = 1,
                  lanczos_iters = q)))$solver
  # a Krylov space of all d dimensions: the exact eigenvalues
  full <- sk(10)
  expect_equal(full$sigma2, ev[1:5], tolerance = 1e-10)
  # the default q = ceil(log(d) / sqrt(1/2)) = 6 blocks of 5 (30 < d columns)
  s <- sk(NULL)
  expect_identical(s$lanczos_iters, 6L)
  # Ritz values are below the eigenvalues, and here within 1% of them
  expect_true(all(s$sigma2 <= ev[1:5] * (1 + 1e-12)))
  expect_lt(max(abs(s$sigma2 - ev[1:5]) / ev[1:5]), 0.01)
})

test_that("svrg on Nystrom features reaches the inducing-point solution on its centres", {
  set.seed(21)
  n <- 300
  x <- matrix(runif(2 * n), ncol = 2)
  y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1)
  lam <- 2
  fit <- krr(x, y, lambda = lam, bandwidth = 0.5, seed = 3, threads = 1,
             tol = 1e-12, solver = svrg(features = "nystrom", p = 40, rank = 10,
                                        step = 0.3, epochs = 400))
  expect_true(fit$converged)
  expect_equal(length(fit$centers), 40L)
  expect_equal(dim(fit$weights), c(40L, 1L))
  or <- oracle_inducing(x, y, x[1:30, ], "rbf", 0.5, lam, fit$centers)
  expect_lt(rel_err(fit$weights, or$a), 1e-6)
  expect_lt(rel_err(predict(fit, x[1:30, ]), or$pred), 1e-8)
  expect_match(format(fit$solver), "nystrom features")
  expect_error(svrg(features = "nystrom", p = 0), class = "askotch_error_input")
})
