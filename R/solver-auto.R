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
# (r up to 4096, within half the memory budget); in the defaults study
# (inst/bench/bench_auto_solver.R, 12 tasks at n = 1e4 and 2e4) it reached
# the exact solution's test error first among the exact solvers on all 12,
# 2.8 to 33 times sooner than ASkotch on 10 (median about 9 times) and tied
# with it on one (Fashion-MNIST, lambda = 1e-6 n). Above it ASkotch, whose memory
# is linear in n (the papers' choice at the largest scales). At n = 1e5
# (p = 10, ML lambda) PCG at rank 4000 converged in 187 s where ASkotch
# stopped unconverged after 100 passes and 1544 s.  At n = 4e5
# (inst/bench/bench_crossover.R, 24 GB: the rank capped by memory at 1649)
# PCG was within 0.1% of its final test RMSE after 455 s (6 passes; converged
# after 30) where ASkotch was still 1.8% above it after 900 s: the crossover
# lies higher on that machine, but PCG's rank (and so its passes) depends on
# the memory: above this n, auto_pcg_large() decides by the rank.
auto_pcg_max_n <- function() getOption("askotch.auto_pcg_max_n", 2e5)

# Above auto_pcg_max_n() and up to max_n (max_n_cuda on a GPU), PCG still
# when the rank its memory budget allows (the C solver's automatic rank,
# capped at half the budget) is at least min_rank, else ASkotch (option
# askotch.auto_pcg_large, c(max_n =, max_n_cuda =, min_rank =)).  At n = 4e5
# on the 2-core CPU (inst/bench/bench_crossover.R, Friedman 1, p = 10, ML
# lambda; test RMSE 1.0063 when converged) PCG at rank 1649 (what half of
# 24 GB allow) was within 0.1% of it after 455 s and at rank 1000 after
# 708 s, where ASkotch was 1.8% above it after 900 s; PCG at rank 750 was
# also 1.8% above it after 900 s (a tie), at rank 550 (about what 8 GB
# allow) still 10% above.  min_rank 1000 keeps PCG where it was shown to
# win.  At n = 5e5 on the same CPU PCG at rank 1328 (its memory cap there)
# was within 0.1% after 679 s (and stayed from 1009 s) where ASkotch was
# still 0.3-0.6% above it after 1200 s, so max_n is 5e5.  On one GPU (H200,
# double, the same script) PCG at rank 4096 was
# within 0.1% after 9.0 s at n = 5e5 (ASkotch still 0.8% above after 25 s)
# and after 21.7 s at n = 1e6 (ASkotch after 91 s): a pass of PCG's full
# product costs seconds there, so its range reaches 1e6 on a GPU.
auto_pcg_large <- function(device = "cpu") {
  v <- getOption("askotch.auto_pcg_large",
                 c(max_n = 5e5, max_n_cuda = 1e6, min_rank = 1000))
  max_n <- if (identical(device, "cuda") && "max_n_cuda" %in% names(v))
    v[["max_n_cuda"]] else v[["max_n"]]
  list(max_n = as.numeric(max_n), min_rank = as.numeric(v[["min_rank"]]))
}

# The solver "auto" stands for, for n points on `device` ("cpu" or "cuda",
# resolved): cholesky() when n is at most
# auto_exact_max_n() and the n x n factor fits in `mem_limit` (bytes, 0: no
# limit given), pcg("greedy_cholesky") up to auto_pcg_max_n(), then up to
# auto_pcg_large(device)$max_n pcg("greedy_cholesky") marked with the least rank
# it must afford (attribute "auto_min_rank", checked by fit_solver() against
# the compiled solver's resolved rank, which falls back to askotch()), else
# askotch(); for the other losses and random features, the loss's default
# solver.
auto_solver <- function(n, precision = "double", mem_limit = 0,
                        loss = loss_squared(), features = NULL, device = "cpu") {
  if (loss$name != "squared" || !is.null(features)) return(default_solver(loss))
  bytes <- (if (precision == "double") 8 else 4) * as.numeric(n)^2
  exact <- n <= auto_exact_max_n() && (is.null(mem_limit) || mem_limit <= 0 ||
                                         bytes <= mem_limit)
  large <- auto_pcg_large(device)
  if (exact) cholesky()
  else if (n <= auto_pcg_max_n()) pcg("greedy_cholesky")
  else if (n <= large$max_n) structure(pcg("greedy_cholesky"), auto_min_rank = large$min_rank)
  else askotch()
}

default_solver <- function(loss) if (loss$name == "squared") askotch() else joker()
