# The exact direct solve: cholesky() -- the compiled solver "cholesky" ----------

#' @rdname solvers
#' @export
cholesky <- function() new_solver_spec("cholesky", list())

spec_cholesky <- function() cholesky()

#' @export
solver_c.askotch_solver_cholesky <- function(spec) list(name = "cholesky", options = list())

#' @export
format.askotch_solver_cholesky <- function(x, ...) "Cholesky (exact direct solve)"
