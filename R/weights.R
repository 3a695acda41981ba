# Observation weights ---------------------------------------------------------
#
# Weights are per-point noise: point i has noise variance lambda / w_i, so
# the weights solve (K + lambda W^{-1}) alpha = y, W = diag(w).  The compiled
# code solves the equivalent symmetric system (D K D + lambda I) v = D y,
# alpha = D v, D = W^{1/2}, on a scaled kernel operator (src/core/op/scale.c),
# which every solver runs on unchanged.

# `weights`: NULL, or one non-negative finite number per row of x, not all
# zero.  Rows of weight zero are dropped (they carry no information: infinite
# noise).  Returns list(x, y, w (positive weights of the kept rows, or
# NULL), dropped (indices of the dropped rows, or NULL)).
obs_weights_rows <- function(x, y, weights, call = NULL) {
  if (is.null(weights)) return(list(x = x, y = y, w = NULL, dropped = NULL))
  x <- as_feature_matrix(x, "x", call)
  n <- nrow(x)
  if (!is.numeric(weights) || length(weights) != n ||
      (!is.null(dim(weights)) && sum(dim(weights) > 1L) > 1L)) {
    abort_askotch(sprintf(paste(
      "`weights` must be a numeric vector with one value per row of `x`",
      "(%d), not %s."), n, fmt_value(weights)), "input", call)
  }
  w <- as.numeric(weights)
  bad <- !is.finite(w) | w < 0
  if (any(bad)) {
    i <- which(bad)[1L]
    abort_askotch(sprintf(paste(
      "`weights` must be non-negative and finite; found %d bad value(s),",
      "the first at %d (%s)."), sum(bad), i, fmt_value(w[i])), "input", call)
  }
  keep <- w > 0
  if (sum(keep) < 2L) {
    abort_askotch(sprintf(paste(
      "`weights` must have at least 2 positive values (rows of weight 0 are",
      "dropped), not %d."), sum(keep)), "input", call)
  }
  dropped <- NULL
  if (!all(keep) && NROW(y) == n) {
    dropped <- which(!keep)
    x <- x[keep, , drop = FALSE]
    y <- if (is.matrix(y) || is.data.frame(y)) y[keep, , drop = FALSE] else
      y[keep]
    w <- w[keep]
  }
  list(x = x, y = y, w = w, dropped = dropped)
}

# The model must support weights: the squared loss only (the weights are a
# noise model; other losses would need per-point costs, which the scaled
# operator does not give), and not EigenPro 3.0 (whose projected SGD is not
# checked against the weighted Nystrom solution).  Returns the weights.
check_weights_model <- function(w, set, call = NULL) {
  if (is.null(w)) return(NULL)
  if (set$loss$name != "squared") {
    abort_askotch(sprintf(paste(
      "`weights` (observation weights as per-point noise) are supported for",
      "the squared loss only, not the %s loss."), set$loss$name), "input", call)
  }
  if (solver_c(set$solver)$name == "svrg") {
    abort_askotch("`solver`: svrg() does not take observation `weights`.",
                  "input", call)
  }
  if (solver_c(set$solver)$name == "eigenpro3") {
    abort_askotch(paste(
      "`weights` are not supported by eigenpro(version = 3); use falkon()",
      "for weighted inducing-point fits, or askotch(), pcg(), cholesky()."),
      "input", call)
  }
  w
}

# the observation weights of a fit, all 1 for a fit made without
fit_obs_weights <- function(object) {
  if (is.null(object$obs_weights)) rep(1, object$n) else object$obs_weights
}
