# An SPMD program for test-mpi.R, run as
#   timeout 120 mpirun -np P Rscript spmd.R <mode> <outdir>
# Every rank builds the same data (seeded), keeps its contiguous rows and
# fits with krr(distributed = TRUE); each rank saves what it saw to
# <outdir>/rank<r>.rds. mode: "fit" (ASkotch, Skotch, NSAP, SAP; predictions;
# the fit gathered to rank 0 and saved), or a fault: "p" (rank 1 has an
# extra column), "zero" (rank 1 has no rows), "opts" (rank 1 passes another
# lambda), "nonfinite" (rank 1 has an infinite response).
args <- commandArgs(TRUE)
mode <- args[1L]
out <- args[2L]
suppressPackageStartupMessages(library(askotch))
s <- askotch_mpi_init()
set.seed(1)
n <- 240L; p <- 3L
x <- matrix(rnorm(n * p), n, p)
y <- sin(2 * x[, 1]) + x[, 2]^2 / 2 + 0.1 * rnorm(n)
xnew <- matrix(rnorm(15 * p), 15, p)
cut <- round(seq(0, n, length.out = s$size + 1L))
rows <- seq.int(cut[s$rank + 1L] + 1L, cut[s$rank + 2L])
xl <- x[rows, , drop = FALSE]
yl <- y[rows]
lambda <- 0.05
res <- list(rank = s$rank, size = s$size, rows = rows)
if (mode == "fit") {
  solvers <- list(askotch = askotch(block_size = 40, rank = 10),
                  skotch = skotch(block_size = 40, rank = 10),
                  nsap = sap(block_size = 40), sap = sap(block_size = 40, accelerated = FALSE))
  for (nm in names(solvers)) {
    fit <- krr(xl, yl, lambda = lambda, solver = solvers[[nm]], seed = 3,
               max_passes = 4, tol = 0, threads = 1, distributed = TRUE)
    res[[nm]] <- list(w = fit$weights, pred = predict(fit, xnew),
                      n = summary(fit)$n, bw = fit$kernel$bandwidth,
                      center = fit$center, scale = fit$scale, iters = fit$iterations,
                      bytes = fit$distributed$bytes)
    whole <- askotch_mpi_gather(fit)
    if (s$rank == 0L) saveRDS(whole, file.path(out, paste0("whole_", nm, ".rds")))
  }
} else {
  if (mode == "p" && s$rank == 1L) xl <- cbind(xl, 1)
  if (mode == "zero" && s$rank == 1L) { xl <- xl[0, , drop = FALSE]; yl <- yl[0] }
  if (mode == "opts" && s$rank == 1L) lambda <- 0.1
  if (mode == "nonfinite" && s$rank == 1L) yl[1] <- Inf
  err <- tryCatch({
    krr(xl, yl, lambda = lambda, solver = askotch(block_size = 40), seed = 3,
        max_passes = 2, threads = 1, distributed = TRUE)
    NULL
  }, error = function(e) e)
  res$class <- class(err)
  res$message <- if (is.null(err)) "" else conditionMessage(err)
}
saveRDS(res, file.path(out, sprintf("rank%d.rds", s$rank)))
