# Falkon: falkon() -- the compiled solver "falkon" -------------------------------

#' @rdname solvers
#' @param centers For `falkon()` and `eigenpro(version = 3)`: `NULL`
#'   (default: \eqn{\min(n, 20000, \lceil\sqrt{n}\log n\rceil)} centres
#'   sampled uniformly), a number of centres, or a vector of (at least two)
#'   training row indices.
#' @export
falkon <- function(centers = NULL) {
  check_spec(new_solver_spec("falkon", list(centers = check_centers(centers))))
}

spec_falkon <- function() falkon()

# `centers` is a count (length 1) or row indices: the union R offers over
# the compiled options n_centers and centers
check_centers <- function(centers) {
  if (!is.null(centers)) {
    ok <- is.numeric(centers) && length(centers) >= 1L &&
      all(is.finite(centers)) && all(centers >= 1) &&
      all(centers == round(centers))
    if (!ok) {
      abort_askotch(sprintf(paste(
        "`centers` must be NULL, a number of centres or a vector of row",
        "indices (whole numbers >= 1), not %s."), fmt_value(centers)), "input")
    }
  }
  centers
}

centers_options <- function(centers) {
  if (length(centers) == 1L) list(n_centers = centers)
  else if (length(centers) > 1L) list(centers = as.numeric(centers))
  else list()
}

format_centers <- function(centers) {
  if (is.null(centers)) "auto" else if (length(centers) == 1L)
    format(centers) else format(length(centers))
}

#' @export
solver_c.askotch_solver_falkon <- function(spec) {
  list(name = "falkon", options = centers_options(spec$centers))
}

#' @export
solver_resolved.askotch_solver_falkon <- function(spec, options, extras) spec

#' @export
format.askotch_solver_falkon <- function(x, ...) {
  sprintf("Falkon (%s centres)", format_centers(x$centers))
}
