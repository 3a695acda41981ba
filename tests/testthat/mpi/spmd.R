# An SPMD program for test-mpi.R, run as
#   timeout 120 mpirun -np P Rscript spmd.R <mode> <outdir>
# Every rank builds the same data (seeded), keeps its contiguous rows and
# fits with krr(distributed = TRUE); each rank saves what it saw to
# <outdir>/rank<r>.rds. mode: "fit" (ASkotch, Skotch, NSAP, SAP, PCG, Falkon; predictions;
# the fit gathered to rank 0 and saved), or a fault: "p" (rank 1 has an
# extra column), "zero" (rank 1 has no rows), "opts" (rank 1 passes another
# lambda), "nonfinite" (rank 1 has an infinite response), "centers" (Falkon
# centres given beyond the 240 rows of all ranks), "greedy" (PCG with a
# partial Cholesky preconditioner, which does not distribute), "die" (rank 1
# is killed, SIGKILL, one second into a long fit: mpirun ends the job),
# "quit" (rank 1 ends its R session normally after a second, without
# fitting, while rank 0 waits for it in the fit's first collective), "cuda"
# (ASkotch, PCG and Falkon with every rank on a GPU, and the same on the
# CPU: weights, predictions and the device of each).
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
                  nsap = sap(block_size = 40), sap = sap(block_size = 40, accelerated = FALSE),
                  pcg = pcg("nystrom", rank = 20))
  for (nm in names(solvers)) {
    fit <- krr(xl, yl, lambda = lambda, solver = solvers[[nm]], seed = 3,
               max_passes = 4, tol = 0, threads = 1, distributed = TRUE)
    sm <- summary(fit)
    res[[nm]] <- list(w = fit$weights, pred = predict(fit, xnew),
                      n = sm$n, model = sm$model, accuracy = sm$accuracy,
                      bw = fit$kernel$bandwidth, nobs = nobs(fit),
                      fitted_err = tryCatch(class(fitted(fit)), error = function(e) class(e)),
                      se_err = tryCatch(class(predict(fit, xnew, se.fit = TRUE)),
                                        error = function(e) class(e)),
                      center = fit$center, scale = fit$scale, iters = fit$iterations,
                      bytes = fit$distributed$bytes)
    whole <- askotch_mpi_gather(fit)
    if (s$rank == 0L) saveRDS(whole, file.path(out, paste0("whole_", nm, ".rds")))
  }
  # the automatic rule "average" from the ranks' reduced targets
  fit <- krr(xl, yl, lambda = lambda, solver = pcg("nystrom", rank = 20), seed = 3,
             tol = "average", threads = 1, distributed = TRUE)
  res$average <- list(tol = fit$tol, iters = fit$iterations, rms = summary(fit)$accuracy$rms)
  # Falkon: 30 centres drawn from all 240 rows, and 10 given as global rows
  # (five on each rank)
  for (nm in c("falkon", "falkon_idx")) {
    sv <- if (nm == "falkon") falkon(centers = 30) else falkon(centers = c(5, 17, 60, 101, 119, 121, 150, 180, 200, 239))
    fit <- krr(xl, yl, lambda = lambda, solver = sv, seed = 3, max_passes = if (nm == "falkon") 10 else 3, tol = 0,
               threads = 1, distributed = TRUE)
    sm <- summary(fit)
    res[[nm]] <- list(w = fit$weights, x = fit$x, centers = fit$centers,
                      pred = predict(fit, xnew), n = sm$n, model = sm$model,
                      cls = class(fit), iters = fit$iterations)
    whole <- askotch_mpi_gather(fit)
    if (s$rank == 0L) saveRDS(whole, file.path(out, paste0("whole_", nm, ".rds")))
  }
} else if (mode == "cuda") {
  solvers <- list(askotch = askotch(block_size = 40, rank = 10),
                  pcg = pcg("nystrom", rank = 20), falkon = falkon(centers = 30))
  for (nm in names(solvers)) {
    for (dv in c("cuda", "cpu")) {
      # Falkon to convergence: its iterates on these 30 centres (cond(K_MM)
      # ~ 3e6) move by 3e-3 after 4 passes when x moves by 1e-15, its
      # solution by 2e-11
      fit <- krr(xl, yl, lambda = lambda, solver = solvers[[nm]], seed = 3,
                 max_passes = if (nm == "falkon") 200 else 4,
                 tol = if (nm == "falkon") 1e-10 else 0, threads = 1,
                 distributed = TRUE, device = dv)
      res[[paste(nm, dv, sep = "_")]] <- list(w = fit$weights, pred = predict(fit, xnew),
                                              device = fit$device)
    }
  }
} else {
  if (mode == "p" && s$rank == 1L) xl <- cbind(xl, 1)
  if (mode == "zero" && s$rank == 1L) { xl <- xl[0, , drop = FALSE]; yl <- yl[0] }
  if (mode == "opts" && s$rank == 1L) lambda <- 0.1
  if (mode == "nonfinite" && s$rank == 1L) yl[1] <- Inf
  if (mode == "die" && s$rank == 1L) {
    system(sprintf("sleep 1; kill -9 %d", Sys.getpid()), wait = FALSE)
  }
  if (mode == "quit" && s$rank == 1L) {
    saveRDS(res, file.path(out, sprintf("rank%d.rds", s$rank)))
    Sys.sleep(1)
    quit(save = "no")
  }
  sv <- switch(mode, centers = falkon(centers = c(1, 241)),
               greedy = pcg("greedy_cholesky"), askotch(block_size = 40))
  err <- tryCatch({
    krr(xl, yl, lambda = lambda, solver = sv, seed = 3,
        max_passes = if (mode == "die") 1e5 else 2, tol = if (mode == "die") 0 else NULL,
        threads = 1, distributed = TRUE)
    NULL
  }, error = function(e) e)
  res$class <- class(err)
  res$message <- if (is.null(err)) "" else conditionMessage(err)
}
saveRDS(res, file.path(out, sprintf("rank%d.rds", s$rank)))
