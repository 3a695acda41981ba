# R modelling conventions: observation weights, subset, offset, na.action,
# update(), newdata matched by name, numbers stored as text.  Oracles: the
# closed forms in base R (solve()) on the kernel of helper-oracle.R, and the
# lm()-style identities (a subset fit is the fit on the subset, an offset fit
# is the fit of y - o plus o, ...).

expect_in_error <- function(expr, regexp = NULL) {
  expect_error(expr, regexp = regexp, class = "askotch_error_input")
}

set.seed(11)
n <- 120
x <- matrix(rnorm(2 * n), ncol = 2, dimnames = list(NULL, c("a", "b")))
y <- sin(2 * x[, 1]) + x[, 2]^2 + rnorm(n, sd = 0.2)
w <- runif(n, 0.2, 3)
lam <- 0.5
bw <- 1.3
xs <- scale(x, colMeans(x), apply(x, 2, sd))
K <- oracle_kernel(xs, xs, "rbf", bw)
reld <- function(a, b) max(abs(a - b)) / max(abs(b))

# weighted KRR: (K + lambda W^-1) alpha = y - weighted mean
weighted_oracle <- function(K, y, w, lam) {
  y <- as.matrix(y)
  mu <- colSums(w * y) / sum(w)
  solve(K + lam * diag(1 / w), sweep(y, 2, mu))
}

test_that("weights solve (K + lambda W^-1) alpha = y (cholesky, pcg, askotch)", {
  a <- weighted_oracle(K, y, w, lam)
  for (s in list(cholesky(), pcg(), askotch(block_size = 30))) {
    fit <- krr(x, y, weights = w, lambda = lam, bandwidth = bw, solver = s,
               tol = 1e-12, max_passes = 2000, threads = 1, seed = 1)
    expect_lt(reld(coef(fit), a[, 1]), 1e-8)
    expect_equal(fit$y_center, sum(w * y) / sum(w), tolerance = 1e-14)
    expect_equal(weights(fit), w)
  }
  # two outputs, solved jointly
  Y <- cbind(y, cos(x[, 2]))
  fit <- krr(x, Y, weights = w, lambda = lam, bandwidth = bw,
             solver = cholesky(), threads = 1)
  expect_lt(reld(unname(coef(fit)), unname(weighted_oracle(K, Y, w, lam))), 1e-8)
  # without weights: all 1
  expect_equal(weights(krr(x, y, lambda = lam, solver = cholesky(),
                           threads = 1)), rep(1, n))
})

test_that("weights with refit(): a new lambda and new responses", {
  fit <- krr(x, y, weights = w, lambda = lam, bandwidth = bw, solver = pcg(),
             tol = 1e-12, keep_state = TRUE, threads = 1, seed = 2)
  f2 <- refit(fit, lambda = 2 * lam)
  expect_lt(reld(coef(f2), weighted_oracle(K, y, w, 2 * lam)[, 1]), 1e-8)
  y2 <- cos(3 * x[, 1])
  f3 <- refit(fit, newresp = y2)
  expect_lt(reld(coef(f3), weighted_oracle(K, y2, w, lam)[, 1]), 1e-8)
  # the state rebuilt from the fit (as after readRDS) keeps the weights
  fit$state <- NULL
  f4 <- refit(fit, lambda = 3 * lam)
  expect_lt(reld(coef(f4), weighted_oracle(K, y, w, 3 * lam)[, 1]), 1e-8)
})

test_that("weighted falkon is weighted Nystrom KRR", {
  fit <- krr(x, y, weights = w, lambda = lam, bandwidth = bw,
             solver = falkon(centers = 12), tol = 1e-12, threads = 1, seed = 3)
  cen <- fit$centers
  Knm <- K[, cen]
  mu <- sum(w * y) / sum(w)
  a <- solve(crossprod(Knm, w * Knm) + lam * Knm[cen, ],
             crossprod(Knm, w * (y - mu)))
  expect_lt(reld(coef(fit), a[, 1]), 1e-8)
  expect_lt(reld(fitted(fit), drop(Knm %*% a) + mu), 1e-8)
})

test_that("kernel_machine: weights with the squared loss, an intercept, random features", {
  fit <- kernel_machine(x, y, weights = w, lambda = lam, bandwidth = bw,
                        solver = cholesky(), threads = 1)
  expect_lt(reld(coef(fit), weighted_oracle(K, y, w, lam)[, 1]), 1e-8)
  # penalised intercept: kernel K + c, targets not centred
  fit <- kernel_machine(x, y, weights = w, lambda = lam, bandwidth = bw,
                        solver = cholesky(), intercept = 0.7, threads = 1)
  a <- solve(K + 0.7 + lam * diag(1 / w), y)
  expect_lt(reld(coef(fit), a), 1e-8)
  # random features: theta = Z^T solve(Z Z^T + lambda W^-1, y - mu)
  M <- 60
  fit <- kernel_machine(x, y, weights = w, lambda = lam, bandwidth = bw,
                        solver = cholesky(), features = M, threads = 1,
                        seed = 4)
  Z <- .Call(askotch:::ffi_features_apply, unname(xs), diag(M),
             as.integer(fit$kernel$code), bw, as.numeric(M), fit$seed, 1L, 0L, 1L)
  mu <- sum(w * y) / sum(w)
  theta <- crossprod(Z, solve(tcrossprod(Z) + lam * diag(1 / w), y - mu))
  expect_lt(reld(coef(fit), theta[, 1]), 1e-8)
})

test_that("an integer weight k predicts as k copies of the point", {
  # Gaussian noise: k observations of variance lambda at one x carry the
  # same information as their mean with variance lambda / k, so the
  # posterior mean (the predictions) agree; the coefficients do not.
  # Fixed preprocessing (no standardisation, fixed bandwidth): both see the
  # same points.
  k <- c(3L, rep(1L, n - 1L))
  f1 <- krr(x, y, weights = k, lambda = lam, bandwidth = bw,
            standardize = FALSE, solver = cholesky(), threads = 1)
  xr <- x[c(1, 1, seq_len(n)), ]
  f2 <- krr(xr, y[c(1, 1, seq_len(n))], lambda = lam, bandwidth = bw,
            standardize = FALSE, solver = cholesky(), threads = 1)
  xt <- matrix(rnorm(20), ncol = 2, dimnames = list(NULL, c("a", "b")))
  expect_lt(reld(predict(f1, xt), predict(f2, xt)), 1e-8)
  expect_false(length(coef(f1)) == length(coef(f2)))
})

test_that("zero weights drop the rows; bad weights are classed errors", {
  w0 <- w
  w0[c(5, 17)] <- 0
  f0 <- krr(x, y, weights = w0, lambda = lam, bandwidth = bw,
            solver = cholesky(), threads = 1, standardize = FALSE)
  f1 <- krr(x[-c(5, 17), ], y[-c(5, 17)], weights = w[-c(5, 17)],
            lambda = lam, bandwidth = bw, solver = cholesky(), threads = 1,
            standardize = FALSE)
  expect_equal(f0$n, n - 2L)
  expect_equal(f0$zero_weight, c(5L, 17L))
  expect_equal(coef(f0), coef(f1), tolerance = 1e-12)
  expect_in_error(krr(x, y, weights = -w), "`weights`.*non-negative")
  expect_in_error(krr(x, y, weights = c(NA, w[-1])), "`weights`")
  expect_in_error(krr(x, y, weights = w[-1]), "`weights`.*one value per row")
  expect_in_error(krr(x, y, weights = "a"), "`weights`")
  expect_in_error(krr(x, y, weights = c(1, rep(0, n - 1))), "at least 2 positive")
  expect_in_error(kernel_machine(x, y, weights = w, loss = loss_huber()),
                  "`weights`.*squared loss only")
  expect_in_error(krr(x, y, weights = w, lambda = lam,
                      solver = eigenpro(version = 3)), "eigenpro")
})

# ---- the formula interface -----------------------------------------------------
d <- data.frame(y = y, a = x[, 1], b = x[, 2], g = factor(rep(1:3, 40)),
                o = cos(x[, 1]), wt = w)
# krr() with this file's settings; the call is rebuilt and evaluated in the
# caller's frame (the way to wrap a model function that evaluates `subset`,
# `weights` and `offset` in `data`, as for lm())
fitf <- function(...) {
  cl <- match.call()
  cl[[1L]] <- quote(krr)
  cl[c("lambda", "bandwidth", "solver", "threads")] <-
    list(lam, bw, quote(cholesky()), 1)
  eval.parent(cl)
}

test_that("formula: weights are evaluated in data and equal matrix weights", {
  f1 <- fitf(y ~ a + b, data = d, weights = wt)
  f2 <- fitf(x, y, weights = w)
  expect_equal(unname(coef(f1)), unname(coef(f2)), tolerance = 1e-12)
  expect_equal(weights(f1), w)
  # an expression of the data's columns
  f3 <- fitf(y ~ a + b, data = d, weights = wt^2)
  expect_equal(weights(f3), w^2)
})

test_that("formula: a subset fit equals the fit on the subsetted data", {
  f1 <- fitf(y ~ a + b + g, data = d, subset = a > 0)
  f2 <- fitf(y ~ a + b + g, data = d[d$a > 0, ])
  expect_equal(f1$n, sum(d$a > 0))
  expect_equal(predict(f1, d), predict(f2, d), tolerance = 1e-12)
  # a logical vector from the caller's frame, and row numbers
  keep <- seq_len(n) %% 2 == 0
  f3 <- fitf(y ~ a + b, data = d, subset = keep)
  f4 <- fitf(y ~ a + b, data = d, subset = which(keep))
  f5 <- fitf(y ~ a + b, data = d[keep, ])
  expect_equal(predict(f3, d), predict(f5, d), tolerance = 1e-12)
  expect_equal(predict(f4, d), predict(f5, d), tolerance = 1e-12)
})

test_that("formula: an offset is subtracted before fitting and added back", {
  ref <- fitf(y ~ a + b, data = transform(d, y = y - 2 * o))
  f1 <- fitf(y ~ a + b + offset(2 * o), data = d)
  f2 <- fitf(y ~ a + b, data = d, offset = 2 * o)
  nd <- d[1:10, ]
  nd$o <- nd$o + 1  # the offset comes from newdata
  for (f in list(f1, f2)) {
    expect_equal(predict(f, nd), predict(ref, nd) + 2 * nd$o,
                 tolerance = 1e-12)
    expect_equal(unname(fitted(f)), unname(fitted(ref) + 2 * d$o),
                 tolerance = 1e-12)
    expect_equal(unname(residuals(f)), unname(d$y - fitted(f)),
                 tolerance = 1e-12)
    expect_equal(unname(predict(f)), unname(fitted(f)), tolerance = 1e-12)
  }
  expect_in_error(predict(f2, nd[, c("a", "b")]), "offset")
  # classification has no offset
  expect_in_error(fitf(g ~ a + b, data = d, offset = o), "`offset`")
})

test_that("formula: na.omit drops, na.exclude pads, na.fail errors", {
  dn <- d
  dn$a[c(3, 40)] <- NA
  dn$y[7] <- NA
  fo <- fitf(y ~ a + b, data = dn, na.action = na.omit)
  ref <- fitf(y ~ a + b, data = dn[-c(3, 7, 40), ])
  expect_equal(fo$n, n - 3L)
  expect_equal(unname(fitted(fo)), unname(fitted(ref)), tolerance = 1e-12)
  fe <- fitf(y ~ a + b, data = dn, na.action = na.exclude)
  expect_length(fitted(fe), n)
  expect_length(residuals(fe), n)
  expect_equal(which(is.na(fitted(fe))), c(3L, 7L, 40L))
  expect_equal(unname(residuals(fe)[-c(3, 7, 40)]),
               unname(residuals(ref)), tolerance = 1e-12)
  expect_in_error(fitf(y ~ a + b, data = dn, na.action = na.fail),
                  "model frame")
  # the default is getOption("na.action")
  old <- options(na.action = "na.exclude")
  on.exit(options(old))
  expect_length(fitted(fitf(y ~ a + b, data = dn)), n)
  # zero weights count as left out
  dz <- d
  dz$wt[c(2, 9)] <- 0
  fz <- fitf(y ~ a + b, data = dz, weights = wt, na.action = na.exclude)
  expect_equal(which(is.na(fitted(fz))), c(2L, 9L))
})

test_that("update() of the formula and of arguments", {
  f1 <- fitf(y ~ a + b + g, data = d)
  f2 <- update(f1, . ~ . - g)
  ref <- fitf(y ~ a + b, data = d)
  expect_equal(f2$p, 2L)
  expect_equal(predict(f2, d), predict(ref, d), tolerance = 1e-12)
  f3 <- update(f1, lambda = 2)
  expect_equal(f3$lambda, 2)
  ref3 <- krr(y ~ a + b + g, data = d, lambda = 2, bandwidth = bw,
              solver = cholesky(), threads = 1)
  expect_equal(predict(f3, d), predict(ref3, d), tolerance = 1e-12)
  expect_equal(formula(f1), y ~ a + b + g, ignore_attr = TRUE)
  # update with subset/weights
  f4 <- update(f1, subset = b > 0, weights = wt)
  ref4 <- fitf(y ~ a + b + g, data = d[d$b > 0, ], weights = wt)
  expect_equal(predict(f4, d), predict(ref4, d), tolerance = 1e-12)
  # the matrix method's call re-evaluates too
  fm <- fitf(x, y)
  expect_equal(update(fm, lambda = 3)$lambda, 3)
  # kernel_machine's formula method takes the same arguments
  km <- kernel_machine(y ~ a + b, data = d, subset = a > 0, weights = wt,
                       offset = o, lambda = lam, bandwidth = bw,
                       solver = cholesky(), threads = 1)
  refk <- fitf(y ~ a + b, data = d, subset = a > 0, weights = wt, offset = o)
  expect_equal(predict(km, d), predict(refk, d), tolerance = 1e-12)
  expect_equal(update(km, . ~ . - b)$p, 1L)
})

test_that("newdata matrices are matched by column name", {
  fm <- fitf(x, y)
  xt <- x[1:5, ]
  expect_equal(predict(fm, xt[, c("b", "a")]), predict(fm, xt))
  expect_equal(predict(fm, cbind(xt, extra = 1)), predict(fm, xt))
  bad <- xt
  colnames(bad) <- c("a", "z")
  expect_in_error(predict(fm, bad), "missing the column\\(s\\) `b`")
  # without names: by position
  expect_equal(unname(predict(fm, unname(xt))), unname(predict(fm, xt)))
  expect_equal(unname(predict(fm, as.data.frame(xt[, 2:1]))),
               unname(predict(fm, xt)))
})

test_that("a character response that looks numeric is a classed error", {
  yc <- format(y)
  expect_in_error(krr(x, yc), "as.numeric\\(y\\)")
  expect_in_error(krr(x, c("1", "2")[rep(1:2, n / 2)]), "factor\\(y\\)")
  # character labels still classify
  f <- fitf(x, c("u", "v")[(y > 1) + 1])
  expect_equal(f$task, "binary")
  # a numeric factor is classification on purpose
  f2 <- fitf(x, factor((y > 1) + 1))
  expect_equal(f2$levels, c("1", "2"))
})

test_that("standardize = \"joint\" divides every column by one scale", {
  set.seed(21)
  x <- cbind(runif(60, 0, 10), runif(60, 0, 2), 5)  # a constant third column
  y <- sin(x[, 1]) + x[, 2] + rnorm(60, sd = 0.1)
  fit_with <- function(xx, st) {
    krr(xx, y, standardize = st, lambda = 0.1, bandwidth = 1.3, solver = cholesky(),
        threads = 1)
  }
  fj <- fit_with(x, "joint")
  s <- sqrt(mean(apply(x[, 1:2], 2L, sd)^2))  # the non-constant columns' rms sd
  by_hand <- function(z) sweep(z, 2L, colMeans(x)) / s
  fm <- fit_with(by_hand(x), FALSE)
  expect_equal(unname(fj$weights), unname(fm$weights), tolerance = 1e-12)
  xn <- cbind(runif(10, 0, 10), runif(10, 0, 2), 5)
  expect_equal(unname(predict(fj, xn)), unname(predict(fm, by_hand(xn))),
               tolerance = 1e-12)
  expect_error(krr(x, y, standardize = "yes"), "`standardize`",
               class = "askotch_error_input")
})
