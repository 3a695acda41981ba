# Methods for "krr" objects ----------------------------------------------------------

#' Predict from a kernel ridge regression fit
#'
#' @param object A `"krr"` fit.
#' @param newdata New points: a matrix or data frame with the same columns as
#'   the training `x` (for a formula fit, a data frame with the predictor
#'   variables). `NULL` or missing: the training points. A row with a
#'   missing value (`NA`, `NaN`) in a variable the model uses is predicted
#'   as `NA` (with `NA` standard errors and limits), as [stats::predict.lm()]
#'   does with `na.pass`; infinite values are an error.
#' @param type `"response"`: numeric predictions for regression, the predicted
#'   class (a factor) for classification; `"class"`: the predicted class
#'   (classification only); `"decision"`: the raw scores \eqn{K w} (plus the
#'   target mean for regression): a vector for binary classification
#'   (positive means the second level), a matrix with one column per level
#'   for one-vs-all classification.
#' @param se.fit Return standard errors of the predicted mean (regression
#'   fits only; see *Uncertainty*)?
#' @param interval `"none"`, `"confidence"` (for the mean \eqn{\mu + f(x)})
#'   or `"prediction"` (for a new observation, adding the noise variance
#'   \eqn{\lambda s^2}); normal quantiles.
#' @param level The intervals' coverage probability, in (0, 1).
#' @param method How the variances are computed: `"auto"` (`"exact"` for
#'   \eqn{n \le} `getOption("askotch.gp_exact_max_n", 5000)`, `"nystrom"`
#'   above while its interval is tight; where it is loose -- its upper end
#'   above twice its lower end at some new point -- `"exact"` for \eqn{n \le}
#'   `getOption("askotch.gp_exact_fallback_n", 10000)` and `"pathwise"`
#'   above for a fit that converged, where it also goes straight to
#'   `"pathwise"` once the Nystrom factor's trace error exceeds
#'   \eqn{\lambda}), `"exact"`, `"nystrom"` or `"pathwise"` (see
#'   *Uncertainty*). With `se.fit = TRUE` or an `interval` only (else an
#'   error, as for `draws`).
#' @param draws Number of posterior draws of `method = "pathwise"` (the
#'   Monte Carlo error of a variance is about \eqn{\sqrt{2 / }}`draws` of
#'   it, half that of a standard error, and less with the control variate
#'   of *Uncertainty*), at most 1e5.
#' @param device `NULL` (the device the model was fitted on, when available,
#'   else the CPU), `"auto"`, `"cpu"` or `"cuda"`.
#' @param ... Unused; any argument given here is an error naming it.
#' @section Uncertainty:
#' A squared-loss regression fit is the posterior mean of the Gaussian
#' process model \eqn{y_i = \mu + f(x_i) + \varepsilon_i} with \eqn{f} a
#' zero-mean GP with covariance \eqn{s^2 k(x, x')} (\eqn{k} the fit's kernel on
#' the standardised inputs: standardisation is part of the model) and
#' independent noise \eqn{\varepsilon_i \sim N(0, \lambda s^2)}, so
#' \eqn{\lambda} is the noise-to-signal variance ratio. The signal variance
#' is estimated by maximum likelihood, \eqn{\hat s^2 = y_c^T (K + \lambda
#' I)^{-1} y_c / n = \sum_i y_{c,i} w_i / n} (one per output), with \eqn{y_c}
#' the centred targets and \eqn{w} the fitted weights.
#'
#' `se.fit` is the root mean-squared error of the prediction
#' \eqn{\hat m(x)} for \eqn{\mu + f(x)} under this model,
#' \deqn{\hat s^2 \left[k(x, x) - k_x^T (K + \lambda I)^{-1} k_x +
#'   b_x^2 (1^T K 1 + n\lambda)\right],\quad
#'   b_x = (1 - 1^T (K + \lambda I)^{-1} k_x) / n,}
#' with \eqn{k(x, x) = 1} for all the package's kernels: the GP posterior
#' variance (Rasmussen and Williams 2006, eq. 2.26) plus the term that comes
#' from estimating \eqn{\mu} by the mean of the targets (the centring of
#' [krr()]; it is of order \eqn{1/n} near the data and tends to
#' \eqn{1^T K 1 / n^2 + \lambda / n} far from it). Prediction intervals add
#' \eqn{\lambda \hat s^2}. The plug-in \eqn{\hat s^2} is treated as known:
#' `df` is `Inf` and the intervals use normal quantiles.
#'
#' `method = "exact"` factorises \eqn{K + \lambda I} by Cholesky on every call
#' (\eqn{n^2} numbers of memory, \eqn{O(n^3)} time; the fit keeps no
#' factorisation), then works over the new points in blocks of at most
#' \eqn{2^{22}} kernel values. `method = "nystrom"` builds a rank-\eqn{r}
#' approximation \eqn{\hat K = L L^T \preceq K} by greedy pivoted Cholesky
#' (\eqn{r \le} `getOption("askotch.gp_rank", 1000)`, fewer when
#' \eqn{\mathrm{tr}(K - \hat K) < 10^{-6}\lambda}; \eqn{O(n r^2)} time,
#' \eqn{n r} memory) with the exact trace error \eqn{e = \mathrm{tr}(K - \hat
#' K) \ge \|K - \hat K\|_2}. Since \eqn{(\hat K + (\lambda + e) I)^{-1}
#' \preceq (K + \lambda I)^{-1} \preceq (\hat K + \lambda I)^{-1}}, both
#' terms of the variance lie in intervals computable from the singular value
#' decomposition of \eqn{L} (the second by Cauchy-Schwarz; the residuals
#' \eqn{(I - UU^T) k_x} are formed explicitly, so that small \eqn{\lambda}
#' loses no digits); `se.fit` is the square root of the lower end (the
#' variance with \eqn{K} replaced by \eqn{\hat K}, which the exact variance
#' approaches as the rank grows; the upper end uses the trace, a loose bound
#' on \eqn{\|E\|_2}: at \eqn{n = 3000}, \eqn{p = 10} the midpoint
#' overstated the standard errors 6-fold and 95\% prediction intervals
#' covered 100\% of test responses, the lower end 94.9\%, the exact variance
#' 95.1\%), and its attribute `"var_range"` gives the interval (lower,
#' upper) that contains the exact variance, with attributes `"rank"` and
#' `"trace_error"` (\eqn{e}). The interval is narrow when \eqn{e} is small
#' next to \eqn{\lambda}; where its upper end exceeds twice the lower one
#' at some new point, `method = "auto"` computes the exact variance instead
#' (up to `askotch.gp_exact_fallback_n` points) or the pathwise estimate
#' (above), and `method = "nystrom"` warns with class
#' `askotch_warning_accuracy`
#' (the rank is too small for this \eqn{\lambda}: at \eqn{n = 10^5},
#' \eqn{p = 10} (Friedman 1, \eqn{\lambda = 0.04}), rank 1000 leaves
#' \eqn{e \approx 100} and the lower end is 0 at most points). The factor is compiled and built in blocks of pivots
#' (most of its time is the singular value decomposition of \eqn{L}); each
#' new point costs \eqn{O(n (p + r))}.
#'
#' `method = "pathwise"` estimates the variance by Monte Carlo, from `draws`
#' posterior draws by pathwise conditioning (Wilson et al. 2020; see
#' [simulate.krr()]): each draw \eqn{d} of the prediction error
#' \eqn{\mu + f(x) - \hat m(x)} costs one solve of \eqn{(K + \lambda I) v =
#' r} with the fit's own solver (all draws at once, as a matrix of
#' right-hand sides) and a prior draw by random Fourier features
#' (`getOption("askotch.gp_pathwise_features", 256)` of them) with new
#' random frequencies for every draw, so that the mean of \eqn{d^2} is
#' unbiased for the exact variance (the random-feature kernel is unbiased for
#' \eqn{k}; a fixed set of frequencies would bias it), up to the error of
#' the solves at the fit's tolerance. Nothing of size
#' \eqn{n \times n} is formed (the solver holds `draws` columns wherever the
#' fit held one; the control variate below, an \eqn{n \times r} factor
#' while its draws are made). The draws are
#' independent, so the estimate's Monte Carlo standard error is estimated
#' from them: attribute `"var_mc_se"` of `se.fit` (on the variance scale,
#' \eqn{\hat s^2} included; about \eqn{\sqrt{2/}}`draws` of the variance,
#' 14\% for 100 draws, 7\% for a standard error; `NA` for one draw), with
#' attribute `"draws"`. For a fit with the constant mean, no observation
#' weights and a listed kernel, each draw is paired with the same draw in
#' the Nystrom model of a greedy pivoted Cholesky factor of rank \eqn{r}
#' (`getOption("askotch.gp_cv_rank", 2000)`, at most
#' `getOption("askotch.gp_cv_max_bytes", 2^31)` bytes for its \eqn{n \times
#' r} numbers): that model's prior draw is the exact draw's conditional mean
#' given its values at the pivots, with the same noise, so its error is
#' cheap (\eqn{O(nr)} a draw) and its variance is known in closed form. The
#' estimate is that variance plus the mean difference of the two squared
#' errors (a control variate): unbiased at any rank, and as accurate as many
#' more plain draws where the factor is good (at \eqn{n = 2 \times 10^4},
#' \eqn{p = 10}, rank 2000, the estimate's variance fell about 8-fold; see
#' the results page); attribute `"control_rank"` gives \eqn{r}, and
#' `"var_mc_se"` is then the controlled estimate's standard error. The
#' draws' solves cost about what the fit's solve
#' did with `draws` right-hand sides (timings at \eqn{n = 10^5} in section
#' "Gaussian-process regression" of
#' `system.file("bench", "RESULTS.md", package = "askotch")`). Under
#' `method = "auto"`, for a fit that did not converge, or if the draws'
#' solves stop short of the fit's tolerance (they run with its `max_passes`
#' and `time_limit`), the Nystrom interval is reported instead, with its
#' warning when it is loose. At \eqn{n = 2 \times 10^4}, \eqn{p = 10} the estimates' relative
#' errors against the exact variance had the spread the draws predict and
#' no visible bias (`inst/bench/bench_gp_se_pathwise.R`). The results
#' depend on R's random number generator at the first such call: call
#' [set.seed()] first to reproduce them.
#'
#' **Reuse.** The draws are functions of \eqn{x}: the fit keeps them (the
#' prior's frequencies and coefficients and the solves' \eqn{n \times}
#' `draws` solution) and evaluates them at the new points of every later
#' call with the same `draws`, so that standard errors at further points
#' cost one kernel product with `draws` columns and no solve, and agree
#' point by point with the earlier ones. The exact and the Nystrom factors
#' are kept the same way. What is kept lives in the R session, not in the
#' fit (which stays plain data, and is saved without it): under the fit's
#' identity (copies of a fit share it) and the fields it depends on
#' (\eqn{\lambda}, the kernel, the tolerance, the points and the observation
#' weights), so a fit whose fields were changed computes afresh; all kept
#' entries together hold at most `getOption("askotch.gp_cache_max", 2^24)`
#' numbers (the draws are \eqn{n \times} `draws`), the oldest dropped first.
#'
#' **Observation weights.** A fit with `weights` \eqn{w_i} has noise
#' variance \eqn{\lambda s^2 / w_i} at training point \eqn{i}; everything
#' above holds with \eqn{K + \lambda I} replaced by \eqn{A = K + \lambda
#' W^{-1}}, \eqn{\hat s^2 = y_c^T A^{-1} y_c / n}, \eqn{\mu} estimated by
#' the weighted mean \eqn{\pi^T y} (\eqn{\pi = w / \sum w}) and the last
#' term \eqn{(1 - 1^T A^{-1} k_x)^2 (\pi^T K \pi + \lambda / \sum_i
#' w_i)}; `method = "nystrom"` works with \eqn{W^{1/2} K W^{1/2}}. A new
#' observation is taken to have weight 1 (noise \eqn{\lambda \hat s^2}, as
#' [stats::predict.lm()] assumes by default).
#'
#' Classification fits, [kernel_machine()] fits and inducing-point fits
#' ([falkon()]) get an error of class `askotch_error_input`.
#' @return A numeric vector, a matrix (multi-output / multiclass decision) or a
#'   factor. With `interval` other than `"none"`, a matrix with columns `fit`,
#'   `lwr`, `upr` (for multi-output fits an n x 3 x m array). With `se.fit =
#'   TRUE`, a list as [stats::predict.lm()] returns: `fit` (as above),
#'   `se.fit` (a vector, or an n x m matrix), `df` (`Inf`) and
#'   `residual.scale` (the estimated noise standard deviation
#'   \eqn{\sqrt{\lambda \hat s^2}}).
#' @references Rasmussen, C. E. and Williams, C. K. I. (2006). *Gaussian
#'   Processes for Machine Learning*. MIT Press.
#'
#'   Harbrecht, H., Peters, M. and Schneider, R. (2012). On the low-rank
#'   approximation by the pivoted Cholesky decomposition. *Applied Numerical
#'   Mathematics* 62, 428-440.
#'
#'   Wilson, J. T., Borovitskiy, V., Terenin, A., Mostowsky, P. and
#'   Deisenroth, M. P. (2020). Efficiently sampling functions from Gaussian
#'   process posteriors. *ICML*.
#' @param lambda For a fit of a `lambda` path solved at once ([bcd()] with a
#'   vector `lambda`; also [sap()]): the predictions of that value of the path (`NULL`:
#'   the selected one, `fit$lambda`). `fit$lambda_path` lists the path.
#' @seealso [simulate.krr()] for posterior samples.
#' @examples
#' set.seed(2)
#' x <- matrix(rnorm(300), ncol = 3)
#' y <- factor(ifelse(x[, 1] * x[, 2] > 0, "same", "diff"))
#' fit <- krr(x, y, lambda = 0.5, threads = 1)
#' head(predict(fit, x))
#' head(predict(fit, x, type = "decision"))
#'
#' # a Gaussian-process regression: standard errors and intervals
#' x1 <- matrix(seq(0, 1, length.out = 40))
#' y1 <- sin(6 * x1[, 1]) + rnorm(40, sd = 0.2)
#' gp <- krr(x1, y1, lambda = 0.1, solver = cholesky(), threads = 1)
#' xg <- matrix(seq(-0.2, 1.2, length.out = 8))
#' predict(gp, xg, interval = "prediction")
#' str(predict(gp, xg, se.fit = TRUE))
#' @export
predict.krr <- function(object, newdata = NULL,
                        type = c("response", "class", "decision"),
                        se.fit = FALSE,
                        interval = c("none", "confidence", "prediction"),
                        level = 0.95,
                        method = c("auto", "exact", "nystrom", "pathwise"),
                        draws = 100, device = NULL, lambda = NULL, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  ecall <- sys.call()
  check_no_dots(list(...), "predict", ecall)
  if (!is.null(lambda)) object <- path_select(object, lambda, ecall)
  a <- check_predict_args(object, type, se.fit, interval, level, draws,
                          !missing(draws), !missing(method), ecall)
  type <- a$type
  interval <- a$interval
  pp <- predict_points(object, newdata)
  xs <- pp$xs
  nf <- pp$nf
  rk <- pp$rk
  fin <- function(out) na_expand(out, pp$ok, pp$rn)
  s <- krr_scores(object, xs, device)
  if (!object$task %in% c("binary", "multiclass")) {
    if (type == "class") {
      abort_askotch(
        "`type = \"class\"` is only available for classification fits.",
        "input")
    }
    Fnew <- if (is.null(newdata)) NULL else nf$trend
    s <- sweep(s, 2L, object$y_center, "+", check.margin = FALSE) +
      pred_offset(object, if (is.null(newdata)) NULL else nf) +
      trend_values(object, Fnew)
    if (se.fit || interval != "none") {
      return(fin(gp_predict(object, xs, s, rk, se.fit, interval, level, method,
                            draws, ecall, Fnew, if (is.null(newdata)) NULL else nf$noise)))
    }
    if (object$task == "regression") return(fin(stats::setNames(s[, 1L], rk)))
    dimnames(s) <- list(rk, object$y_names)
    return(fin(s))
  }
  if (type == "decision") {
    if (object$task == "binary") return(fin(stats::setNames(s[, 1L], rk)))
    dimnames(s) <- list(rk, object$levels)
    return(fin(s))
  }
  out <- scores_to_class(s, object$levels)
  names(out) <- rk
  fin(out)
}

# predict.krr()'s checks of its arguments; type and interval resolved
check_predict_args <- function(object, type, se.fit, interval, level, draws,
                               draws_given, method_given, ecall) {
  check_flag(se.fit, "se.fit", ecall)
  if (!is.character(interval) || length(interval) < 1L) {
    abort_askotch(
      "`interval` must be \"none\", \"confidence\" or \"prediction\".",
      "input", ecall)
  }
  interval <- check_choice(interval[1L], c("none", "confidence", "prediction"),
                           "interval", ecall)
  if (!is.numeric(level) || length(level) != 1L || is.na(level) ||
      level <= 0 || level >= 1) {
    abort_askotch(sprintf("`level` must be a number in (0, 1), not %s.",
                          fmt_value(level)), "input", ecall)
  }
  if (!is.character(type) || length(type) < 1L) {
    abort_askotch("`type` must be \"response\", \"class\" or \"decision\".",
                  "input")
  }
  type <- check_choice(type[1L], c("response", "class", "decision"), "type")
  if (se.fit || interval != "none") {
    gp_check(object, "`se.fit = TRUE` or `interval`", ecall)
    check_positive(draws, "draws", integerish = TRUE, call = ecall, max = 1e5)
  } else if (draws_given || method_given) {
    abort_askotch(sprintf(paste(
      "`%s` chooses how standard errors are computed: add `se.fit = TRUE`",
      "or an `interval`."), if (draws_given) "draws" else "method"),
      "input", ecall)
  }
  list(type = type, interval = interval)
}

#' @export
print.krr <- function(x, ...) {
  validate_krr(x, sys.call(), "x")
  cat("Kernel ridge regression (askotch)\n")
  cat(sprintf("  %s, n = %d, p = %d%s\n", task_label(x), x$n, x$p,
              if (x$task == "multioutput") sprintf(", %d outputs", x$m) else ""))
  cat("  ", format(x$kernel), ", lambda = ", format(signif(x$lambda, 4)),
      if (!is.null(x$tuning)) paste0(" (", lambda_rule_label(x$tuning), ")"),
      "\n", sep = "")
  if (!is.null(x$tuning$models)) cat("  ", model_choice_label(x$tuning$models), "\n", sep = "")
  for (l in model_terms_labels(x)) cat("  ", l, "\n", sep = "")
  cat("  solver: ", format(x$solver), ", ", x$precision, " precision on ",
      x$device, "\n", sep = "")
  cat(sprintf("  %s after %d iterations (%.3g passes, %.3g s); %s\n",
              if (x$converged) "converged" else "not converged",
              x$iterations, x$passes, x$seconds, resid_text(x)))
  invisible(x)
}

# One line each for a mean function and a noise model, as print() shows them
model_terms_labels <- function(x) {
  rhs <- function(tt) paste(deparse(stats::formula(stats::delete.response(tt)),
                                    width.cutoff = 200L), collapse = " ")
  tt <- x$trend$terms
  # (a constant mean, also kept as a trend by weighted and noise-model fits, is not shown)
  c(if (inherits(tt, "terms") && length(attr(tt, "term.labels")) > 0L) {
      sprintf("mean: %s (generalised least squares%s)", rhs(tt),
              if (isTRUE(x$trend$reml)) ", REML" else "")
    },
    if (!is.null(x$noise$gp)) {
      sprintf("noise: log variance a %s Gaussian process in %s", kernel_info(
        x$noise$gp$kernel$name)$label, rhs(x$noise$terms))
    } else if (!is.null(x$noise)) {
      sprintf("noise: log variance linear in %s", rhs(x$noise$terms))
    })
}

#' Summarise a kernel ridge regression fit
#'
#' @param object A `"krr"` fit.
#' @param x A `"summary.krr"` object.
#' @param ... Unused.
#' @return `summary()` returns an object of class `"summary.krr"`: a list with
#'   the problem size, task, kernel, lambda, solver, precision, device,
#'   iterations, passes, seconds, final residual estimate, exact relative
#'   residual, convergence flag and reason, the last validation metric, and
#'   `model`: a named list of model statistics printed in order in the
#'   "Model" section: the training R-squared (regression, one per output;
#'   above `getOption("askotch.exact_max_n", 50000)` points a squared-loss
#'   fit's residuals are taken as \eqn{\lambda w}, exact for a converged
#'   solve) or the training accuracy (classification), and for squared-loss
#'   regression fits on the full kernel the maximum-likelihood signal
#'   variance \eqn{\hat s^2} and the noise variance \eqn{\lambda \hat s^2} (see
#'   [predict.krr()]); then, for squared-loss fits on the exact kernel
#'   without observation weights, how \eqn{\lambda} was chosen, the length
#'   scales, the effective degrees of freedom \eqn{\mathrm{tr}(K(K +
#'   \lambda I)^{-1})}, the log marginal likelihood and the GCV and
#'   leave-one-out errors: exact for \eqn{n \le} 2000, above by the
#'   stochastic estimates of [krr_loglik()] (no LOO) up to \eqn{n =} 5000
#'   (option `askotch.gp_summary_max_n`); and `hyper`: the hyperparameters
#'   estimated by maximum likelihood with their standard errors and 95%
#'   intervals ([tidy.krr()] with `conf.int = TRUE`), for fits where the
#'   exact observed information costs at most about \eqn{5 \times 10^{9}}
#'   operations (\eqn{q n^3} for \eqn{q} hyperparameters), else `NULL`.
#' @examples
#' fit <- krr(mpg ~ ., data = mtcars, lambda = 1, threads = 1)
#' summary(fit)
#' @export
summary.krr <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  tr <- object$trace
  vm <- if (!is.null(tr$validation) && any(!is.na(tr$validation)))
    utils::tail(tr$validation[!is.na(tr$validation)], 1L) else NA_real_
  td <- gp_hyper_tidy(object)  # the hyperparameters' and noise model's tables
  structure(list(
    call = object$call, n = object$n, p = object$p, m = object$m,
    task = object$task, task_label = task_label(object),
    levels = object$levels, kernel = format(object$kernel),
    bandwidth = object$kernel$bandwidth,
    bandwidth_rule = object$kernel$bandwidth_rule,
    kernel_choice = if (!is.null(object$tuning$models)) model_choice_label(object$tuning$models),
    lambda = object$lambda, solver = format(object$solver),
    precision = object$precision, device = object$device,
    iterations = object$iterations, passes = object$passes,
    seconds = object$seconds, resid_est = object$resid_est,
    resid_exact = object$resid_exact, tol = object$tol,
    converged = object$converged, reason = object$reason,
    validation_metric = object$validation_metric, validation = vm,
    tol_auto = isTRUE(object$tol_auto), tol_rule = fit_tol_rule(object),
    accuracy = accuracy_bound(object),
    model = model_stats(object), hyper = gp_hyper_table(td),
    trend = if (!is.null(object$trend)) {
      lapply(seq_len(object$m), function(o) trend_table(object, o))
    },
    trend_reml = isTRUE(object$trend$reml), y_names = object$y_names,
    noise = if (!is.null(object$noise)) noise_summary(object, td),
    noise_gp = !is.null(object$noise$gp),
    noise_gp_prior = object$tuning$noise_gp$prior
  ), class = "summary.krr")
}

# What the final relative residual guarantees about the predictions of a
# squared-loss fit on the full kernel, f* the exact solution: |f(x) - f*(x)|
# <= bound at every x (see auto_tol()), and the root mean square of
# f(x_i) - f*(x_i) over the training points <= rms (see average_tol(); for
# a weighted fit the weighted one, the residual being that of the scaled
# system); NULL where it does not apply (other losses, inducing points,
# random features).
accuracy_bound <- function(object) {
  squared <- is.null(object$loss) || object$loss$name == "squared"
  if (!squared || !is.null(object$centers) || fit_features(object) > 0 ||
      object$reason == "exact") {
    return(NULL)
  }
  from_exact <- !is.na(object$resid_exact)
  r <- if (from_exact) object$resid_exact else object$resid_est
  Y <- as.matrix(object$y)
  Yc <- Y - rep(object$y_center, each = nrow(Y))
  w <- fit_obs_weights(object)
  ts <- if (is.null(object$distributed)) target_scales(Yc) else {
    # the ranks' rows together (collective); Yc is centred at the global mean
    ss <- mpi_reduce(colSums(Yc^2), "sum")
    list(norm = sqrt(ss), sd = sqrt(ss / object$distributed$n))
  }
  # the norm of the (scaled) system's right-hand side, and the weights' sum
  nrm <- if (is.null(object$obs_weights)) ts$norm else sqrt(colSums(w * Yc^2))
  wsum <- if (is.null(object$distributed)) sum(w) else object$distributed$n
  b <- pred_error_bound(r, Yc, object$lambda, 1 + fit_intercept(object),
                        per_column = from_exact, nrm = nrm)
  # ||f(X) - f*(X)|| <= ||r_j|| per column (the exact criterion), or
  # ||R||_F for every column (the running estimate, as pred_error_bound())
  rms <- r * (if (from_exact) nrm else rep(sqrt(sum(nrm^2)), length(nrm))) / sqrt(wsum)
  sdy <- pmax(ts$sd, 1e-300)
  list(bound = max(b), relative = max(b / sdy), rms = max(rms),
       rms_relative = max(rms / sdy), from = if (from_exact) "exact" else "estimated")
}

# The model statistics of summary(): a named list, printed in order in the
# "Model" section (each element a number, or one number per output).
model_stats <- function(object) {
  if (!is.null(object$distributed)) return(dist_model_stats(object))
  st <- list()
  regr <- object$task %in% c("regression", "multioutput")
  squared <- !inherits(object, "kernel_machine") &&
    fit_loss(object)$name == "squared"
  full <- is.null(object$centers) && fit_features(object) == 0
  if (fit_features(object) == 0) {
    if (regr) {
      st[["R-squared (training)"]] <- training_r2(object, pooled = FALSE)
    } else {
      cls <- scores_to_class(krr_scores(object, gp_xs(object)), object$levels)
      st[["Accuracy (training)"]] <-
        mean(cls == scores_to_class(object$y, object$levels))
    }
  }
  if (squared && full && regr) {
    s2 <- gp_signal_var(object)
    st[[if (isTRUE(object$trend$reml)) "Signal variance (s^2, REML)" else
      "Signal variance (s^2, ML)"]] <- s2
    # under a noise model, the variance where the log-variance model is 0
    # (the noise covariates at their means; the latent process at its prior mean)
    st[[if (is.null(object$noise)) "Noise variance (lambda s^2)" else
      "Noise variance (lambda s^2, the noise model's baseline)"]] <- object$lambda * s2
  }
  c(st, gp_model_stats(object))
}

#' @rdname summary.krr
#' @export
print.summary.krr <- function(x, ...) {
  cat(if (is.null(x$title)) "Kernel ridge regression (askotch)" else x$title,
      "\n\n", sep = "")
  if (!is.null(x$call)) {
    cat("Call:\n", paste(deparse(x$call), collapse = "\n"), "\n\n", sep = "")
  }
  lines <- c(
    "Data" = sprintf("n = %d points, p = %d features", x$n, x$p),
    "Task" = x$task_label,
    "Kernel" = paste0(x$kernel, if (identical(x$bandwidth_rule, "median"))
      " (median heuristic)" else "", if (!is.null(x$kernel_choice))
        paste0("; ", x$kernel_choice) else ""),
    "Lambda" = format(signif(x$lambda, 6)),
    "Solver" = x$solver,
    "Precision" = x$precision,
    "Device" = x$device,
    "Iterations" = format(x$iterations),
    "Passes" = format(signif(x$passes, 4)),
    "Seconds" = format(signif(x$seconds, 4)),
    "Residual (estimate)" = format(signif(x$resid_est, 4)),
    "Residual (exact)" = if (is.na(x$resid_exact))
      "not computed (n above option askotch.exact_max_n)"
      else format(signif(x$resid_exact, 4)),
    "Tolerance" = if (isTRUE(x$tol_auto)) sprintf("%s (%s)", format(signif(x$tol, 3)),
      if (identical(x$tol_rule, "average"))
        "\"average\": fitted values within 0.001 sd of the exact solution's, RMS"
      else "automatic: predictions within 0.001 sd of the exact solution's")
      else format(x$tol),
    "Accuracy" = if (!is.null(x$accuracy) && is.finite(x$accuracy$bound))
      sprintf("|f(x) - exact f(x)| <= %s at every x (%s sd of the response; %s residual)",
              format(signif(x$accuracy$bound, 2)),
              format(signif(x$accuracy$relative, 2)), x$accuracy$from),
    "Accuracy (fitted)" = if (!is.null(x$accuracy) && is.finite(x$accuracy$rms))
      sprintf("root mean square of f(x_i) - exact f(x_i) <= %s (%s sd)",
              format(signif(x$accuracy$rms, 2)),
              format(signif(x$accuracy$rms_relative, 2))),
    "Converged" = sprintf("%s (reason: %s)", if (x$converged) "yes" else "no",
                          x$reason),
    x$extra  # kernel machines: loss, objectives, support vectors
  )
  if (!is.na(x$validation)) {
    lines <- c(lines, "Validation" = sprintf(
      "%s = %s", x$validation_metric, format(signif(x$validation, 4))))
  }
  if (!is.null(x$crit_name)) {
    names(lines) <- sub("^Residual", x$crit_name, names(lines))
  }
  mod <- vapply(x$model, function(v) {
    if (is.character(v)) return(paste(v, collapse = ", "))
    txt <- vapply(signif(v, 4), format, "")
    if (!is.null(names(v)) && length(v) > 1L) txt <- paste(names(v), txt,
                                                           sep = " = ")
    paste(txt, collapse = ", ")
  }, "")
  w <- max(nchar(c(names(lines), names(mod))))
  cat(sprintf("%-*s : %s", w, names(lines), lines), sep = "\n")
  if (length(mod) > 0L) {
    cat("\nModel:\n")
    cat(sprintf("%-*s : %s", w, names(mod), mod), sep = "\n")
  }
  if (!is.null(x$hyper)) {
    cat(sprintf("\nHyperparameters (%s; 95%% intervals, see confint()):\n",
                x$hyper_by %||% if (isTRUE(x$trend_reml)) "REML" else "maximum likelihood"))
    print(x$hyper, digits = 4)
  }
  print_trend_tables(x)
  if (!is.null(x$noise)) {
    pr <- x$noise_gp_prior
    prior <- if (is.numeric(pr) && length(pr) == 2L && all(is.finite(pr))) {
      sprintf(paste(";\n  posterior mode under a PC prior: P(length scale < %g sd) =",
                    "P(gp_sd > %g) = %g"), pr[[1L]], pr[[2L]], noise_gp_prior_tail)
    }
    cat(if (isTRUE(x$noise_gp)) {
      paste0("\nNoise model (a Gaussian process on the log noise variance, Laplace ",
             "approximation", prior, "):\n")
    } else "\nNoise model (log noise variance, maximum likelihood):\n")
    print(x$noise, digits = 4)
  }
  invisible(x)
}

# summary()'s coefficient tables of a mean function, in stats::printCoefmat()'s form
print_trend_tables <- function(x) {
  for (o in seq_along(x$trend)) {
    tb <- as.matrix(x$trend[[o]])
    colnames(tb) <- c("Estimate", "Std. Error", "t value", "Pr(>|t|)")
    cat(sprintf("\nMean function%s (GLS; hyperparameters by %s, treated as known):\n",
                if (length(x$trend) > 1L) paste0(", ", x$y_names[o]) else "",
                if (x$trend_reml) "REML" else "maximum likelihood"))
    stats::printCoefmat(tb, digits = 4)
  }
}

#' Weights, fitted values and residuals of a kernel ridge regression fit
#'
#' `coef()` returns the weights \eqn{w} solving \eqn{(K + \lambda I) w = y}
#' (with centred targets for regression and +1/-1 targets for
#' classification): a vector, or an n x m matrix for several outputs. For a
#' fit with a mean function ([krr()]'s `mean`, or `likelihood = "reml"`) it
#' returns the trend's GLS coefficients instead (the weights then solve
#' \eqn{(K + \lambda I) w = y - F \hat\beta}; `type = "weights"` gives them);
#' `type = "mean"` of a fit with the constant mean gives that constant.
#' `fitted()` returns the in-sample predictions \eqn{K w} plus the target mean
#' (or the trend),
#' i.e. the decision scores for classification (use
#' `predict(fit, type = "class")` for classes); `residuals()` returns targets
#' minus fitted values (for classification the +1/-1 coded targets minus the
#' scores). Fitted values include a formula fit's offset. Both cover the
#' points used in the fit; for a formula fit with `na.action = na.exclude`
#' they are padded with `NA` at the rows left out (missing values, and rows
#' of weight 0), as for [lm()].
#'
#' @param object A `"krr"` fit.
#' @param lambda For a fit along a \eqn{\lambda} path: the path's
#'   \eqn{\lambda} whose weights to use (as in [predict.krr()]; `NULL`: the
#'   selected one).
#' @param type `coef()`: `"weights"` (the kernel weights) or `"mean"` (the
#'   mean function's coefficients); `NULL` (default): `"mean"` for a fit
#'   with a mean function, else `"weights"`.
#' @param ... Unused; an unknown argument is an error.
#' @return A numeric vector (one output) or matrix.
#' @examples
#' fit <- krr(mpg ~ wt + hp, data = mtcars, lambda = 1, threads = 1)
#' head(coef(fit))
#' # a linear trend in wt (universal kriging): its GLS coefficients
#' coef(krr(mpg ~ wt + hp, data = mtcars, mean = ~ wt, threads = 1))
#' head(fitted(fit))
#' head(residuals(fit))
#' @name krr-coef
NULL

#' @rdname krr-coef
#' @export
coef.krr <- function(object, lambda = NULL, type = NULL, ...) {
  object <- path_method_object(object, lambda, list(...), "coef", sys.call())
  if (is.null(type)) type <- if (is.null(object$trend)) "weights" else "mean"
  type <- check_choice(type, c("weights", "mean"), "type", sys.call())
  if (type == "mean") {
    B <- if (!is.null(object$trend)) object$trend$coef else
      matrix(object$y_center, 1L, object$m, dimnames = list("(Intercept)", object$y_names))
    return(if (ncol(B) == 1L) B[, 1L] else B)
  }
  W <- object$weights
  if (ncol(W) == 1L) W[, 1L] else W
}

#' @rdname krr-coef
#' @export
fitted.krr <- function(object, lambda = NULL, ...) {
  object <- path_method_object(object, lambda, list(...), "fitted", sys.call())
  s <- fitted_scores(object)
  if (!is.null(object$offset)) s <- s + object$offset
  stats::napredict(object$na.action, fit_columns(object, s))
}

#' @rdname krr-coef
#' @export
residuals.krr <- function(object, lambda = NULL, ...) {
  object <- path_method_object(object, lambda, list(...), "residuals", sys.call())
  stats::naresid(object$na.action,
                 fit_columns(object, object$y - fitted_scores(object)))
}

# The fit a coef() / fitted() / residuals() method reads: validated, no
# unknown argument, the path's weights at `lambda` when given.
path_method_object <- function(object, lambda, dots, what, ecall) {
  validate_krr(object, ecall, "object")
  check_no_dots(dots, what, ecall)
  if (is.null(lambda)) object else path_select(object, lambda, ecall)
}

#' Observation weights of a fit
#'
#' The observation weights \eqn{w_i} a [krr()] or [kernel_machine()] fit was
#' made with (`weights =`): point \eqn{i} has noise variance
#' \eqn{\lambda / w_i}, i.e. the weights solve \eqn{(K + \lambda W^{-1})
#' \alpha = y}. Points of weight zero were dropped before fitting and are not
#' included.
#'
#' @param object A `"krr"` fit.
#' @param ... Unused.
#' @return A numeric vector with one weight per training point, all 1 for a
#'   fit without weights.
#' @examples
#' fit <- krr(mpg ~ wt + hp, data = mtcars, weights = cyl, lambda = 1,
#'            solver = cholesky(), threads = 1)
#' head(weights(fit))
#' @importFrom stats weights
#' @export
weights.krr <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  fit_obs_weights(object)
}
