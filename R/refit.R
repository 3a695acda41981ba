# Solving again from a fit: refit() and the kept solver state ----------------

#' Solve again: new responses, a new lambda, or a warm start
#'
#' Fits the same kernel model again without redoing what does not change.
#' With `keep_state = TRUE` in [krr()] the fit holds the solver's state (its
#' Nyström sketches, eigensystems, factorisations and work space); `refit()`
#' reuses it: new responses restart the iterations from zero with the
#' preconditioner kept, and a new `lambda` keeps what does not depend on
#' \eqn{\lambda} (the Nyström sketches and eigensystems; factorisations with
#' \eqn{\lambda} inside are redone) and starts from the current weights. A
#' fit without a state (the default, or one read back with [readRDS()],
#' since the state is never saved) gets a new one, built once.
#'
#' @param object A `"krr"` fit.
#' @param newresp New responses for the same training points (same task:
#'   numeric for regression, a factor with the same levels for
#'   classification), or `NULL` to keep the fitted ones.
#' @param lambda A new \eqn{\lambda}, or `NULL` to keep the fitted one.
#' @param warm_start Start from the fit's weights (default when the
#'   responses are unchanged, e.g. along a \eqn{\lambda} path) instead of
#'   zero.
#' @param tol,max_passes,time_limit Stopping rules as in [krr()]; the fit's
#'   own by default.
#' @param progress Show a progress bar?
#' @param keep_state Keep the solver state in the result (by default when
#'   `object` had one).
#' @param ... Unused.
#' @return A `"krr"` fit like `object`, with the new weights, `lambda`,
#'   responses, trace and convergence information. It is a fit at one
#'   \eqn{\lambda} (the fit's selected one unless `lambda` is given): the
#'   other fits of a \eqn{\lambda} path are dropped, so
#'   `predict(lambda = )` on it is an error rather than a mix of old weights
#'   and new responses. A kernel machine's probabilities follow the new fit:
#'   Platt's sigmoid (`probability = TRUE`) is fitted again by its
#'   cross-validation, and expectation propagation (`posterior = "ep"`) runs
#'   again.
#' @seealso [krr()]
#' @examples
#' set.seed(1)
#' x <- matrix(runif(400), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(200, sd = 0.1)
#' fit <- krr(x, y, lambda = 2, solver = pcg(), keep_state = TRUE,
#'            threads = 1)
#' # a lambda path, each fit warm-started from the previous one
#' path <- Reduce(function(f, l) refit(f, lambda = l), c(1, 0.5, 0.2),
#'                accumulate = TRUE, init = fit)
#' sapply(path, function(f) c(lambda = f$lambda, passes = f$passes))
#' # new responses, same preconditioner
#' fit2 <- refit(fit, newresp = cos(3 * x[, 2]))
#' @export
refit <- function(object, ...) UseMethod("refit")

#' @rdname refit
#' @export
refit.krr <- function(object, newresp = NULL, lambda = NULL,
                      warm_start = is.null(newresp), tol = NULL,
                      max_passes = NULL, time_limit = NULL, progress = FALSE,
                      keep_state = NULL, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  ecall <- sys.call()
  check_no_dots(list(...), "refit", ecall)
  if (is_svrg(object$solver)) {
    abort_askotch("refit() does not support svrg() fits: fit again with krr().",
                  "input", ecall)
  }
  if (fit_features(object) > 0) {
    abort_askotch(paste(
      "refit() does not support random-feature fits (kernel_machine(features",
      "= ) or bcd(\"random\")): fit again with the new settings."), "input", ecall)
  }
  if (!is.null(object$trend)) {
    abort_askotch(paste(
      "refit() does not support fits with a mean function (`mean` or",
      "likelihood = \"reml\"): fit again with krr()."), "input", ecall)
  }
  xs <- if (is.null(object$x_train)) object$x else object$x_train
  tgt <- refit_targets(object, newresp, nrow(xs), ecall)
  if (is.null(lambda)) lambda <- object$lambda
  check_positive(lambda, "lambda", call = ecall)
  check_lambda_numeric(lambda, object$precision, ecall)
  check_flag(warm_start, "warm_start", ecall)
  check_flag(progress, "progress", ecall)
  if (is.null(keep_state)) keep_state <- !is.null(object$state)
  check_flag(keep_state, "keep_state", ecall)
  cen <- loss_targets(fit_loss(object), tgt, fit_intercept(object) == 0,
                      object$obs_weights)
  rs <- refit_rule(object, cen$Yc, lambda, tol, max_passes, time_limit, ecall)
  set <- settings_from_fit(object, lambda, rs$tol, rs$max_passes, rs$time_limit,
                           progress)
  t0 <- now()
  state <- krr_state(object)
  keep <- FALSE
  on.exit(if (!keep && !identical(state, object$state)) native_fit_free(state),
          add = TRUE)
  # the targets restart the weights from zero; the fit's weights, set at
  # its own lambda, are then carried to the new one by set_lambda (for the
  # losses other than the squared it keeps lambda * weights: alpha seeding)
  native_fit_set_targets(state, cen$Yc)
  if (warm_start) {
    W <- object$weights
    dimnames(W) <- NULL
    native_fit_set_weights(state, W)
  }
  native_fit_set_lambda(state, lambda)
  res <- drive_solver(state, set, tgt, xs, t0, use_floor = TRUE)
  keep <- keep_state
  fit <- refit_fields(object, res, tgt, cen, lambda, rs)
  # Platt's sigmoid and EP's sites belong to the former lambda and targets
  if (!is.null(fit[["platt"]])) fit <- platt_calibrate(fit, ecall)
  if (identical(fit$posterior, "ep")) fit$ep <- ep_fit(fit, ecall)
  fit$state <- if (keep_state) state else NULL
  fit$call <- ecall
  warn_not_converged(validate_krr(fit), ecall)
}

# The targets of a refit: the fit's, or `newresp` of the same kind.
refit_targets <- function(object, newresp, n, ecall) {
  tgt <- list(task = object$task, levels = object$levels, names = object$y_names,
              Y = object$y)
  if (is.null(newresp)) return(tgt)
  # a formula fit's offset is part of the model: the fit is of y - offset
  if (!is.null(object$offset) && is.numeric(newresp) && NROW(newresp) == n) {
    newresp <- subtract_offset(newresp, object$offset, ecall)
  }
  new_tgt <- loss_check_targets(fit_loss(object),
                                prepare_targets(newresp, n, ecall), ecall)
  same <- identical(new_tgt$task, tgt$task) && identical(new_tgt$levels, tgt$levels) &&
    ncol(new_tgt$Y) == ncol(tgt$Y)
  if (!same) {
    abort_askotch(sprintf(paste(
      "`newresp` must be a response of the same kind as the fit's (%s with",
      "%d column(s)%s)."), task_label(object), ncol(tgt$Y),
      if (is.null(tgt$levels)) "" else
        paste0(", levels ", paste(tgt$levels, collapse = ", "))),
      "input", ecall)
  }
  new_tgt
}

# The stop rule's settings of a refit: an automatic tolerance (the fit's
# rule, or one `tol` names) follows the new lambda and responses; the rest
# default to the fit's.
refit_rule <- function(object, Yc, lambda, tol, max_passes, time_limit, ecall) {
  rule <- if (is.null(tol)) {
    if (isTRUE(object$tol_auto)) fit_tol_rule(object) else NA_character_
  } else tol_rule(tol, fit_loss(object), ecall)
  tol_auto <- !is.na(rule)
  if (tol_auto) {
    tol <- rule_tol(rule, Yc, lambda, object$precision, kdiag = 1 + fit_intercept(object))
  } else if (is.null(tol)) {
    tol <- object$tol
  }
  check_tol(tol, ecall)
  max_passes <- if (is.null(max_passes)) object$max_passes else max_passes
  time_limit <- if (is.null(time_limit)) object$time_limit else time_limit
  check_positive(max_passes, "max_passes", allow_inf = TRUE, call = ecall)
  check_positive(time_limit, "time_limit", allow_inf = TRUE, call = ecall)
  list(tol = tol, tol_auto = tol_auto, tol_rule = rule, max_passes = max_passes,
       time_limit = time_limit)
}

# The refitted object: the fit with the new weights, lambda, targets and
# solve record.
refit_fields <- function(object, res, tgt, cen, lambda, rs) {
  fit <- object
  W <- res$weights
  colnames(W) <- tgt$names
  fit$weights <- W
  if (!is.null(fit$tuning) && !identical(fit$lambda, as.numeric(lambda))) {
    # a lambda given here is no longer the one chosen from the data
    fit$tuning$lambda_rule <- "fixed"
    fit$tuning$path <- NULL
  }
  fit$lambda <- as.numeric(lambda)
  # a refit is a fit at one lambda: the other fits of a lambda path belong
  # to the old responses and are dropped (predict(lambda = ) then refuses)
  fit$path_weights <- NULL
  fit$lambda_path <- NULL
  fit$y <- tgt$Y
  fit$y_center <- cen$y_center
  fit$solver <- solver_resolved(object$solver, res$options, res$extras)
  fit$tol <- rs$tol
  fit$tol_auto <- rs$tol_auto
  fit$tol_rule <- rs$tol_rule
  fit$max_passes <- rs$max_passes
  fit$time_limit <- rs$time_limit
  fit$validation_metric <- NA_character_
  sf <- solve_fields(res, rs$tol_auto)
  fit[names(sf)] <- sf
  if (inherits(object, "kernel_machine")) fit <- km_fields(fit, res)
  fit
}
