# Regularisation paths solved at once (Tu et al. 2016: keep a model and a
# residual per lambda and reuse each block's kernel and Gram products across
# the path, "essentially the price of a single solution"). The compiled BCD
# solvers and SAP / NSAP take the targets repeated once per lambda with a
# lambda per column; here the path is set up, split and selected.

# TRUE for the solvers that solve a lambda path at once (the compiled
# solver's rule for these options: bcd(), and sap()'s exact blocks with one
# factor of K_BB + lambda I per lambda)
path_solver <- function(solver) {
  sc <- solver_c(solver)
  isTRUE(native_options_caps(sc$name, sc$options)$lambda_path)
}

# Settings and targets of a path solve: lambdas (decreasing), the targets
# repeated once per lambda, the stop rule's tolerance the tightest of theirs.
path_settings <- function(set, Yc, lambdas) {
  ps <- set
  ps$lambda <- rep(lambdas, each = ncol(Yc))
  ps$path <- lambdas
  if (isTRUE(set$tol_auto)) {
    ps$rule$tol <- min(vapply(lambdas, function(l) lambda_tol(set, Yc, l), 0))
  }
  ps
}

path_targets <- function(Yc, L) Yc[, rep(seq_len(ncol(Yc)), L), drop = FALSE]

# The path on all the data: one solve, then the selected lambda's weights
# (by the validation set when there is one, else set$lambda, the choice of
# the cross-validation over the same path) as the fit's, every lambda's
# kept for predict(lambda = ).
fit_path <- function(xs, Yc, set, tgt) {
  lams <- set$lambda_spec$path
  L <- length(lams)
  m <- ncol(Yc)
  ps <- path_settings(set, Yc, lams)
  res <- fit_solver(xs, path_targets(Yc, L), ps, tgt)
  cols <- path_columns(m, L)
  vfinal <- if (!is.null(res$path_validation)) {
    pv <- res$path_validation
    pv[max(which(rowSums(is.na(pv)) == 0L)), ]
  }
  sel <- if (!is.null(vfinal)) {
    if (set$validation$metric == "rmse") which.min(vfinal) else which.max(vfinal)
  } else {
    which.min(abs(lams - set$lambda))
  }
  keep <- function(M) lapply(cols, function(j) M[, j, drop = FALSE])
  res$path <- list(lambda = lams, selected = sel, validation = vfinal,
                   weights = keep(if (!is.null(res$theta)) res$theta else res$weights),
                   trace = res$path_validation)
  res$weights <- res$weights[, cols[[sel]], drop = FALSE]
  if (!is.null(res$theta)) res$theta <- res$theta[, cols[[sel]], drop = FALSE]
  res$lambda <- lams[sel]
  res
}

# The path's record in a fit: fit$path (lambda, validation metric, selected;
# the weights of every lambda) and the selected lambda
path_fields <- function(fit, res) {
  p <- res$path
  fit$lambda <- res$lambda
  fit$path_weights <- lapply(p$weights, function(W) {
    colnames(W) <- colnames(fit$weights)
    W
  })
  tab <- data.frame(lambda = p$lambda)
  if (!is.null(p$validation)) tab$validation <- p$validation
  tab$selected <- seq_along(p$lambda) == p$selected
  cv <- fit$tuning$path
  if (!is.null(cv) && !is.null(cv$cv)) tab$cv <- cv$cv[match(p$lambda, cv$lambda)]
  fit$lambda_path <- tab
  if (!is.null(p$trace)) { # each lambda's validation metric, one row per trace row
    colnames(p$trace) <- format(p$lambda)
    fit$validation_path <- p$trace
  }
  fit
}

# A fit with the weights of lambda `lambda` of its path (predict(lambda = ))
path_select <- function(object, lambda, call = NULL) {
  if (is.null(object$path_weights)) {
    abort_askotch(paste(
      "`lambda`: this fit has no lambda path; fit one with a vector of",
      "`lambda` values and solver = bcd() or sap()."), "input", call)
  }
  lams <- object$lambda_path$lambda
  if (!is.numeric(lambda) || length(lambda) != 1L || is.na(lambda)) {
    abort_askotch(sprintf("`lambda` must be one value of the fit's path, not %s.",
                          fmt_value(lambda)), "input", call)
  }
  i <- which(abs(lams - lambda) <= 1e-10 * lams)
  if (length(i) != 1L) {
    abort_askotch(sprintf("`lambda` (%s) is not on the fit's path (%s).",
                          format(lambda), paste(format(lams), collapse = ", ")),
                  "input", call)
  }
  object$weights <- object$path_weights[[i]]
  object$lambda <- lams[i]
  object
}
