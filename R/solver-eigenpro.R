# EigenPro 2.0 and 3.0: eigenpro() -- the compiled solvers "eigenpro" and
# "eigenpro3" --------------------------------------------------------------------

#' @rdname solvers
#' @param version For `eigenpro()`: `2` (EigenPro 2.0, full KRR) or `3`
#'   (EigenPro 3.0, inducing points on `centers`).
#' @param subsample For `eigenpro()`: number \eqn{s} of points whose kernel
#'   matrix gives the preconditioner's eigenvectors, drawn uniformly once
#'   from the training points (version 2) or from the centres (version 3);
#'   `NULL` uses \eqn{\min(n, 4000)} (version 3: at most the number of
#'   centres).
#' @param batch_size For `eigenpro()`: mini-batch size; `NULL` uses the
#'   EigenPro rule (the critical batch size, at most \eqn{\min(n, 4096)}).
#'   The size used is stored in the fitted object (`fit$solver$block_size`).
#' @param step For `eigenpro()`: step size; `NULL` uses the EigenPro 2.0 or
#'   3.0 rule for the batch size. The step used is stored in the fitted
#'   object (`fit$solver$step`). The rule's step comes from the subsample's
#'   eigenvalues and can be too large for the whole data (a small
#'   `subsample` with a large `rank`): EigenPro 2.0 then halves it and starts
#'   again from zero when the residual grows tenfold
#'   (`fit$solver$step_halvings` counts the halvings); a step you give is
#'   kept.
#' @export
eigenpro <- function(version = 2, subsample = NULL, batch_size = NULL,
                     step = NULL, rank = NULL, centers = NULL) {
  if (!(is.numeric(version) && length(version) == 1L && !is.na(version) &&
        version %in% c(2, 3))) {
    abort_askotch(sprintf("`version` must be 2 or 3, not %s.",
                          fmt_value(version)), "input")
  }
  if (version == 2 && !is.null(centers)) {
    abort_askotch(paste(
      "`centers` is only used by `eigenpro(version = 3)` (inducing points);",
      "EigenPro 2.0 fits the full KRR problem."), "input")
  }
  check_spec(new_solver_spec("eigenpro", list(
    version = as.integer(version), subsample = subsample,
    batch_size = batch_size, step = step, rank = rank,
    centers = check_centers(centers))))
}

spec_eigenpro <- function() eigenpro()

#' @export
solver_c.askotch_solver_eigenpro <- function(spec) {
  v3 <- identical(spec$version, 3L)
  # a step or batch the fit chose itself stays automatic (it depends on lambda)
  opts <- compact(list(subsample = spec$subsample, batch_size = spec$batch_size,
                       step = if (isTRUE(spec$auto_step)) NULL else spec$step,
                       rank = spec$rank))
  if (v3) opts <- c(opts, centers_options(spec$centers))
  list(name = if (v3) "eigenpro3" else "eigenpro", options = opts)
}

#' @export
solver_resolved.askotch_solver_eigenpro <- function(spec, options, extras) {
  spec$rank <- as.integer(options$rank)
  spec$subsample <- options$subsample
  # the automatic batch and step are known once the fit has started
  if (!is.na(extras[["batch_size"]])) spec$block_size <- extras[["batch_size"]]
  if (!is.na(extras[["step"]])) {
    if (is.null(spec$step) || isTRUE(spec$auto_step)) spec$auto_step <- TRUE
    spec$step <- extras[["step"]]
  }
  if ("step_halvings" %in% names(extras) && !is.na(extras[["step_halvings"]]))
    spec$step_halvings <- as.integer(extras[["step_halvings"]])
  spec
}

#' @export
format.askotch_solver_eigenpro <- function(x, ...) {
  v3 <- identical(x$version, 3L)
  sprintf(paste("EigenPro %s (preconditioned SGD%s, subsample %s,",
                "rank %s, batch %s, step %s)"),
          if (v3) "3.0" else "2.0",
          if (v3) sprintf(" on %s centres", format_centers(x$centers)) else "",
          auto(x$subsample), auto(x$rank),
          auto(if (is.null(x$batch_size)) x$block_size else x$batch_size),
          auto(x$step))
}
