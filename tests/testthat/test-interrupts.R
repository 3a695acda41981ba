# Interrupts and time limits (issue: reliability).  The compiled code polls
# for R interrupts (R_CheckUserInterrupt, at most every 0.1 s) between
# iterations, row chunks of kernel products, setup loops, factorisation
# panels and pieces of large dense products and triangular solves, and
# stops at the deadline that time_limit sets.  Latencies are recorded
# (inst/bench/RESULTS.md, "Interrupts"), never asserted beyond a generous bound: this
# machine is shared.

skip_on_cran()

interrupt_data <- function(n, p = 5, seed = 1) {
  set.seed(seed)
  x <- matrix(rnorm(n * p), n)
  list(x = x, y = sin(x[, 1]) + 0.1 * rnorm(n))
}

# The solvers, each sized so that one fit takes several seconds (setup alone
# for cholesky, falkon and pcg); `tol = 0` and no pass limit keep the
# iterative ones busy until the interrupt.
interrupt_cases <- function() {
  list(
    askotch = list(n = 8000, solver = askotch()),
    skotch = list(n = 8000, solver = skotch()),
    pcg = list(n = 8000, solver = pcg(rank = 1500)),
    falkon = list(n = 20000, solver = falkon(centers = 3000)),
    # the default subsample of 4000 points: its top eigenpairs by subspace
    # iteration in polled products (one LAPACK call of 2.5-4.5 s before)
    eigenpro2 = list(n = 8000, solver = eigenpro(version = 2)),
    # a flat subsample spectrum (K near the identity): the subspace iteration
    # gives up and the 4000 x 4000 top eigensystem follows, in polled steps
    # (one LAPACK call of 2-4 s before); at 1.5 s inside it
    eigenpro2_flat = list(n = 8000, solver = eigenpro(version = 2), bandwidth = 0.25,
                          limit = 1.5),
    eigenpro3 = list(n = 8000, solver = eigenpro(version = 3)),
    cholesky = list(n = 7000, solver = cholesky()),
    # the default above n = 5000: PCG with a greedy partial Cholesky factor
    # of automatic rank (977 here); at 0.5 s inside the factor's blocks or
    # its Woodbury core, at 4 s (on this machine) in its iterations
    auto = list(n = 20000, solver = "auto"),
    auto_late = list(n = 20000, solver = "auto", limit = 4),
    joker = list(n = 8000, solver = joker())
  )
}

# Run expr under setTimeLimit(elapsed = limit); the condition (or "done")
# and the seconds until control came back.
with_time_limit <- function(expr, limit) {
  t0 <- proc.time()[["elapsed"]]
  res <- tryCatch({
    setTimeLimit(elapsed = limit, transient = TRUE)
    force(expr)
    "done"
  }, error = function(e) conditionMessage(e), finally = setTimeLimit())
  list(result = res, seconds = proc.time()[["elapsed"]] - t0)
}

rss_mb <- function() {
  st <- readLines("/proc/self/status")
  as.numeric(gsub("[^0-9]", "", grep("^VmRSS:", st, value = TRUE))) / 1024
}

test_that("setTimeLimit stops every solver during its setup and iterations", {
  lat <- list()
  for (nm in names(interrupt_cases())) {
    cs <- interrupt_cases()[[nm]]
    d <- interrupt_data(cs$n)
    r <- with_time_limit(
      krr(d$x, d$y, solver = cs$solver, lambda = 1e-3, tol = 0,
          bandwidth = if (is.null(cs$bandwidth)) "median" else cs$bandwidth,
          max_passes = Inf, time_limit = 600, threads = 1, seed = 1),
      if (is.null(cs$limit)) 0.5 else cs$limit)
    expect_match(r$result, "time limit", info = nm)
    # generous (a shared, loaded machine; every long LAPACK step is polled:
    # factorisation panels, eigensolver panels and pieces, large products
    # and solves in pieces);
    # without the polls control came back only when the compiled call ended
    # (a hang detector, not a timing: latencies are in inst/bench/RESULTS.md)
    expect_lt(r$seconds, 30, label = paste(nm, "seconds"))
    lat[[nm]] <- r$seconds - if (is.null(cs$limit)) 0.5 else cs$limit
  }
  message("setTimeLimit(0.5) latency beyond the limit (s): ",
          paste(sprintf("%s %.2f", names(lat), unlist(lat)), collapse = ", "))
  # the package still works after the interrupts (BLAS threads restored,
  # nothing left half-done): an exact fit against the base-R oracle
  d <- interrupt_data(300)
  f <- krr(d$x, d$y, solver = cholesky(), lambda = 1e-2, bandwidth = 1.5,
           standardize = FALSE, threads = 1)
  K <- exp(-as.matrix(dist(d$x))^2 / (2 * 1.5^2))
  w <- solve(K + 1e-2 * diag(300), d$y - mean(d$y))
  expect_equal(as.vector(coef(f)), as.vector(w), tolerance = 1e-8)
})

test_that("a prediction's long kernel product is interruptible", {
  d <- interrupt_data(2000)
  f <- krr(d$x, d$y, solver = cholesky(), lambda = 1e-2, threads = 1)
  xn <- matrix(rnorm(4e6 * 5), ncol = 5)
  r <- with_time_limit(predict(f, xn), 0.5)
  expect_match(r$result, "time limit")
  expect_lt(r$seconds, 5)
})

test_that("a real SIGINT returns control promptly as an R interrupt", {
  skip_on_os("windows")
  skip_if(Sys.which("kill") == "" || Sys.which("bash") == "")
  d <- interrupt_data(7000)
  pid <- Sys.getpid()
  system2("bash", c("-c", shQuote(sprintf("sleep 1; kill -INT %d", pid))),
          wait = FALSE)
  t0 <- proc.time()[["elapsed"]]
  r <- tryCatch({
    krr(d$x, d$y, solver = cholesky(), lambda = 1e-3, threads = 1)
    Sys.sleep(3) # the signal must still arrive if the fit was quick
    "done"
  }, interrupt = function(e) "interrupted")
  s <- proc.time()[["elapsed"]] - t0
  expect_identical(r, "interrupted")
  expect_lt(s, 5)
  message(sprintf("SIGINT during cholesky(): control back after %.2f s (sent at 1 s)", s))
})

test_that("memory stays flat over 20 interrupted fits", {
  d <- interrupt_data(4000)
  # warm up: the first fit maps the library's and BLAS's own buffers
  for (i in 1:2) with_time_limit(krr(d$x, d$y, solver = cholesky(), lambda = 1e-3,
                                     threads = 1), 0.3)
  gc()
  before <- rss_mb()
  hits <- 0
  for (i in 1:20) {
    r <- with_time_limit(krr(d$x, d$y, solver = cholesky(), lambda = 1e-3,
                             threads = 1), 0.3)
    hits <- hits + grepl("time limit", r$result)
  }
  gc()
  grow <- rss_mb() - before
  expect_equal(hits, 20)
  # each fit holds the 4000 x 4000 kernel matrix (122 MiB): a leak of one
  # per interrupt would grow the resident set by 2.4 GB. Under load the
  # growth was 0 to 37 MiB in most runs and 191 and 281 MiB (1.6 and 2.3
  # matrices) in two of about ten, not reproduced in isolation (an interrupt
  # inside R's own promise evaluation -- "promise already under evaluation"
  # -- keeps that frame's objects alive); bound: fewer than 4 matrices
  expect_lt(grow, 4 * 122)
  message(sprintf("RSS growth over 20 interrupted cholesky() fits: %.1f MiB", grow))
})

test_that("time_limit ends every iterative solver with reason time_limit", {
  over <- list()
  for (nm in setdiff(names(interrupt_cases()), c("cholesky", "auto_late"))) {
    cs <- interrupt_cases()[[nm]]
    # (auto: above askotch.auto_exact_max_n = 5000, so PCG-greedy)
    d <- interrupt_data(if (nm %in% c("falkon", "auto")) 8000 else 4000)
    sv <- switch(nm, falkon = falkon(centers = 1000), pcg = pcg(rank = 200),
                 # rank 50: with the default 100 corrected directions of a
                 # 1000-point subsample the automatic step is too large for
                 # these 4000 points at lambda = 1e-4 (it is halved and the
                 # iteration restarted when the residual grows tenfold)
                 eigenpro2 = eigenpro(version = 2, subsample = 1000, rank = 50),
                 cs$solver)
    t0 <- proc.time()[["elapsed"]]
    # on a slow or loaded machine (sanitizers) the setup itself may not fit
    # in 1 s: then the documented answer is a classed time-limit error
    # about the setup, within the same bound
    f <- tryCatch(krr(d$x, d$y, solver = sv, lambda = 1e-4, tol = 0, max_passes = Inf,
                      time_limit = 1, threads = 1, seed = 1),
                  askotch_error_time_limit = function(e) e)
    s <- proc.time()[["elapsed"]] - t0
    if (inherits(f, "error")) {
      expect_match(conditionMessage(f), "time_limit", info = nm)
      # ASkotch / Skotch have no setup to speak of: they always iterate
      expect_false(nm %in% c("askotch", "skotch"), info = nm)
    } else {
      expect_identical(f$reason, "time_limit", info = nm)
      expect_true(all(is.finite(f$weights)), info = nm)
      expect_true(all(is.finite(predict(f, d$x[1:5, , drop = FALSE]))), info = nm)
    }
    # the overshoot is reported, not asserted: on a loaded machine (other
    # jobs, sanitizers) wall-clock seconds say nothing about the code
    over[[nm]] <- s - 1
  }
  message("time_limit = 1 overshoot (s): ",
          paste(sprintf("%s %.2f", names(over), unlist(over)), collapse = ", "))
})

test_that("a setup that cannot fit in time_limit says so with a classed error", {
  d <- interrupt_data(7000)
  expect_error(krr(d$x, d$y, solver = eigenpro(version = 2, subsample = 4000),
                   lambda = 1e-3, time_limit = 0.05, threads = 1),
               class = "askotch_error_time_limit")
  # refused up front: n^3/3 flops cannot fit in 0.05 s
  expect_error(krr(d$x, d$y, solver = cholesky(), lambda = 1e-3, time_limit = 0.05,
                   threads = 1),
               class = "askotch_error_time_limit")
  # stopped during the setup (a large Nystrom rank)
  d <- interrupt_data(20000)
  e <- tryCatch(krr(d$x, d$y, solver = falkon(centers = 4000), lambda = 1e-3,
                    time_limit = 0.3, threads = 1),
                error = function(e) e)
  expect_s3_class(e, "askotch_error_time_limit")
  expect_match(conditionMessage(e), "time_limit")
  expect_match(conditionMessage(e), "larger `time_limit`")
})

test_that("cholesky() within its time limit is exact (panels match LAPACK)", {
  # n = 1100 > 2 panels of 256: the blocked factorisation is used
  d <- interrupt_data(1100, p = 3)
  f <- krr(d$x, d$y, solver = cholesky(), lambda = 1e-2, bandwidth = 1,
           standardize = FALSE, time_limit = 60, threads = 1)
  K <- exp(-as.matrix(dist(d$x))^2 / 2)
  w <- solve(K + 1e-2 * diag(1100), d$y - mean(d$y))
  expect_identical(f$reason, "exact")
  # ||w|| ~ 1/lambda; the solve's error is ~ cond(K + lambda I) eps
  expect_equal(as.vector(coef(f)), as.vector(w), tolerance = 1e-7)
})
