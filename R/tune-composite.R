# Maximum likelihood over the hyperparameters of a composite kernel given as
# "ml" (R/kernel-resolve.R finds them), with lambda -------------------------

# Rows of the exact likelihood of a composite's hyperparameters (a random
# subsample above).
composite_ml_points <- function() getOption("askotch.composite_ml_points", 1000)

# The profile log likelihood of the columns of Y ~ N(F beta_k, s_k^2 (K +
# lambda I)) (each s_k^2 and beta_k profiled; no F: a zero mean), or with
# trend$reml the restricted likelihood (as gp_exact_gls(), without
# log|F^T F|), and its gradient in the log hyperparameters of `tab` and then
# log lambda: 1/2 tr(W dA), W = a a^T / s^2 - P, a = P y, P = A^{-1} (ML) or
# A^{-1} - A^{-1} F (F^T A^{-1} F)^{-1} F^T A^{-1} (REML) (Rasmussen and
# Williams 2006, eqs. 5.9 and 2.45), from the compiled kernel matrix and its
# derivatives.
composite_loglik <- function(k, tab, lambda, xs, Y, trend = NULL) {
  D <- native_kernel_deriv(xs, xs, k, c(0L, tab$code))
  m <- ncol(Y)
  A <- D[, , 1L]
  diag(A) <- diag(A) + lambda
  R <- tryCatch(chol(A), error = function(e) NULL)
  if (is.null(R)) return(list(value = -Inf, grad = rep(0, NROW(tab) + 1L)))
  P <- chol2inv(R)
  logdet <- 2 * sum(log(diag(R)))
  q <- 0L
  if (!is.null(trend)) {
    AF <- P %*% trend$F
    Ci <- chol2inv(chol(crossprod(trend$F, AF)))
    Y <- Y - trend$F %*% (Ci %*% crossprod(AF, Y))
    if (isTRUE(trend$reml)) {
      q <- ncol(trend$F)
      logdet <- logdet - determinant(Ci)$modulus[[1L]]
      P <- P - AF %*% Ci %*% t(AF)
    }
  }
  alpha <- backsolve(R, backsolve(R, Y, transpose = TRUE))
  nq <- nrow(xs) - q
  s2 <- colSums(Y * alpha) / nq
  value <- sum(-nq / 2 * log(2 * pi * s2) - nq / 2) - m * logdet / 2
  W <- alpha %*% (t(alpha) / s2) - m * P
  g <- vapply(seq_len(NROW(tab)), function(i) 0.5 * sum(W * D[, , i + 1L]), 0)
  list(value = value, grad = c(g, 0.5 * lambda * sum(diag(W))))
}

# Maximum likelihood over log(hyperparameters of tab) and, unless fixed,
# log(lambda), by L-BFGS-B with the exact gradient, within a factor 1e3 of
# the starts (amplitudes 1e6; lambda in [1e-8, 1e4]); lambda starts at the
# best of a grid. `at_bound` names the estimates that end on a bound.
composite_optimise <- function(k, tab, start, lambda, xs, Y, trend = NULL) {
  np <- NROW(tab)
  width <- if (np) ifelse(tab$what == "amplitude", log(1e6), log(1e3)) else numeric()
  learn_lambda <- is.null(lambda)
  if (learn_lambda) {
    grid <- 10^seq(-4, 1)
    ll <- vapply(grid, function(l) {
      composite_loglik(composite_set(k, tab, start), NULL, l, xs, Y, trend)$value
    }, 0)
    lambda <- grid[which.max(ll)]
  }
  th0 <- c(log(start), if (learn_lambda) log(lambda))
  lo <- c(log(start) - width, if (learn_lambda) log(1e-8))
  hi <- c(log(start) + width, if (learn_lambda) log(1e4))
  cache <- new.env()
  f <- function(th) {
    key <- paste(th, collapse = ",")
    if (!identical(cache$key, key)) {
      lam <- if (learn_lambda) exp(th[np + 1L]) else lambda
      r <- composite_loglik(composite_set(k, tab, exp(th[seq_len(np)])), tab, lam, xs, Y, trend)
      cache$key <- key
      cache$r <- list(value = -r$value, grad = -r$grad[seq_len(length(th))])
    }
    cache$r
  }
  if (length(th0) == 0L) return(list(kernel = k, lambda = lambda, optim = NULL))
  opt <- stats::optim(th0, function(th) f(th)$value, function(th) f(th)$grad,
                      method = "L-BFGS-B", lower = lo, upper = hi,
                      control = list(maxit = 200, factr = 1e7))
  edge <- abs(opt$par - lo) < 1e-6 | abs(opt$par - hi) < 1e-6
  list(kernel = composite_set(k, tab, exp(opt$par[seq_len(np)])),
       lambda = if (learn_lambda) exp(opt$par[np + 1L]) else lambda,
       loglik = -opt$value, optim = opt,
       at_bound = c(if (np) tab$what, if (learn_lambda) "lambda")[edge])
}

# Maximum likelihood for a composite kernel (and lambda unless given) on at
# most composite_ml_points() rows; what tune_hyper() returns.
tune_composite <- function(dat, set, call) {
  ls <- set$lambda_spec
  if (!ls$rule %in% c("fixed", "default", "ml") || !is.null(dat$noise) ||
      (!is.null(set$obs_weights) && any(set$obs_weights != 1))) {
    abort_askotch(paste(
      "With a composite kernel, lambda is a number or chosen by maximum likelihood",
      "(lambda = NULL or \"ml\"), without `noise` or observation weights."),
      "input", call)
  }
  clock <- tune_clock(set)
  rows <- subsample_rows(dat$n, min(dat$n, composite_ml_points()), set$seed)
  xs <- dat$xs[rows, , drop = FALSE]
  Y <- centre_rows(dat$Yc[rows, , drop = FALSE], dat$tgt$task, dat$trend)
  trend <- trend_rows(dat$trend, rows)
  pr <- composite_params(set$kernel)
  start <- composite_start(pr$kernel, pr$table, xs, set$seed, call)
  res <- composite_optimise(pr$kernel, pr$table, start,
                            if (ls$rule == "fixed") set$lambda, xs, Y, trend)
  set$kernel[c("terms", "spec")] <- res$kernel[c("terms", "spec")]
  set$lambda <- res$lambda
  set$rule$time_limit <- max(set$rule$time_limit - clock$seconds(), set$rule$time_limit / 10)
  if (isTRUE(set$tol_auto)) set$rule$tol <- lambda_tol(set, dat$Yc, res$lambda)
  tab <- pr$table
  if (NROW(tab)) tab$estimate <- exp(res$optim$par[seq_len(NROW(tab))])
  if (length(res$at_bound)) {
    warn_askotch(sprintf(paste(
      "The maximum-likelihood %s of the composite kernel ended on the bound of",
      "its search range: the model may not need that part, or needs another start;",
      "see fit$tuning$composite."), paste(unique(res$at_bound), collapse = ", ")),
      "hyper", call)
  }
  tuning <- list(lambda_rule = if (ls$rule == "fixed") "fixed" else "ml",
                 bandwidth_rule = set$kernel$bandwidth_rule, n_used = length(rows),
                 n_total = dat$n, composite = tab, loglik = res$loglik,
                 optim = res$optim)
  list(dat = dat, set = set, tuning = tuning)
}
