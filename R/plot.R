# Diagnostic plots of a fit ----------------------------------------------------

#' Diagnostic and convergence plots of a kernel ridge regression fit
#'
#' The panels a statistician checks a Gaussian-process regression with,
#' chosen by `which`:
#' * `"residuals"`: residuals against fitted values, with a smooth
#'   ([stats::lowess()]) to show structure the model missed;
#' * `"qq"`: a normal QQ plot of the standardised leave-one-out residuals
#'   \eqn{(y_i - \mu_{-i}) / \sigma_{-i}}, the held-out error of each point
#'   in units of its own predictive standard deviation; under the model they
#'   are standard normal, so the points lie on the line;
#' * `"fit"`: the fitted function along one input (`input`), the others held
#'   at their medians, with its `level` prediction band and the data;
#' * `"pit"`: the probability integral transform \eqn{\Phi(z_i)} of the
#'   leave-one-out residuals: flat when the predictive distributions are
#'   calibrated, U-shaped when the intervals are too narrow, peaked when too
#'   wide; the title gives the coverage of the leave-one-out `level`
#'   intervals;
#' * `"trace"`: the solver's relative residual (running estimate as a line,
#'   exact values at checkpoints as points, log scale) against passes, and
#'   the validation metric when the fit had `validation` data.
#'
#' The leave-one-out predictive distributions are exact (Rasmussen and
#' Williams 2006, section 5.4.2): with \eqn{A = K + \lambda W^{-1}},
#' \eqn{\mu_{-i} = y_i - [A^{-1} y]_i / [A^{-1}]_{ii}} and
#' \eqn{\sigma^2_{-i} = s^2 / [A^{-1}]_{ii}}, the hyperparameters and the
#' constant mean held at their estimates. For squared-loss fits on the full
#' kernel with at most `getOption("askotch.gp_exact_max_n", 5000)` points
#' they come from the factor of \eqn{A}, for every training point; above, at
#' a random subsample of 200 of them (option `askotch.plot_loo_points`; the
#' fit's `seed`), from the fit's solver applied to the subsample's unit
#' vectors (\eqn{A^{-1} e_i} gives \eqn{[A^{-1}]_{ii}}): exact to the fit's
#' tolerance, at the cost of one solve with that many right-hand sides.
#'
#' By default every panel that applies to the fit is drawn: the trace for
#' an iterative solver, the residuals, and for a Gaussian-process fit the
#' QQ plot, the fitted function and the PIT histogram (the QQ plot and the
#' PIT histogram above the exact range only when `which` names them, as
#' they cost a solve).
#'
#' @param x A `"krr"` fit.
#' @param which Panels to draw, a subset of `"residuals"`, `"qq"`, `"fit"`,
#'   `"pit"` and `"trace"`, or their numbers in that order (`1:2` draws the
#'   residuals and the QQ plot, as for [stats::plot.lm()]); `NULL`: all that
#'   apply, see above.
#' @param input For `"fit"`: the input column drawn on the horizontal axis,
#'   by name or number (columns of the model matrix for a formula fit).
#' @param output For a multi-output fit: the output column, by name or
#'   number.
#' @param level Coverage of the bands and intervals, in (0, 1).
#' @param ... Passed to [graphics::plot()].
#' @return `x`, invisibly.
#' @references Rasmussen, C. E. and Williams, C. K. I. (2006). *Gaussian
#'   Processes for Machine Learning*. MIT Press.
#' @examples
#' fit <- krr(dist ~ speed, data = cars, kernel = "matern32",
#'            bandwidth = "ml", threads = 1)
#' plot(fit)
#' it <- krr(mpg ~ ., data = mtcars, lambda = 1, threads = 1,
#'           solver = askotch(block_size = 8))
#' plot(it, which = "trace")
#' @export
plot.krr <- function(x, which = NULL, input = 1, output = 1, level = 0.95, ...) {
  ecall <- sys.call()
  validate_krr(x, ecall, "x")
  local_blas_threads(gp_threads(x))
  which <- plot_which(x, which, ecall)
  check_level(level, "level", ecall)
  j <- plot_column(input, x$xnames, x$p, "input", ecall)
  o <- plot_column(output, x$y_names, x$m, "output", ecall)
  panels <- length(which) + ("trace" %in% which && plot_has_validation(x))
  old <- graphics::par(mfrow = c(ceiling(panels / 2), min(panels, 2L)))
  on.exit(graphics::par(old))
  loo <- if (any(c("qq", "pit") %in% which)) gp_loo(x, o) else NULL
  for (w in which) {
    switch(w,
           residuals = plot_residuals(x, o, ...),
           qq = plot_qq(loo, ...),
           fit = plot_fit(x, j, o, level, ecall, ...),
           pit = plot_pit(loo, level, ...),
           trace = plot_trace(x, ...))
  }
  invisible(x)
}

# The panels asked for (checked), or every panel that applies to the fit.
plot_which <- function(x, which, ecall) {
  all <- c("residuals", "qq", "fit", "pit", "trace")
  iterative <- nrow(x$trace) > 1L
  regression <- x$task %in% c("regression", "multioutput")
  loo_ok <- gp_loo_applicable(x)
  if (is.null(which)) {
    # above the exact range the LOO panels cost a solve: drawn when asked for
    loo_default <- loo_ok && x$n <= gp_exact_max_n()
    return(c(if (iterative) "trace", "residuals", if (loo_default) "qq",
             if (regression) "fit", if (loo_default) "pit"))
  }
  if (is.numeric(which) && length(which) >= 1L && !anyNA(which) &&
      all(which %in% seq_along(all))) {
    which <- all[which]  # by number, in the order above (as plot.lm())
  }
  if (!is.character(which) || length(which) < 1L || anyNA(which) ||
      !all(which %in% all)) {
    abort_askotch(sprintf("`which` must name panels among %s, or number them 1 to %d.",
                          paste0("\"", all, "\"", collapse = ", "), length(all)),
                  "input", ecall)
  }
  which <- unique(which)
  if (any(c("qq", "pit") %in% which) && !loo_ok) {
    abort_askotch(paste(
      "The \"qq\" and \"pit\" panels need the exact leave-one-out predictive",
      "distributions: a squared-loss regression fit on the full kernel."),
      "input", ecall)
  }
  if ("fit" %in% which && !regression) {
    abort_askotch("The \"fit\" panel is for regression fits.", "input", ecall)
  }
  which
}

# A column chosen by name or number among `names` (count `k`)
plot_column <- function(v, names, k, arg, ecall) {
  if (is.character(v) && length(v) == 1L && !is.na(v) && v %in% names) {
    return(match(v, names))
  }
  if (is.numeric(v) && length(v) == 1L && !is.na(v) && v == round(v) &&
      v >= 1 && v <= k) {
    return(as.integer(v))
  }
  abort_askotch(sprintf("`%s` must be a column name or a number in 1..%d, not %s.",
                        arg, k, fmt_value(v)), "input", ecall)
}

plot_has_validation <- function(x) {
  v <- x$trace$validation
  !is.null(v) && any(!is.na(v))
}

gp_loo_applicable <- function(x) {
  gp_applicable(x) && x$task %in% c("regression", "multioutput")
}

plot_loo_points <- function() {
  as.integer(number_option("askotch.plot_loo_points", 200, function(m) m >= 10,
                           "of at least 10"))
}

# Exact leave-one-out predictive distributions of the training responses of
# output `o` (see ?plot.krr): mean, sd and the standardised residuals z, at
# every point, or above gp_exact_max_n() at the sampled `rows`. From
# alpha = A^{-1} y_c, the diagonal [A^{-1}]_ii and, with a mean function,
# A^{-1} F for the diagonal of P = A^{-1} - A^{-1} F C^{-1} F^T A^{-1}
# (alpha is then P y).
gp_loo <- function(x, o = 1L) {
  yc <- gp_yc(x)[, o]
  s <- if (x$n > gp_exact_max_n()) loo_solves_sampled(x, yc) else loo_solves_exact(x, yc)
  rows <- if (is.null(s$rows)) seq_len(x$n) else s$rows
  dA <- s$dA
  if (!is.null(x$trend)) {
    Rc <- chol(crossprod(x$trend$F, s$AF))
    dA <- dA - rowSums(t(backsolve(Rc, t(s$AF[rows, , drop = FALSE]), transpose = TRUE))^2)
  }
  s2 <- sum(yc * s$alpha) / (x$n - trend_reml_q(x))
  y <- x$y[rows, o]
  mu <- y - s$alpha[rows] / dA
  sd <- sqrt(s2 / dA)
  list(mean = mu, sd = sd, z = (y - mu) / sd, rows = s$rows)
}

# gp_loo()'s solves from the Cholesky factor of A, for every point
loo_solves_exact <- function(x, yc) {
  Ri <- backsolve(gp_exact_factor(x)$R, diag(x$n))
  list(alpha = drop(Ri %*% crossprod(Ri, yc)), dA = rowSums(Ri^2),
       AF = if (!is.null(x$trend)) Ri %*% crossprod(Ri, x$trend$F))
}

# The same at a random subsample of the training points (plot_loo_points(),
# drawn from the fit's seed), by one solve with the fit's solver (gp_solve())
# for A^{-1} [y_c, e_i (i in the subsample), F]
loo_solves_sampled <- function(x, yc) {
  idx <- subsample_rows(x$n, plot_loo_points(), if (is.null(x$seed)) 1L else x$seed)
  m <- length(idx)
  E <- matrix(0, x$n, m)
  E[cbind(idx, seq_len(m))] <- 1
  V <- gp_solve(x, cbind(yc, E, x$trend$F))
  list(alpha = V[, 1L], dA = V[cbind(idx, 1L + seq_len(m))],
       AF = if (!is.null(x$trend)) V[, -seq_len(m + 1L), drop = FALSE], rows = idx)
}

plot_residuals <- function(x, o, ...) {
  f <- as.matrix(fitted_scores(x))[, o]
  r <- x$y[, o] - f
  graphics::plot(f, r, xlab = "fitted values", ylab = "residuals",
                 main = "Residuals vs fitted", pch = 1, cex = 0.7, ...)
  graphics::abline(h = 0, lty = 3, col = "grey40")
  if (length(unique(f)) > 3L) graphics::lines(stats::lowess(f, r), col = "red")
}

# " (m sampled points)" when the LOO distributions are a subsample's
loo_note <- function(loo) if (is.null(loo$rows)) "" else
  sprintf(" (%d sampled points)", length(loo$rows))

plot_qq <- function(loo, ...) {
  z <- loo$z
  stats::qqnorm(z, main = paste0("Normal QQ, standardised LOO residuals", loo_note(loo)),
                ylab = "standardised LOO residuals", pch = 1, cex = 0.7, ...)
  graphics::abline(0, 1, lty = 3, col = "grey40")
}

plot_pit <- function(loo, level, ...) {
  u <- stats::pnorm(loo$z)
  cover <- mean(abs(loo$z) <= stats::qnorm((1 + level) / 2))
  graphics::hist(u, breaks = seq(0, 1, by = 0.1), freq = FALSE, xlab = "PIT",
                 main = sprintf("PIT; LOO %g%% intervals cover %.1f%%%s", 100 * level,
                                100 * cover, loo_note(loo)), col = "grey85", ...)
  graphics::abline(h = 1, lty = 3, col = "grey40")
}

# The fitted function along input j (the others at their medians, in the
# fit's scaled inputs), with the prediction band where the fit is a GP.
plot_fit <- function(x, j, o, level, ecall, ...) {
  xs <- gp_xs(x)
  g <- seq(min(xs[, j]), max(xs[, j]), length.out = 200L)
  xg <- matrix(apply(xs, 2L, stats::median), length(g), ncol(xs), byrow = TRUE)
  xg[, j] <- g
  s <- as.matrix(krr_scores(x, xg, NULL))
  Fg <- if (!is.null(x$trend)) plot_trend_grid(x, xg, ecall)
  Zg <- if (!is.null(x$noise)) plot_trend_grid(x, xg, ecall, "noise")
  s <- sweep(s, 2L, x$y_center, "+", check.margin = FALSE) + trend_values(x, Fg)
  band <- NULL # lower and upper limits
  if (gp_applicable(x)) {
    b <- gp_predict(x, xg, s, NULL, FALSE, "prediction", level, "auto", 100, ecall, Fg, Zg)
    band <- if (length(dim(b)) == 3L) b[, 2:3, o] else b[, 2:3]
  }
  unscale <- function(v) v * x$scale[j] + x$center[j]
  xo <- unscale(xs[, j])
  yo <- x$y[, o]
  lab <- if (is.null(x$xnames)) sprintf("input %d", j) else x$xnames[j]
  graphics::plot(xo, yo, xlab = lab, ylim = range(yo, s[, o], band),
                 ylab = plot_response_name(x, o),
                 pch = 16, cex = 0.5, col = "grey50",
                 main = if (x$p > 1L) "Fit along one input (others at medians)" else "Fit",
                 ...)
  if (!is.null(band)) {
    graphics::polygon(c(unscale(g), rev(unscale(g))), c(band[, 1L], rev(band[, 2L])),
                      col = grDevices::adjustcolor("steelblue", 0.25), border = NA)
  }
  graphics::lines(unscale(g), s[, o], col = "steelblue4", lwd = 2)
}

# The mean function's design along plot_fit()'s grid xg (scaled inputs):
# the grid in the data's units, its columns named as the predictors; the
# mean's variables must be among them.
plot_trend_grid <- function(x, xg, ecall, what = "trend") {
  xr <- sweep(sweep(xg, 2L, x$scale, "*", check.margin = FALSE), 2L, x$center, "+",
              check.margin = FALSE)
  des <- x[[what]]
  if (is.null(des$terms)) return(matrix(1, nrow(xg), 1L))
  nd <- as.data.frame(xr)
  names(nd) <- x$xnames
  if (length(setdiff(all.vars(des$terms), names(nd))) > 0L) {
    abort_askotch(paste(
      "which = \"fit\" needs the variables of `mean` and `noise` among the",
      "predictors; plot predict(fit, newdata) along a grid of your own."), "input", ecall)
  }
  if (what == "trend") trend_design_new(x, nd, xr) else noise_design_new(x, nd, xr)
}

# the response's name: the output's, the formula's response, or "response"
plot_response_name <- function(x, o) {
  if (!is.null(x$y_names)) return(x$y_names[o])
  if (is.character(x$response_name) && length(x$response_name) == 1L) {
    return(x$response_name)
  }
  "response"
}

# The solver's criterion against xx (log scale): the running estimate as a
# line, the exact values at the checks as points, the tolerance dotted.
plot_criterion <- function(x, xx, xlab, ylab, ...) {
  tr <- x$trace
  pos <- function(v) ifelse(is.finite(v) & v > 0, v, NA_real_)
  est <- pos(tr$resid_est)
  ex <- pos(tr$resid_exact)
  all_r <- c(est, ex, if (x$tol > 0) x$tol)
  rng <- if (any(!is.na(all_r))) range(all_r, na.rm = TRUE) else c(1e-16, 1)
  graphics::plot(xx, est, type = "n", log = "y", ylim = rng, xlab = xlab, ylab = ylab, ...)
  if (any(!is.na(est))) graphics::lines(xx, est, type = "o", pch = 20, cex = 0.5)
  if (any(!is.na(ex))) graphics::points(xx, ex, pch = 1, col = "red")
  if (x$tol > 0) graphics::abline(h = x$tol, lty = 3, col = "grey40")
}

plot_trace <- function(x, ...) {
  tr <- x$trace
  plot_criterion(x, tr$passes, "passes", "relative residual",
                 main = sprintf("%s, %s", x$solver$name, x$kernel$name), ...)
  graphics::legend("topright", c("estimate", "exact", "tol"), lty = c(1, NA, 3),
                   pch = c(20, 1, NA), col = c("black", "red", "grey40"), bty = "n",
                   cex = 0.8)
  if (plot_has_validation(x)) {
    ok <- !is.na(tr$validation)
    graphics::plot(tr$passes[ok], tr$validation[ok], type = "o", pch = 20,
                   xlab = "passes", ylab = paste("validation", x$validation_metric),
                   main = "Held-out metric", ...)
  }
}
