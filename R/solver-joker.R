# Joker: dual block coordinate descent with a trust region -- the compiled
# solver "joker" (src/core/solvers/joker.c) ---------------------------------

#' @rdname solvers
#' @param tr_iters For `joker()`: trust-region steps per block (Algorithm
#'   1 of the paper; `NULL`: 50).
#' @param cg_iters For `joker()`: truncated CG-Steihaug steps per
#'   trust-region step (`NULL`: \eqn{\min(b, 50)}).
#' @param support For `joker()`: the largest share of the training points
#'   over which a block's kernel product is summed as the points with a
#'   nonzero dual weight only (the support vectors of the hinge, squared
#'   hinge and SVR losses), in \[0, 1\]; above it, and for `support = 0`, the
#'   product runs over all points (`NULL`: 0.5). Holding the support points
#'   takes up to this share of the data's memory again.
#' @export
joker <- function(block_size = NULL, tr_iters = NULL, cg_iters = NULL,
                  support = NULL) {
  spec <- new_solver_spec("joker", list(block_size = block_size,
                                        tr_iters = tr_iters,
                                        cg_iters = cg_iters,
                                        support = support))
  # the options are checked against the compiled table when Joker is built
  # in; without it a fit says so (askotch_error_not_built)
  if (solver_compiled("joker")) check_spec(spec) else spec
}

spec_joker <- function() joker()

#' @export
solver_c.askotch_solver_joker <- function(spec) {
  list(name = "joker", options = compact(list(
    block_size = spec$block_size, tr_iters = spec$tr_iters,
    cg_iters = spec$cg_iters, support = spec$support)))
}

#' @export
solver_resolved.askotch_solver_joker <- function(spec, options, extras) {
  for (nm in c("block_size", "tr_iters", "cg_iters", "support")) {
    if (!is.null(options[[nm]])) spec[[nm]] <- options[[nm]]
  }
  spec
}

#' @export
format.askotch_solver_joker <- function(x, ...) {
  sprintf("Joker (dual block coordinate descent, block size %s)",
          auto(x$block_size))
}
