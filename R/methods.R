# Methods for "krr" objects ----------------------------------------------------------

scores_to_class <- function(s, levels) {
  s <- as.matrix(s)
  if (length(levels) == 2L) {
    idx <- ifelse(s[, 1L] > 0, 2L, 1L)
  } else {
    idx <- max.col(s, ties.method = "first")
  }
  factor(levels[idx], levels = levels)
}

# Kernel scores K(xnew, xtrain) %*% w for standardised new points.
krr_scores <- function(object, xs, device = NULL) {
  dev <- if (is.null(device)) object$device else device
  dev <- check_choice(dev, c("auto", "cpu", "cuda"), "device")
  if (dev != "cpu" && fit_features(object) == 0) {
    info <- .Call(ffi_devices)
    have <- length(info$name) > 0L
    if (dev == "cuda" && !have && !is.null(device)) {
      resolve_device("cuda", nrow(object$x))  # signals the classed error
    }
    dev <- if (have && (dev == "cuda" ||
                        as.numeric(nrow(xs)) * nrow(object$x) >= 1e9))
      "cuda" else "cpu"
  }
  W <- object$weights
  dimnames(W) <- NULL
  threads <- as.integer(if (is.null(object$threads)) 0L else object$threads)
  prec <- if (object$precision == "double") 1L else 0L
  if (fit_features(object) > 0) {
    # random features: z(x)^T theta (on the CPU)
    s <- .Call(ffi_features_apply, xs, W, as.integer(object$kernel$code),
               as.numeric(object$kernel$bandwidth), as.numeric(object$features),
               as.numeric(object$seed), prec, threads)
  } else {
    s <- .Call(ffi_kernel_apply, xs, object$x, W, as.integer(object$kernel$code),
               as.numeric(object$kernel$bandwidth), prec,
               if (dev == "cuda") 1L else 0L, threads)
  }
  if (!is.null(object$bias) && any(object$bias != 0)) {
    s <- sweep(s, 2L, object$bias, "+", check.margin = FALSE)
  }
  s
}

# Build the standardised feature matrix of newdata.
new_features <- function(object, newdata) {
  if (!is.null(object$terms)) {
    if (!is.data.frame(newdata) && !is.list(newdata)) {
      abort_askotch(sprintf(
        "`newdata` must be a data frame (the model was fitted with a formula), not %s.",
        fmt_value(newdata)), "input")
    }
    vars <- all.vars(object$terms)
    miss <- setdiff(vars, names(newdata))
    if (length(miss) > 0L) {
      abort_askotch(sprintf(
        "`newdata` is missing the variable(s) %s used by the model.",
        paste0("`", miss, "`", collapse = ", ")), "input")
    }
    mf <- tryCatch(
      stats::model.frame(object$terms, newdata, xlev = object$xlevels,
                         na.action = stats::na.pass),
      error = function(e) abort_askotch(sprintf(
        "Cannot build the model frame of `newdata`: %s",
        conditionMessage(e)), "input"))
    x <- stats::model.matrix(object$terms, mf, contrasts.arg = object$contrasts)
    attr(x, "assign") <- NULL
    attr(x, "contrasts") <- NULL
    x <- as_feature_matrix(x, "newdata")
  } else {
    if (is.atomic(newdata) && is.null(dim(newdata)) && object$p > 1L &&
        length(newdata) == object$p) {
      newdata <- matrix(newdata, nrow = 1L,
                        dimnames = list(NULL, names(newdata)))
    }
    x <- as_feature_matrix(newdata, "newdata")
    if (!is.null(object$xnames) && !is.null(colnames(x)) &&
        all(object$xnames %in% colnames(x)) &&
        !identical(colnames(x), object$xnames)) {
      x <- x[, object$xnames, drop = FALSE]
    }
  }
  if (ncol(x) != object$p) {
    abort_askotch(sprintf(
      "`newdata` must have %d column(s) like the training data, not %d.",
      object$p, ncol(x)), "input")
  }
  xs <- apply_scaling(x, object$center, object$scale)
  dimnames(xs) <- NULL
  list(xs = xs, rownames = rownames(x))
}

#' Predict from a kernel ridge regression fit
#'
#' @param object A `"krr"` fit.
#' @param newdata New points: a matrix or data frame with the same columns as
#'   the training `x` (for a formula fit, a data frame with the predictor
#'   variables). `NULL` or missing: the training points.
#' @param type `"response"`: numeric predictions for regression, the predicted
#'   class (a factor) for classification; `"class"`: the predicted class
#'   (classification only); `"decision"`: the raw scores \eqn{K w} (plus the
#'   target mean for regression): a vector for binary classification
#'   (positive means the second level), a matrix with one column per level
#'   for one-vs-all classification.
#' @param device `NULL` (the device the model was fitted on, when available,
#'   else the CPU), `"auto"`, `"cpu"` or `"cuda"`.
#' @param ... Unused.
#' @return A numeric vector, a matrix (multi-output / multiclass decision) or a
#'   factor.
#' @examples
#' set.seed(2)
#' x <- matrix(rnorm(300), ncol = 3)
#' y <- factor(ifelse(x[, 1] * x[, 2] > 0, "same", "diff"))
#' fit <- krr(x, y, lambda = 0.5, threads = 1)
#' head(predict(fit, x))
#' head(predict(fit, x, type = "decision"))
#' @export
predict.krr <- function(object, newdata = NULL,
                        type = c("response", "class", "decision"),
                        device = NULL, ...) {
  if (!is.character(type) || length(type) < 1L) {
    abort_askotch("`type` must be \"response\", \"class\" or \"decision\".",
                  "input")
  }
  if (length(type) > 1L) type <- type[1L]
  type <- check_choice(type, c("response", "class", "decision"), "type")
  if (is.null(newdata)) {
    xs <- if (is.null(object$x_train)) object$x else object$x_train
    rn <- NULL
  } else {
    nf <- new_features(object, newdata)
    xs <- nf$xs
    rn <- nf$rownames
  }
  s <- krr_scores(object, xs, device)
  classif <- object$task %in% c("binary", "multiclass")
  if (!classif) {
    if (type == "class") {
      abort_askotch(
        "`type = \"class\"` is only available for classification fits.",
        "input")
    }
    s <- sweep(s, 2L, object$y_center, "+", check.margin = FALSE)
    if (object$task == "regression") {
      out <- s[, 1L]
      names(out) <- rn
      return(out)
    }
    dimnames(s) <- list(rn, object$y_names)
    return(s)
  }
  if (type == "decision") {
    if (object$task == "binary") {
      out <- s[, 1L]
      names(out) <- rn
      return(out)
    }
    dimnames(s) <- list(rn, object$levels)
    return(s)
  }
  out <- scores_to_class(s, object$levels)
  names(out) <- rn
  out
}

#' @export
print.krr <- function(x, ...) {
  cat("Kernel ridge regression (askotch)\n")
  cat(sprintf("  %s, n = %d, p = %d%s\n", task_label(x), x$n, x$p,
              if (x$task == "multioutput") sprintf(", %d outputs", x$m) else ""))
  cat("  ", format(x$kernel), ", lambda = ", format(signif(x$lambda, 4)),
      if (!is.null(x$tuning)) paste0(" (", lambda_rule_label(x$tuning), ")"),
      "\n", sep = "")
  cat("  solver: ", format(x$solver), ", ", x$precision, " precision on ",
      x$device, "\n", sep = "")
  cat(sprintf("  %s after %d iterations (%.3g passes, %.3g s); %s\n",
              if (x$converged) "converged" else "not converged",
              x$iterations, x$passes, x$seconds, resid_text(x)))
  invisible(x)
}

task_label <- function(x) {
  switch(x$task,
         regression = "regression",
         multioutput = "multi-output regression",
         binary = sprintf("binary classification (%s vs %s)",
                          x$levels[2L], x$levels[1L]),
         multiclass = sprintf("one-vs-all classification, %d classes",
                              length(x$levels)),
         x$task)
}

resid_text <- function(x) {
  if (!is.na(x$resid_exact)) {
    sprintf("relative residual %.3g", x$resid_exact)
  } else {
    sprintf("estimated relative residual %.3g", x$resid_est)
  }
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
#'   `model`: a named list of model statistics, printed in order in the
#'   *Model* section (for squared-loss fits on the exact kernel: how
#'   \eqn{\lambda} was chosen, the length scales, the maximum-likelihood
#'   signal variance, the effective degrees of freedom \eqn{\mathrm{tr}(K(K +
#'   \lambda I)^{-1})}, the log marginal likelihood and the GCV and
#'   leave-one-out errors; exact for \eqn{n \le} 2000, above by the
#'   stochastic estimates of [krr_loglik()] (no LOO) up to \eqn{n =} 20000,
#'   option `askotch.gp_summary_max_n`).
#' @examples
#' fit <- krr(mpg ~ ., data = mtcars, lambda = 1, threads = 1)
#' summary(fit)
#' @export
summary.krr <- function(object, ...) {
  tr <- object$trace
  vm <- if (!is.null(tr$validation) && any(!is.na(tr$validation)))
    utils::tail(tr$validation[!is.na(tr$validation)], 1L) else NA_real_
  structure(list(
    call = object$call, n = object$n, p = object$p, m = object$m,
    task = object$task, task_label = task_label(object),
    levels = object$levels, kernel = format(object$kernel),
    bandwidth = object$kernel$bandwidth,
    bandwidth_rule = object$kernel$bandwidth_rule,
    lambda = object$lambda, solver = format(object$solver),
    precision = object$precision, device = object$device,
    iterations = object$iterations, passes = object$passes,
    seconds = object$seconds, resid_est = object$resid_est,
    resid_exact = object$resid_exact, tol = object$tol,
    converged = object$converged, reason = object$reason,
    validation_metric = object$validation_metric, validation = vm,
    model = model_stats(object)
  ), class = "summary.krr")
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
      " (median heuristic)" else ""),
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
    "Tolerance" = format(x$tol),
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
  model <- vapply(x$model, function(v)
    paste(format(v), collapse = ", "), "")
  w <- max(nchar(c(names(lines), names(model))))
  cat(sprintf("%-*s : %s", w, names(lines), lines), sep = "\n")
  if (length(model) > 0L) {
    cat("\nModel:\n")
    cat(sprintf("%-*s : %s", w, names(model), model), sep = "\n")
  }
  invisible(x)
}

#' Convergence plots for a kernel ridge regression fit
#'
#' Plots the relative residual (running estimate as a line, exact values at
#' checkpoints as points, log scale) against passes over the data and against
#' seconds, plus the validation metric when the fit had `validation` data.
#'
#' @param x A `"krr"` fit.
#' @param ... Passed to [graphics::plot()].
#' @return `x`, invisibly.
#' @examples
#' fit <- krr(mpg ~ ., data = mtcars, lambda = 1, threads = 1,
#'            solver = askotch(block_size = 8))
#' plot(fit)
#' @export
plot.krr <- function(x, ...) {
  tr <- x$trace
  has_val <- !is.null(tr$validation) && any(!is.na(tr$validation))
  old <- graphics::par(mfrow = c(1L, if (has_val) 3L else 2L))
  on.exit(graphics::par(old))
  pos <- function(v) ifelse(is.finite(v) & v > 0, v, NA_real_)
  est <- pos(tr$resid_est)
  ex <- pos(tr$resid_exact)
  all_r <- c(est, ex, if (x$tol > 0) x$tol)
  rng <- if (any(!is.na(all_r))) range(all_r, na.rm = TRUE) else c(1e-16, 1)
  panel <- function(xx, xlab) {
    graphics::plot(xx, est, type = "n", log = "y", ylim = rng, xlab = xlab,
                   ylab = "relative residual", ...)
    if (any(!is.na(est))) graphics::lines(xx, est, type = "o", pch = 20,
                                          cex = 0.5)
    if (any(!is.na(ex))) graphics::points(xx, ex, pch = 1, col = "red")
    if (x$tol > 0) graphics::abline(h = x$tol, lty = 3, col = "grey40")
    graphics::legend("topright", c("estimate", "exact", "tol"),
                     lty = c(1, NA, 3), pch = c(20, 1, NA),
                     col = c("black", "red", "grey40"), bty = "n", cex = 0.8)
  }
  panel(tr$passes, "passes")
  graphics::title(sprintf("%s, %s", x$solver$name, x$kernel$name))
  panel(tr$seconds, "seconds")
  if (has_val) {
    ok <- !is.na(tr$validation)
    graphics::plot(tr$passes[ok], tr$validation[ok], type = "o", pch = 20,
                   xlab = "passes", ylab = paste("validation", x$validation_metric),
                   ...)
  }
  invisible(x)
}

#' Weights, fitted values and residuals of a kernel ridge regression fit
#'
#' `coef()` returns the weights \eqn{w} solving \eqn{(K + \lambda I) w = y}
#' (with centred targets for regression and +1/-1 targets for
#' classification): a vector, or an n x m matrix for several outputs.
#' `fitted()` returns the in-sample predictions \eqn{K w} plus the target mean,
#' i.e. the decision scores for classification (use
#' `predict(fit, type = "class")` for classes); `residuals()` returns targets
#' minus fitted values (for classification the +1/-1 coded targets minus the
#' scores).
#'
#' @param object A `"krr"` fit.
#' @param ... Unused.
#' @return A numeric vector (one output) or matrix.
#' @examples
#' fit <- krr(mpg ~ wt + hp, data = mtcars, lambda = 1, threads = 1)
#' head(coef(fit))
#' head(fitted(fit))
#' head(residuals(fit))
#' @name krr-coef
NULL

#' @rdname krr-coef
#' @export
coef.krr <- function(object, ...) {
  W <- object$weights
  if (ncol(W) == 1L) W[, 1L] else W
}

#' @rdname krr-coef
#' @export
fitted.krr <- function(object, ...) {
  s <- krr_scores(object, if (is.null(object$x_train)) object$x else
    object$x_train)
  s <- sweep(s, 2L, object$y_center, "+", check.margin = FALSE)
  if (ncol(s) == 1L) s[, 1L] else {
    colnames(s) <- if (!is.null(object$levels)) object$levels else
      object$y_names
    s
  }
}

#' @rdname krr-coef
#' @export
residuals.krr <- function(object, ...) {
  f <- fitted.krr(object)
  Y <- object$y
  if (ncol(Y) == 1L) Y[, 1L] - f else {
    r <- Y - f
    colnames(r) <- colnames(f)
    r
  }
}
