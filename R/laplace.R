# Gaussian-process classification by the Laplace approximation ---------------
#
# kernel_machine(x, y, loss = loss_logistic(), posterior = "laplace"). The
# logistic fit minimises (lambda / 2) ||f||^2_H + sum_i log(1 + exp(-y_i f_i)):
# it is the posterior mode f^ of a GP classifier with latent prior
# f ~ GP(0, k / lambda) and the logistic likelihood (Rasmussen and Williams
# 2006, sec. 3.4, with K~ = K / lambda). Around the mode, with pi = sigma(f^)
# and W = diag(pi (1 - pi)), the Laplace approximation gives
#   latent variance at x: (1 / lambda) [k(x, x) - k_x^T (K + lambda W^{-1})^{-1} k_x]
#     (R&W eq. 3.24: the variance of a weighted GP regression with weights W
#     and signal variance 1 / lambda, which R/gp.R computes at any n),
#   class probability averaged over it (R&W eq. 3.25): the mean of
#     sigma(f) for f normal with mean mu and variance v, by the compiled
#     integral of EP's tilted normalisers (laplace_prob()),
#   approximate log marginal likelihood (R&W eq. 3.32):
#     log q = -(lambda / 2) alpha^T f^ + sum_i log sigma(y_i f^_i)
#             - 1/2 log det(I + W^{1/2} K W^{1/2} / lambda),
#   alpha the fit's weights (f^ = K alpha).
# lambda and the bandwidth are chosen by maximising log q on a subsample
# of at most option askotch.laplace_tune_max_n points (default 1000) by
# L-BFGS-B with the exact gradient (R&W Algorithm 5.1): each evaluation
# finds the mode by Newton's method (R&W Algorithm 3.1, started from the
# previous mode) in base R linear algebra; the final fit then runs the
# package's logistic solver on all points, started from the Newton mode on
# all of them up to option askotch.laplace_newton_max_n points (both in
# R/tune-laplace.R). One-vs-rest: one binary GP per class, sharing lambda
# and the kernel, log q summed over the classes.

# The weighted-GP view of column o of a GP classifier: what R/gp.R's
# variance methods read (the observation weights w, lambda, no mean term),
# as a regression fit
laplace_view <- function(object, o, w) {
  v <- object
  class(v) <- "krr"
  v$loss <- loss_squared()
  v$task <- "regression"
  v$m <- 1L
  v$weights <- object$weights[, o, drop = FALSE]
  v$obs_weights <- pmax(w, .Machine$double.eps)
  v$gp_no_mean <- TRUE
  v$gp_id <- paste0(object$gp_id, ":laplace:", o)
  v
}

# The weights of the weighted-GP views (n x m): W = pi (1 - pi) at the
# modes (Laplace), or EP's site precisions
gpc_site_weights <- function(object) {
  if (identical(object$posterior, "ep")) return(object$ep$tau)
  pi <- stats::plogis(fitted_scores(object))
  pi * (1 - pi)
}

# The latent mean and variance at the standardised points xs (n_new x m each)
laplace_latent <- function(object, xs, call = NULL) {
  W <- gpc_site_weights(object)
  if (identical(object$posterior, "ep")) object <- ep_as_mean(object)
  mu <- krr_scores(object, xs)
  # the exact variance, or the Nystrom bracket's lower end (the pathwise
  # method would solve with the logistic fit's solver)
  method <- if (object$n <= gp_exact_fallback_n()) "exact" else "nystrom"
  V <- vapply(seq_len(ncol(mu)), function(o) {
    gp_variance(laplace_view(object, o, W[, o]), xs, method, 100L, call)$var / object$lambda
  }, numeric(nrow(xs)))
  list(mean = mu, var = matrix(V, nrow(xs)))
}

# Class probabilities averaged over the latent N(mean, var): E sigma(f), the
# normaliser of EP's tilted distribution with y = 1 (native_ep_tilted(): the
# trapezoidal rule, exact to rounding here), not MacKay's probit
# approximation sigma(mean / sqrt(1 + pi var / 8)), which errs by up to 0.013
# in probability at var 4 to 16; sigma(mean) where var is 0, NA where it is
# NA. One-vs-rest columns normalised to sum to 1.
laplace_prob <- function(lat) {
  p <- stats::plogis(lat$mean)
  p[is.na(lat$var)] <- NA_real_
  pos <- which(lat$var > 0)
  if (length(pos)) {
    p[pos] <- exp(native_ep_tilted(rep(1, length(pos)), lat$mean[pos], lat$var[pos])[, 1L])
  }
  if (ncol(p) > 1L) p <- p / rowSums(p)
  p
}

# The Laplace approximation's log marginal likelihood of a fit, summed over
# its columns: exact up to tune_exact_max_n() points (one Cholesky per
# column), above from the stochastic log determinant of W^{1/2} K W^{1/2} +
# lambda I (krr_gp_slq, with its standard error).
laplace_loglik <- function(object) {
  Fh <- fitted_scores(object)
  Y <- object$y
  lam <- object$lambda
  n <- object$n
  total <- 0
  se2 <- 0
  for (o in seq_len(ncol(Y))) {
    w <- stats::plogis(Fh[, o]) * (1 - stats::plogis(Fh[, o]))
    sw <- sqrt(pmax(w, .Machine$double.eps))
    ld <- if (n <= tune_exact_max_n()) {
      K <- gp_kmat(object, gp_xs(object), gp_xs(object))
      K <- K * outer(sw, sw)
      diag(K) <- diag(K) + lam
      list(logdet = 2 * sum(log(diag(chol(K)))), se = 0)
    } else {
      st <- gp_loglik_stochastic(gp_xs(object), matrix(1, n, 1), object$kernel, lam,
                                 gradient = FALSE, seed = object$seed,
                                 threads = gp_threads(object), d = sw)
      list(logdet = st$logdet, se = st$logdet_se)
    }
    total <- total - lam / 2 * sum(object$weights[, o] * Fh[, o]) +
      sum(stats::plogis(Y[, o] * Fh[, o], log.p = TRUE)) - (ld$logdet - n * log(lam)) / 2
    se2 <- se2 + (ld$se / 2)^2
  }
  list(loglik = total, se = if (se2 > 0) sqrt(se2))
}

# predict() of a Laplace fit: the averaged probabilities, or the latent
# mean and standard deviation (se.fit), at newdata (NULL: the training
# points); rows with missing values give NA
laplace_predict <- function(object, newdata, se.fit) {
  pp <- predict_points(object, newdata)
  rk <- pp$rk
  lat <- laplace_latent(object, pp$xs)
  one <- ncol(lat$mean) == 1L
  shape <- function(M) {
    if (one) return(stats::setNames(M[, 1L], rk))
    dimnames(M) <- list(rk, object$levels)
    M
  }
  out <- if (se.fit) {
    list(fit = shape(lat$mean), se.fit = shape(sqrt(lat$var)))
  } else shape(laplace_prob(lat))
  na_expand(out, pp$ok, pp$rn)
}

#' Log marginal likelihood of a GP classifier
#'
#' For a [kernel_machine()] fit with `loss = loss_logistic()` and
#' `posterior = "ep"`: expectation propagation's approximation of the log
#' marginal likelihood (Rasmussen and Williams 2006, sec. 3.6), summed over
#' the one-vs-rest classifiers. With `posterior = "laplace"`: the Laplace
#' approximation's
#' \eqn{\log q(y \mid X) = -\frac12 \hat f^T \tilde K^{-1} \hat f + \sum_i
#' \log \sigma(y_i \hat f_i) - \frac12 \log\det(I + W^{1/2} \tilde K
#' W^{1/2})} (Rasmussen and Williams 2006, eq. 3.32), \eqn{\tilde K = K /
#' \lambda} the latent prior covariance and \eqn{\hat f} the fit's decision
#' values (its posterior mode), summed over the one-vs-rest classifiers:
#' exact up to 2000 points (option `askotch.tune_exact_max_n`), above with
#' a stochastic log determinant (its standard error the attribute `"se"`).
#' `lambda` and the bandwidth were chosen by maximising it (on a subsample
#' of at most 1000 points, option `askotch.laplace_tune_max_n`) unless given;
#' with `posterior = "ep"`, EP's approximation times a prior on the latent
#' scale ([kernel_machine()]).
#'
#' @param object A `"kernel_machine"` fit with `posterior = "laplace"` or
#'   `"ep"`.
#' @param ... Unused.
#' @return An object of class `"logLik"` with attributes `df` (\eqn{\lambda}
#'   and the bandwidth where estimated) and `nobs`.
#' @examples
#' set.seed(1)
#' x <- matrix(rnorm(200), ncol = 2)
#' y <- factor(x[, 1] + rnorm(100, sd = 0.5) > 0)
#' gpc <- kernel_machine(x, y, loss = loss_logistic(), posterior = "laplace",
#'                       threads = 1)
#' logLik(gpc)
#' @export
logLik.kernel_machine <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  check_no_dots(list(...), "logLik", sys.call())
  if (!is_gp_classifier(object$posterior)) {
    abort_askotch(paste(
      "logLik() of a kernel machine needs posterior = \"laplace\" or \"ep\" (the",
      "logistic loss's GP classifier); the squared loss's fits are krr() fits."), "input")
  }
  tn <- object$tuning
  df <- if (is.null(tn)) 0L else (tn$lambda_rule %in% c("laplace", "ep")) +
    if (!is.null(tn$composite)) NROW(tn$composite) else identical(tn$bandwidth_rule, "ml")
  v <- if (identical(object$posterior, "ep")) list(loglik = sum(object$ep$logz)) else
    laplace_loglik(object)
  structure(v$loglik, df = df, nobs = object$n, se = v$se, class = "logLik")
}

# vcov() of a GP classifier: the inverse of the negative Hessian of its
# search's objective in the logarithms of the estimated hyperparameters (a
# listed kernel's bandwidth, a composite's rows of tuning$composite, then
# lambda), at the estimate and on the points the search used (all of them
# up to laplace_tune_max_n() when it ran, else the same subsample: the
# estimate's own precision), by central differences of the objective's
# analytic gradient. The objective is the summed log q of the Laplace
# approximation (laplace_value()), or for hyperparameters EP's search chose
# (tuning$search "ep") the summed log Z_EP plus the scale prior's log density
# (ep_value(), with the fit's prior scale): the curvature of that posterior
# at its mode. Returns V and the estimates on their own scale, named alike.
gpc_vcov <- function(object, call) {
  g <- gpc_vcov_setup(object, call)
  rows <- subsample_rows(object$n, g$n_used, object$seed)
  xs <- gp_xs(object)[rows, , drop = FALSE]
  Y <- as.matrix(object$y)[rows, , drop = FALSE]
  space <- if (is.null(g$tab)) gpc_space(xs, object$kernel, g$fit_k, g$fit_lam, object$seed,
                                          gp_threads(object)) else
    gpc_space_composite(xs, object$kernel, g$tab, log(g$tab$estimate), gp_threads(object))
  # EP's gradient holds at its fixed point: to 1e-10 here, so that its
  # differences (step 1e-3) resolve the curvature (at the search's 1e-4 they
  # were off by up to 17%)
  value <- if (g$ep) ep_value(space, Y, g$fit_lam, g$sd_prior, tol = 1e-10)$value else
    laplace_value(space, Y)
  obj <- gpc_objective(space, g$fit_lam, object$lambda, value)
  th <- c(if (!is.null(g$tab)) log(g$tab$estimate) else if (g$fit_k) log(object$kernel$bandwidth),
          if (g$fit_lam) log(object$lambda))
  H <- gpc_hessian(obj, th)
  V <- tryCatch(chol2inv(chol(H)), error = function(e) NULL)
  if (is.null(V)) {
    warn_askotch(paste(
      "The observed information of the classifier's hyperparameters is not",
      "positive definite (an estimate at a bound of its range, or a flat",
      "marginal likelihood): no covariance."), "hyper")
    V <- matrix(NA_real_, length(th), length(th))
  }
  nm <- c(if (!is.null(g$tab)) composite_param_names(object$kernel, g$tab) else
    if (g$fit_k) "bandwidth", if (g$fit_lam) "lambda")
  dimnames(V) <- list(nm, nm)
  list(V = V, estimate = stats::setNames(exp(th), nm))
}

# What gpc_vcov() reads from a classifier's fit, checked: which
# hyperparameters were estimated, by which search, on how many points, and a
# composite's table.
gpc_vcov_setup <- function(object, call) {
  tn <- object$tuning
  comp <- is_composite_kernel(object$kernel)
  tab <- if (comp) tn$composite
  fit_lam <- identical(tn$lambda_rule, "laplace") || identical(tn$lambda_rule, "ep")
  fit_k <- if (comp) NROW(tab) > 0L else identical(tn$bandwidth_rule, "ml")
  why <- if (!fit_k && !fit_lam) {
    "an estimated bandwidth or lambda (this fit was given both)"
  } else if (is.null(object$x) && is.null(object$x_train)) {
    "the training points, which this fit does not keep"
  }
  if (!is.null(why)) {
    abort_askotch(sprintf("vcov() of a GP classifier's hyperparameters needs %s.", why),
                  "input", call)
  }
  corrupt <- function(what) {
    abort_askotch(sprintf("`object$tuning$%s` %s: a corrupted fit.", what[1], what[2]),
                  "object", call)
  }
  nu <- tn$n_used
  if (!is.numeric(nu) || length(nu) != 1L || !is.finite(nu) || nu < 1 || nu > object$n) {
    corrupt(c("n_used", "is not a count of training points"))
  }
  search <- tn$search %||% "laplace"
  if (!(identical(search, "laplace") || identical(search, "ep"))) {
    corrupt(c("search", "is neither \"laplace\" nor \"ep\""))
  }
  U <- tn$optim$sd_prior
  if (search == "ep" && !(is.numeric(U) && length(U) == 1L && is.finite(U) && U > 0)) {
    corrupt(c("optim$sd_prior", "is not a positive number"))
  }
  if (comp && !is.null(tab) && !composite_table_ok(object$kernel, tab)) {
    corrupt(c("composite", "does not match the kernel's estimated hyperparameters"))
  }
  list(tab = if (comp && NROW(tab)) tab, fit_k = fit_k, fit_lam = fit_lam,
       n_used = nu, ep = search == "ep", sd_prior = U)
}

# The Hessian of obj(th)$f by central differences of its gradient (step h
# in each logarithm), symmetrised; an error if an evaluation failed
gpc_hessian <- function(obj, th, h = 1e-3) {
  d <- length(th)
  H <- matrix(0, d, d)
  for (i in seq_len(d)) {
    e <- replace(numeric(d), i, h)
    gp <- obj(th + e)$g
    gm <- obj(th - e)$g
    if (is.null(gp) || is.null(gm)) {
      abort_askotch(paste("The Laplace mode or EP did not converge next to the estimate:",
                          "no covariance."),
                    "numeric")
    }
    H[, i] <- (gp - gm) / (2 * h)
  }
  (H + t(H)) / 2
}
