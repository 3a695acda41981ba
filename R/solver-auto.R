# solver = "auto": the exact solve for small n, PCG with a greedy Cholesky
# preconditioner in the middle, ASkotch above ---------------------------------

# The largest n solved exactly by solver = "auto" (option
# askotch.auto_exact_max_n): a Cholesky factorisation of K + lambda I costs
# n^3 / 3 flops and 8 n^2 bytes (about 200 MB and a few seconds on two
# cores at n = 5000), below which it is faster than any iterative solver to
# a relative residual of 1e-8.
auto_exact_max_n <- function() getOption("askotch.auto_exact_max_n", 5000)

# The largest n solved by PCG with the blocked greedy Cholesky preconditioner
# of automatic rank (option askotch.auto_pcg_max_n): it stores n x r numbers
# (r up to 4096, within half the memory budget). In the defaults study
# (inst/bench/bench_auto_solver.R; inst/bench/RESULTS.md, "Time to a useful
# answer") it reached the exact solution's test error first among the
# solvers of the exact system on every task, most of them several times
# sooner than ASkotch. Above it ASkotch, whose memory is linear in n (the
# papers' choice at the largest scales), unless auto_pcg_large() allows PCG:
# PCG's rank (and so its passes) depends on the memory, so above this n the
# rank the budget affords decides.
auto_pcg_max_n <- function() getOption("askotch.auto_pcg_max_n", 2e5)

# Above auto_pcg_max_n() and up to max_n (max_n_cuda on a GPU), PCG still
# when the rank its memory budget allows (the C solver's automatic rank,
# capped at half the budget) is at least min_rank, else ASkotch (option
# askotch.auto_pcg_large, c(max_n =, max_n_cuda =, min_rank =)).  The
# values come from inst/bench/bench_crossover.R (Friedman 1, p = 10, ML
# lambda; inst/bench/RESULTS.md): on a CPU, PCG at rank 1000 or more reached
# the converged test RMSE sooner than ASkotch at n = 4e5 and 5e5, while at
# rank 750 it only tied and at 550 it lost, hence min_rank = 1000 and
# max_n = 5e5; on a GPU a pass of PCG's full kernel product costs seconds, so
# PCG at rank 4096 stays ahead of ASkotch up to n = 1e6 (max_n_cuda).
auto_pcg_large <- function(device = "cpu") {
  v <- getOption("askotch.auto_pcg_large",
                 c(max_n = 5e5, max_n_cuda = 1e6, min_rank = 1000))
  max_n <- if (identical(device, "cuda") && "max_n_cuda" %in% names(v))
    v[["max_n_cuda"]] else v[["max_n"]]
  list(max_n = as.numeric(max_n), min_rank = as.numeric(v[["min_rank"]]))
}

# The largest n for which solver = "auto" takes dcd() for the losses other
# than the squared (option askotch.auto_dual_max_n), when its n x n kernel
# matrix also fits `mem_limit` (if given; the compiled solver checks the
# budget and fit_solver() falls back to joker() on its refusal).  dcd() forms
# K once and each of its steps costs one column of it, while Joker computes a
# b x n block of kernel rows per iteration: with K in memory dcd() reached
# LIBSVM's test accuracy sooner than Joker on every set of
# inst/bench/bench_small_n.R (inst/bench/RESULTS.md, "Kernel machines at
# ordinary sizes"); 2e4 points hold 3.2 GB in double precision.
auto_dual_max_n <- function() getOption("askotch.auto_dual_max_n", 2e4)

# The solver "auto" stands for, for n points on `device` ("cpu" or "cuda",
# resolved): cholesky() when n is at most
# auto_exact_max_n() and the n x n factor fits in `mem_limit` (bytes, 0: no
# limit given), pcg("greedy_cholesky") up to auto_pcg_max_n(), then up to
# auto_pcg_large(device)$max_n pcg("greedy_cholesky") marked with the least rank
# it must afford (attribute "auto_min_rank", checked by fit_solver() against
# the compiled solver's resolved rank, which falls back to askotch()), else
# askotch(); for the other losses dcd() up to auto_dual_max_n() (marked with
# the solver to take if its memory is refused, attribute "auto_fallback"),
# then joker(); with random features the loss's default solver.
auto_solver <- function(n, precision = "double", mem_limit = 0,
                        loss = loss_squared(), features = NULL, device = "cpu") {
  if (!is.null(features)) return(default_solver(loss))
  bytes <- (if (precision == "double") 8 else 4) * as.numeric(n)^2
  fits <- is.null(mem_limit) || mem_limit <= 0 || bytes <= mem_limit
  if (loss$name != "squared") {
    if (n <= auto_dual_max_n() && fits)
      return(structure(dcd(), auto_fallback = default_solver(loss)))
    return(default_solver(loss))
  }
  exact <- n <= auto_exact_max_n() && fits
  large <- auto_pcg_large(device)
  if (exact) cholesky()
  else if (n <= auto_pcg_max_n()) pcg("greedy_cholesky")
  else if (n <= large$max_n) structure(pcg("greedy_cholesky"), auto_min_rank = large$min_rank)
  else askotch()
}

default_solver <- function(loss) if (loss$name == "squared") askotch() else joker()
