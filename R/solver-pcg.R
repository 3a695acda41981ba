# Preconditioned conjugate gradients: pcg() -- the compiled solver "pcg" ---------

#' @rdname solvers
#' @param preconditioner For `pcg()`: `"nystrom"` (randomized Nyström
#'   approximation of \eqn{K}; the default when `NULL`), `"rpcholesky"`
#'   (randomly pivoted partial Cholesky), `"greedy_cholesky"` (greedy pivots)
#'   or `"none"`.
#' @export
pcg <- function(preconditioner = NULL, rank = NULL, rho = NULL) {
  check_spec(new_solver_spec("pcg", list(
    preconditioner = lower_choice(preconditioner), rank = rank,
    rho = lower_choice(rho))))
}

spec_pcg <- function() pcg()

#' @export
solver_c.askotch_solver_pcg <- function(spec) {
  list(name = "pcg", options = compact(list(
    preconditioner = spec$preconditioner, rank = spec$rank, rho = spec$rho)))
}

#' @export
solver_resolved.askotch_solver_pcg <- function(spec, options, extras) {
  user_rank <- spec$rank
  spec <- NextMethod()
  spec$preconditioner <- options$preconditioner
  # an automatic greedy rank stays automatic: a refit without the kept state
  # chooses it again (memory budget, trace stop) for its own lambda
  if (is.null(user_rank) && identical(options$preconditioner, "greedy_cholesky")) {
    spec$rank_cap <- spec$rank # the automatic rank's cap for this problem
    spec$rank <- NULL
  }
  # the rank the factor reached (an automatic rank may stop below its cap)
  if (!is.null(extras) && !is.null(extras[["rank_effective"]]) &&
      is.finite(extras[["rank_effective"]]))
    spec$rank_effective <- as.integer(extras[["rank_effective"]])
  spec
}

#' @export
format.askotch_solver_pcg <- function(x, ...) {
  pc <- if (is.null(x$preconditioner)) option_default("pcg", "preconditioner")
    else x$preconditioner
  rho <- auto(if (is.null(x$rho)) option_default("pcg", "rho") else x$rho)
  rank <- if (!is.null(x$rank_effective)) x$rank_effective else auto(x$rank)
  sprintf("PCG (%s preconditioner%s)", pc,
          if (pc == "none") "" else if (pc == "nystrom")
            sprintf(", rank %s, rho %s", rank, rho) else sprintf(", rank %s", rank))
}
