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

run_spmd <- function(np, mode) {
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
                 test_path("mpi", "spmd.R"), mode, out),
    env = env, stdout = TRUE, stderr = TRUE))
  status <- attr(log, "status")
  ranks <- lapply(seq_len(np) - 1L, function(r) {
    f <- file.path(out, sprintf("rank%d.rds", r))
    if (file.exists(f)) readRDS(f)
  })
  list(status = if (is.null(status)) 0L else status, log = log, ranks = ranks,
       out = out)
}

test_that("np = 2: distributed ASkotch / Skotch / NSAP / SAP equal the one-process fits", {
  mpi_ready()
  r <- run_spmd(2L, "fit")
  expect_equal(r$status, 0L, info = paste(utils::tail(r$log, 20), collapse = "\n"))
  skip_if(r$status != 0L, "the SPMD run failed")
  set.seed(1)
  n <- 240L; p <- 3L
  x <- matrix(rnorm(n * p), n, p)
  y <- sin(2 * x[, 1]) + x[, 2]^2 / 2 + 0.1 * rnorm(n)
  xnew <- matrix(rnorm(15 * p), 15, p)
  solvers <- list(askotch = askotch(block_size = 40, rank = 10),
                  skotch = skotch(block_size = 40, rank = 10),
                  nsap = sap(block_size = 40), sap = sap(block_size = 40, accelerated = FALSE))
  for (nm in names(solvers)) {
    one <- krr(x, y, lambda = 0.05, solver = solvers[[nm]], seed = 3,
               max_passes = 4, tol = 0, threads = 1)
    w <- do.call(rbind, lapply(r$ranks, function(k) k[[nm]]$w))
    # the same block sequence and arithmetic up to the order of the sums
    expect_lt(max(abs(w - one$weights)) / max(abs(one$weights)), 1e-10)
    for (k in r$ranks) {
      expect_equal(k[[nm]]$n, n)
      expect_equal(k[[nm]]$bw, one$kernel$bandwidth, tolerance = 1e-13)
      expect_equal(k[[nm]]$center, one$center, tolerance = 1e-13)
      expect_equal(k[[nm]]$scale, one$scale, tolerance = 1e-13)
      expect_equal(unname(k[[nm]]$pred), unname(predict(one, xnew)), tolerance = 1e-10)
      expect_equal(k[[nm]]$iters, one$iterations)
    }
    # gathered to rank 0: a plain model, used here without MPI
    whole <- readRDS(file.path(r$out, paste0("whole_", nm, ".rds")))
    expect_s3_class(whole, "krr")
    expect_false(inherits(whole, "krr_distributed"))
    expect_equal(whole$n, n)
    expect_equal(unname(predict(whole, xnew)), unname(predict(one, xnew)), tolerance = 1e-10)
  }
})

test_that("faults on one rank are the same classed error on every rank", {
  mpi_ready()
  cases <- list(p = "different numbers of columns", zero = "no rows",
                opts = "different options", nonfinite = "")
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

test_that("distributed = TRUE without MPI in the build, or a bad flag, is a classed error", {
  expect_error(krr(matrix(1:4, 2), 1:2, distributed = NA), class = "askotch_error_input")
  skip_if(askotch_mpi_available(), "this build has MPI")
  expect_error(krr(matrix(rnorm(20), 10), rnorm(10), lambda = 1, distributed = TRUE),
               class = "askotch_error_not_built")
})
