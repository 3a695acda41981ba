# Rmpi and askotch in one SPMD program, for test-mpi.R, run as
#   timeout 120 mpirun -np P Rscript rmpi.R <mode> <outdir>
# mode "first": Rmpi is loaded first (it initialises MPI); askotch joins its
# session, fits distributed, Rmpi reduces the fit's weights over the ranks
# and finalises MPI.  mode "after": askotch initialises MPI, then Rmpi is
# loaded (its communicators are not set up): askotch's warning is recorded
# and Rmpi is not called.  Each rank saves what it saw to <outdir>/rank<r>.rds.
args <- commandArgs(TRUE)
mode <- args[1L]
out <- args[2L]
res <- list()
if (mode == "first") {
  suppressPackageStartupMessages(library(Rmpi))
  suppressPackageStartupMessages(library(askotch))
  s <- askotch_mpi_init()
  res$rmpi <- c(Rmpi::mpi.comm.rank(0L), Rmpi::mpi.comm.size(0L))
  set.seed(1)
  n <- 240L
  x <- matrix(rnorm(n * 3L), n, 3L)
  y <- sin(2 * x[, 1]) + x[, 2]^2 / 2 + 0.1 * rnorm(n)
  cut <- round(seq(0, n, length.out = s$size + 1L))
  rows <- seq.int(cut[s$rank + 1L] + 1L, cut[s$rank + 2L])
  fit <- krr(x[rows, , drop = FALSE], y[rows], lambda = 0.05,
             solver = askotch(block_size = 40, rank = 10), seed = 3,
             max_passes = 4, tol = 0, threads = 1, distributed = TRUE)
  # the weights of all ranks, in rank order, by Rmpi's own collective
  w <- numeric(n)
  w[rows] <- fit$weights
  res$w <- Rmpi::mpi.allreduce(w, type = 2L, op = "sum", comm = 0L)
} else {
  suppressPackageStartupMessages(library(askotch))
  s <- askotch_mpi_init()
  res$warning <- NULL
  withCallingHandlers(
    suppressPackageStartupMessages(library(Rmpi)),
    warning = function(w) {
      res$warning <<- list(class = class(w), message = conditionMessage(w))
      invokeRestart("muffleWarning")
    })
}
res$askotch <- c(s$rank, s$size)
saveRDS(res, file.path(out, sprintf("rank%d.rds", s$rank)))
if (mode == "first") {
  askotch_mpi_finalize() # (its notice to the other ranks needs MPI running)
  invisible(Rmpi::mpi.finalize())
}
