# Distributed fits from R (SPMD under mpirun; R/distributed.R and the
# sharded operator): each rank's fit equals the single-process fit with the
# same seed, predictions sum the ranks' parts, a fit gathered to rank 0 is a
# plain model, and faults are one classed error on every rank. MPI runs over
# shared memory only, bounded by `timeout`.

mpi_ready <- function() {
  skip_if_not(askotch_mpi_available(),
              "askotch was built without MPI (configure: ASKOTCH_MPI)")
  skip_if(!nzchar(Sys.which("mpirun")), "mpirun is not installed")
  skip_if(!nzchar(Sys.which("timeout")), "timeout is not installed")
}

run_spmd <- function(np, mode, script = "spmd.R") {
  out <- tempfile("spmd")
  dir.create(out)
  env <- c(sprintf("R_LIBS=%s", paste(.libPaths(), collapse = ":")),
           "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
  uid <- suppressWarnings(system2("id", "-u", stdout = TRUE))
  if (identical(uid, "0")) {
    env <- c(env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  }
  log <- suppressWarnings(system2(
    "timeout", c("120", "mpirun", "--oversubscribe", "--mca", "btl", "self,vader",
                 "-np", np, file.path(R.home("bin"), "Rscript"),
                 test_path("mpi", script), mode, out),
    env = env, stdout = TRUE, stderr = TRUE))
  status <- attr(log, "status")
  ranks <- lapply(seq_len(np) - 1L, function(r) {
    f <- file.path(out, sprintf("rank%d.rds", r))
    if (file.exists(f)) readRDS(f)
  })
  list(status = if (is.null(status)) 0L else status, log = log, ranks = ranks,
       out = out)
}

# the data of mpi/spmd.R (every rank builds it, then keeps its rows)
spmd_data <- function() {
  set.seed(1)
  n <- 240L; p <- 3L
  x <- matrix(rnorm(n * p), n, p)
  y <- sin(2 * x[, 1]) + x[, 2]^2 / 2 + 0.1 * rnorm(n)
  list(n = n, x = x, y = y, xnew = matrix(rnorm(15 * p), 15, p))
}

# the "fit" run of mpi/spmd.R, made once for the tests that read it
spmd_fit_run <- local({
  res <- NULL
  function() {
    mpi_ready()
    if (is.null(res)) res <<- run_spmd(2L, "fit")
    expect_equal(res$status, 0L, info = paste(utils::tail(res$log, 20), collapse = "\n"))
    skip_if(res$status != 0L, "the SPMD run failed")
    res
  }
})

test_that("np = 2: distributed ASkotch / Skotch / NSAP / SAP / PCG equal the one-process fits", {
  r <- spmd_fit_run()
  n <- 240L
  list2env(spmd_data()[c("x", "y", "xnew")], environment())
  solvers <- list(askotch = askotch(block_size = 40, rank = 10),
                  skotch = skotch(block_size = 40, rank = 10),
                  nsap = sap(block_size = 40), sap = sap(block_size = 40, accelerated = FALSE),
                  pcg = pcg("nystrom", rank = 20))
  for (nm in names(solvers)) {
    one <- krr(x, y, lambda = 0.05, bandwidth = "median", solver = solvers[[nm]], seed = 3,
               max_passes = 4, tol = 0, threads = 1)
    w <- do.call(rbind, lapply(r$ranks, function(k) k[[nm]]$w))
    # the same block sequence and arithmetic up to the order of the sums
    # (PCG: the sketch's sums over the ranks and its Cholesky QR instead of
    # one process's Householder QR, the same preconditioner up to rounding)
    expect_lt(max(abs(w - one$weights)) / max(abs(one$weights)), 1e-10)
    for (k in r$ranks) {
      expect_equal(k[[nm]]$n, n)
      expect_equal(k[[nm]]$bw, one$kernel$bandwidth, tolerance = 1e-13)
      expect_equal(k[[nm]]$center, one$center, tolerance = 1e-13)
      expect_equal(k[[nm]]$scale, one$scale, tolerance = 1e-13)
      expect_equal(unname(k[[nm]]$pred), unname(predict(one, xnew)), tolerance = 1e-10)
      expect_equal(k[[nm]]$iters, one$iterations)
      # summary() from the ranks' reduced sums: the training R^2 from the
      # residual lambda w (what one process reports above
      # askotch.exact_max_n), the ML signal variance, the accuracy bound
      op <- options(askotch.exact_max_n = 0)
      one_sm <- summary(one)
      options(op)
      expect_equal(unname(k[[nm]]$model[["R-squared (training, lambda w)"]]),
                   unname(one_sm$model[["R-squared (training)"]]), tolerance = 1e-10, info = nm)
      expect_equal(unname(k[[nm]]$model[["Signal variance (s^2, ML)"]]),
                   unname(one_sm$model[["Signal variance (s^2, ML)"]]), tolerance = 1e-10, info = nm)
      # what needs every point's fitted value says to gather; nobs() is global
      expect_true("askotch_error_input" %in% k[[nm]]$fitted_err, info = nm)
      expect_true("askotch_error_input" %in% k[[nm]]$se_err, info = nm)
      expect_equal(k[[nm]]$nobs, n)
      expect_match(k[[nm]]$model[["GP statistics"]], "not computed")
      expect_equal(k[[nm]]$accuracy$bound, one_sm$accuracy$bound, tolerance = 1e-10)
      expect_equal(k[[nm]]$accuracy$relative, one_sm$accuracy$relative, tolerance = 1e-10)
    }
    # gathered to rank 0: a plain model, used here without MPI
    whole <- readRDS(file.path(r$out, paste0("whole_", nm, ".rds")))
    expect_s3_class(whole, "krr")
    expect_false(inherits(whole, "krr_distributed"))
    expect_equal(whole$n, n)
    expect_equal(unname(predict(whole, xnew)), unname(predict(one, xnew)), tolerance = 1e-10)
  }
  # tol = "average": the rule's tolerance and fitted-value bound from the
  # ranks' reduced targets, the one-process fit's
  one <- krr(x, y, lambda = 0.05, bandwidth = "median", solver = pcg("nystrom", rank = 20),
             seed = 3, tol = "average", threads = 1)
  op <- options(askotch.exact_max_n = 0)
  one_rms <- summary(one)$accuracy$rms
  options(op)
  for (k in r$ranks) {
    expect_equal(k$average$tol, one$tol, tolerance = 1e-13)
    expect_equal(k$average$iters, one$iterations)
    expect_equal(k$average$rms, one_rms, tolerance = 1e-8)
  }
})

test_that("np = 2: distributed Falkon equals the one-process fit and is whole on every rank", {
  r <- spmd_fit_run()
  n <- 240L
  list2env(spmd_data()[c("x", "y", "xnew")], environment())
  for (nm in c("falkon", "falkon_idx")) {
    sv <- if (nm == "falkon") falkon(centers = 30) else falkon(centers = c(5, 17, 60, 101, 119, 121, 150, 180, 200, 239))
    one <- krr(x, y, lambda = 0.05, bandwidth = "median",
               solver = sv, seed = 3, max_passes = if (nm == "falkon") 10 else 3, tol = 0,
               threads = 1)
    for (k in r$ranks) {
      f <- k[[nm]]
      # the same centres (drawn from the global rows with the same seed)
      expect_equal(f$centers, one$centers, info = nm)
      # their points gathered from the two shards, standardised globally
      expect_equal(unname(f$x), unname(one$x), tolerance = 1e-13, info = nm)
      # the weights: the sums over ranks round in another order, and ten CG
      # steps at tol = 0 carry that to about 1e-10 of the weights (1e-9)
      expect_lt(max(abs(f$w - one$weights)) / max(abs(one$weights)), 1e-9)
      expect_equal(f$iters, one$iterations, info = nm)
      expect_equal(f$n, n, info = nm)
      # the training R^2 from each rank's fitted values at its rows
      expect_equal(unname(f$model[["R-squared (training)"]]),
                   unname(summary(one)$model[["R-squared (training)"]]), tolerance = 1e-10)
      expect_true("krr_distributed" %in% f$cls, info = nm)
      # every rank predicts alone (the whole model is on each)
      expect_equal(unname(f$pred), unname(predict(one, xnew)), tolerance = 1e-10, info = nm)
    }
    whole <- readRDS(file.path(r$out, paste0("whole_", nm, ".rds")))
    expect_s3_class(whole, "krr")
    expect_false(inherits(whole, "krr_distributed"))
    expect_equal(whole$n, n)
    expect_equal(whole$centers, one$centers)
    expect_equal(unname(whole$x_train), unname(one$x_train), tolerance = 1e-13)
    expect_equal(unname(predict(whole, xnew)), unname(predict(one, xnew)), tolerance = 1e-10)
    expect_equal(unname(fitted(whole)), unname(fitted(one)), tolerance = 1e-10)
  }
})

test_that("faults on one rank are the same classed error on every rank", {
  mpi_ready()
  cases <- list(p = "different numbers of columns", zero = "no rows",
                opts = "different options", nonfinite = "",
                centers = "out of range 1..240",
                greedy = "preconditioner = \"nystrom\" or \"none\"")
  for (mode in names(cases)) {
    r <- run_spmd(2L, mode)
    expect_equal(r$status, 0L, info = paste(mode, paste(utils::tail(r$log, 20), collapse = "\n")))
    for (k in r$ranks) {
      expect_false(is.null(k), info = mode)
      expect_true("askotch_error_input" %in% k$class, info = paste(mode, k$message))
      expect_match(k$message, cases[[mode]], fixed = TRUE, info = mode)
    }
  }
})

test_that("every rank on a GPU: the same distributed fit as on the CPU", {
  mpi_ready()
  skip_if_not(has_cuda(), "no CUDA device")
  r <- run_spmd(2L, "cuda")
  expect_equal(r$status, 0L, info = paste(utils::tail(r$log, 20), collapse = "\n"))
  for (k in r$ranks) {
    expect_false(is.null(k))
    for (nm in c("askotch", "pcg", "falkon")) {
      g <- k[[paste0(nm, "_cuda")]]
      c0 <- k[[paste0(nm, "_cpu")]]
      expect_identical(g$device, "cuda")
      expect_identical(c0$device, "cpu")
      # the same blocks and iterates; the backends' summation orders differ
      # (4 passes, double; Falkon converged): 1e-8 relative
      expect_lt(max(abs(g$w - c0$w)) / max(abs(c0$w)), 1e-8, label = nm)
      expect_lt(max(abs(g$pred - c0$pred)) / max(abs(c0$pred)), 1e-8, label = nm)
    }
  }
})

test_that("a rank killed mid-fit ends the job (no rank left waiting)", {
  mpi_ready()
  t0 <- proc.time()[["elapsed"]]
  r <- run_spmd(2L, "die")
  el <- proc.time()[["elapsed"]] - t0
  # mpirun stops the job: a failure status, not timeout's 124 after 120 s
  expect_false(r$status %in% c(0L, 124L), info = paste(utils::tail(r$log, 10), collapse = "\n"))
  expect_lt(el, 60)
  expect_true(any(grepl("signal 9|Killed", r$log)))
})

test_that("a rank that ends its session normally mid-job: a classed error, not a hang", {
  mpi_ready()
  t0 <- proc.time()[["elapsed"]]
  r <- run_spmd(2L, "quit")
  el <- proc.time()[["elapsed"]] - t0
  info <- paste(utils::tail(r$log, 10), collapse = "\n")
  # rank 0 learns that rank 1 left before the collective it waits in
  k <- r$ranks[[1L]]
  expect_false(is.null(k), info = info)
  expect_true("askotch_error_device" %in% k$class, info = paste(k$message, info))
  expect_match(k$message, "rank 1 left the MPI job", fixed = TRUE, info = info)
  # then its MPI is aborted (the collective is stranded): a failure status,
  # not timeout's 124
  expect_false(r$status %in% c(0L, 124L), info = info)
  expect_true(any(grepl("askotch: ending the MPI job (MPI_Abort): rank 1 left", r$log,
                        fixed = TRUE)), info = info)
  expect_lt(el, 60)
})

test_that("distributed = TRUE without MPI in the build, or a bad flag, is a classed error", {
  expect_error(krr(matrix(1:4, 2), 1:2, distributed = NA), class = "askotch_error_input")
  skip_if(askotch_mpi_available(), "this build has MPI")
  expect_error(krr(matrix(rnorm(20), 10), rnorm(10), lambda = 1, distributed = TRUE),
               class = "askotch_error_not_built")
})

test_that("with Rmpi loaded first, askotch joins its MPI session; loaded after, a classed warning", {
  mpi_ready()
  # not skip_if_not_installed(): loading Rmpi here would initialise MPI in
  # this process, and mpirun started from an MPI process refuses to run
  skip_if(!nzchar(system.file(package = "Rmpi")), "Rmpi is not installed")
  r <- run_spmd(2L, "first", "rmpi.R")
  expect_equal(r$status, 0L, info = paste(utils::tail(r$log, 20), collapse = "\n"))
  list2env(spmd_data()[c("x", "y")], environment())
  one <- krr(x, y, lambda = 0.05, bandwidth = "median",
             solver = askotch(block_size = 40, rank = 10), seed = 3,
             max_passes = 4, tol = 0, threads = 1)
  for (k in 0:1) {
    rk <- r$ranks[[k + 1L]]
    expect_equal(rk$askotch, c(k, 2L))
    expect_equal(rk$rmpi, c(k, 2L))
    # Rmpi's allreduce of the ranks' weights is the one-process fit
    expect_lt(max(abs(rk$w - one$weights)) / max(abs(one$weights)), 1e-10)
  }
  # Rmpi after askotch initialised MPI: warned on every rank, no crash
  r <- run_spmd(2L, "after", "rmpi.R")
  expect_equal(r$status, 0L, info = paste(utils::tail(r$log, 20), collapse = "\n"))
  for (rk in r$ranks) {
    expect_true("askotch_warning_mpi" %in% rk$warning$class)
    expect_match(rk$warning$message, "Load Rmpi first")
  }
})
