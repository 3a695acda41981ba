# Fitted objects: structural checks --------------------------------------------
#
# validate_krr() is run when a fit is made and by every method before it uses
# a fit, so that a corrupted object (a field removed or of the wrong type or
# length, NaN weights, missing levels, structure(list(), class = "krr"))
# gets a classed error (askotch_error_object) naming the field, never a wrong
# answer or an R-internal error. The checks cost O(size of the fit) with no
# copy (min_max() finds NA / NaN / Inf).

validate_krr <- function(fit, call = NULL, arg = "object") {
  bad <- function(field, what) {
    abort_askotch(sprintf(paste(
      "`%s` is not a valid askotch fit: %s %s. Fit the model again with",
      "krr() or kernel_machine()."),
      arg,
      if (is.null(field)) "it" else sprintf("field `%s`", field), what),
      "object", call)
  }
  if (!inherits(fit, "krr") || !is.list(fit)) {
    bad(NULL, "is not a list of class \"krr\"")
  }
  if (length(fit) == 0L) bad(NULL, "is empty")
  check_fit_sizes(fit, bad)
  M <- check_fit_weights(fit, bad)
  check_fit_targets(fit, M, bad)
  check_fit_scaling(fit, bad)
  check_fit_model(fit, bad)
  check_fit_record(fit, bad)
  check_fit_extras(fit, bad)
  check_fit_trend(fit, bad)
  check_fit_noise(fit, bad)
  check_fit_posterior(fit, bad)
  pl <- fit$platt
  if (!is.null(pl) && (!is.list(pl) || !inherits(fit, "kernel_machine") ||
                       !is.numeric(pl$A) || !is.numeric(pl$B) || length(pl$A) != fit$m ||
                       length(pl$B) != fit$m || !all(is.finite(c(pl$A, pl$B))))) {
    bad("platt", "must be NULL or list(A, B) of one finite sigmoid per output column")
  }
  check_fit_tuning(fit$tuning, bad)
  fit
}

# A noise model's fields (R/noise.R): named finite coefficients, one per
# covariate column with its centre and (positive) scale; a mean function
# and the observation weights it implies
check_fit_noise <- function(fit, bad) {
  nz <- fit$noise
  if (is.null(nz)) return(invisible(NULL))
  if (!is.list(nz)) bad("noise", "must be a list")
  r <- length(nz$names)
  ok <- r >= 1L && is.numeric(nz$center) &&
    length(nz$center) == r && all(is.finite(nz$center)) && is.numeric(nz$scale) &&
    length(nz$scale) == r && all(is.finite(nz$scale) & nz$scale > 0)
  ok <- ok && if (is.null(nz$gp)) {
    is.numeric(nz$coef) && all(is.finite(nz$coef)) && identical(names(nz$coef), nz$names)
  } else is.null(nz$coef)
  if (!ok) bad("noise", "must hold named finite coefficients with their centres and scales")
  if (!is.null(nz$gp)) check_fit_noise_gp(nz$gp, r, fit$n, bad)
  Z <- nz$Z
  # (a latent noise process reads Z at the training points)
  if ((!is.null(Z) || !is.null(nz$gp)) &&
      !(is.matrix(Z) && is.numeric(Z) && identical(dim(Z), c(fit$n, r)) &&
                       all(is.finite(Z)))) {
    bad("noise", sprintf("must hold the standardised noise design Z (%d x %d, finite)",
                         fit$n, r))
  }
  if (is.null(fit$trend) || is.null(fit$obs_weights)) {
    bad("noise", "needs the fit's mean function and observation weights")
  }
}

# A latent noise process's fields (R/noise-gp.R): its kernel and sd, the
# estimation rows' standardised covariates Z (n_g x r), the mode's a and
# the posterior matrix C (n_g x n_g), the rows and the log marginal
# likelihood
check_fit_noise_gp <- function(gp, r, n, bad) {
  msg <- paste("must hold the latent noise process: its kernel, sd, covariates,",
               "mode and posterior matrix")
  if (!is.list(gp)) bad("noise", msg)
  k <- gp$kernel
  ng <- NROW(gp$Z)
  fin <- function(v) is.numeric(v) && all(is.finite(v))
  ok <- listed_kernel_ok(k) && is.null(k$spec) && isTRUE(k$name %in% auto_kernels) &&
    fin(gp$sd) && length(gp$sd) == 1L && gp$sd > 0 &&
    is.matrix(gp$Z) && fin(gp$Z) && ncol(gp$Z) == r && ng >= 1L &&
    fin(gp$a) && length(gp$a) == ng && is.matrix(gp$C) && fin(gp$C) &&
    identical(dim(gp$C), c(ng, ng)) && fin(gp$rows) && length(gp$rows) == ng &&
    all(gp$rows >= 1 & gp$rows <= n & gp$rows == round(gp$rows)) &&
    fin(gp$loglik) && length(gp$loglik) == 1L
  if (!ok) bad("noise", msg)
}

# A listed kernel object: its name's code and metric, a positive finite
# bandwidth
listed_kernel_ok <- function(kern) {
  inherits(kern, "askotch_kernel") && is.list(kern) &&
    identical(kern$code, tryCatch(kernel_code(kern$name), error = function(e) NULL)) &&
    is.numeric(kern$bandwidth) && length(kern$bandwidth) == 1L &&
    is.finite(kern$bandwidth) && kern$bandwidth > 0 &&
    is.character(kern$metric) && length(kern$metric) == 1L
}

# A mean function's fields (R/trend.R): the training design F (n x q), its
# solved columns A^{-1} F, the coefficients (q x m), C^{-1} (q x q,
# symmetric positive definite), the flags and the terms predict() builds F
# from (NULL: the GLS constant).
check_fit_trend <- function(fit, bad) {
  tr <- fit$trend
  if (is.null(tr)) return(invisible(NULL))
  if (!is.list(tr)) bad("trend", "must be NULL or a list")
  fin_mat <- function(v, r, c) is.matrix(v) && is.numeric(v) && all(dim(v) == c(r, c)) &&
    all(is.finite(v))
  q <- if (is.matrix(tr$F)) ncol(tr$F) else 0L
  if (q < 1L || q >= fit$n || !fin_mat(tr$F, fit$n, q) || is.null(colnames(tr$F))) {
    bad("trend$F", sprintf("must be a finite n x q matrix with column names, 1 <= q < n = %d",
                           fit$n))
  }
  if (!fin_mat(tr$weights, fit$n, q)) bad("trend$weights", "must be a finite n x q matrix")
  if (!fin_mat(tr$coef, q, fit$m)) bad("trend$coef", sprintf("must be a finite %d x %d matrix",
                                                            q, fit$m))
  C <- tr$cov_unscaled
  if (!fin_mat(C, q, q) || max(abs(C - t(C))) > 1e-8 * max(abs(C)) ||
      is.null(tryCatch(chol(C), error = function(e) NULL))) {
    bad("trend$cov_unscaled", "must be a symmetric positive definite q x q matrix")
  }
  for (f in c("reml", "intercept")) {
    if (!is.logical(tr[[f]]) || length(tr[[f]]) != 1L || is.na(tr[[f]])) {
      bad(paste0("trend$", f), "must be TRUE or FALSE")
    }
  }
  if (!is.null(tr$terms) && !inherits(tr$terms, "terms")) {
    bad("trend$terms", "must be NULL or a terms object")
  }
  if (any(fit$y_center != 0)) bad("y_center", "must be 0 for a fit with a mean function")
}

# the fields of some fits only: a kernel machine's dual record, ARD length
# scales, the memory limit, and the names a regression's outputs carry
check_fit_extras <- function(fit, bad) {
  one <- function(v) is.numeric(v) && length(v) == 1L
  for (f in c("primal", "dual", "gap")) {
    if (!is.null(fit[[f]]) && !one(fit[[f]])) bad(f, "must be NULL or one number")
  }
  # counts per output column (one-vs-rest: one per class), the union and the bound
  sp <- fit$support
  per_col <- function(v) is.numeric(v) && length(v) == fit$m
  if (!is.null(sp) && (!is.list(sp) || !per_col(sp$count) || !per_col(sp$at_bound) ||
                       !one(sp$any) || !one(sp$bound))) {
    bad("support", paste("must be NULL or a list of the counts `count`, `at_bound` (one per",
                         "output column), `any` and the bound `bound`"))
  }
  ml <- fit$mem_limit
  if (!is.null(ml) && (!one(ml) || is.na(ml) || ml < 0)) {
    bad("mem_limit", "must be one non-negative number")
  }
  ls <- fit$length_scales
  if (!is.null(ls) && (!is.numeric(ls) || length(ls) != fit$p || !finite_all(ls) ||
                       any(ls <= 0))) {
    bad("length_scales", sprintf("must be NULL or %d positive numbers", fit$p))
  }
  tn <- fit$tuning
  if (is.list(tn) && identical(tn$bandwidth_rule, "ard") && is.null(ls)) {
    bad("length_scales", "is missing (the fit estimated them)")
  }
  if (fit$task %in% c("regression", "multioutput") && !is.null(fit$levels)) {
    bad("levels", "must be NULL for a regression")
  }
  if (fit$task == "multioutput" && is.null(fit$y_names)) {
    bad("y_names", sprintf("must hold the %d outputs' names", fit$m))
  }
}

# the record of the hyperparameter choice (NULL: none), as the methods read it
check_fit_tuning <- function(tn, bad) {
  if (is.null(tn)) return(invisible())
  rules <- c("ml", "gcv", "loo", "cv", "path", "validation", "fixed", "laplace", "ep")
  if (!is.list(tn) || !is.character(tn$lambda_rule) || length(tn$lambda_rule) != 1L ||
      !tn$lambda_rule %in% rules) {
    bad("tuning", sprintf("must be a list whose `lambda_rule` is one of %s",
                          paste0("\"", rules, "\"", collapse = ", ")))
  }
  ms <- tn$models
  if (!is.null(ms) && (!is.data.frame(ms) ||
                       !all(c("kernel", "scaling", "loglik", "chosen") %in% names(ms)) ||
                       !is.logical(ms$chosen) || sum(ms$chosen %in% TRUE) != 1L)) {
    bad("tuning", "has a `models` table without one chosen kernel")
  }
}

# a whole finite number; no NA, NaN or Inf (an empty vector passes)
whole <- function(v) is.numeric(v) && length(v) == 1L && !is.na(v) &&
  is.finite(v) && v == round(v)
finite_all <- function(v) length(v) == 0L || all(is.finite(min_max(v)))

# n, p, m, the task and the class levels
check_fit_sizes <- function(fit, bad) {
  for (f in c("n", "p", "m")) {
    if (!whole(fit[[f]]) || fit[[f]] < 1) bad(f, "must be a positive whole number")
  }
  m <- fit$m
  tasks <- c("regression", "multioutput", "binary", "multiclass")
  if (!is.character(fit$task) || length(fit$task) != 1L ||
      !fit$task %in% tasks) {
    bad("task", sprintf("must be one of %s",
                        paste0("\"", tasks, "\"", collapse = ", ")))
  }
  if (fit$task %in% c("binary", "multiclass")) {
    lev <- fit$levels
    if (!is.character(lev) || length(lev) < 2L || anyNA(lev) ||
        anyDuplicated(lev)) {
      bad("levels", "must hold the (at least 2) distinct class labels")
    }
    if (m != (if (fit$task == "binary") 1L else length(lev)) ||
        (fit$task == "binary") != (length(lev) == 2L)) {
      bad("levels", sprintf("(%d) do not match the task and %d output(s)",
                            length(lev), m))
    }
  }
}

# the weights (or random-feature coefficients) and the points they belong
# to; the feature count M (0: kernel weights on points)
check_fit_weights <- function(fit, bad) {
  n <- fit$n
  p <- fit$p
  m <- fit$m
  features <- fit$features
  if (!is.null(features) && (!whole(features) || features < -1)) {
    bad("features", "must be 0, -1 (linear) or a positive whole number")
  }
  M <- if (is.null(features)) 0 else features
  W <- fit$weights
  if (!is.matrix(W) || !is.numeric(W) || ncol(W) != m) {
    bad("weights", sprintf("must be a numeric matrix with %d column(s)", m))
  }
  if (!finite_all(W)) bad("weights", "contains NA, NaN or infinite values")
  # prediction points
  if (M != 0) {
    if (M < 0) { # the linear operator: one weight per column of x, x kept
      M <- p
      X <- fit$x
      if (!is.matrix(X) || !is.numeric(X) || !identical(dim(X), c(as.integer(n), as.integer(p))) ||
          !finite_all(X)) {
        bad("x", sprintf("must be a finite numeric %d x %d matrix", n, p))
      }
      if (is.null(fit$y)) bad("y", "is missing")
      if (!is.null(fit$x_train)) bad("x_train", "must be NULL for a linear-features fit")
    }
    if (nrow(W) != M) bad("weights", sprintf("must have %d rows (the features)", M))
  } else {
    X <- fit$x
    if (!is.matrix(X) || !is.numeric(X) || ncol(X) != p || nrow(X) < 1L) {
      bad("x", sprintf("must be a numeric matrix with %d column(s)", p))
    }
    if (nrow(W) != nrow(X)) {
      bad("weights", sprintf("must have one row per point of `x` (%d), not %d",
                             nrow(X), nrow(W)))
    }
    if (!finite_all(X)) bad("x", "contains NA, NaN or infinite values")
    if (!is.null(fit$x_train)) {
      XT <- fit$x_train
      if (!is.matrix(XT) || !is.numeric(XT) || ncol(XT) != p || nrow(XT) != n ||
          !finite_all(XT)) {
        bad("x_train", sprintf("must be a finite numeric %d x %d matrix", n, p))
      }
      cen <- fit$centers
      if (!is.numeric(cen) || length(cen) != nrow(X) || anyNA(cen) ||
          any(cen < 1 | cen > n)) {
        bad("centers", sprintf("must hold %d row indices in 1..%d",
                               nrow(X), n))
      }
    } else if (!is.null(fit$distributed) && !is.null(fit$centers)) {
      # a rank's distributed Falkon model: the centres' points, its
      # training rows elsewhere (askotch_mpi_gather() brings them)
      cen <- fit$centers
      if (!is.numeric(cen) || length(cen) != nrow(X) || anyNA(cen) ||
          any(cen < 1 | cen > n)) {
        bad("centers", sprintf("must hold %d row indices in 1..%d", nrow(X), n))
      }
    } else if (nrow(X) != n) {
      bad("x", sprintf("must have n = %d rows, not %d", n, nrow(X)))
    } else if (!is.null(fit$centers)) {
      bad("centers", "must be NULL for a fit on its training points")
    }
  }
  M
}

# the training responses (absent only where the model needs none)
check_fit_targets <- function(fit, M, bad) {
  n <- fit$n
  m <- fit$m
  if (!is.null(fit$y)) {
    Y <- fit$y
    if (!is.matrix(Y) || !is.numeric(Y) || nrow(Y) != n || ncol(Y) != m ||
        !finite_all(Y)) {
      bad("y", sprintf("must be a finite numeric %d x %d matrix", n, m))
    }
  } else if (M == 0 && (is.null(fit$distributed) || is.null(fit$centers))) {
    bad("y", "is missing")
  }
  off <- fit$offset
  if (!is.null(off) && (!is.numeric(off) || length(off) != n || !finite_all(off))) {
    bad("offset", sprintf("must be NULL or %d finite numbers", n))
  }
}

# the standardisation and the names
check_fit_scaling <- function(fit, bad) {
  p <- fit$p
  m <- fit$m
  for (f in c("center", "scale")) {
    v <- fit[[f]]
    if (!is.numeric(v) || length(v) != p || !finite_all(v)) {
      bad(f, sprintf("must be %d finite number(s), one per column", p))
    }
  }
  if (any(fit$scale <= 0)) bad("scale", "must be positive")
  if (!is.numeric(fit$y_center) || length(fit$y_center) != m ||
      !finite_all(fit$y_center)) {
    bad("y_center", sprintf("must be %d finite number(s)", m))
  }
  if (!is.null(fit$xnames) && (!is.character(fit$xnames) ||
                               length(fit$xnames) != p)) {
    bad("xnames", sprintf("must be NULL or %d column name(s)", p))
  }
  if (!is.null(fit$y_names) && (!is.character(fit$y_names) ||
                                length(fit$y_names) != m)) {
    bad("y_names", sprintf("must be NULL or %d name(s)", m))
  }
}

# kernel, lambda, loss, solver, precision, device, threads, seed, bias and
# observation weights
check_fit_model <- function(fit, bad) {
  n <- fit$n
  m <- fit$m
  kern <- fit$kernel
  if (inherits(kern, "askotch_kernel_composite")) {
    if (is.null(kern$spec) || !identical(kern$spec, composite_finalise(kern)$spec) ||
        !identical(kern$code, composite_info()$code)) {
      bad("kernel", "must be a composite kernel with every hyperparameter a number")
    }
  } else if (!listed_kernel_ok(kern)) {
    bad("kernel", "must be a kernel object with a positive finite bandwidth")
  }
  if (!is.numeric(fit$lambda) || length(fit$lambda) != 1L ||
      !is.finite(fit$lambda) || fit$lambda <= 0) {
    bad("lambda", "must be a positive finite number")
  }
  if (!is.null(fit$loss) && !inherits(fit$loss, "askotch_loss")) {
    bad("loss", "must be a loss object")
  }
  if (!inherits(fit$solver, "askotch_solver") ||
      !is.character(fit$solver$name) || length(fit$solver$name) != 1L) {
    bad("solver", "must be a solver specification")
  }
  if (!identical(fit$precision, "double") && !identical(fit$precision, "single")) {
    bad("precision", "must be \"double\" or \"single\"")
  }
  if (!identical(fit$device, "cpu") && !identical(fit$device, "cuda")) {
    bad("device", "must be \"cpu\" or \"cuda\"")
  }
  if (!is.null(fit$threads) && (!whole(fit$threads) || fit$threads < 0)) {
    bad("threads", "must be a non-negative whole number")
  }
  sd <- fit$seed
  if (!is.numeric(sd) || length(sd) != 1L || !is.finite(sd) || sd < 0 || sd >= 2^53 ||
      sd != round(sd)) {
    bad("seed", "must be a whole number in [0, 2^53)")
  }
  if (!is.null(fit$bias) && (!is.numeric(fit$bias) || length(fit$bias) != m ||
                             !finite_all(fit$bias))) {
    bad("bias", sprintf("must be %d finite number(s)", m))
  }
  ic <- fit$intercept
  if (!is.null(ic) && (!(is.numeric(ic) || is.logical(ic)) || length(ic) != 1L ||
                       is.na(ic) || ic < 0)) {
    bad("intercept", "must be FALSE or a non-negative number")
  }
  if (isTRUE(as.numeric(ic) > 0) && is.null(fit$bias)) {
    bad("bias", "is missing (the fit has an intercept)")
  }
  check_fit_path(fit, bad)
  if (!is.null(fit$obs_weights)) {
    ow <- fit$obs_weights
    if (!is.numeric(ow) || length(ow) != n || !finite_all(ow) || any(ow <= 0)) {
      bad("obs_weights", sprintf("must be %d positive finite numbers", n))
    }
  }
}

# a lambda path's fits: one weight matrix like `weights` per lambda of
# `lambda_path`
check_fit_path <- function(fit, bad) {
  pw <- fit$path_weights
  lp <- fit$lambda_path
  if (is.null(pw) && is.null(lp)) return(invisible())
  if (!is.data.frame(lp) || !is.numeric(lp$lambda) || !finite_all(lp$lambda) ||
      any(lp$lambda <= 0)) {
    bad("lambda_path", "must be a data frame with a column of positive `lambda`")
  }
  if (!is.list(pw) || length(pw) != nrow(lp)) {
    bad("path_weights", sprintf("must be a list of %d weight matrices", nrow(lp)))
  }
  for (W in pw) {
    if (!is.matrix(W) || !is.numeric(W) || !identical(dim(W), dim(fit$weights)) ||
        !finite_all(W)) {
      bad("path_weights", sprintf(
        "must hold finite numeric matrices of the weights' size (%d x %d)",
        nrow(fit$weights), ncol(fit$weights)))
    }
  }
}

# the solve's record: trace, stop reason, convergence, counts
check_fit_record <- function(fit, bad) {
  if (!is.data.frame(fit$trace)) bad("trace", "must be a data frame")
  reasons <- c("tol", "exact", "precision", "max_passes", "time_limit",
               "max_iter")  # max_iter: svrg()'s epochs
  if (!is.character(fit$reason) || length(fit$reason) != 1L ||
      !fit$reason %in% reasons) {
    bad("reason", sprintf("must be one of %s",
                          paste0("\"", reasons, "\"", collapse = ", ")))
  }
  if (!is.logical(fit$converged) || length(fit$converged) != 1L ||
      is.na(fit$converged)) {
    bad("converged", "must be TRUE or FALSE")
  }
  for (f in c("iterations", "passes", "seconds", "resid_est", "resid_exact",
              "tol")) {
    if (!is.numeric(fit[[f]]) || length(fit[[f]]) != 1L) {
      bad(f, "must be one number")
    }
  }
  if (!is.null(fit$terms) && !inherits(fit$terms, "terms")) {
    bad("terms", "must be a terms object")
  }
  tr <- fit$tol_rule
  if (!is.null(tr) && !(identical(tr, NA_character_) ||
                        (is.character(tr) && length(tr) == 1L && tr %in% tol_rules))) {
    bad("tol_rule", sprintf("must be NA or one of %s",
                            paste0("\"", tol_rules, "\"", collapse = ", ")))
  }
}

# A fit that stopped without converging (and had a tolerance to reach) warns.
warn_not_converged <- function(fit, call = NULL) {
  if (isTRUE(fit$converged) || !isTRUE(fit$tol > 0)) return(invisible(fit))
  r <- if (!is.na(fit$resid_exact)) fit$resid_exact else fit$resid_est
  if (identical(fit$reason, "precision")) {
    warn_askotch(sprintf(paste(
      "The solver stopped at the rounding floor of %s precision after %s",
      "passes: relative residual %s (floor about %s) cannot go below tol =",
      "%s.%s"), fit$precision, format(signif(fit$passes, 3)),
      format(signif(r, 3)), format(signif(fit$resid_floor, 2)),
      format(fit$tol), if (fit$precision == "single")
        " Use precision = \"double\" for a smaller residual." else
        " A larger lambda makes the system better conditioned."),
      "convergence", call)
    return(invisible(fit))
  }
  # without a final exact check the value is the solver's running estimate:
  # said so, with the last exact value of the trace beside it
  est <- ""
  if (is.na(fit$resid_exact)) {
    tr <- fit$trace
    ex <- if (!is.null(tr$resid_exact)) which(!is.na(tr$resid_exact)) else integer(0)
    est <- if (length(ex)) sprintf(" (running estimate; %s at the last exact check, pass %s)",
                                   format(signif(tr$resid_exact[max(ex)], 3)),
                                   format(signif(tr$passes[max(ex)], 3))) else
      " (running estimate)"
  }
  warn_askotch(sprintf(paste(
    "The solver stopped without converging (%s): %s %s%s > tol = %s after %s",
    "passes. %s"),
    switch(fit$reason, max_passes = "`max_passes` reached",
           time_limit = "`time_limit` reached",
           max_iter = "the `epochs` of svrg() reached", fit$reason),
    fit_loss(fit)$criterion, format(signif(r, 3)), est, format(fit$tol),
    format(signif(fit$passes, 3)),
    if (identical(fit$reason, "max_iter"))
      "Raise `epochs` (or tune `step`) of svrg()." else
    if (fit_loss(fit)$name == "squared")
      paste("Raise `max_passes` or `time_limit`, or use a direct solver",
            "(solver = \"cholesky\") for small n.") else
      # no direct solver for the other losses (Joker's dual only)
      paste("Raise `max_passes` or `time_limit`; a larger `lambda` (a smaller",
            "C = 1 / lambda) converges in fewer passes.")), "convergence", call)
  invisible(fit)
}

# A GP classifier's posterior: "laplace" or "ep" on a logistic kernel
# machine; EP's sites (precisions tau >= 0) and mean weights, n x m
check_fit_posterior <- function(fit, bad) {
  if (is.null(fit$posterior)) {
    if (!is.null(fit[["ep"]])) bad("ep", "must be NULL without posterior = \"ep\"")
    return(invisible())
  }
  if (!is_gp_classifier(fit$posterior) || !inherits(fit, "kernel_machine") ||
      fit_loss(fit)$name != "logistic") {
    bad("posterior", "must be NULL, \"laplace\" or \"ep\" for a logistic kernel machine")
  }
  if (!identical(fit$posterior, "ep")) return(invisible())
  ep <- fit[["ep"]]
  dims_ok <- function(M) {
    is.matrix(M) && is.numeric(M) && isTRUE(all(dim(M) == c(fit$n, fit$m))) && all(is.finite(M))
  }
  if (!is.list(ep) || !dims_ok(ep$tau) || any(ep$tau < 0) || !dims_ok(ep$weights) ||
      !is.numeric(ep$logz) || length(ep$logz) != fit$m) {
    bad("ep", "must hold the sites' precisions `tau` (>= 0) and the weights, n x m, and `logz`")
  }
}
