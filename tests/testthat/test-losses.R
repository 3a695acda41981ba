# kernel_machine() against independent oracles (issue 12, item 5).
#
# Every oracle is written here from the loss's definition, not from the
# package: the dual of each loss as a quadratic programme for
# quadprog::solve.QP (hinge, squared hinge, epsilon-insensitive, Huber), a
# Newton solve of the primal in alpha for the logistic loss, and the LIBSVM
# (e1071) and kernlab SVMs.  The kernel matrix comes from helper-oracle.R
# (base R, not the package's C kernels).  The package's convention
# (src/core/loss/loss.h):
#   primal  P(theta) = 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, F_i)
#   dual    D(a) = 1/2 a' K a + (1/lambda) sum_i xi*_{y_i}(-lambda a_i)  (min, a in a box)
#   F(x) = K(x, X) a,  SVM's C = 1/lambda,  P + D >= 0 with equality at the optimum.
# With xi*: hinge -lambda a y (0 <= y a <= 1/lambda); squared hinge -lambda a y
# + lambda^2 a^2 / 2 (y a >= 0); SVR -lambda a y + eps lambda |a| (|a| <=
# 1/lambda); Huber -lambda a y + lambda^2 a^2 / 2 (|a| <= delta/lambda).
#
# Tolerances.  P is 1-strongly convex in theta, so a fit with absolute gap
# g = P - (-D) has ||theta - theta*||^2 <= 2 g and every decision value
# |F(x) - F*(x)| <= sqrt(2 g (k(x, x) + c)) = sqrt(2 g (1 + c)): this is the
# written bound on the predictions (g taken from the fit's own P and D); the
# objectives must agree to the relative gap plus the oracle's accuracy.
# The oracles are certified too: each oracle solution must have a relative
# gap below 1e-10 (the QP solution is polished, see qp_polish()).

loss_available <- function(loss) {
  info <- getFromNamespace("askotch_info", "askotch")()
  loss %in% info$losses && "joker" %in% names(info$solvers) &&
    loss %in% info$solvers$joker$losses
}
skip_if_no_loss <- function(loss) {
  if (!loss_available(loss)) skip(paste("the", loss, "loss or Joker is not compiled in"))
}
features_available <- function() {
  d <- make_regression(20, p = 2, seed = 1)
  ok <- tryCatch({
    kernel_machine(d$x, d$y, features = 10, lambda = 1, solver = cholesky(),
                   threads = 1, seed = 1)
    TRUE
  }, askotch_error_not_built = function(e) FALSE)
  ok
}
intercept_available <- function() {
  d <- make_regression(20, p = 2, seed = 1)
  tryCatch({
    kernel_machine(d$x, d$y, intercept = TRUE, lambda = 1, solver = cholesky(),
                   threads = 1, seed = 1)
    TRUE
  }, askotch_error_not_built = function(e) FALSE)
}

# Data: standardised once here, fitted with standardize = FALSE so that
# askotch, the oracles, kernlab and e1071 see the same points.
std <- function(x) {
  x <- scale(x)
  attributes(x)[c("scaled:center", "scaled:scale")] <- NULL
  x
}
loss_data <- function(n = 200, seed = 7) {
  set.seed(seed)
  x <- std(matrix(rnorm(n * 2), n, 2))
  xt <- matrix(rnorm(60 * 2), 60, 2)
  list(x = x, xt = xt,
       yc = ifelse(x[, 1]^2 + x[, 2] + 0.3 * rnorm(n) > 1, 1, -1),
       yr = sin(2 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.1))
}
BW <- 1       # askotch RBF bandwidth s: exp(-||x - x'||^2 / (2 s^2))
SIGMA <- 1 / (2 * BW^2)  # the same kernel in kernlab (rbfdot sigma) and e1071 (gamma)

# Losses and objectives written from their definitions
loss_fun <- list(
  hinge = function(y, F, p) pmax(0, 1 - y * F),
  squared_hinge = function(y, F, p) 0.5 * pmax(0, 1 - y * F)^2,
  svr = function(y, F, p) pmax(0, abs(y - F) - p),
  huber = function(y, F, p) {
    r <- abs(y - F)
    ifelse(r <= p, 0.5 * r^2, p * r - 0.5 * p^2)
  },
  logistic = function(y, F, p) log1p(exp(-y * F)),
  squared = function(y, F, p) 0.5 * (y - F)^2)
primal_value <- function(loss, a, K, y, lambda, p = NULL) {
  F <- K %*% a
  0.5 * sum(a * F) + sum(loss_fun[[loss]](y, F, p)) / lambda
}
# the dual D(a) of the package's convention (to be minimised; P + D >= 0)
dual_value <- function(loss, a, K, y, lambda, p = NULL) {
  q <- 0.5 * sum(a * (K %*% a))
  switch(loss,
         hinge = q - sum(a * y),
         squared_hinge = , huber = q - sum(a * y) + lambda / 2 * sum(a^2),
         svr = q - sum(a * y) + p * sum(abs(a)),
         stop("no dual for ", loss))
}
rel_gap <- function(P, D) (P + D) / max(abs(P), abs(D))

# The dual as a QP: min 1/2 a' H a - q' a, lo <= a <= hi (per coordinate;
# infinite bounds dropped).  SVR's eps |a| is split a = u - v (u, v >= 0).
# solve.QP needs H positive definite: K of the RBF kernel on 200 points is
# numerically singular, so a ridge tau = 1e-10 is added; the active set of
# the QP solution is then polished (the free coordinates re-solved exactly
# from the KKT equations with the ridge removed), and the polished solution
# is certified by its duality gap (< 1e-10 relative) in the tests.
qp_box <- function(H, q, lo, hi, tau = 1e-10) {
  n <- length(q)
  A <- NULL
  b <- NULL
  if (any(is.finite(lo))) {
    i <- which(is.finite(lo))
    A <- cbind(A, diag(n)[, i, drop = FALSE])
    b <- c(b, lo[i])
  }
  if (any(is.finite(hi))) {
    i <- which(is.finite(hi))
    A <- cbind(A, -diag(n)[, i, drop = FALSE])
    b <- c(b, -hi[i])
  }
  quadprog::solve.QP(H + tau * diag(n), q, A, b)$solution
}
# Re-solve the free coordinates: H_FF a_F = q_F - H_FB a_B (q may depend on
# the sign of a: SVR's q = y - eps sign(a)).
qp_polish <- function(a, H, qfun, lo, hi, tolb) {
  at_lo <- is.finite(lo) & a <= lo + tolb
  at_hi <- is.finite(hi) & a >= hi - tolb
  a[at_lo] <- lo[at_lo]
  a[at_hi] <- hi[at_hi]
  fr <- !(at_lo | at_hi)
  q <- qfun(a)
  if (any(fr)) {
    a[fr] <- solve(H[fr, fr, drop = FALSE],
                   q[fr] - H[fr, !fr, drop = FALSE] %*% a[!fr])
  }
  a
}

# Oracle duals for each loss; K includes the intercept's + c when there is one.
oracle_dual <- function(loss, K, y, lambda, p = NULL) {
  n <- length(y)
  C <- 1 / lambda
  tolb <- 1e-4 * C
  if (loss == "hinge") {
    # 0 <= y a <= C, i.e. a in [0, C] for y = 1 and [-C, 0] for y = -1
    lo <- ifelse(y > 0, 0, -C)
    hi <- ifelse(y > 0, C, 0)
    a <- qp_box(K, y, lo, hi)
    return(qp_polish(a, K, function(a) y, lo, hi, tolb))
  }
  if (loss == "squared_hinge") {
    H <- K + lambda * diag(n)
    lo <- ifelse(y > 0, 0, -Inf)
    hi <- ifelse(y > 0, Inf, 0)
    a <- qp_box(H, y, lo, hi)
    return(qp_polish(a, H, function(a) y, lo, hi, tolb))
  }
  if (loss == "huber") {
    H <- K + lambda * diag(n)
    lo <- rep(-p / lambda, n)
    a <- qp_box(H, y, lo, -lo)
    return(qp_polish(a, H, function(a) y, lo, -lo, 1e-4 * p / lambda))
  }
  if (loss == "svr") {
    # a = u - v, 0 <= u, v <= C: min 1/2 (u-v)' K (u-v) - y'(u-v) + p 1'(u+v)
    H2 <- rbind(cbind(K, -K), cbind(-K, K))
    uv <- qp_box(H2, c(y - p, -y - p), rep(0, 2 * n), rep(C, 2 * n))
    a <- uv[seq_len(n)] - uv[-seq_len(n)]
    # polish in a: zero, at +-C, or free with (K a)_i = y_i - p sign(a_i)
    zero <- abs(a) <= tolb
    a[zero] <- 0
    at <- abs(a) >= C - tolb
    a[at] <- C * sign(a[at])
    fr <- !(zero | at)
    q <- y - p * sign(a)
    a[fr] <- solve(K[fr, fr, drop = FALSE],
                   q[fr] - K[fr, !fr, drop = FALSE] %*% a[!fr])
    return(a)
  }
  stop("no QP oracle for ", loss)
}

# Logistic: Newton on the primal in a, P(a) = 1/2 a'Ka + (1/lambda) sum
# log(1 + exp(-y_i (Ka)_i)).  grad = K (a + g / lambda), g_i = -y_i
# sigma(-y_i F_i); Hessian = K (I + W K / lambda), W = diag(sigma(F)(1 -
# sigma(F))); the Newton step solves (I + W K / lambda) d = -(a + g /
# lambda) (K cancels), with a backtracking line search on P.
oracle_logistic <- function(K, y, lambda, iters = 100) {
  n <- length(y)
  a <- numeric(n)
  P <- function(a) primal_value("logistic", a, K, y, lambda)
  for (it in seq_len(iters)) {
    F <- drop(K %*% a)
    g <- -y * stats::plogis(-y * F)
    w <- stats::plogis(F) * (1 - stats::plogis(F))
    r <- a + g / lambda
    if (sqrt(sum(r^2)) <= 1e-13 * max(1, sqrt(sum(a^2)))) break
    d <- solve(diag(n) + w * K / lambda, -r)
    t <- 1
    while (P(a + t * d) > P(a) + 1e-12 * abs(P(a)) && t > 1e-8) t <- t / 2
    a <- a + t * d
  }
  a
}

# the logistic dual: a in y a in (0, 1/lambda); xi*(u) = entropy terms
dual_logistic <- function(a, K, y, lambda) {
  t <- pmin(pmax(lambda * a * y, 0), 1)  # in [0, 1]
  ent <- ifelse(t > 0, t * log(t), 0) + ifelse(t < 1, (1 - t) * log(1 - t), 0)
  0.5 * sum(a * (K %*% a)) + sum(ent) / lambda
}

fit_loss_km <- function(d, loss, y, lambda, tol = 1e-12, intercept = FALSE, ...) {
  kernel_machine(d$x, y, loss = loss, lambda = lambda, bandwidth = BW,
                 standardize = FALSE, tol = tol, max_passes = 500,
                 threads = 1, seed = 1, intercept = intercept, ...)
}

# predictions bound from the fit's own absolute gap (see the header)
pred_bound <- function(fit, c = 0) {
  g <- max(fit$primal - fit$dual, 0)
  sqrt(2 * g * (1 + c)) + 1e-9
}

check_against_oracle <- function(loss_obj, y, lambda, tol = 1e-12,
                                 d = loss_data(), solver = NULL) {
  nm <- loss_obj$name
  p <- loss_obj$param
  K <- oracle_kernel(d$x, d$x, "rbf", BW)
  Kt <- oracle_kernel(d$xt, d$x, "rbf", BW)
  # regression targets are centred by the fit (no intercept): the oracle
  # solves for the centred targets and adds the mean back
  mu <- if (loss_obj$type == "regression") mean(y) else 0
  ys <- y - mu
  a <- if (nm == "logistic") oracle_logistic(K, ys, lambda) else
    oracle_dual(nm, K, ys, lambda, p)
  P0 <- primal_value(nm, a, K, ys, lambda, p)
  D0 <- if (nm == "logistic") dual_logistic(a, K, ys, lambda) else
    dual_value(nm, a, K, ys, lambda, p)
  # the oracle is a certified optimum
  expect_lt(abs(rel_gap(P0, D0)), 1e-10)
  yy <- if (loss_obj$type == "classification") factor(y, levels = c(-1, 1)) else y
  fit <- fit_loss_km(d, loss_obj, yy, lambda, tol = tol, solver = solver)
  expect_true(fit$converged, info = nm)
  expect_lt(fit$gap, 1e-10)
  # the package's objective values, and the primal recomputed here
  expect_equal(fit$primal, P0, tolerance = 1e-8, info = nm)
  expect_equal(fit$dual, -D0, tolerance = 1e-8, info = nm)
  alpha <- coef(fit)
  expect_equal(primal_value(nm, alpha, K, ys, lambda, p), P0, tolerance = 1e-8)
  # decision values at the test points, within the bound from both gaps
  pred <- predict(fit, d$xt, type = "decision")
  ref <- drop(Kt %*% a) + mu
  # the gaps are known only to the rounding of the objective values: a few
  # ulps of |P0| stand for a gap that rounds to zero or below
  bound <- pred_bound(fit) + sqrt(2 * max(P0 + D0, 8 * .Machine$double.eps * abs(P0)))
  expect_lt(max(abs(pred - ref)), bound)
  expect_lt(rel_err(pred, ref), 1e-6)
  invisible(list(fit = fit, a = a))
}

test_that("squared loss is krr() exactly", {
  d <- make_regression(200, seed = 3)
  for (s in list(askotch(), cholesky(), pcg())) {
    f1 <- krr(d$x, d$y, lambda = 0.5, bandwidth = "median", solver = s, seed = 2,
              threads = 1)
    f2 <- kernel_machine(d$x, d$y, loss = loss_squared(), lambda = 0.5,
                         bandwidth = "median", solver = s, seed = 2, threads = 1)
    expect_s3_class(f2, "kernel_machine")
    expect_equal(unname(f2$weights), unname(f1$weights), tolerance = 1e-10)
    expect_equal(predict(f2, d$x[1:20, ]), predict(f1, d$x[1:20, ]),
                 tolerance = 1e-10)
    # P + D = 0 at the solution of (K + lambda I) a = y
    expect_lt(abs(f2$gap), 1e-8)
  }
  # a name and a constructor are accepted as the loss
  f3 <- kernel_machine(d$x, d$y, loss = "squared", lambda = 0.5,
                       solver = cholesky(), threads = 1, seed = 2)
  f4 <- kernel_machine(d$x, d$y, loss = loss_squared, lambda = 0.5,
                       solver = cholesky(), threads = 1, seed = 2)
  expect_equal(f3$weights, f4$weights)
  # with every default the same model is chosen (the kernel by likelihood)
  f5 <- krr(d$x, d$y, lambda = 0.5, solver = cholesky(), threads = 1, seed = 2)
  expect_identical(f3$kernel, f5$kernel)
  expect_equal(unname(f3$weights), unname(f5$weights), tolerance = 1e-10)
  # classification with the squared loss is krr()'s
  y <- factor(ifelse(d$x[, 1] > 0, "p", "n"))
  g1 <- krr(d$x, y, lambda = 1, solver = cholesky(), threads = 1, seed = 1)
  g2 <- kernel_machine(d$x, y, lambda = 1, solver = cholesky(), threads = 1,
                       seed = 1)
  expect_identical(predict(g1, d$x), predict(g2, d$x))
})

test_that("intercept = TRUE is the kernel K + 1 (squared loss, exact oracle)", {
  skip_if_not(intercept_available(), "the shift operator (intercept) is not compiled in")
  d <- loss_data()
  lambda <- 0.5
  K1 <- oracle_kernel(d$x, d$x, "rbf", BW) + 1
  a <- solve(K1 + lambda * diag(nrow(K1)), d$yr)  # not centred: the intercept takes the level
  ref <- drop((oracle_kernel(d$xt, d$x, "rbf", BW) + 1) %*% a)
  for (s in list(cholesky(), askotch())) {
    # (the iterative solver to a residual well below the 1e-8 compared: the
    # automatic tol guarantees 1e-3 sd(y) only)
    fit <- kernel_machine(d$x, d$yr, lambda = lambda, bandwidth = BW,
                          standardize = FALSE, intercept = TRUE, solver = s,
                          tol = if (inherits(s, "askotch_solver_cholesky")) NULL else 1e-11,
                          max_passes = 500, threads = 1, seed = 1)
    expect_equal(fit$intercept, 1)
    expect_equal(unname(fit$bias), sum(a), tolerance = 1e-8)
    expect_lt(rel_err(predict(fit, d$xt), ref), 1e-8)
    expect_lt(rel_err(coef(fit), a), 1e-8)
  }
  # intercept = c: the kernel K + c
  fit2 <- kernel_machine(d$x, d$yr, lambda = lambda, bandwidth = BW,
                         standardize = FALSE, intercept = 4, solver = cholesky(),
                         threads = 1)
  K4 <- K1 + 3
  a4 <- solve(K4 + lambda * diag(nrow(K4)), d$yr)
  expect_lt(rel_err(predict(fit2, d$xt),
                    (oracle_kernel(d$xt, d$x, "rbf", BW) + 4) %*% a4), 1e-8)
  expect_output(print(fit2), "penalised intercept \\(c = 4\\)")
})

test_that("the QP oracles are correct: they agree with kernlab's bound-constraint SVMs", {
  # a check of this file's oracles and of the C <-> lambda and kernel
  # mappings, independent of the package's solvers
  skip_if_not_installed("quadprog")
  skip_if_not_installed("kernlab")
  d <- loss_data()
  lambda <- 0.5
  K1 <- oracle_kernel(d$x, d$x, "rbf", BW) + 1  # c = 1: the bound-constraint bias
  Kt1 <- oracle_kernel(d$xt, d$x, "rbf", BW) + 1
  a <- oracle_dual("hinge", K1, d$yc, lambda)
  expect_lt(abs(rel_gap(primal_value("hinge", a, K1, d$yc, lambda),
                        dual_value("hinge", a, K1, d$yc, lambda))), 1e-10)
  m <- kernlab::ksvm(d$x, factor(d$yc), type = "C-bsvc", kernel = "rbfdot",
                     kpar = list(sigma = SIGMA), C = 1 / lambda,
                     scaled = FALSE, tol = 1e-7)
  dk <- drop(kernlab::predict(m, d$xt, type = "decision"))
  ref <- drop(Kt1 %*% a)
  # kernlab's sign follows its internal label coding: align it
  dk <- sign(sum(dk * ref)) * dk
  expect_lt(rel_err(dk, ref), 1e-5)
  eps <- 0.1
  a2 <- oracle_dual("svr", K1, d$yr, lambda, eps)
  expect_lt(abs(rel_gap(primal_value("svr", a2, K1, d$yr, lambda, eps),
                        dual_value("svr", a2, K1, d$yr, lambda, eps))), 1e-10)
  m2 <- kernlab::ksvm(d$x, d$yr, type = "eps-bsvr", kernel = "rbfdot",
                      kpar = list(sigma = SIGMA), C = 1 / lambda,
                      epsilon = eps, scaled = FALSE, tol = 1e-7)
  expect_lt(rel_err(kernlab::predict(m2, d$xt), Kt1 %*% a2), 1e-5)
})

test_that("hinge loss matches the QP dual", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("hinge")
  d <- loss_data()
  # the default (dcd(): n = 200) and Joker, C = 2, 10, 50
  for (sname in c("dcd", "joker")) for (lambda in c(0.5, 0.1, 0.02)) {
    r <- check_against_oracle(loss_hinge(), d$yc, lambda = lambda, solver = sname)
    # support vectors: alpha_i != 0; at the bound |alpha| = 1/lambda
    sv <- r$fit$support
    expect_equal(sv$any, sum(abs(r$a) > 1e-8 / lambda))
    expect_equal(unname(sv$at_bound), sum(abs(abs(r$a) - 1 / lambda) < 1e-8 / lambda))
  }
  expect_output(print(summary(r$fit)), "Support vectors")
})

test_that("decision values are summed over the support vectors alone, exactly", {
  skip_if_no_loss("hinge")
  d <- loss_data()
  fit <- fit_loss_km(d, loss_hinge(), factor(d$yc, levels = c(-1, 1)), 0.1, tol = 1e-10)
  W <- fit$weights
  nz <- askotch:::nonzero_rows(W)
  # the fit has non-support vectors, so the sum runs over fewer rows
  expect_true(length(nz) >= 1L && length(nz) < nrow(W))
  expect_true(all(W[-nz, ] == 0))
  Kt <- oracle_kernel(d$xt, d$x, "rbf", BW)
  ref <- drop(Kt %*% coef(fit))
  pred <- predict(fit, d$xt, type = "decision")
  expect_lt(max(abs(pred - ref)), 1e-12 * max(abs(ref)))
  # all rows, or a NaN weight, or nearly all rows nonzero: no subset
  expect_null(askotch:::nonzero_rows(matrix(1, 5, 2)))
  expect_identical(askotch:::nonzero_rows(matrix(c(0, NaN, 0, 0), 4, 1)), 2L)
  expect_identical(askotch:::nonzero_rows(matrix(0, 3, 1)), 1L)
})

test_that("solver = \"auto\": dcd() while the kernel matrix fits, else joker()", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("hinge")
  d <- loss_data()
  km <- function(..., tol = 1e-10) {
    kernel_machine(d$x, d$yc, loss = loss_hinge(), lambda = 0.1, bandwidth = BW,
                   standardize = FALSE, tol = tol, threads = 1, seed = 1, ...)
  }
  f <- km()
  expect_identical(f$solver$name, "dcd")
  expect_true(f$converged)
  # C = 500: coordinate descent alone crawls on the ill-conditioned face;
  # its Newton steps on the free variables end it at the QP's optimum
  r <- check_against_oracle(loss_hinge(), d$yc, lambda = 0.002, solver = "dcd")
  expect_lte(r$fit$passes, 100)
  # above askotch.auto_dual_max_n, or when K (320 kB here) exceeds mem_limit,
  # Joker; when R's estimate fits but the compiled budget refuses dcd()'s
  # whole need, fit_solver() falls back to Joker too
  old <- options(askotch.auto_dual_max_n = 100)
  g <- km()
  options(old)
  auto <- getFromNamespace("auto_solver", "askotch")
  expect_s3_class(auto(200, mem_limit = 3e5, loss = loss_hinge()), "askotch_solver_joker")
  k <- km(mem_limit = 5e5)
  for (z in list(g, k)) {
    expect_identical(z$solver$name, "joker")
    expect_equal(predict(z, d$xt, type = "decision"), predict(f, d$xt, type = "decision"),
                 tolerance = 1e-5)
  }
  expect_error(km(solver = dcd(), mem_limit = 5e5), "joker", class = "askotch_error_memory")
  # the cross-validation folds fall back the same way (4e5: R's estimate
  # takes dcd(), the compiled budget refuses it for the folds and the fit)
  cv <- kernel_machine(d$x, d$yc, loss = loss_hinge(), lambda = c(1, 0.1), bandwidth = BW,
                       standardize = FALSE, threads = 1, seed = 1, mem_limit = 4e5)
  expect_identical(cv$solver$name, "joker")
  expect_identical(nrow(cv$tuning$path), 2L)
  # single precision: the same fit to float accuracy
  s1 <- km(precision = "single", tol = 1e-5)
  expect_identical(s1$solver$name, "dcd")
  expect_equal(predict(s1, d$xt, type = "decision"), predict(f, d$xt, type = "decision"),
               tolerance = 1e-3)
  expect_error(dcd(steps = 0), "steps", class = "askotch_error_input")
})

test_that("dcd() at C = 1000 with duplicated points: certified optimal", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("hinge")
  # 40 points twice: the free variables' block of K is singular, the face
  # steps' Newton factor needs its damping and jitter; C = 1000 is where
  # coordinate descent alone crawls
  d <- loss_data()
  dup <- c(seq_len(nrow(d$x)), 1:40)
  d$x <- d$x[dup, ]
  d$yc <- d$yc[dup]
  K <- oracle_kernel(d$x, d$x, "rbf", BW)
  lambda <- 1e-3
  for (nm in c("hinge", "squared_hinge", "logistic")) {
    loss <- switch(nm, hinge = loss_hinge(), squared_hinge = loss_squared_hinge(),
                   logistic = loss_logistic())
    y <- factor(d$yc, levels = c(-1, 1))
    fit <- fit_loss_km(d, loss, y, lambda, tol = 1e-10, solver = dcd())
    expect_true(fit$converged, info = nm)
    expect_lte(fit$passes, 100)
    # the duality gap recomputed here from the weights, by the definitions
    a <- drop(coef(fit))
    P <- primal_value(nm, a, K, d$yc, lambda)
    D <- if (nm == "logistic") dual_logistic(a, K, d$yc, lambda) else
      dual_value(nm, a, K, d$yc, lambda)
    expect_lt(abs(rel_gap(P, D)), 1e-8, label = nm)
  }
  # the hinge's decision values against the QP's (its optimum is not unique
  # in the weights of duplicated points, but it is in the decision values)
  lo <- ifelse(d$yc > 0, 0, -1 / lambda)
  aq <- qp_box(K, d$yc, lo, lo + 1 / lambda)
  fit <- fit_loss_km(d, loss_hinge(), factor(d$yc, levels = c(-1, 1)), lambda, tol = 1e-10)
  Kt <- oracle_kernel(d$xt, d$x, "rbf", BW)
  expect_lt(rel_err(predict(fit, d$xt, type = "decision"), drop(Kt %*% aq)), 1e-4)
})

test_that("squared hinge loss matches the QP dual", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("squared_hinge")
  d <- loss_data()
  for (sname in c("dcd", "joker")) for (lambda in c(0.5, 0.02)) {
    r <- check_against_oracle(loss_squared_hinge(), d$yc, lambda = lambda, solver = sname)
    expect_equal(r$fit$support$any, sum(abs(r$a) > 1e-8))
  }
})

test_that("Huber loss matches the QP dual", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("huber")
  d <- loss_data()
  y <- d$yr
  y[1:10] <- y[1:10] + 4  # outliers: some residuals beyond delta
  for (sname in c("dcd", "joker")) for (lambda in c(0.5, 0.02)) {
    r <- check_against_oracle(loss_huber(delta = 0.3), y, lambda = lambda, solver = sname)
    expect_gt(unname(r$fit$support$at_bound), 0)
  }
})

test_that("epsilon-insensitive loss matches the QP dual", {
  skip_if_not_installed("quadprog")
  skip_if_no_loss("svr")
  for (sname in c("dcd", "joker")) for (seed in c(7, 1, 3)) {
    d <- loss_data(seed = seed)
    r <- check_against_oracle(loss_svr(epsilon = 0.1), d$yr, lambda = 0.5,
                              d = d, solver = sname)
    expect_lt(r$fit$support$any, 200)  # points inside the tube are not SVs
  }
  d <- loss_data(seed = 2)
  check_against_oracle(loss_svr(epsilon = 0), d$yr, lambda = 0.5, d = d)
  check_against_oracle(loss_svr(epsilon = 0), d$yr, lambda = 0.5, d = d, solver = joker())
})

test_that("logistic loss matches a Newton solve of the primal", {
  skip_if_no_loss("logistic")
  d <- loss_data()
  # tol 1e-9: Joker's running estimate (a projected block-gradient norm,
  # not a gap estimate) levels off near 2e-10 for this problem while the
  # exact gap is 1e-15, and the exact gap is only checked once the estimate
  # is below tol; the gap itself is still required below 1e-10
  r <- check_against_oracle(loss_logistic(), d$yc, lambda = 0.5, tol = 1e-9,
                            solver = joker())
  # the default at n = 200, dcd(), reaches the tolerance of the other losses
  r <- check_against_oracle(loss_logistic(), d$yc, lambda = 0.5)
  expect_identical(r$fit$solver$name, "dcd")
  fit <- r$fit
  expect_null(fit$support)
  # probabilities: 1 / (1 + exp(-F)) of the second level
  pr <- predict(fit, d$xt, type = "prob")
  expect_equal(pr, stats::plogis(predict(fit, d$xt, type = "decision")))
  expect_true(all(pr > 0 & pr < 1))
  # one-vs-rest: normalised over the classes
  y3 <- factor(cut(d$x[, 1] + d$x[, 2], 3, labels = c("a", "b", "c")))
  f3 <- fit_loss_km(d, loss_logistic(), y3, lambda = 0.5, tol = 1e-8)
  p3 <- predict(f3, d$xt, type = "prob")
  expect_equal(dim(p3), c(60L, 3L))
  expect_equal(unname(rowSums(p3)), rep(1, 60), tolerance = 1e-12)
  expect_identical(colnames(p3), c("a", "b", "c"))
  expect_identical(levels(predict(f3, d$xt)), c("a", "b", "c"))
  # the three columns are the three binary problems, solved jointly
  K <- oracle_kernel(d$x, d$x, "rbf", BW)
  Kt <- oracle_kernel(d$xt, d$x, "rbf", BW)
  for (k in 1:3) {
    yk <- ifelse(as.integer(y3) == k, 1, -1)
    ref <- drop(Kt %*% oracle_logistic(K, yk, 0.5))
    dec <- predict(f3, d$xt, type = "decision")[, k]
    expect_lt(max(abs(dec - ref)), sqrt(2 * max(f3$primal - f3$dual, 0)) + 1e-9)
  }
})

test_that("hinge SVM and SVR match kernlab's bound-constraint SVMs (intercept = TRUE)", {
  skip_if_not_installed("kernlab")
  skip_if_no_loss("hinge")
  skip_if_not(intercept_available(), "the shift operator (intercept) is not compiled in")
  d <- loss_data()
  lambda <- 0.5
  fit <- fit_loss_km(d, loss_hinge(), factor(d$yc), lambda, intercept = TRUE)
  m <- kernlab::ksvm(d$x, factor(d$yc), type = "C-bsvc", kernel = "rbfdot",
                     kpar = list(sigma = SIGMA), C = 1 / lambda,
                     scaled = FALSE, tol = 1e-7)
  dk <- drop(kernlab::predict(m, d$xt, type = "decision"))
  pred <- predict(fit, d$xt, type = "decision")
  dk <- sign(sum(dk * pred)) * dk
  # kernlab at tol = 1e-7 (tighter tolerances do not terminate) is within
  # 1e-6 of the certified QP oracle (test above); the fit at tol 1e-12 too
  expect_lt(rel_err(pred, dk), 1e-4)
  expect_equal(unname(fit$bias), sum(coef(fit)), tolerance = 1e-12)
  eps <- 0.1
  skip_if_no_loss("svr")
  fr <- fit_loss_km(d, loss_svr(eps), d$yr, lambda, intercept = TRUE)
  m2 <- kernlab::ksvm(d$x, d$yr, type = "eps-bsvr", kernel = "rbfdot",
                      kpar = list(sigma = SIGMA), C = 1 / lambda,
                      epsilon = eps, scaled = FALSE, tol = 1e-7)
  expect_lt(rel_err(predict(fr, d$xt), kernlab::predict(m2, d$xt)), 1e-4)
})

test_that("hinge SVM is close to LIBSVM (e1071), a slightly different problem", {
  # e1071::svm (LIBSVM) has an unpenalised bias b with the equality
  # constraint sum_i y_i a_i = 0; askotch's intercept is penalised (b^2/2
  # in the objective, kernlab's bound-constraint form). The solutions differ
  # by O(b^2)-sized terms, so only a loose agreement is asserted: at least
  # 95% of the test classes equal and decision values correlated > 0.99
  # (on this data the relative difference is about 1%).
  skip_if_not_installed("e1071")
  skip_if_no_loss("hinge")
  d <- loss_data()
  lambda <- 0.5
  ic <- intercept_available()
  fit <- fit_loss_km(d, loss_hinge(), factor(d$yc, levels = c(-1, 1)),
                     lambda, intercept = ic, tol = 1e-10)
  m <- e1071::svm(d$x, factor(d$yc, levels = c(-1, 1)), kernel = "radial",
                  gamma = SIGMA, cost = 1 / lambda, scale = FALSE,
                  tolerance = 1e-6)
  pr <- predict(m, d$xt, decision.values = TRUE)
  dv <- attr(pr, "decision.values")
  # the column "A/B" is positive for class A
  pos <- strsplit(colnames(dv), "/", fixed = TRUE)[[1L]][1L]
  dv <- if (pos == "1") dv[, 1L] else -dv[, 1L]
  ours <- predict(fit, d$xt, type = "decision")
  expect_gt(mean(as.character(predict(fit, d$xt)) == as.character(pr)), 0.95)
  expect_gt(stats::cor(ours, dv), 0.99)
  if (ic) expect_lt(rel_err(ours, dv), 0.05)
})

test_that("random features converge to the exact fit as M grows", {
  skip_if_not(features_available(), "random features are not compiled in")
  d <- make_regression(200, p = 2, seed = 11)
  xt <- make_regression(100, p = 2, seed = 12)$x
  lambda <- 0.5
  # the squared loss (Cholesky on Z Z^T) and Huber (Joker on the features
  # operator)
  for (cfg in list(list(loss = loss_squared(), solver = cholesky()),
                   list(loss = loss_huber(0.3), solver = joker()))) {
    if (cfg$loss$name != "squared" && !loss_available(cfg$loss$name)) next
    exact <- kernel_machine(d$x, d$y, loss = cfg$loss, lambda = lambda,
                            bandwidth = 1, solver = cfg$solver, tol = 1e-10,
                            threads = 1, seed = 1)
    pe <- predict(exact, xt)
    err <- sapply(c(64, 512, 4096), function(M) {
      f <- kernel_machine(d$x, d$y, loss = cfg$loss, lambda = lambda,
                          bandwidth = 1, features = M, solver = cfg$solver,
                          tol = 1e-10, threads = 1, seed = 3)
      expect_true(f$converged)
      expect_null(f$x)  # O(M) model: no training points kept
      expect_equal(dim(f$weights), c(M, 1L))
      rel_err(predict(f, xt), pe)
    })
    # Z Z^T - K has entries of standard deviation about 1/sqrt(M); the
    # prediction error of the regularised solve scales with it: the error
    # must fall with M, by at least a factor 4 over a 64-fold increase
    # (sqrt(64) = 8 expected; 6.5 measured), and be below 0.05 at M = 4096
    # (about 3 / sqrt(4096); 0.005 measured).
    expect_lt(err[2], err[1])
    expect_lt(err[3], err[2])
    expect_lt(err[3], err[1] / 4)
    expect_lt(err[3], 0.05)
  }
  expect_error(fitted(kernel_machine(d$x, d$y, lambda = lambda, features = 64,
                                     solver = cholesky(), threads = 1)),
               class = "askotch_error_input")
  # the O(M) model predicts after a saveRDS / readRDS round trip (no state,
  # no training points), with an intercept too
  f <- kernel_machine(d$x, d$y, lambda = lambda, features = 128, intercept = TRUE,
                      solver = cholesky(), threads = 1, seed = 5)
  tf <- tempfile(fileext = ".rds")
  saveRDS(f, tf)
  g <- readRDS(tf)
  expect_identical(predict(g, xt), predict(f, xt))
  expect_lt(object.size(g), 100 * 1024)
})

test_that("single-precision logistic on separable data stays finite", {
  skip_if_no_loss("logistic")
  set.seed(5)
  n <- 300
  x <- matrix(rnorm(n * 2), n, 2)
  y <- factor(ifelse(x[, 1] > 0, "r", "l"))
  x[, 1] <- x[, 1] + ifelse(y == "r", 1, -1)  # a margin of 2
  # the point is finiteness, not convergence (which may take more passes)
  fit <- suppressWarnings(
    kernel_machine(x, y, loss = loss_logistic(), lambda = 1e-4,
                   precision = "single", max_passes = 30, threads = 1,
                   seed = 1))
  expect_false(anyNA(fit$weights))
  expect_true(all(is.finite(fit$weights)))
  expect_true(all(is.finite(fit$trace$resid_est)))
  expect_true(all(is.finite(fit$primal), is.finite(fit$dual)))
  pr <- predict(fit, x, type = "prob")
  expect_true(all(is.finite(pr)))
  expect_identical(predict(fit, x), y)
})

test_that("lambda = \"cv\" and paths for the other losses: each fold's held-out error", {
  skip_if_no_loss("hinge")
  d <- loss_data(n = 120, seed = 3)
  lams <- c(0.01, 1, 0.1)
  fit_at <- function(x, y, l, loss = loss_hinge()) {
    kernel_machine(x, y, loss = loss, lambda = l, kernel = kernel_rbf(BW),
                   standardize = FALSE, tol = 1e-9, threads = 1, seed = 5)
  }
  f <- fit_at(d$x, d$yc, lams)
  tab <- f$tuning$path
  expect_equal(tab$lambda, sort(lams, decreasing = TRUE))
  # the same folds (drawn from the fit's seed + 11), each fold fitted from
  # zero at each lambda: the share of misclassified held-out points
  fold <- getFromNamespace("with_seed", "askotch")(5 + 11, sample(rep_len(1:5, 120)))
  held_out <- function(l, loss, err) {
    sum(vapply(1:5, function(k) {
      tr <- fold != k
      g <- fit_at(d$x[tr, ], if (identical(err, "class")) d$yc[tr] else d$yr[tr], l, loss)
      xv <- d$x[!tr, , drop = FALSE]
      if (identical(err, "class")) sum(as.character(predict(g, xv)) != as.character(d$yc[!tr]))
      else sum((predict(g, xv) - d$yr[!tr])^2)
    }, 0)) / 120
  }
  err <- vapply(tab$lambda, held_out, 0, loss = loss_hinge(), err = "class")
  # warm-started and cold fits agree to the tolerance: at most one point of
  # 120 may fall on the other side
  expect_true(all(abs(tab$cv - err) <= 1 / 120 + 1e-12))
  expect_equal(f$lambda, tab$lambda[which.min(tab$cv)])
  expect_identical(tab$selected, tab$lambda == f$lambda)
  # a regression loss: the held-out mean squared error
  skip_if_no_loss("huber")
  fh <- fit_at(d$x, d$yr, c(1, 0.01), loss_huber())
  mse <- vapply(fh$tuning$path$lambda, held_out, 0, loss = loss_huber(), err = "mse")
  # the folds stop at a relative duality gap of 1e-3 (cv_fold_gap_tol()),
  # the fits here at 1e-9: their errors agree to that order (a few times
  # 1e-3), and to the fits' own accuracy with the option at the fits' gap
  expect_equal(fh$tuning$path$cv, mse, tolerance = 5e-3)
  expect_false(isTRUE(all.equal(fh$tuning$path$cv, mse, tolerance = 1e-8)))
  old <- options(askotch.cv_gap_tol = 1e-9)
  fh9 <- fit_at(d$x, d$yr, c(1, 0.01), loss_huber())
  options(old)
  expect_equal(fh9$tuning$path$cv, mse, tolerance = 1e-4)
  for (bad in list("a", 0, 1, c(1e-3, 1e-2), NA_real_)) {
    old <- options(askotch.cv_gap_tol = bad)
    expect_error(fit_at(d$x, d$yr, c(1, 0.01), loss_huber()), "askotch.cv_gap_tol",
                 class = "askotch_error_input")
    options(old)
  }
  # lambda = "cv": the default path, C = 1 / lambda from 0.1 to 1000
  # (every fit of the path converges: the warm starts keep lambda * weights, and a
  # weight seeded at its bound is on it)
  expect_no_warning(fc <- kernel_machine(d$x, d$yc, loss = loss_hinge(), lambda = "cv",
                                         threads = 1, seed = 1, max_passes = 50))
  expect_equal(fc$tuning$path$lambda, 10^seq(1, -3, by = -0.5))
  expect_equal(fc$tuning$lambda_rule, "cv")
  expect_true(any(grepl("; 5-fold CV)", capture.output(print(fc)), fixed = TRUE)))
  expect_error(kernel_machine(d$x, d$yc, loss = loss_hinge(), lambda = "ml"),
               "\"cv\" for the hinge loss", class = "askotch_error_input")
})

test_that("lambda = \"cv\" with several classes: every fold and class on one state", {
  skip_if_no_loss("hinge")
  x <- std(as.matrix(iris[, 1:4]))
  y <- iris$Species
  fit_at <- function(x, y, l) {
    kernel_machine(x, y, loss = loss_hinge(), lambda = l, kernel = kernel_rbf(1),
                   standardize = FALSE, tol = 1e-9, threads = 1, seed = 5)
  }
  old <- options(askotch.cv_patience = Inf)
  on.exit(options(old))
  lams <- c(1, 0.1, 0.01, 1e-3, 1e-4)
  f <- fit_at(x, y, lams)
  # the folds of the fit's seed, each fitted alone from zero (one-vs-rest)
  fold <- getFromNamespace("with_seed", "askotch")(5 + 11, sample(rep_len(1:5, 150)))
  err <- vapply(lams, function(l) {
    sum(vapply(1:5, function(k) {
      tr <- fold != k
      sum(predict(fit_at(x[tr, ], y[tr], l), x[!tr, , drop = FALSE]) != y[!tr])
    }, 0)) / 150
  }, 0)
  expect_true(all(abs(f$tuning$path$cv - err) <= 1 / 150 + 1e-12))
  # the path ends once two values in a row lie above the least CV error by
  # more than its standard error (sd of the 0/1 errors times sqrt(n), over n)
  # -- here the errors only rise from C = 1
  options(askotch.cv_patience = 2)
  g <- fit_at(x, y, lams)
  cv <- g$tuning$path$cv
  done <- !is.na(cv)
  expect_equal(cv[done], f$tuning$path$cv[done])
  e1 <- cv[1] * 150
  se <- sqrt(e1 * (1 - cv[1])^2 + (150 - e1) * cv[1]^2) / sqrt(149) * sqrt(150) / 150
  first <- which(vapply(seq_along(cv), function(i) {
    i >= 3 && all(f$tuning$path$cv[(i - 1):i] > cv[1] + se)
  }, TRUE))[1]
  expect_equal(sum(done), first)
  expect_equal(g$lambda, 1)
  ends <- getFromNamespace("cv_path_ends", "askotch")
  expect_false(ends(c(10, 8, 9), c(1, 1, 1)))     # one value past the least
  expect_false(ends(c(10, 8, 9, 9), c(1, 1, 1, 1))) # not above 8 + its se
  expect_true(ends(c(10, 8, 9.5, 9.5), c(1, 1, 1, 1)))
  expect_false(ends(c(10, 8, 9.5, 7), c(1, 1, 1, 1)))
  for (bad in list(0, 1.5, "a", c(2, 3))) {
    options(askotch.cv_patience = bad)
    expect_error(fit_at(x, y, lams), "askotch.cv_patience", class = "askotch_error_input")
  }
})

test_that("dcd with several columns ends when no column can move", {
  skip_if_no_loss("hinge")
  # the columns that ran took no step while others waited: those run next,
  # and the fit ends at its solution instead of iterating without work
  x <- std(as.matrix(iris[, 1:4]))
  for (tol in c(1e-10, 1e-16)) {
    f <- suppressWarnings(kernel_machine(x, iris$Species, loss = loss_hinge(), lambda = 1e-5,
                                         kernel = kernel_rbf(0.3), solver = dcd(), tol = tol,
                                         time_limit = 30, threads = 1, seed = 1))
    expect_lt(f$iterations, 1000)
    expect_true(is.finite(f$passes) && f$passes < 50)
  }
})

test_that("bad input: classed errors naming the argument", {
  d0 <- loss_data()
  # random features need weights on the training points (not inducing points)
  expect_error(kernel_machine(d0$x, d0$yr, loss = loss_squared(), lambda = 1,
                              solver = falkon(centers = 20), features = 50,
                              threads = 1, seed = 1),
               "`features`", class = "askotch_error_input")
  # a numeric -1/+1 response with one class only says so
  expect_error(kernel_machine(d0$x, rep(1, 200), loss = loss_hinge(), threads = 1),
               "only one class", class = "askotch_error_input")
  expect_error(loss_huber(delta = -1), "`delta`", class = "askotch_error_input")
  expect_error(loss_huber(delta = NA), "`delta`", class = "askotch_error_input")
  expect_error(loss_svr(epsilon = -0.1), "`epsilon`", class = "askotch_error_input")
  expect_error(loss_svr(epsilon = "a"), "`epsilon`", class = "askotch_error_input")
  d <- make_regression(50, seed = 1)
  expect_error(kernel_machine(d$x, d$y, loss = loss_logistic()), "`y`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, loss = loss_hinge()), "`y`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, loss = "nonsense"), "`loss`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, loss = 3), "`loss`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, factor(d$y > 0), loss = loss_huber()), "`y`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, intercept = -1), "`intercept`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, features = 0), "`features`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, features = 2.5), "`features`",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, nonsense = 1), "`nonsense`",
               class = "askotch_error_input")
  fit <- kernel_machine(d$x, d$y, lambda = 1, solver = cholesky(), threads = 1)
  expect_error(predict(fit, d$x, type = "prob"), "`type = \"prob\"`",
               class = "askotch_error_input")
  expect_error(predict(fit, d$x, type = "probability"), "`type`",
               class = "askotch_error_input")
  # numeric -1/+1 targets are classes for the classification losses
  skip_if_no_loss("hinge")
  y01 <- ifelse(d$x[, 1] > 0, 1, -1)
  f <- kernel_machine(d$x, y01, loss = loss_hinge(), lambda = 1, threads = 1)
  expect_identical(f$levels, c("-1", "1"))
  expect_error(predict(f, d$x, type = "prob"), "logistic",
               class = "askotch_error_input")
  expect_error(kernel_machine(d$x, d$y, loss = loss_huber(), solver = askotch()),
               "`solver`", class = "askotch_error_input")
  expect_error(joker(block_size = -1), "block_size", class = "askotch_error_input")
})

test_that("kernel machine methods: print, summary, plot, refit, formula", {
  skip_if_no_loss("huber")
  d <- make_regression(150, seed = 21)
  fit <- kernel_machine(d$x, d$y, loss = loss_huber(0.2), lambda = 0.5,
                        threads = 1, seed = 1, keep_state = TRUE)
  expect_output(print(fit), "Kernel machine")
  expect_output(print(fit), "Huber, delta = 0.2")
  out <- capture.output(print(summary(fit)))
  for (field in c("Loss", "Objective", "Support vectors", "Duality gap")) {
    expect_true(any(grepl(field, out)), info = field)
  }
  expect_true(all(c("primal", "dual", "gap") %in% names(fit$trace)))
  f <- tempfile(fileext = ".pdf")
  pdf(f)
  expect_invisible(plot(fit))
  dev.off()
  expect_equal(fitted(fit), unname(predict(fit, d$x)), tolerance = 1e-12)
  # refit along lambda warm-starts and matches a fresh fit
  r <- refit(fit, lambda = 0.25, tol = 1e-10)
  f2 <- kernel_machine(d$x, d$y, loss = loss_huber(0.2), lambda = 0.25,
                       tol = 1e-10, threads = 1, seed = 1)
  expect_s3_class(r, "kernel_machine")
  # both within their own duality gaps' bound of the solution
  expect_lt(max(abs(predict(r, d$x) - predict(f2, d$x))), pred_bound(r) + pred_bound(f2))
  expect_equal(r$support$any, f2$support$any)
  # formula interface
  df <- data.frame(y = d$y, a = d$x[, 1], b = d$x[, 2], c = d$x[, 3])
  ff <- kernel_machine(y ~ ., data = df, loss = loss_huber(0.2), lambda = 0.5,
                       threads = 1, seed = 1)
  expect_equal(predict(ff, df), predict(fit, d$x), tolerance = 1e-8,
               ignore_attr = TRUE)
  expect_identical(as.character(ff$call[[1L]]), "kernel_machine")
})
