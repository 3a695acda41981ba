# The Gaussian-process view of a fit: log likelihood, AIC/BIC, deviance and the
# model statistics of summary() ---------------------------------------------------

# The number of parameters estimated from the data (see ?logLik.krr).
gp_df <- function(object) {
  tn <- object$tuning
  regression <- object$task %in% c("regression", "multioutput")
  est_lambda <- !is.null(tn) && !identical(tn$lambda_rule, "fixed")
  est_kernel <- if (is.null(tn)) 0L else if (!is.null(tn$composite)) NROW(tn$composite) else
    switch(tn$bandwidth_rule, ml = 1L, ard = object$p, 0L)
  q <- if (is.null(object$trend)) 1L else ncol(object$trend$F)
  object$m * (1L + regression * q) + est_lambda + est_kernel + length(object$noise$coef) +
    2L * !is.null(object$noise$gp)
}

#' Log marginal likelihood, AIC, BIC, deviance and the number of observations
#'
#' The Gaussian-process reading of a kernel ridge regression fit: each column
#' of the centred targets \eqn{y} is a draw of \eqn{N(0, s^2 (K + \lambda
#' I))}, with \eqn{\lambda} the noise-to-signal variance ratio and the
#' signal variance \eqn{s^2 = y^T (K + \lambda I)^{-1} y / n} profiled out
#' (its maximum-likelihood value). `logLik()` returns the profile log
#' marginal likelihood
#' \deqn{-\frac n2 \log(2\pi s^2) - \frac n2 - \frac12 \log\det(K + \lambda I)}
#' (summed over output columns), exactly (one eigendecomposition) for \eqn{n
#' \le} 2000 (option `askotch.tune_exact_max_n`) and above by stochastic
#' Lanczos quadrature preconditioned with a Nyström approximation (see
#' [krr_loglik()]; its standard error is the attribute `"se"`). The targets
#' are centred by their mean (the model's constant), which is not integrated
#' out. For a fit with observation weights \eqn{w_i} the covariance is
#' \eqn{s^2 (K + \lambda W^{-1})} (noise \eqn{\lambda s^2 / w_i}), the
#' targets are centred by their weighted mean, and the log likelihood is
#' that of \eqn{W^{1/2} y} under \eqn{N(0, s^2 (W^{1/2} K W^{1/2} +
#' \lambda I))} plus \eqn{\frac12 \sum_i \log w_i} per output.
#'
#' @section Degrees of freedom:
#' `df` counts the parameters estimated from the data: one signal variance
#' per output, one mean per output for regression (classification targets
#' are not centred), \eqn{\lambda} when it was chosen from the data (any
#' rule but a given number), and the bandwidth (`bandwidth = "ml"`) or the
#' \eqn{p} length scales (`bandwidth = "ard"`). The median-heuristic
#' bandwidth does not look at the response and is not counted. `AIC()` and
#' `BIC()` use this `df` and `nobs()`.
#'
#' @param object A `"krr"` fit of the squared loss on the exact kernel (not an
#'   inducing-point, random-features or intercept fit).
#' @param ... Unused.
#' @return `logLik()`: an object of class `"logLik"` with attributes `df` and
#'   `nobs` (and `se` when estimated); `nobs()`: the number of training
#'   points; `deviance()`: the residual sum of squares (over all outputs; for
#'   classification of the +1/-1 targets), as for [lm()].
#' @seealso [krr_loglik()], [krr()] for `lambda = "ml"`.
#' @examples
#' fit <- krr(mpg ~ ., data = mtcars, threads = 1)
#' logLik(fit)
#' AIC(fit)
#' BIC(fit)
#' deviance(fit)
#' nobs(fit)
#' @name krr-loglik
NULL

#' @rdname krr-loglik
#' @export
logLik.krr <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  if (!gp_applicable(object)) {
    abort_askotch(paste(
      "logLik() needs a squared-loss fit on the exact kernel at the training",
      "points (not an inducing-point, random-features or intercept fit)."),
      "input")
  }
  st <- gp_fit_stats(object)
  if (is.na(st$loglik)) {
    abort_askotch(sprintf(paste(
      "logLik() of a latent noise process (noise = ~ gp()) is its Laplace",
      "approximation on the rows it was estimated on, here %d of %d (option",
      "askotch.noise_gp_max_n)."), length(object$noise$gp$rows), object$n), "input")
  }
  structure(st$loglik, df = gp_df(object), nobs = object$n,
            se = st$se, class = "logLik")
}

#' @rdname krr-loglik
#' @importFrom stats nobs
#' @export
nobs.krr <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  object$n
}

#' @rdname krr-loglik
#' @export
deviance.krr <- function(object, ...) sum(stats::residuals(object)^2)

#' Log marginal likelihood of a Gaussian-process regression
#'
#' The profile log marginal likelihood of the kernel ridge regression model
#' \eqn{y - \bar y \sim N(0, s^2 (K + \lambda I))} (see [logLik.krr()]) at
#' given hyperparameters, with its gradient with respect to their logarithms:
#' the log bandwidth (or the log length scales) and \eqn{\log\lambda}. This
#' is what `krr(lambda = "ml", bandwidth = "ml" | "ard")` maximises.
#'
#' `method = "exact"` uses a Cholesky factorisation (\eqn{O(n^3)} time,
#' \eqn{O(n^2)} memory). `method = "stochastic"` never forms \eqn{K}: a
#' batched conjugate-gradient run on \eqn{[y, z_1, \dots, z_s]}
#' (Gardner et al. 2018), preconditioned by a rank-`rank` pivoted Cholesky
#' factor of \eqn{K}, in compiled code, gives \eqn{(K + \lambda I)^{-1} y} and,
#' from its coefficients, stochastic Lanczos quadrature for \eqn{\log\det(K
#' + \lambda I)} (Ubaru, Chen and Saad 2017) and Hutchinson estimates of the
#' traces in the gradient and of the effective degrees of freedom. The
#' estimate is unbiased up to the quadrature error (negligible at
#' convergence); `se` is its standard error (the probe terms' standard
#' deviation over \eqn{\sqrt s}): the error is below `3 * se` with
#' probability about 99.7%. The gradient (in the log bandwidth or log length
#' scales, and \eqn{\log\lambda}) is available for every kernel: its
#' kernel products with \eqn{\partial K} are central differences of two
#' kernel products (relative error below \eqn{10^{-9}}), its traces
#' Hutchinson estimates with standard errors `gradient_se`. `"auto"` is
#' exact for \eqn{n \le} 2000 (option
#' `askotch.tune_exact_max_n`).
#'
#' @inheritParams krr
#' @param y A numeric response (vector or matrix; each column its own
#'   signal variance, the same \eqn{K} and \eqn{\lambda}), or a factor (+1/-1
#'   targets, one column per class for more than two classes).
#' @param kernel A kernel name (`"rbf"`, the default, `"laplace"`,
#'   `"matern12"`, `"matern32"`, `"matern52"`) or a kernel object such as
#'   [kernel_rbf()]: the likelihood is evaluated at the given kernel.
#' @param bandwidth A positive number or `"median"` (the default; with
#'   `length_scales`, 1).
#' @param standardize Centre and scale the columns of `x`: `TRUE` (the
#'   default, each column by its own standard deviation), `"joint"` (every
#'   column by one scale) or `FALSE`.
#' @param lambda The noise-to-signal variance ratio \eqn{\lambda > 0}.
#' @param length_scales `NULL`, or one positive length scale per column of
#'   `x` (applied after standardisation: the kernel sees \eqn{x_j /
#'   \ell_j}); the gradient is then with respect to the log length scales.
#' @param gradient Compute the gradient?
#' @param method `"auto"`, `"exact"` or `"stochastic"`.
#' @param probes,rank Number of random probes and the preconditioner's rank
#'   in the stochastic method.
#' @param ... Unused; an unknown argument is an error.
#' @return A list: `loglik`, `gradient` (named; `NULL` when not computed),
#'   `signal_var` (\eqn{s^2} per output), `logdet` (\eqn{\log\det(K +
#'   \lambda I)}), `edf` (stochastic method; \eqn{\mathrm{tr}(K (K + \lambda
#'   I)^{-1})}), `se`, `logdet_se`, `edf_se` and `gradient_se` (stochastic
#'   method) and `method`.
#' @seealso [logLik.krr()], [krr()]
#' @examples
#' set.seed(1)
#' x <- matrix(runif(200), ncol = 2)
#' y <- sin(4 * x[, 1]) + rnorm(100, sd = 0.1)
#' krr_loglik(x, y, bandwidth = 1, lambda = 0.01, threads = 1)
#' @export
krr_loglik <- function(x, y, kernel = "rbf", bandwidth = "median", lambda,
                       length_scales = NULL, standardize = TRUE,
                       gradient = TRUE, method = c("auto", "exact", "stochastic"),
                       probes = 30, rank = 200, seed = NULL, threads = NULL, ...) {
  ecall <- sys.call()
  check_no_dots(list(...), "krr_loglik", ecall)
  if (missing(lambda)) abort_askotch("`lambda` is missing.", "input", ecall)
  check_positive(lambda, "lambda", call = ecall)
  method <- check_choice(method[1L], c("auto", "exact", "stochastic"), "method",
                         ecall)
  check_flag(gradient, "gradient", ecall)
  check_positive(probes, "probes", integerish = TRUE, call = ecall,
                 max = .Machine$integer.max)
  if (probes < 2) abort_askotch("`probes` must be at least 2.", "input", ecall)
  check_positive(rank, "rank", integerish = TRUE, call = ecall,
                 max = .Machine$integer.max)
  if (identical(standardize, "auto")) {
    abort_askotch(paste(
      "`standardize` must be TRUE, FALSE or \"joint\" here: krr_loglik()",
      "evaluates the likelihood of one model and chooses nothing."), "input", ecall)
  }
  dat <- krr_data(x, y, standardize, loss_squared(), ecall)
  threads <- if (is.null(threads)) 0L else {
    check_positive(threads, "threads", integerish = TRUE, call = ecall)
    threads_cap(threads)
  }
  local_blas_threads(threads)
  seed <- if (is.null(seed)) floor(stats::runif(1L) * 2^31) else seed
  ard <- !is.null(length_scales)
  xs <- dat$xs
  if (ard) {
    if (!is.numeric(length_scales) || length(length_scales) != dat$p ||
        any(!is.finite(length_scales)) || any(length_scales <= 0)) {
      abort_askotch(sprintf(
        "`length_scales` must be %d positive number(s), one per column of `x`.",
        dat$p), "input", ecall)
    }
    if (missing(bandwidth)) bandwidth <- 1
    xs <- sweep(xs, 2L, length_scales, "/", check.margin = FALSE)
  }
  kern <- as_kernel(kernel, bandwidth, TRUE, ecall)
  if (is.character(kern$bandwidth)) {
    if (kern$bandwidth != "median") {
      abort_askotch("`bandwidth` must be a positive number or \"median\" here.",
                    "input", ecall)
    }
    kern$bandwidth <- median_bandwidth(xs, kern$metric, seed)
  }
  if (method == "auto") method <- if (dat$n <= tune_exact_max_n()) "exact" else
    "stochastic"
  out <- if (method == "exact") {
    gp_loglik_exact(xs, dat$Yc, kern, lambda, ard, gradient, threads)
  } else {
    gp_loglik_stochastic(xs, dat$Yc, kern, lambda, ard, gradient,
                         probes = probes, rank = rank, seed = seed,
                         threads = threads)
  }
  out$alpha <- out$precond <- out$terms <- NULL
  if (!is.null(out$gradient)) {
    nk <- length(out$gradient) - 1L
    names(out$gradient) <- c(
      if (nk == 1L && !ard) "log_bandwidth" else if (nk > 0L)
        paste0("log_length_scale", if (is.null(dat$xnames)) seq_len(nk) else
          paste0(".", dat$xnames)),
      "log_lambda")
    if (!is.null(out$gradient_se)) names(out$gradient_se) <- names(out$gradient)
  }
  out$method <- method
  out$bandwidth <- kern$bandwidth
  out
}

# The coefficient table of output o: estimate, standard error
# sqrt(s^2 diag(C^{-1})) and t value on n - q degrees of freedom. The
# hyperparameters are treated as known (as kriging does).
trend_table <- function(object, o = 1L) {
  tr <- object$trend
  s2 <- gp_signal_var(object)[o]
  est <- tr$coef[, o]
  se <- sqrt(s2 * diag(tr$cov_unscaled))
  tv <- est / se
  df <- object$n - ncol(tr$F)
  data.frame(estimate = est, std.error = se, statistic = tv,
             p.value = 2 * stats::pt(-abs(tv), df), row.names = names(est))
}

# The log-linear model of the noise variance in the data's units, per
# output: log sigma^2(z) = delta_0 + z^T delta, delta = gamma / scale and
# delta_0 = log(lambda s^2) - center^T delta.
noise_table <- function(object) {
  nz <- object$noise
  if (!is.null(nz$gp)) return(noise_gp_table(object))
  delta <- nz$coef / nz$scale
  s2 <- gp_signal_var(object)
  d0 <- log(object$lambda * s2) - sum(nz$center * delta)
  out <- rbind(matrix(d0, 1L), matrix(delta, length(delta), length(s2)))
  dimnames(out) <- list(c("(Intercept)", nz$names),
                        if (length(s2) == 1L) "estimate" else object$y_names)
  out
}
