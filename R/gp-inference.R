# Uncertainty about the hyperparameters: the observed information of the
# Gaussian-process likelihood, vcov() and confint() ---------------------------
#
# The model of logLik.krr(): each centred output column y_c ~ N(0, s_c^2 A),
# A = K + lambda I (with observation weights, D K D + lambda I and D y_c). The
# parameters are the logarithms of the hyperparameters estimated by maximum
# likelihood: the bandwidth (bandwidth = "ml") or the length scales ("ard"),
# lambda (lambda = "ml", the default), and the signal variances s_c^2 (always
# at their maximum-likelihood values). With alpha_c = A^{-1} y_c, A_i = dA /
# dtheta_i and A_ij its second derivative, the full log likelihood
#   l = sum_c -n/2 log(2 pi s_c^2) - 1/2 log det A - y_c^T alpha_c / (2 s_c^2)
# has the Hessian (Rasmussen and Williams 2006, sec. 5.4.1, differentiated
# once more)
#   d2l/dth_i dth_j = -m/2 [tr(A^{-1} A_ij) - tr(A^{-1} A_i A^{-1} A_j)]
#                     - sum_c [2 a_c^T A_i A^{-1} A_j a_c - a_c^T A_ij a_c]
#                       / (2 s_c^2),
#   d2l/dth_i dlog s_c^2 = -a_c^T A_i a_c / (2 s_c^2),
#   d2l/dlog s_c^2 ^2 = -y_c^T a_c / (2 s_c^2)  (= -n/2 at the estimate),
# A_i = dK/dth_i (from the kernel list in C) or lambda I, A_ij = d2K/dth_i
# dth_j, lambda I (i = j = lambda) or 0. The covariance of the estimates is
# the inverse of the observed information -H at the estimate (its
# signal-variance block is that of the profile likelihood's curvature).

# The hyperparameters of a fit estimated by maximum likelihood: kernel codes
# (-1: log bandwidth; j: log length scale j), whether lambda is, and names.
gp_hyper <- function(object) {
  tn <- object$tuning
  if (is_composite_kernel(object$kernel)) return(gp_hyper_composite(object))
  bw <- if (is.null(tn)) "given" else tn$bandwidth_rule
  codes <- switch(bw, ml = -1L, ard = seq_len(object$p), integer(0))
  est_lambda <- !is.null(tn) && identical(tn$lambda_rule, "ml")
  s2 <- if (object$m > 1L) paste0("signal_var:", object$y_names) else "signal_var"
  xn <- object$xnames
  if (length(xn) != object$p) xn <- paste0("x", seq_len(object$p))
  nm <- c(if (bw == "ml") "bandwidth",
          if (bw == "ard") paste0("length_scale:", xn),
          if (est_lambda) "lambda",
          if (!is.null(object$noise)) paste0("noise:", object$noise$names), s2)
  list(codes = codes, est_lambda = est_lambda, names = nm)
}

# A composite kernel's: its estimated hyperparameters (tuning$composite),
# lambda when estimated, the signal variances (R/composite-inference.R)
gp_hyper_composite <- function(object) {
  tn <- object$tuning
  est_lambda <- identical(tn$lambda_rule, "ml")
  s2 <- if (object$m > 1L) paste0("signal_var:", object$y_names) else "signal_var"
  list(codes = integer(0), est_lambda = est_lambda, composite = TRUE,
       names = c(composite_param_names(object$kernel, tn$composite),
                 if (est_lambda) "lambda", s2))
}

# The point estimates (natural scale) in the order of gp_hyper()'s names
gp_hyper_values <- function(object, h) {
  if (isTRUE(h$composite)) {
    return(c(if (NROW(object$tuning$composite)) object$tuning$composite$estimate,
             if (h$est_lambda) object$lambda, gp_signal_var(object)))
  }
  c(if (identical(h$codes, -1L)) object$kernel$bandwidth,
    if (length(h$codes) && !identical(h$codes, -1L)) object$length_scales,
    if (h$est_lambda) object$lambda,
    if (!is.null(object$noise)) object$noise$coef / object$noise$scale,
    gp_signal_var(object))
}

# The full log likelihood's value, gradient and Hessian in (kernel codes,
# log lambda if est_lambda, log s_c^2) at the points xs (as the kernel sees
# them), centred targets Y, signal variances s2 (their estimates when NULL)
# and observation-weight roots d (NULL: none), or a noise model (noise:
# list(Z, v), A = K + lambda diag(v), the noise coefficients after lambda).
# Exact, by one Cholesky.
# With a mean function (trend: list(F, reml)) the likelihood is the profile
# one in beta (GLS), or REML: with P = A^{-1} - A^{-1} F C^{-1} F^T A^{-1},
# C = F^T A^{-1} F, y^T P y replaces y^T A^{-1} y (d/dtheta P = -P A_i P),
# so alpha = P y and P A_j alpha enter the quadratic terms, and the
# log-determinant's traces take A^{-1} (ML) or P (REML: log |A| + log |C|,
# whose derivative is tr(P A_i)); n - ncol(F) replaces n for REML.
gp_hessian_exact <- function(xs, Y, kernel, lambda, codes, est_lambda,
                             s2 = NULL, d = NULL, threads = 0L, trend = NULL,
                             noise = NULL) {
  n <- nrow(xs)
  m <- ncol(Y)
  if (!is.null(d)) Y <- d * Y
  A <- kernel_mat(xs, xs, kernel, threads)
  if (!is.null(d)) A <- A * outer(d, d)
  diag(A) <- diag(A) + gp_noise_diag(lambda, noise)
  R <- chol(A)
  Ainv <- chol2inv(R)
  P <- Ainv
  nn <- n
  logdet <- 2 * sum(log(diag(R)))
  if (!is.null(trend)) {
    Fd <- if (is.null(d)) trend$F else d * trend$F
    AF <- Ainv %*% Fd
    Rc <- chol(crossprod(Fd, AF))
    AFh <- t(backsolve(Rc, t(AF), transpose = TRUE))  # A^{-1} F R_C^{-1}
    P <- Ainv - tcrossprod(AFh)
    if (isTRUE(trend$reml)) {
      nn <- n - ncol(Fd)
      logdet <- logdet + 2 * sum(log(diag(Rc)))
    }
  }
  Atr <- if (isTRUE(trend$reml)) P else Ainv  # the log-determinant's traces
  alpha <- P %*% Y
  yAy <- colSums(Y * alpha)
  if (is.null(s2)) s2 <- yAy / nn
  dA <- gp_hyper_dA(xs, kernel, lambda, codes, est_lambda, d, noise)
  q <- length(dA)
  AiA <- lapply(dA, function(M) Atr %*% M)
  Aa <- lapply(dA, function(M) M %*% alpha)       # A_i alpha
  AAa <- lapply(Aa, function(v) P %*% v)          # P A_i alpha
  aAa <- vapply(Aa, function(v) colSums(alpha * v), numeric(m))  # alpha_c^T A_i alpha_c
  aAa <- matrix(aAa, nrow = m)
  g <- c(vapply(seq_len(q), function(i) {
    sum(aAa[, i] / (2 * s2)) - m / 2 * sum(diag(AiA[[i]]))
  }, 0), -nn / 2 + yAy / (2 * s2))
  H <- matrix(0, q + m, q + m)
  for (i in seq_len(q)) {
    for (j in seq_len(i)) {
      Aij <- gp_hyper_d2A(xs, kernel, lambda, codes, est_lambda, d, i, j, noise)
      tr2 <- sum(AiA[[i]] * t(AiA[[j]]))
      tr1 <- if (is.null(Aij)) 0 else sum(Atr * Aij)
      quad <- 2 * colSums(Aa[[i]] * AAa[[j]]) -
        (if (is.null(Aij)) 0 else colSums(alpha * (Aij %*% alpha)))
      H[i, j] <- H[j, i] <- -m / 2 * (tr1 - tr2) - sum(quad / (2 * s2))
    }
    H[i, q + seq_len(m)] <- H[q + seq_len(m), i] <- -aAa[, i] / (2 * s2)
  }
  H[cbind(q + seq_len(m), q + seq_len(m))] <- -yAy / (2 * s2)
  ll <- sum(-nn / 2 * log(2 * pi * s2) - yAy / (2 * s2)) - m / 2 * logdet
  if (!is.null(d)) ll <- ll + m * sum(log(d))
  list(loglik = ll, gradient = g, hessian = H, signal_var = s2)
}

# A's noise diagonal lambda v (v = exp(Z gamma) under a noise model, else 1)
gp_noise_diag <- function(lambda, noise) lambda * (if (is.null(noise)) 1 else noise$v)

# The directions in which the hyperparameters move A's diagonal lambda V
# (V = diag(v), v = exp(Z gamma) under a noise model, else 1): log lambda
# (a column of ones) when estimated, and each noise coefficient gamma_j
# (the column z_j); dA = lambda diag(v z), d2A = lambda diag(v z z').
gp_hyper_diag <- function(n, est_lambda, noise) {
  cbind(if (est_lambda) rep(1, n), if (!is.null(noise)) noise$Z)
}

# dA/dtheta_i: the kernel's derivatives (times d d^T with weights), then
# the diagonal directions
gp_hyper_dA <- function(xs, kernel, lambda, codes, est_lambda, d, noise = NULL) {
  out <- list()
  if (length(codes)) {
    dK <- native_kernel_deriv(xs, xs, kernel, codes)
    out <- lapply(seq_along(codes), function(c) {
      M <- dK[, , c]
      if (is.null(d)) M else M * outer(d, d)
    })
  }
  n <- nrow(xs)
  lv <- gp_noise_diag(lambda, noise)
  Dz <- gp_hyper_diag(n, est_lambda, noise)
  for (c in seq_len(if (is.null(Dz)) 0L else ncol(Dz))) {
    out[[length(out) + 1L]] <- diag(lv * Dz[, c], n)
  }
  out
}

# d2A/dtheta_i dtheta_j (NULL for zero)
gp_hyper_d2A <- function(xs, kernel, lambda, codes, est_lambda, d, i, j, noise = NULL) {
  k <- length(codes)
  if (i > k || j > k) {
    if (i <= k || j <= k) return(NULL)
    n <- nrow(xs)
    Dz <- gp_hyper_diag(n, est_lambda, noise)
    lv <- gp_noise_diag(lambda, noise)
    return(diag(lv * Dz[, i - k] * Dz[, j - k], n))
  }
  M <- native_kernel_deriv(xs, xs, kernel, cbind(codes[i], codes[j]))[, , 1L]
  if (is.null(d)) M else M * outer(d, d)
}

# The same Hessian above the exact sizes, from the stochastic likelihood on
# all points (krr_gp_slq) with the probes and the preconditioner of the
# estimate fixed, which makes the profile log likelihood l_p one smooth
# function of the kernel's and lambda's logarithms: its Hessian by central
# second differences (step 0.05; 1 + 2 q^2 evaluations for q of them), and
# y_c^T A^{-1} y_c's gradient (= -a_c^T A_i a_c) by first differences from
# the same evaluations. With tau_c = log s_c^2 profiled out (H_tt = -n/2 at
# the estimate, H_it = -a_c^T A_i a_c / (2 s_c^2)), the full Hessian's
# kernel block is H_p + H_it H_tt^{-1} H_ti. The Hessian of the estimate is
# unbiased but its inverse is not (standard errors come out low with few
# probes), hence more probes than for the likelihood: 200 by default
# (option askotch.vcov_probes).
gp_hessian_stochastic <- function(object, h, step = 0.05,
                                  probes = getOption("askotch.vcov_probes", 200L)) {
  xs <- object$x
  Y <- gp_yc(object)
  n <- nrow(xs)
  q <- length(h$codes) + h$est_lambda
  pc <- gp_loglik_stochastic(xs, Y, object$kernel, object$lambda, gradient = FALSE,
                             rank = 500L, seed = object$seed, tol = 1e-8, maxit = 1000L,
                             threads = gp_threads(object))$precond
  at <- function(dl) {
    x <- xs
    k <- object$kernel
    if (identical(h$codes, -1L)) k$bandwidth <- k$bandwidth * exp(dl[1L])
    else for (j in h$codes) x[, j] <- x[, j] * exp(-dl[j])
    lam <- object$lambda * (if (h$est_lambda) exp(dl[q]) else 1)
    v <- gp_loglik_stochastic(x, Y, k, lam, gradient = FALSE, probes = probes, rank = 500L,
                              seed = object$seed, tol = 1e-8, maxit = 1000L,
                              threads = gp_threads(object), pc = pc)
    c(v$loglik, v$yAy)
  }
  e <- function(i) replace(numeric(q), i, step)
  f0 <- at(numeric(q))
  fp <- lapply(seq_len(q), function(i) at(e(i)))
  fm <- lapply(seq_len(q), function(i) at(-e(i)))
  Hp <- matrix(0, q, q)
  for (i in seq_len(q)) for (j in seq_len(i)) {
    Hp[i, j] <- Hp[j, i] <- if (i == j) (fp[[i]][1] - 2 * f0[1] + fm[[i]][1]) / step^2 else
      (at(e(i) + e(j))[1] - at(e(i) - e(j))[1] - at(e(j) - e(i))[1] +
         at(-e(i) - e(j))[1]) / (4 * step^2)
  }
  dyAy <- vapply(seq_len(q), function(i) (fp[[i]][-1] - fm[[i]][-1]) / (2 * step),
                 numeric(ncol(Y)))
  s2 <- f0[-1] / n
  Hit <- t(matrix(dyAy, ncol = q)) / rep(2 * s2, each = q)  # q x m
  H <- rbind(cbind(Hp - 2 / n * Hit %*% t(Hit), Hit),
             cbind(t(Hit), diag(-n / 2, ncol(Y))))
  list(hessian = H)
}

#' Covariance and confidence intervals of the estimated hyperparameters
#'
#' For a Gaussian-process regression fit (a squared-loss [krr()] fit on the
#' full kernel), the uncertainty about the hyperparameters estimated by
#' maximum likelihood: the bandwidth (`bandwidth = "ml"`) or the length
#' scales (`bandwidth = "ard"`), \eqn{\lambda} (`lambda = "ml"` or the
#' default) and the signal variance \eqn{s^2} of each output (always its
#' maximum-likelihood value; see [logLik.krr()]). Hyperparameters that were
#' given, or chosen otherwise (the median heuristic, GCV, cross-validation),
#' are held fixed and left out.
#'
#' With a mean function (`mean =`, universal kriging) the likelihood is the
#' one the fit maximised: profiled over the trend's coefficients (GLS), or
#' the restricted likelihood of a REML fit. The coefficients' own standard
#' errors are in [summary()][summary.krr] and [tidy()][krr-tidiers].
#' A mean function's hyperparameters have an exact covariance for
#' \eqn{n \le} 2000 and a listed kernel. With a noise model (`noise =`,
#' one output, the same sizes) the noise coefficients are hyperparameters
#' too (rows `noise:<covariate>`, in the data's units as in `summary()`'s
#' noise table, not logarithms: their intervals are \eqn{\hat\gamma \pm z
#' \, \mathrm{se}}), and `tidy(conf.int = TRUE)` gives the noise model's
#' intercept its standard error by the delta method.
#'
#' `vcov()` is the inverse of the observed information \eqn{-\nabla^2 \ell}
#' of the log likelihood at the estimate, in the parameters' logarithms (on
#' which the likelihood is closer to quadratic), computed exactly from the
#' kernel's first and second derivatives (one Cholesky factorisation and
#' \eqn{O(q n^3)} work for \eqn{q} hyperparameters) for \eqn{n \le} 2000
#' (option `askotch.tune_exact_max_n`). Above, without observation weights,
#' it comes from the stochastic likelihood of [krr_loglik()] on all points
#' with its probes and preconditioner fixed: the profile likelihood's
#' Hessian by second differences (\eqn{1 + 2q^2} evaluations with 200
#' probes, option `askotch.vcov_probes`, each tens of kernel passes); its
#' standard errors are then within a few percent of the exact ones. An
#' estimate at a bound of its search
#' range, or a likelihood that is flat in some direction, has no finite
#' covariance: `vcov()` then warns (class `askotch_warning_hyper`) and
#' returns `NA`s.
#'
#' A Laplace GP classifier (`kernel_machine(loss = loss_logistic(),
#' posterior = "laplace")`) estimates its bandwidth (or a composite kernel's
#' `"ml"` hyperparameters) and \eqn{\lambda} by the Laplace approximation
#' \eqn{\log q} of the marginal likelihood (summed over one-vs-rest
#' classifiers): its `vcov()` is the inverse of \eqn{-\nabla^2 \log q} in
#' their logarithms, by central differences of the analytic gradient, on the
#' points the search used (all of them up to 1000, option
#' `askotch.laplace_tune_max_n`, else the same subsample, whose precision the
#' estimate has), and `confint()` its Wald intervals. An EP classifier
#' (`posterior = "ep"`) whose hyperparameters EP's own search chose
#' maximises \eqn{\log Z_{EP}} plus the log density of the latent scale's
#' prior (see [kernel_machine()]): its `vcov()` is the inverse curvature of
#' that sum at its maximum, the Laplace approximation to the hyperparameters'
#' posterior, with EP converged to \eqn{10^{-10}} at each difference.
#'
#' `confint()` gives, with `method = "wald"`, the intervals
#' \eqn{\exp(\hat\theta \pm z \, \mathrm{se})} of the logarithms, and for the
#' noise variance \eqn{\lambda s^2} (when \eqn{\lambda} was estimated) the same
#' from the delta method on \eqn{\log\lambda + \log s^2}. With `method =
#' "profile"` the intervals of \eqn{\lambda} and of an isotropic bandwidth are
#' the sets where the profile likelihood ratio statistic stays below the
#' \eqn{\chi^2_1} quantile (as `fields` reports for the range and the
#' nugget); the other rows stay Wald intervals.
#'
#' @param object A `"krr"` fit.
#' @param parm Names (or indices) of the rows to return; all by default.
#' @param level The confidence level.
#' @param method `"wald"` or `"profile"`.
#' @param ... Unused.
#' @return `vcov()`: a symmetric matrix with one row and column per
#'   estimated hyperparameter, named `bandwidth` or `length_scale:<column>`,
#'   `lambda`, `signal_var` (`signal_var:<output>` for several outputs), of
#'   the estimates' logarithms. `confint()`: a matrix with the lower and upper
#'   limits on the hyperparameters' own scale, one row per estimated
#'   hyperparameter plus `noise_var`.
#' @seealso [logLik.krr()], [tidy.krr()], [summary.krr()]
#' @examples
#' fit <- krr(dist ~ speed, data = cars, bandwidth = "ml",
#'            threads = 1)
#' sqrt(diag(vcov(fit)))   # standard errors of the log hyperparameters
#' confint(fit)
#' @name krr-vcov
NULL

#' @rdname krr-vcov
#' @importFrom stats vcov confint
#' @export
vcov.krr <- function(object, ...) {
  call <- sys.call()
  validate_krr(object, call, "object")
  local_blas_threads(gp_threads(object))
  check_no_dots(list(...), "vcov", call)
  if (is_gp_classifier(object$posterior)) return(gpc_vcov(object, call)$V)
  gp_hyper_check(object, "vcov()", call)
  h <- gp_hyper(object)
  nz <- object$noise
  H <- if (isTRUE(h$composite)) composite_hessian(object) else
    if (object$n > tune_exact_max_n()) gp_hessian_stochastic(object, h)$hessian else
    gp_hessian_exact(object$x, gp_yc(object), object$kernel, object$lambda,
                     h$codes, h$est_lambda, d = if (is.null(nz)) gp_dw(object),
                     threads = gp_threads(object), trend = trend_lik(object),
                     noise = if (!is.null(nz)) {
                       list(Z = nz$Z, v = 1 / fit_obs_weights(object))
                     })$hessian
  if (!is.null(nz)) {
    # the coefficients of the standardised covariates gamma to the data's
    # units, gamma / scale (noise_table()'s)
    J <- rep(1, length(h$names))
    J[grepl("^noise:", h$names)] <- 1 / nz$scale
    H <- H / outer(J, J)
  }
  V <- tryCatch({
    R <- chol(-H)
    chol2inv(R)
  }, error = function(e) NULL)
  if (is.null(V)) {
    warn_askotch(paste(
      "The observed information of the hyperparameters is not positive",
      "definite (an estimate at a bound of its range, or a flat likelihood):",
      "no covariance. Try fixing that hyperparameter (a number) or another",
      "kernel."), "hyper")
    V <- matrix(NA_real_, nrow(H), ncol(H))
  }
  dimnames(V) <- list(h$names, h$names)
  V
}

check_level <- function(level, arg, call) {
  if (!is.numeric(level) || length(level) != 1L || !is.finite(level) ||
      level <= 0 || level >= 1) {
    abort_askotch(sprintf("`%s` must be one number in (0, 1).", arg), "input", call)
  }
}

# vcov() and confint() apply to the GP fits at exact sizes
gp_hyper_check <- function(object, what, call) {
  if (!is.null(object$distributed)) {
    abort_askotch(sprintf("%s is not available for a distributed fit.", what), "input", call)
  }
  gp_check(object, what, call)
  tab <- object$tuning$composite
  if (is_composite_kernel(object$kernel) && !is.null(tab) &&
      !composite_table_ok(object$kernel, tab)) {
    abort_askotch(paste("`object$tuning$composite` does not match the kernel's estimated",
                        "hyperparameters: a corrupted fit."), "object", call)
  }
  if (is_composite_kernel(object$kernel) &&
      (object$n > tune_exact_max_n() || !is.null(gp_dw(object)))) {
    abort_askotch(sprintf(paste(
      "%s of a composite kernel's hyperparameters is exact, without observation weights,",
      "for n <= %d (option askotch.tune_exact_max_n); this fit has n = %d."), what,
      tune_exact_max_n(), object$n), "input", call)
  }
  if (!is.null(object$noise$gp)) {
    abort_askotch(sprintf(paste(
      "%s of the hyperparameters is not available under a latent noise process",
      "(noise = ~ gp()): they are estimated by a Laplace approximation whose",
      "Hessian is not computed. A log-linear noise model (noise = ~ z) has it."), what),
      "input", call)
  }
  if (!is.null(object$noise) && (is.null(object$noise$Z) || object$m > 1L ||
                                 object$n > tune_exact_max_n())) {
    abort_askotch(sprintf(paste(
      "%s of the hyperparameters of a fit with a noise model (`noise =`) is",
      "exact, for one output and n <= %d (option askotch.tune_exact_max_n), and",
      "needs the noise design the fit keeps (fits made before it was kept: fit",
      "again)."), what, tune_exact_max_n()), "input", call)
  }
  if (!is.null(object$trend) &&
      (object$n > tune_exact_max_n() || is_composite_kernel(object$kernel))) {
    abort_askotch(sprintf(paste(
      "%s of the hyperparameters of a fit with a mean function is exact, for a",
      "listed kernel and n <= %d (option askotch.tune_exact_max_n); this fit",
      "has n = %d%s. The trend's coefficients have standard errors in",
      "summary() and tidy()."), what, tune_exact_max_n(), object$n,
      if (is_composite_kernel(object$kernel)) " and a composite kernel" else ""),
      "input", call)
  }
  if (!gp_applicable(object)) {
    abort_askotch(sprintf("%s needs a fit on the exact kernel without an intercept.", what),
                  "input", call)
  }
  if (object$n > tune_exact_max_n() && !is.null(gp_dw(object))) {
    abort_askotch(sprintf(paste(
      "%s with observation weights computes the observed information exactly,",
      "for n <= %d (option askotch.tune_exact_max_n); this fit has n = %d."),
      what, tune_exact_max_n(), object$n), "input", call)
  }
  if (is.null(object$x)) {
    abort_askotch(sprintf("%s needs the training points, which this fit does not keep.", what),
                  "input", call)
  }
  invisible(TRUE)
}

#' @rdname krr-vcov
#' @export
confint.krr <- function(object, parm, level = 0.95, method = c("wald", "profile"),
                        ...) {
  call <- sys.call()
  validate_krr(object, call, "object")
  local_blas_threads(gp_threads(object))
  check_no_dots(list(...), "confint", call)
  method <- check_choice(method[1L], c("wald", "profile"), "method", call)
  check_level(level, "level", call)
  if (is_gp_classifier(object$posterior)) {
    if (method == "profile") {
      abort_askotch("A GP classifier's intervals are Wald intervals: use method = \"wald\".",
                    "input", call)
    }
    g <- gpc_vcov(object, call)
    ci <- gp_wald(list(log = log(g$estimate), se = sqrt(diag(g$V))), level)
    return(gp_ci_finish(ci, parm, level, call))
  }
  gp_hyper_check(object, "confint()", call)
  h <- gp_hyper(object)
  if (method == "profile" && isTRUE(h$composite)) {
    abort_askotch(paste("Profile intervals are for a listed kernel's bandwidth and lambda;",
                        "use method = \"wald\" for a composite kernel."), "input", call)
  }
  ci <- gp_wald(gp_log_se(object, h), level)
  if (method == "profile") ci <- gp_profile_rows(object, h, ci, level)
  gp_ci_finish(ci, parm, level, call)
}

# confint()'s columns named by level, the rows parm (all when missing)
gp_ci_finish <- function(ci, parm, level, call) {
  colnames(ci) <- sprintf("%s %%", format(100 * c(1 - level, 1 + level) / 2,
                                          trim = TRUE, digits = 3))
  if (!missing(parm)) ci <- ci[check_parm(parm, rownames(ci), call), , drop = FALSE]
  ci
}

# confint()'s `parm`: names among the rows, or row numbers
check_parm <- function(parm, rows, call) {
  ok <- if (is.character(parm)) !anyNA(parm) && all(parm %in% rows) else
    is.numeric(parm) && !anyNA(parm) && all(parm == round(parm)) &&
      all(parm >= 1 & parm <= length(rows))
  if (!ok || length(parm) == 0L) {
    abort_askotch(sprintf(paste(
      "`parm` must name hyperparameters among %s, or give their numbers",
      "(1 to %d), not %s."), paste0("\"", rows, "\"", collapse = ", "),
      length(rows), fmt_value(parm)), "input", call)
  }
  parm
}

# The estimates' logarithms and their standard errors (vcov()), with the
# noise variances lambda s_c^2 (log lambda + log s_c^2) when lambda was
# estimated: list(log, se), named vectors
gp_log_se <- function(object, h) {
  V <- vcov(object)
  # (a noise model's coefficients are on the log scale already)
  nzr <- grepl("^noise:", h$names)
  lv <- stats::setNames(gp_hyper_values(object, h), h$names)
  lv[!nzr] <- log(lv[!nzr])
  se <- sqrt(diag(V))
  if (h$est_lambda) {
    s2 <- grep("^signal_var", h$names)
    il <- match("lambda", h$names)
    nv <- sub("^signal_var", "noise_var", h$names[s2])
    lv[nv] <- lv[il] + lv[s2]
    se[nv] <- sqrt(V[il, il] + diag(V)[s2] + 2 * V[il, s2])
  }
  list(log = lv, se = se, V = V)
}

# Wald intervals exp(log +- z se) of gp_log_se()'s estimates, one row each
# (a noise model's coefficients: log +- z se)
gp_wald <- function(ls, level) {
  z <- stats::qnorm((1 - level) / 2, lower.tail = FALSE)
  ci <- cbind(ls$log - z * ls$se, ls$log + z * ls$se)
  lin <- grepl("^noise:", names(ls$log))
  ci[!lin, ] <- exp(ci[!lin, , drop = FALSE])
  rownames(ci) <- names(ls$log)
  ci
}

# The profile-likelihood intervals of lambda and an isotropic bandwidth
# (rows of ci replaced; exact likelihood, no observation weights)
gp_profile_rows <- function(object, h, ci, level) {
  if (!is.null(gp_dw(object)) || object$m > 1L || object$n > tune_exact_max_n()) {
    abort_askotch(sprintf(paste(
      "method = \"profile\" needs a single-output fit without observation",
      "weights or a noise model and n <= %d (its likelihoods are exact); use",
      "method = \"wald\"."),
      tune_exact_max_n()), "input")
  }
  top <- gp_loglik_exact(object$x, gp_lik_targets(object), object$kernel, object$lambda,
                         gradient = FALSE, threads = gp_threads(object),
                         trend = trend_lik(object))$loglik
  cut <- top - stats::qchisq(level, 1) / 2
  for (what in intersect(c("lambda", "bandwidth"), rownames(ci))) {
    f <- gp_profile_fun(object, h, what)
    at <- log(if (what == "lambda") object$lambda else object$kernel$bandwidth)
    ci[what, ] <- exp(c(gp_profile_end(f, at, cut, -1), gp_profile_end(f, at, cut, 1)))
  }
  ci
}

# The profile log likelihood of log lambda (the bandwidth re-estimated when
# it was) or of the log bandwidth (lambda re-estimated when it was)
gp_profile_fun <- function(object, h, what) {
  xs <- object$x
  Y <- gp_lik_targets(object)
  th <- gp_threads(object)
  kern <- object$kernel
  tr <- trend_lik(object)
  if (what == "lambda") {
    return(function(t) {
      if (identical(h$codes, -1L)) {
        gp_optimise(xs, Y, kern, lambda = exp(t), threads = th, trend = tr)$optim$loglik
      } else {
        gp_loglik_exact(xs, Y, kern, exp(t), gradient = FALSE, threads = th,
                        trend = tr)$loglik
      }
    })
  }
  function(t) {
    kern$bandwidth <- exp(t)
    lam <- if (h$est_lambda) {
      gp_eigen_best(gp_eigen(kernel_mat(xs, xs, kern, th), Y, tr), "ml")
    } else object$lambda
    gp_loglik_exact(xs, Y, kern, lam, gradient = FALSE, threads = th, trend = tr)$loglik
  }
}

# The targets of a fit's exact likelihood: the centred ones, or with a mean
# function the responses themselves (beta is profiled from them afresh)
gp_lik_targets <- function(object) if (is.null(object$trend)) gp_yc(object) else object$y

# Where the profile log likelihood f falls to `cut`, from the estimate `at`
# in direction dir (log scale): steps of 0.25 doubling out to a factor 1e4,
# then a root search; NA (an open end) when it never falls that far.
gp_profile_end <- function(f, at, cut, dir) {
  step <- 0.25
  inner <- at
  repeat {
    outer <- at + dir * step
    if (f(outer) < cut) break
    inner <- outer
    if (step > log(1e4)) return(if (dir < 0) -Inf else Inf)
    step <- 2 * step
  }
  stats::uniroot(function(t) f(t) - cut, sort(c(inner, outer)), tol = 1e-4)$root
}

# tidy(conf.int = TRUE) for summary()'s tables of the estimated
# hyperparameters, NULL where it does not apply or would cost more than
# about 5e9 operations
gp_hyper_tidy <- function(object) {
  if (is_gp_classifier(object$posterior)) return(gpc_hyper_tidy(object))
  if (!is.null(object$distributed) || !gp_applicable(object) ||
      !object$task %in% c("regression", "multioutput") ||
      inherits(object, "kernel_machine") || is.null(object$x) ||
      object$n > tune_exact_max_n()) return(NULL)
  q <- length(gp_hyper(object)$names)
  if (q * as.numeric(object$n)^3 > 5e9) return(NULL)
  tryCatch(suppressWarnings(tidy(object, conf.int = TRUE)), error = function(e) NULL)
}

# A GP classifier's rows: where its search ran on at most
# laplace_tune_max_n()'s default of 1000 points (vcov() differences the
# search's objective there, a few of its steps)
gpc_hyper_tidy <- function(object) {
  nu <- object$tuning$n_used
  if (!is.numeric(nu) || length(nu) != 1L || !is.finite(nu) || nu > 1000) return(NULL)
  tryCatch(suppressWarnings(tidy(object, conf.int = TRUE)), error = function(e) NULL)
}

# The hyperparameters' table of gp_hyper_tidy()'s rows (the mean
# function's and the noise model's coefficients have their own tables)
gp_hyper_table <- function(td) {
  if (is.null(td)) return(NULL)
  td <- td[!is.na(td$std.error) & !grepl("^(mean|noise):", td$term), , drop = FALSE]
  if (nrow(td) == 0L) return(NULL)
  data.frame(estimate = td$estimate, std.error = td$std.error, lower = td$conf.low,
             upper = td$conf.high, row.names = td$term)
}

# summary()'s noise table: noise_table() with the coefficients' standard
# errors from gp_hyper_tidy()'s rows where it has them (one output)
noise_summary <- function(object, td) {
  nt <- noise_table(object)
  se <- if (!is.null(td) && ncol(nt) == 1L) {
    td$std.error[match(paste0("noise:", rownames(nt)), td$term)]
  }
  if (is.null(se) || all(is.na(se))) return(nt)
  cbind(estimate = nt[, 1L], std.error = se)
}

# A fit whose lambda was chosen by maximum likelihood warns (class
# askotch_warning_hyper) when the estimate sits at a bound of its search
# range, or when the signal variance it implies is over 100 times the
# response's variance (the kernel interpolates the data: a bandwidth far too
# small for them), saying what to try.
warn_hyper <- function(fit, call = NULL) {
  tn <- fit$tuning
  if (is.null(tn) || !identical(tn$lambda_rule, "ml") || !gp_applicable(fit) ||
      is_composite_kernel(fit$kernel) ||
      inherits(fit, "kernel_machine") || !fit$task %in% c("regression", "multioutput")) {
    return(invisible(NULL))
  }
  lam <- fit$lambda
  vy <- apply(as.matrix(fit$y), 2L, stats::var)
  ratio <- max(gp_signal_var(fit) / pmax(vy, .Machine$double.xmin))
  try_bw <- if (identical(tn$bandwidth_rule, "median")) "bandwidth = \"ml\", " else ""
  # a kernel chosen by likelihood (tuning$models) is not second-guessed
  try_k <- if (is.null(tn$models) && identical(fit$kernel$name, "rbf")) {
    "kernel = \"matern32\", "
  } else ""
  msg <- if (lam <= ml_lambda_range[1L] * 1.01) {
    sprintf(paste("lambda = %s is at the lower end of its maximum-likelihood range:",
                  "the model interpolates the data. Try %s%sa given `lambda`."),
            format(signif(lam, 3)), try_bw, try_k)
  } else if (lam >= ml_lambda_range[2L] / 1.01) {
    sprintf(paste("lambda = %s is at the upper end of its maximum-likelihood range:",
                  "the data show no signal at this bandwidth. Try %sa larger",
                  "`bandwidth`."), format(signif(lam, 3)), try_bw)
  } else if (is.finite(ratio) && ratio > 100) {
    tries <- paste0(try_bw, try_k)
    sprintf(paste("The maximum-likelihood signal variance is %s times var(y)",
                  "(lambda = %s): the kernel is too narrow for these data. %s"),
            format(signif(ratio, 3)), format(signif(lam, 3)),
            if (nzchar(tries)) sprintf("Try %sor check the scaling of `x`.", tries) else
              "Check the scaling of `x`.")
  }
  if (!is.null(msg)) warn_askotch(msg, "hyper", call)
  invisible(NULL)
}
