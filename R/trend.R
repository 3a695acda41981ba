# Mean functions: universal kriging ---------------------------------------------
#
# krr(x, y, mean = ~ z1 + z2): each output column is
#   y = F beta + f + e,  f ~ GP(0, s^2 k),  e ~ N(0, s^2 lambda W^{-1}),
# F the n x q design of the one-sided formula (model.matrix()). With A = K +
# lambda W^{-1}, the generalised least-squares (GLS) estimate is
#   beta = C^{-1} F^T A^{-1} y,  C = F^T A^{-1} F,
# and the kernel weights alpha = A^{-1} (y - F beta), so that the predictor at
# x is f(x)^T beta + k_x^T alpha (Cressie 1993, sec. 3.4; Rasmussen and
# Williams 2006, sec. 2.7). The fit's own solver computes both at once: the q
# columns of F are solved with the targets as extra right-hand sides,
# A [W_y, W_F] = [y, F], then C = F^T W_F, beta = C^{-1} F^T W_y and alpha =
# W_y - W_F beta. The predictor's error variance (universal kriging) is
#   s^2 [k(x, x) - k_x^T A^{-1} k_x + u_x^T C^{-1} u_x],  u_x = f(x) - W_F^T k_x,
# the simple-kriging variance of the GP methods plus a term from W_F's
# kernel product with the new points, no further solve at any n (trend_u()
# and gp_add_trend_var() in R/gp.R).
# beta's covariance is s^2 C^{-1}. The hyperparameters' likelihood profiles
# beta out (maximum likelihood) or integrates it out (REML); see
# R/gp-likelihood.R. With an intercept in F the targets are centred before
# the solve (any constant is in F's span: beta absorbs it, alpha is
# unchanged), which keeps the automatic tolerance on the scale of the
# response's variation.

# The trend of a fit's training rows from `mean` (a one-sided formula over
# the columns of x, or the design the formula method built) and
# `likelihood`: NULL for the constant mean (the targets centred, as without
# `mean`), else list(F, terms, xlevels, contrasts, intercept, reml). `~ 1`
# is the constant mean, estimated by GLS when likelihood = "reml" needs it.
trend_setup <- function(mean, likelihood, x, call = NULL, gls = FALSE) {
  reml <- check_choice(likelihood, c("ml", "reml"), "likelihood", call) == "reml"
  tr <- if (inherits(mean, "askotch_trend")) mean else {
    if (!is.null(mean)) check_mean_formula(mean, call)
    if (is.null(mean) || trend_constant(mean)) {
      if (!reml && !gls) return(NULL)
      trend_intercept(NROW(x))
    } else {
      trend_build(mean, x_columns_frame(x, "mean", call), call)
    }
  }
  tr$reml <- reml
  check_trend_design(tr$F, call)
  tr
}

# The columns of the matrix method's x as a data frame, for the formulas of
# `mean` and `noise` (which name them)
x_columns_frame <- function(x, arg, call) {
  xm <- as_feature_matrix(x, "x", call)
  if (is.null(colnames(xm))) {
    abort_askotch(sprintf(paste(
      "`%s` names columns of `x`, which has no column names: give `x`",
      "column names, or use the formula method with `data`."), arg), "input", call)
  }
  as.data.frame(xm)
}

check_mean_formula <- function(mean, call, arg = "mean") {
  if (!inherits(mean, "formula") || length(mean) != 2L) {
    abort_askotch(sprintf(paste(
      "`%s` must be a one-sided formula such as ~ x1 + x2 (or NULL), not %s."),
      arg, fmt_value(mean)), "input", call)
  }
}

# `~ 1` (the constant mean), or `~ 0` / `~ -1`: no trend terms
trend_constant <- function(mean) {
  length(attr(stats::terms(mean), "term.labels")) == 0L
}

trend_intercept <- function(n) {
  Fd <- matrix(1, n, 1L, dimnames = list(NULL, "(Intercept)"))
  list(F = Fd, terms = NULL, xlevels = NULL, contrasts = NULL, intercept = TRUE)
}

# The design of `mean` on the rows of `data` (missing values kept as NA:
# the caller's na.action decides), with what predict() needs to build it at
# new points. The terms keep their "predvars" (safe prediction for poly(),
# splines::ns() and the like) and no environment (plain data).
trend_build <- function(mean, data, call = NULL, arg = "mean") {
  tt <- stats::terms(mean)
  miss <- if (is.list(data)) setdiff(all.vars(tt), names(data))
  if (length(miss) > 0L) {
    abort_askotch(sprintf(
      "`%s` uses %s, not among the %s.", arg, paste0("`", miss, "`", collapse = ", "),
      "columns of the data"), "input", call)
  }
  build <- function(expr) tryCatch(expr, error = function(e) abort_askotch(sprintf(
    "Cannot build the design of `%s`: %s", arg, conditionMessage(e)), "input", call))
  mf <- build(stats::model.frame(tt, data, na.action = stats::na.pass))
  tt <- stats::terms(mf)
  Fd <- build(stats::model.matrix(tt, mf))
  contr <- attr(Fd, "contrasts")
  attr(Fd, "assign") <- NULL
  attr(Fd, "contrasts") <- NULL
  environment(tt) <- globalenv()
  list(F = Fd, terms = tt, xlevels = stats::.getXlevels(tt, mf),
       contrasts = contr, intercept = attr(tt, "intercept") == 1L)
}

# The design must be finite, of full column rank and leave residual degrees
# of freedom.
check_trend_design <- function(Fd, call = NULL) {
  n <- nrow(Fd)
  q <- ncol(Fd)
  if (!all(is.finite(Fd))) {
    abort_askotch(paste(
      "The design of `mean` has missing or infinite values on the rows",
      "fitted; remove those rows (or use na.action with the formula method)."),
      "input", call)
  }
  if (q == 0L || q >= n) {
    abort_askotch(sprintf(paste(
      "The design of `mean` has %d column(s) for %d rows; it needs at least",
      "one and fewer than the rows."), q, n), "input", call)
  }
  r <- qr(Fd, tol = 1e-10)$rank
  if (r < q) {
    abort_askotch(sprintf(paste(
      "The design of `mean` (columns %s) has rank %d, less than its %d",
      "columns: drop the linearly dependent terms."),
      paste(colnames(Fd), collapse = ", "), r, q), "input", call)
  }
}

# The trend of a subsample's rows (NULL stays NULL)
trend_rows <- function(trend, rows) {
  if (is.null(trend) || length(rows) == nrow(trend$F)) return(trend)
  trend$F <- trend$F[rows, , drop = FALSE]
  trend
}

# What a mean function needs of the rest of the fit: regression on the full
# kernel (solvers whose weights are A^{-1} y), lambda chosen by a criterion
# that models the trend (the likelihood, GCV or LOO) or given, no validation
# set (its predictions would need the trend's covariates), and the
# likelihood on the subsample (the stochastic refinement has no trend).
check_trend_fit <- function(tr, dat, set, call = NULL) {
  why <- NULL
  sp <- set$solver
  if (!dat$tgt$task %in% c("regression", "multioutput")) {
    why <- "regression (a numeric response)"
  } else if (set_features(set) != 0 || inherits(sp, "askotch_solver_falkon") ||
             inherits(sp, "askotch_solver_svrg") ||
             (inherits(sp, "askotch_solver_eigenpro") && identical(as.integer(sp$version), 3L))) {
    why <- paste("a solver on the full kernel (cholesky(), pcg(), askotch() and",
                 "its family, eigenpro(version = 2), bcd(\"nystrom\"))")
  } else if (set$lambda_spec$rule %in% c("cv", "path")) {
    why <- "lambda by the likelihood, GCV or LOO, or a number (not cross-validation)"
  } else if (!is.null(set$validation)) {
    why <- "no `validation` set"
  } else if (!is.null(dat$noise) && !set$lambda_spec$rule %in% c("default", "ml", "fixed")) {
    why <- "lambda by maximum likelihood or a number (the noise model is estimated with it)"
  } else if (dat$n > tune_exact_max_n() && set$lambda_spec$rule %in% c("default", "ml") &&
             identical(getOption("askotch.ml_method", "subsample"), "stochastic")) {
    why <- "options(askotch.ml_method = \"subsample\") (the stochastic refinement has no trend)"
  }
  if (!is.null(why)) {
    abort_askotch(sprintf("A fit with `mean`, `noise` or likelihood = \"reml\" needs %s.", why),
                  "input", call)
  }
}

# The GLS step after the joint solve of [Yc, F] (weights W, n x (m + q)):
# the kernel weights alpha (n x m) and the trend's fields of the fit. The
# centring constant yc of the targets is added to the intercept.
trend_gls <- function(W, tr, m, yc, names) {
  q <- ncol(tr$F)
  Wy <- W[, seq_len(m), drop = FALSE]
  WF <- W[, m + seq_len(q), drop = FALSE]
  C <- crossprod(tr$F, WF)
  R <- tryCatch(chol((C + t(C)) / 2), error = function(e) NULL)
  if (is.null(R)) {
    abort_askotch(paste(
      "F^T A^{-1} F of the mean function is not numerically positive definite",
      "(nearly collinear columns of `mean`, or a kernel that reproduces them):",
      "simplify `mean`."), "numeric")
  }
  Ci <- chol2inv(R)
  beta <- Ci %*% crossprod(tr$F, Wy)
  alpha <- Wy - WF %*% beta
  if (tr$intercept) beta[1L, ] <- beta[1L, ] + yc
  dimnames(beta) <- list(colnames(tr$F), names)
  dimnames(Ci) <- list(colnames(tr$F), colnames(tr$F))
  dimnames(WF) <- NULL
  list(alpha = alpha, trend = list(
    coef = beta, cov_unscaled = Ci, F = tr$F, weights = WF, terms = tr$terms,
    xlevels = tr$xlevels, contrasts = tr$contrasts, intercept = tr$intercept,
    reml = tr$reml))
}

# The design at new data: `newdata` (a data frame, formula fits) or the new
# feature matrix x with the fit's column names (matrix fits); the intercept
# only for the GLS constant.
trend_design_new <- function(object, newdata, x) {
  tr <- object$trend
  if (is.null(tr$terms)) return(matrix(1, nrow(x), 1L))
  unname(design_new(tr, object, newdata, x, "mean")[, colnames(tr$F), drop = FALSE])
}

# A design (trend or noise: terms, xlevels, contrasts) at `newdata` (formula
# fits) or at the new feature matrix x with the fit's column names (matrix
# fits), rows aligned with x
design_new <- function(des, object, newdata, x, arg) {
  data <- if (is.null(object$terms)) {
    xd <- as.data.frame(x)
    names(xd) <- object$xnames
    xd
  } else newdata
  miss <- setdiff(all.vars(des$terms), names(data))
  if (length(miss) > 0L) {
    abort_askotch(sprintf("`newdata` is missing the variable(s) %s used by `%s`.",
                          paste0("`", miss, "`", collapse = ", "), arg), "input")
  }
  build <- function(expr) tryCatch(expr, error = function(e) abort_askotch(sprintf(
    "Cannot build the design of `%s` at `newdata`: %s", arg, conditionMessage(e)), "input"))
  mf <- build(stats::model.frame(des$terms, data, xlev = des$xlevels,
                                 na.action = stats::na.pass))
  Fd <- build(stats::model.matrix(des$terms, mf, contrasts.arg = des$contrasts))
  if (nrow(Fd) != nrow(x)) {
    abort_askotch(sprintf(paste(
      "The design of `%s` at `newdata` has %d rows, the predictors %d."),
      arg, nrow(Fd), nrow(x)), "input")
  }
  Fd
}

# The trend's part of the predictions: F beta (n_new x m), 0 without a trend.
# Fnew NULL: the training rows.
trend_values <- function(object, Fnew = NULL) {
  tr <- object$trend
  if (is.null(tr)) return(0)
  if (is.null(Fnew)) Fnew <- tr$F
  unname(Fnew %*% tr$coef)
}

# The number of trend coefficients REML's variance divides by (n - q)
trend_reml_q <- function(object) {
  tr <- object$trend
  if (!is.null(tr) && isTRUE(tr$reml)) ncol(tr$F) else 0L
}

# The trend's likelihood data of a fit: list(F, reml) or NULL
trend_lik <- function(object) {
  tr <- object$trend
  if (is.null(tr)) NULL else list(F = tr$F, reml = isTRUE(tr$reml))
}
