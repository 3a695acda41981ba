# Maximum likelihood over the hyperparameters of a composite kernel given as
# "ml" (R/kernel-resolve.R finds them), with lambda -------------------------

# Rows of the exact likelihood of a composite's hyperparameters (a random
# subsample above).
composite_ml_points <- function() getOption("askotch.composite_ml_points", 1000)

# The profile log likelihood of the columns of Y ~ N(F beta_k, s_k^2 (K +
# lambda V)) (each s_k^2 and beta_k profiled; no F: a zero mean; V =
# diag(exp(Z gamma)) with a noise model, else I), or with trend$reml the
# restricted likelihood (as gp_exact_gls(), without log|F^T F|), and its
# gradient in the log hyperparameters of `tab`, log lambda and gamma:
# 1/2 tr(W dA), W = a a^T / s^2 - P, a = P y, P = A^{-1} (ML) or A^{-1} -
# A^{-1} F (F^T A^{-1} F)^{-1} F^T A^{-1} (REML), dA/dlog lambda = lambda V,
# dA/dgamma_j = lambda V diag(z_j) (Rasmussen and Williams 2006, eqs. 5.9
# and 2.45), from the compiled kernel matrix and its derivatives. With the
# signal variances s2 given (not profiled; no trend), the gradient is the
# full likelihood's in the same, and grad_s2 its gradient in log s2,
# -n/2 + y^T a / (2 s2) (R/composite-inference.R). gradient = FALSE: the
# value only (no inverse of A).
composite_loglik <- function(k, tab, lambda, xs, Y, trend = NULL, noise = NULL, s2 = NULL,
                             threads = 0L, gradient = TRUE) {
  m <- ncol(Y)
  v <- if (is.null(noise)) rep(1, nrow(xs)) else exp(drop(noise$Z %*% noise$gamma))
  A <- kernel_mat(xs, xs, k, threads)
  diag(A) <- diag(A) + lambda * v
  R <- native_chol(A, threads)
  ng <- NROW(tab) + 1L + if (is.null(noise)) 0L else ncol(noise$Z)
  if (is.null(R)) return(list(value = -Inf, grad = rep(0, ng), grad_s2 = rep(0, m)))
  logdet <- 2 * sum(log(diag(R)))
  q <- 0L
  if (!is.null(trend)) {
    AF <- chol_solve(R, trend$F)
    Ci <- chol2inv(chol(crossprod(trend$F, AF)))
    Y <- Y - trend$F %*% (Ci %*% crossprod(AF, Y))
    if (isTRUE(trend$reml)) {
      q <- ncol(trend$F)
      logdet <- logdet - determinant(Ci)$modulus[[1L]]
    }
  }
  alpha <- chol_solve(R, Y)
  nq <- nrow(xs) - q
  yay <- colSums(Y * alpha)
  s2 <- s2 %||% (yay / nq)
  value <- sum(-nq / 2 * log(2 * pi * s2) - nq / 2) - m * logdet / 2
  if (!gradient) return(list(value = value))
  P <- chol2inv(R)
  if (q > 0L) P <- P - AF %*% Ci %*% t(AF)
  W <- alpha %*% (t(alpha) / s2) - m * P
  # 1/2 sum(W * dA_i) for every derivative at once, in C without the
  # derivative matrices
  g <- 0.5 * native_kernel_deriv_dot(xs, k, tab$code, W)
  wv <- 0.5 * lambda * diag(W) * v
  list(value = value,
       grad = c(g, sum(wv), if (!is.null(noise)) drop(crossprod(noise$Z, wv))),
       grad_s2 = -nq / 2 + yay / (2 * s2))
}

# Maximum likelihood over log(hyperparameters of tab), log(lambda) unless
# fixed and the noise model's gamma (with Z), by L-BFGS-B with the exact
# gradient, within a factor 1e3 of the starts (amplitudes 1e6; lambda in
# [1e-8, 1e4]; gamma, of standardised covariates, in [-10, 10]); lambda
# starts at the best of a grid, gamma at 0. `at_bound` names the estimates
# that end on a bound.
composite_optimise <- function(k, tab, start, lambda, xs, Y, trend = NULL, Z = NULL,
                               threads = 0L, clock = NULL) {
  np <- NROW(tab)
  nz <- if (is.null(Z)) 0L else ncol(Z)
  width <- if (np) ifelse(tab$what == "amplitude", log(1e6), log(1e3)) else numeric()
  learn <- is.null(lambda)
  noise_of <- function(gamma) if (nz) list(Z = Z, gamma = gamma)
  if (learn) {
    grid <- 10^seq(-4, 1)
    ll <- vapply(grid, function(l) {
      composite_loglik(composite_set(k, tab, start), NULL, l, xs, Y, trend,
                       noise_of(rep(0, nz)), threads = threads, gradient = FALSE)$value
    }, 0)
    lambda <- grid[which.max(ll)]
  }
  # the search vector: log tab values, log lambda (learn), gamma; the
  # gradient's positions of the same in composite_loglik()'s order
  th0 <- c(log(start), if (learn) log(lambda), rep(0, nz))
  lo <- c(log(start) - width, if (learn) log(1e-8), rep(-10, nz))
  hi <- c(log(start) + width, if (learn) log(1e4), rep(10, nz))
  at <- c(seq_len(np), if (learn) np + 1L, np + 1L + seq_len(nz))
  unpack <- function(th) {
    list(k = composite_set(k, tab, exp(th[seq_len(np)])),
         lambda = if (learn) exp(th[np + 1L]) else lambda,
         gamma = th[np + learn + seq_len(nz)])
  }
  memo <- new.env(parent = emptyenv())
  # a failed factor (value -Inf) fails the point (tune_memo())
  objective <- function(th) {
    u <- unpack(th)
    r <- composite_loglik(u$k, tab, u$lambda, xs, Y, trend, noise_of(u$gamma),
                          threads = threads)
    list(f = -r$value, g = -r$grad[at])
  }
  f <- function(th) tune_memo(memo, th, objective, clock, "maximum likelihood")
  if (length(th0) == 0L) return(list(kernel = k, lambda = lambda, optim = NULL))
  # stopped by the tuning clock at the best point so far (tune_optim())
  opt <- tune_optim(th0, function(th) f(th)$f, function(th) f(th)$g, lo, hi,
                    list(maxit = 200, factr = 1e7), memo, 1)
  edge <- abs(opt$par - lo) < 1e-6 | abs(opt$par - hi) < 1e-6
  u <- unpack(opt$par)
  list(kernel = u$k, lambda = u$lambda, noise_coef = if (nz) u$gamma,
       loglik = -opt$value, optim = opt,
       at_bound = unique(c(if (np) tab$what, if (learn) "lambda", rep("noise", nz))[edge]))
}

# Maximum likelihood for a composite kernel (and lambda unless given) on at
# most composite_ml_points() rows, lambda then by GCV, LOO or K-fold CV when
# asked (composite_lambda()); what tune_hyper() returns.
tune_composite <- function(dat, set, call) {
  ls <- set$lambda_spec
  if (!ls$rule %in% c("fixed", "default", "ml", "gcv", "loo", "cv", "path") ||
      (!is.null(set$obs_weights) && any(set$obs_weights != 1))) {
    abort_askotch(paste(
      "With a composite kernel, lambda is a number, a path, or chosen by maximum",
      "likelihood (lambda = NULL or \"ml\"), \"gcv\", \"loo\" or \"cv\", without",
      "observation weights (`noise =` models them)."), "input", call)
  }
  # the other losses: lambda by K-fold CV of their own path (the composite's
  # hyperparameters are given: "ml" needs the squared loss or a GP
  # classifier, which tune_laplace() tunes)
  if (set$loss$name != "squared") return(tune_loss_cv(dat, set))
  clock <- tune_clock(set)
  sub <- tune_data(dat, set, call, size = min(dat$n, composite_ml_points()))
  if (!is.null(sub$noise_gp)) {
    abort_askotch(paste(
      "`noise = ~ gp()` needs a listed kernel (kernel = \"auto\", \"rbf\", ...); with a",
      "composite kernel use a log-linear noise model (noise = ~ z)."), "input", call)
  }
  # the first amplitude is held at 1 when lambda is estimated (the profiled
  # s^2 and lambda then carry both scales), not when lambda is given
  pr <- composite_params(set$kernel, hold_first = ls$rule != "fixed")
  by_rule <- ls$rule %in% c("gcv", "loo", "cv", "path")
  res <- if (by_rule && NROW(pr$table) == 0L) list(kernel = pr$kernel) else {
    start <- composite_start(pr$kernel, pr$table, sub$xs, set$seed, call)
    composite_optimise(pr$kernel, pr$table, start, if (ls$rule == "fixed") set$lambda,
                       sub$xs, sub$Y, sub$trend, sub$noise$Z, set$threads, clock)
  }
  set$kernel[c("terms", "spec")] <- res$kernel[c("terms", "spec")]
  rl <- if (by_rule) composite_lambda(dat, set, sub) else list(lambda = res$lambda)
  rl$lambda <- lambda_floored(set, rl$lambda)
  set <- tune_settle(set, dat, rl$lambda, res$noise_coef, clock)
  tab <- pr$table
  if (NROW(tab)) tab$estimate <- exp(res$optim$par[seq_len(NROW(tab))])
  if (length(res$at_bound)) {
    warn_askotch(sprintf(paste(
      "The maximum-likelihood %s of the composite kernel ended on the bound of",
      "its search range: the model may not need that part, or needs another start;",
      "see fit$tuning$composite."), paste(unique(res$at_bound), collapse = ", ")),
      "hyper", call)
  }
  tuning <- list(lambda_rule = rl$rule %||% if (ls$rule %in% c("default", "ml")) "ml" else ls$rule,
                 bandwidth_rule = set$kernel$bandwidth_rule, n_used = length(sub$rows),
                 n_total = dat$n, composite = tab, loglik = res$loglik,
                 noise_coef = res$noise_coef, optim = res$optim, path = rl$path)
  list(dat = dat, set = set, tuning = tuning)
}

# lambda for the composite kernel of set (its hyperparameters settled) by
# GCV or LOO on the subsample's kernel matrix (its eigendecomposition, as
# for a listed kernel: tune_ml()), or by K-fold cross-validation of a path
# on all the points (cv_path(); "path": the given lambdas, "cv": the
# default noise-to-signal ratios). A path with a validation set on a path
# solver is solved whole and chosen by the validation set (as tune_hyper():
# fit_path()), starting from its largest lambda.
composite_lambda <- function(dat, set, sub) {
  ls <- set$lambda_spec
  if (ls$rule %in% c("gcv", "loo")) {
    eg <- gp_eigen(kernel_mat(sub$xs, sub$xs, set$kernel, set$threads), sub$Y, sub$trend)
    return(list(lambda = gp_eigen_best(eg, ls$rule)))
  }
  if (ls$rule == "path" && path_solver(set$solver) && !is.null(set$validation)) {
    return(list(lambda = max(ls$path), rule = "validation"))
  }
  lams <- if (ls$rule == "cv") default_lambda_path() else ls$path
  path <- cv_path(dat$xs, dat$Yc, dat$tgt$task, set$kernel, lams, set)
  lambda <- path$lambda[which.min(path$cv)]
  path$selected <- abs(path$lambda - lambda) <= 1e-12 * lambda
  list(lambda = lambda, path = path)
}
