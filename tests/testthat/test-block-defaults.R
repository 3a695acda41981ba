# askotch()'s block size by cost and rank by the spectrum (the defaults), and
# the journal's settings by name (block_size = "paper").

test_that("block_size: \"paper\" is the journal's b = n/100, r = 100; bad values are input errors", {
  d <- make_regression(3000, p = 3, seed = 11)
  fp <- krr(d$x, d$y, lambda = 1e-3, bandwidth = 1,
            solver = askotch(block_size = "paper"), max_passes = 1, tol = 0,
            seed = 1, threads = 1)
  expect_identical(as.integer(fp$solver$block_size), 30L)   # ceiling(3000 / 100)
  expect_identical(fp$solver$rank, 30L)                     # min(100, b)
  expect_match(format(fp$solver), "as in the journal")
  fq <- krr(d$x, d$y, lambda = 1e-3, bandwidth = 1,
            solver = skotch(block_size = "Paper", rank = 20), max_passes = 1,
            tol = 0, seed = 1, threads = 1)
  expect_identical(as.integer(fq$solver$block_size), 30L)
  expect_identical(fq$solver$rank, 20L)                     # a given rank stays
  ie <- function(expr, pattern) expect_error(expr, pattern, class = "askotch_error_input")
  ie(askotch(block_size = "auto"), "`block_size`")
  ie(askotch(block_size = c("paper", "paper")), "`block_size`")
  ie(askotch(block_size = "paper", variant = "v1"), "`block_size = \"paper\"`")
  ie(askotch(block_size = 0), "block_size")
})

test_that("the default block is chosen by cost: larger with more inputs, at least 256", {
  # the same n: a kernel value at p = 50 costs more, so the Nystrom step of
  # a larger block still costs less than its kernel rows
  fit_b <- function(p) {
    d <- make_regression(6000, p = p, seed = 3)
    krr(d$x, d$y, lambda = 1, bandwidth = sqrt(p), max_passes = 1, tol = 0,
        solver = askotch(), seed = 1, threads = 1)$solver
  }
  s3 <- fit_b(3)
  s50 <- fit_b(50)
  expect_gte(s3$block_size, 256)
  expect_gt(s50$block_size, s3$block_size)
  # the rank never exceeds max(100, b / 3) (nor b)
  for (s in list(s3, s50)) {
    expect_lte(s$rank, max(100, ceiling(s$block_size / 3)))
    expect_gte(s$rank, 50)
  }
  # a small problem keeps the whole data as a block when n < 256
  d <- make_regression(200, p = 2, seed = 4)
  f <- krr(d$x, d$y, lambda = 1, bandwidth = 1, solver = askotch(),
           max_passes = 1, tol = 0, seed = 1, threads = 1)
  expect_identical(as.integer(f$solver$block_size), 200L)
})

test_that("the default rank follows the spectrum and lambda", {
  # a smooth two-input kernel matrix has few eigenvalues above lambda (the
  # floor, 50); ten inputs with a short length scale and a small lambda have
  # many (the cap, max(100, b / 3))
  d1 <- make_regression(3000, p = 2, seed = 5)
  f1 <- krr(d1$x, d1$y, lambda = 1e-2, bandwidth = 1, solver = askotch(),
            max_passes = 1, tol = 0, seed = 1, threads = 1)
  expect_identical(f1$solver$rank, 50L)
  d10 <- make_regression(3000, p = 10, seed = 5)
  f10 <- krr(d10$x, d10$y, lambda = 1e-6, bandwidth = 1, solver = askotch(),
             max_passes = 1, tol = 0, seed = 1, threads = 1)
  expect_identical(f10$solver$rank,
                   as.integer(max(100, ceiling(f10$solver$block_size / 3))))
  # the count against an independent eigendecomposition of a block: between
  # the counts of its exact eigenvalues above lambda at ranks bracketing the
  # Nystrom approximation's underestimate
  lam <- 0.3
  fm <- krr(d10$x, d10$y, lambda = lam, bandwidth = 3, solver = askotch(),
            max_passes = 1, tol = 0, seed = 1, threads = 1)
  b <- fm$solver$block_size
  xs <- scale(d10$x)
  set.seed(9)
  counts <- replicate(3, {
    i <- sample.int(nrow(xs), b)
    e <- eigen(oracle_kernel(xs[i, ], xs[i, ], "rbf", 3), symmetric = TRUE,
               only.values = TRUE)$values
    sum(e > lam)
  })
  expect_gt(fm$solver$rank, 50L)
  expect_lt(fm$solver$rank, max(100, ceiling(b / 3)))
  expect_lte(fm$solver$rank, max(counts) * 1.05)
  expect_gte(fm$solver$rank, min(counts) * 0.7)
  # a larger lambda: fewer eigenvalues above it, a smaller rank (chosen again
  # on refit)
  fr <- refit(fm, lambda = 30 * lam)
  expect_lt(fr$solver$rank, fm$solver$rank)
})

test_that("with the defaults ASkotch reaches solve()'s answer", {
  d <- make_regression(2500, p = 4, seed = 8)
  xn <- make_regression(200, p = 4, seed = 9)$x
  ref <- oracle_krr(d$x, d$y, xn, "rbf", 2, 1e-3)
  f <- krr(d$x, d$y, lambda = 1e-3, bandwidth = 2, solver = askotch(),
           tol = 1e-10, max_passes = 300, seed = 1, threads = 1)
  expect_true(f$converged)
  expect_lt(max(abs(predict(f, xn) - ref$pred)), 1e-6 * sd(d$y))
})
