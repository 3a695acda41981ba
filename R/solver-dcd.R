# Greedy dual coordinate descent on the kernel matrix formed once -- the
# compiled solver "dcd" (src/core/solvers/dcd.c) -----------------------------

#' @rdname solvers
#' @param steps For `dcd()`: coordinate steps per output column between two
#'   checks of the duality gap (`NULL`: \eqn{\max(64, n/8)}).
#' @export
dcd <- function(steps = NULL) {
  spec <- new_solver_spec("dcd", list(steps = steps))
  if (solver_compiled("dcd")) check_spec(spec) else spec
}

spec_dcd <- function() dcd()

#' @export
solver_c.askotch_solver_dcd <- function(spec) {
  list(name = "dcd", options = compact(list(steps = spec$steps)))
}

#' @export
solver_resolved.askotch_solver_dcd <- function(spec, options, extras) {
  if (!is.null(options$steps)) spec$steps <- options$steps
  spec
}

#' @export
format.askotch_solver_dcd <- function(x, ...) {
  "dual coordinate descent on the kernel matrix"
}
