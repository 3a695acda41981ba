# solver = "auto": the exact solve for small n, ASkotch above ------------------

# The largest n solved exactly by solver = "auto" (option
# askotch.auto_exact_max_n): a Cholesky factorisation of K + lambda I costs
# n^3 / 3 flops and 8 n^2 bytes (about 200 MB and a few seconds on two
# cores at n = 5000), below which it is faster than any iterative solver to
# a relative residual of 1e-8.
auto_exact_max_n <- function() getOption("askotch.auto_exact_max_n", 5000)

# The solver "auto" stands for, for n points: cholesky() when n is at most
# auto_exact_max_n() and the n x n factor fits in `mem_limit` (bytes, 0: no
# limit given), else askotch(); for the other losses and random features,
# the loss's default solver.
auto_solver <- function(n, precision = "double", mem_limit = 0,
                        loss = loss_squared(), features = NULL) {
  if (loss$name != "squared" || !is.null(features)) return(default_solver(loss))
  bytes <- (if (precision == "double") 8 else 4) * as.numeric(n)^2
  exact <- n <= auto_exact_max_n() && (is.null(mem_limit) || mem_limit <= 0 ||
                                         bytes <= mem_limit)
  if (exact) cholesky() else askotch()
}
