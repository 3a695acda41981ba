# broom-style summaries: tidy(), glance(), augment() -------------------------
#
# The generics come from the 'generics' package (as broom's do), re-exported
# so that library(askotch) alone makes them available.

#' @importFrom generics tidy glance augment
#' @export
generics::tidy

#' @export
generics::glance

#' @export
generics::augment

#' Tidy summaries of a kernel ridge regression fit
#'
#' broom-style methods. `tidy()` returns the model's hyperparameters, one
#' row each; `glance()` one row summarising the fit; `augment()` the data
#' with the fitted values and residuals.
#'
#' `glance()` includes `logLik`, `AIC` and `BIC` when [stats::logLik()] has
#' a method for the fit (else `NA`), and `augment(se_fit = TRUE)` adds
#' `.se.fit` when [predict()][predict.krr] returns standard errors (else
#' the column is left out with a warning).
#'
#' @param x A `"krr"` (or `"kernel_machine"`) fit.
#' @param data The data to augment: by default the training points' fitted
#'   values and residuals alone; a data frame (for a formula fit, the
#'   training data) gets `.fitted` from [predict()][predict.krr] on it, and
#'   `.resid` when it holds the (numeric) response.
#' @param newdata New data to augment instead of `data`.
#' @param se_fit Add the standard errors of the fitted values (`.se.fit`)?
#' @param interval For `augment()` of a regression fit: `"none"`,
#'   `"confidence"` or `"prediction"` adds the columns `.lower` and `.upper`,
#'   [predict()][predict.krr]'s interval at the data (each point's own noise
#'   under a noise model), as `broom`'s `augment.lm()`.
#' @param conf.int For `tidy()`: add the hyperparameters' standard errors
#'   and confidence intervals (see [confint.krr()]; Gaussian-process
#'   regression and GP classifiers only)?
#' @param conf.level The intervals' confidence level (`tidy()` and
#'   `augment()`).
#' @param ... Unused.
#' @return A data frame. `tidy()`: columns `term` (`"bandwidth"`,
#'   `"lambda"`, and `"intercept"` / `"features"` for kernel machines that
#'   have them; for a composite kernel ([kernel_algebra]) one row per
#'   hyperparameter instead of `"bandwidth"`: `"term[t]:amplitude"` and
#'   `"<kernel>[c]:<hyperparameter>"`, `c` numbering the kernels in order)
#'   and `estimate`; with `conf.int = TRUE` also (regression) the rows
#'   `length_scale:<column>` (ARD fits), `signal_var` and `noise_var` and
#'   the columns `std.error` (of each estimated hyperparameter, by the delta
#'   method from the standard error of its logarithm; `NA` for those not
#'   estimated by maximum likelihood), `conf.low` and `conf.high` (Wald
#'   intervals of the logarithms, as [confint.krr()]). `glance()`: `kernel`, `bandwidth`, `lambda`,
#'   `task`, `nobs`, `p`, `solver`, `converged`, `iterations`, `passes`,
#'   `seconds`, `r.squared` (regression: \eqn{1 - \sum w_i r_i^2 / \sum w_i
#'   (y_i - \bar y_w)^2} on the training points, with the observation
#'   weights, all 1 without) or `accuracy` (classification, on the training
#'   points), `logLik`, `AIC`, `BIC`. `augment()`: the data (if any) with
#'   `.fitted` (the predicted class for classification), `.resid`
#'   (regression) and, when asked for, `.se.fit`, `.lower` and `.upper`; one
#'   column per output for several outputs.
#' @examples
#' fit <- krr(mpg ~ wt + hp, data = mtcars, lambda = 1, threads = 1,
#'            solver = cholesky())
#' tidy(fit)
#' glance(fit)
#' head(augment(fit, data = mtcars))
#' augment(fit, newdata = mtcars[1:3, ], interval = "prediction")
#' @name krr-tidiers
NULL

#' @rdname krr-tidiers
#' @export
tidy.krr <- function(x, conf.int = FALSE, conf.level = 0.95, ...) {
  call <- sys.call()
  validate_krr(x, call, "x")
  local_blas_threads(gp_threads(x))
  check_no_dots(list(...), "tidy", call)
  check_flag(conf.int, "conf.int", call)
  # the linear-features fit (svrg(features = "linear")) has no bandwidth
  terms <- if (is_composite_kernel(x$kernel)) c(composite_terms(x$kernel), lambda = x$lambda) else
    c(bandwidth = if (fit_features(x) < 0) NA_real_ else x$kernel$bandwidth, lambda = x$lambda)
  if (fit_intercept(x) > 0) terms <- c(terms, intercept = fit_intercept(x))
  if (fit_features(x) > 0) terms <- c(terms, features = fit_features(x))
  out <- data.frame(term = names(terms), estimate = unname(as.numeric(terms)),
                    stringsAsFactors = FALSE)
  if (conf.int) check_level(conf.level, "conf.level", call)
  if (!is.null(x$trend)) {
    # the hyperparameters' intervals where vcov() has them (exact sizes, a
    # listed kernel; a noise model's coefficients for one output)
    ls <- if (conf.int && isTRUE(tryCatch(gp_hyper_check(x, "tidy()", call),
                                          askotch_error_input = function(e) FALSE))) {
      gp_log_se(x, gp_hyper(x))
    }
    if (!is.null(ls)) out <- tidy_conf_int(x, out, conf.level, ls)
    out <- tidy_trend(x, out, conf.int, conf.level)
    if (!is.null(ls) && !is.null(x$noise)) out <- tidy_noise_se(x, out, ls, conf.level)
    return(out)
  }
  if (conf.int && is_gp_classifier(x$posterior)) return(tidy_gpc_conf_int(x, out, conf.level, call))
  if (conf.int) {
    gp_hyper_check(x, "tidy(conf.int = TRUE)", call)
    out <- tidy_conf_int(x, out, conf.level)
  }
  out
}

# tidy(conf.int = TRUE) of a GP classifier: the estimated hyperparameters'
# standard errors (the estimate times its logarithm's) and Wald intervals
# from gpc_vcov(), as confint(); NA for the others
tidy_gpc_conf_int <- function(x, out, level, call) {
  g <- gpc_vcov(x, call)
  se <- sqrt(diag(g$V))
  ci <- gp_wald(list(log = log(g$estimate), se = se), level)
  at <- match(out$term, names(g$estimate))
  out$std.error <- unname(g$estimate[at] * se[at])
  out$conf.low <- unname(ci[at, 1L])
  out$conf.high <- unname(ci[at, 2L])
  out
}

# tidy() of a fit with a mean function: the hyperparameters, then one row
# per trend coefficient ("mean:<term>", or "mean:<output>:<term>") with its
# standard error, t statistic and p value (trend_table()); conf.int adds
# the coefficients' t intervals (the hyperparameters' are tidy_conf_int()'s
# when `out` has them, else NA).
tidy_trend <- function(x, out, conf.int, level) {
  rows <- lapply(seq_len(x$m), function(o) {
    tb <- trend_table(x, o)
    pre <- if (x$m > 1L) paste0("mean:", x$y_names[o], ":") else "mean:"
    df <- x$n - ncol(x$trend$F)
    h <- stats::qt((1 + level) / 2, df) * tb$std.error
    data.frame(term = paste0(pre, rownames(tb)), estimate = tb$estimate,
               std.error = tb$std.error, statistic = tb$statistic,
               p.value = tb$p.value, conf.low = tb$estimate - h,
               conf.high = tb$estimate + h, stringsAsFactors = FALSE)
  })
  for (col in c("std.error", "statistic", "p.value", "conf.low", "conf.high")) {
    if (is.null(out[[col]])) out[[col]] <- NA_real_
  }
  out <- rbind(out, do.call(rbind, rows))
  if (!is.null(x$noise)) {
    # the noise model's log-linear coefficients (estimates only)
    nt <- noise_table(x)
    pre <- if (x$m > 1L) paste0("noise:", rep(x$y_names, each = nrow(nt)), ":") else "noise:"
    out <- rbind(out, data.frame(term = paste0(pre, rownames(nt)), estimate = c(nt),
                                 std.error = NA_real_, statistic = NA_real_,
                                 p.value = NA_real_, conf.low = NA_real_,
                                 conf.high = NA_real_, stringsAsFactors = FALSE))
  }
  rownames(out) <- NULL
  if (!conf.int) out$conf.low <- out$conf.high <- NULL
  out
}

# The noise model's rows of tidy() (one output) with their standard errors
# and Wald intervals: the coefficients' from vcov(), the intercept's
# log(lambda s^2) - sum_j center_j delta_j by the delta method (lambda's
# part only when it was estimated).
tidy_noise_se <- function(x, out, ls, level) {
  nz <- x$noise
  V <- ls$V
  nm <- rownames(V)
  g <- stats::setNames(numeric(length(nm)), nm)
  g[grep("^signal_var", nm)] <- 1
  if ("lambda" %in% nm) g["lambda"] <- 1
  g[paste0("noise:", nz$names)] <- -nz$center
  se <- c(sqrt(drop(crossprod(g, V %*% g))), ls$se[paste0("noise:", nz$names)])
  at <- match(paste0("noise:", c("(Intercept)", nz$names)), out$term)
  out$std.error[at] <- se
  if (!is.null(out$conf.low)) {
    # (gp_wald()'s intervals are linear for the noise rows)
    ci <- gp_wald(list(log = stats::setNames(out$estimate[at], out$term[at]), se = se), level)
    out$conf.low[at] <- ci[, 1L]
    out$conf.high[at] <- ci[, 2L]
  }
  out
}

# tidy()'s standard errors and intervals (confint.krr(); ls: gp_log_se()'s):
# rows for the length scales, signal and noise variances added (a noise
# model's coefficients are tidy_trend()'s rows)
tidy_conf_int <- function(x, out, level, ls = gp_log_se(x, gp_hyper(x))) {
  h <- gp_hyper(x)
  ci <- gp_wald(ls, level)
  est <- stats::setNames(gp_hyper_values(x, h), h$names)
  est <- est[!grepl("^noise:", names(est))]
  s2 <- gp_signal_var(x)
  extra <- c(est[!names(est) %in% out$term],
             stats::setNames(x$lambda * s2, sub("^signal_var", "noise_var",
                                                grep("^signal_var", h$names, value = TRUE))))
  out <- rbind(out, data.frame(term = names(extra), estimate = unname(extra),
                               stringsAsFactors = FALSE))
  out$std.error <- unname(out$estimate * ls$se[out$term])
  at <- match(out$term, rownames(ci))
  out$conf.low <- unname(ci[at, 1L])
  out$conf.high <- unname(ci[at, 2L])
  out
}

#' @rdname krr-tidiers
#' @export
glance.krr <- function(x, ...) {
  validate_krr(x, sys.call(), "x")
  check_no_dots(list(...), "glance", sys.call())
  ll <- tryCatch(stats::logLik(x), error = function(e) NULL)
  ic <- function(f) if (is.null(ll)) NA_real_ else
    tryCatch(as.numeric(f(ll)), error = function(e) NA_real_)
  # the linear-features fit (svrg(features = "linear")) has no kernel
  linear <- fit_features(x) < 0
  out <- data.frame(
    kernel = if (linear) "linear" else x$kernel$name,
    bandwidth = if (linear || is_composite_kernel(x$kernel)) NA_real_ else x$kernel$bandwidth,
    lambda = x$lambda,
    task = x$task, nobs = x$n, p = x$p, solver = x$solver$name,
    converged = x$converged, iterations = x$iterations, passes = x$passes,
    seconds = x$seconds, stringsAsFactors = FALSE)
  if (x$task %in% c("binary", "multiclass")) {
    out$accuracy <- if (fit_features(x) > 0) NA_real_ else
      mean(scores_to_class(fitted_scores(x), x$levels) ==
             x$levels[class_index(x)])
  } else {
    out$r.squared <- if (fit_features(x) > 0) NA_real_ else training_r2(x)
  }
  out$logLik <- if (is.null(ll)) NA_real_ else as.numeric(ll)
  out$AIC <- ic(stats::AIC)
  out$BIC <- ic(stats::BIC)
  out
}

# The training classes (indices into the levels) from the +-1 targets
class_index <- function(x) {
  Y <- x$y
  if (ncol(Y) == 1L) ifelse(Y[, 1L] > 0, 2L, 1L) else max.col(Y, "first")
}

# Weighted training R^2 (the observation weights, all 1 without): pooled over
# the outputs (glance()) or one per output (summary()).  The offset cancels:
# y and the fitted values both leave it out.  For an exact squared-loss solve
# on the full kernel the residuals are y - K alpha = lambda W^{-1} alpha
# (R/weights.R), so above option askotch.exact_max_n the O(n^2) kernel pass
# is skipped.
training_r2 <- function(x, pooled = TRUE) {
  w <- fit_obs_weights(x)
  Y <- x$y
  dual <- !inherits(x, "kernel_machine") && fit_loss(x)$name == "squared" &&
    is.null(x$centers) && fit_features(x) == 0 &&
    x$n > getOption("askotch.exact_max_n", 50000)
  R <- if (dual) x$lambda * as.matrix(x$weights) / w else Y - fitted_scores(x)
  D <- sweep(Y, 2L, colSums(w * Y) / sum(w), check.margin = FALSE)
  if (pooled) return(1 - sum(w * R^2) / sum(w * D^2))
  stats::setNames(1 - colSums(w * R^2) / colSums(w * D^2), x$y_names)
}

#' @rdname krr-tidiers
#' @export
augment.krr <- function(x, data = NULL, newdata = NULL, se_fit = FALSE,
                        interval = c("none", "confidence", "prediction"),
                        conf.level = 0.95, ...) {
  ecall <- sys.call()
  validate_krr(x, ecall, "x")
  check_no_dots(list(...), "augment", ecall)
  check_flag(se_fit, "se_fit")
  interval <- check_choice(interval[1L], c("none", "confidence", "prediction"), "interval",
                           ecall)
  check_level(conf.level, "conf.level", ecall)
  nd <- if (is.null(newdata)) data else newdata
  classif <- x$task %in% c("binary", "multiclass")
  if (is.null(nd)) {
    f <- if (classif) scores_to_class(fitted_scores(x), x$levels) else
      stats::fitted(x)
    r <- if (classif) NULL else stats::residuals(x)
    out <- data.frame(row.names = seq_len(NROW(f)))
  } else {
    # one point given as a vector of its p coordinates, as predict() reads it
    if (is.null(x$terms) && is.atomic(nd) && is.null(dim(nd)) && x$p > 1L &&
        length(nd) == x$p) {
      nd <- matrix(nd, 1L, dimnames = list(NULL, names(nd)))
    }
    out <- as.data.frame(nd)
    f <- stats::predict(x, nd)
    r <- NULL
    resp <- augment_response(x, nd)
    if (!classif && !is.null(resp)) r <- resp - f
  }
  out <- add_columns(out, ".fitted", f)
  if (!is.null(r)) out <- add_columns(out, ".resid", r)
  if (se_fit) {
    p <- tryCatch(stats::predict(x, nd, se.fit = TRUE), error = function(e) NULL)
    if (is.list(p) && !is.null(p$se.fit)) {
      out <- add_columns(out, ".se.fit", augment_pad(x, nd, p$se.fit))
    } else {
      warn_askotch("predict() gives no standard errors for this fit: `.se.fit` left out.",
                   "se_fit")
    }
  }
  if (interval != "none") out <- augment_interval(x, nd, out, interval, conf.level, ecall)
  out
}

# augment()'s `.lower` and `.upper`: predict()'s interval at the data (the
# training points when nd is NULL), one column per output for several
augment_interval <- function(x, nd, out, interval, level, ecall) {
  if (!x$task %in% c("regression", "multioutput")) {
    abort_askotch("`interval` needs a regression fit.", "input", ecall)
  }
  p <- if (is.null(nd)) stats::predict(x, interval = interval, level = level) else
    stats::predict(x, nd, interval = interval, level = level)
  col <- function(k) augment_pad(x, nd, if (length(dim(p)) == 3L) p[, k, ] else p[, k])
  add_columns(add_columns(out, ".lower", col("lwr")), ".upper", col("upr"))
}

# predict()'s values at the training points (nd NULL) padded to the data's
# rows as fitted() is (na.exclude); at new data as they are
augment_pad <- function(x, nd, v) if (is.null(nd)) stats::napredict(x$na.action, v) else v

# The response of a formula fit found in new data (NULL when absent)
augment_response <- function(x, nd) {
  nm <- x$response_name
  if (is.null(nm) || !is.data.frame(nd)) return(NULL)
  y <- tryCatch(eval(str2lang(nm), nd, globalenv()), error = function(e) NULL)
  if (!is.numeric(y) || NROW(y) != nrow(nd)) return(NULL)
  y
}

# Columns `name` (one output) or `name.<output>` (several)
add_columns <- function(out, name, v) {
  if (is.matrix(v) && ncol(v) > 1L) {
    nm <- colnames(v)
    if (is.null(nm)) nm <- seq_len(ncol(v))
    for (j in seq_len(ncol(v))) out[[paste0(name, ".", nm[j])]] <- v[, j]
  } else {
    out[[name]] <- if (is.matrix(v)) v[, 1L] else unname(v)
  }
  out
}
