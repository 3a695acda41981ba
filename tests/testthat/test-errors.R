# Bad input gives classed errors that name the argument.

d <- make_regression(50, p = 2, seed = 4)
x <- d$x
y <- d$y

expect_input_error <- function(expr, regexp = NULL) {
  expect_error(expr, regexp = regexp, class = "askotch_error_input")
}

test_that("errors are classed conditions", {
  e <- tryCatch(krr(x, y, lambda = -1), error = identity)
  expect_s3_class(e, "askotch_error_input")
  expect_s3_class(e, "askotch_error")
  expect_s3_class(e, "error")
  expect_match(conditionMessage(e), "lambda")
})

test_that("raise_from_c maps C statuses to classes", {
  raise <- getFromNamespace("raise_from_c", "askotch")
  for (st in c("input", "memory", "device", "numeric", "not_built",
               "internal")) {
    expect_error(raise(st, "detail"), "detail",
                 class = paste0("askotch_error_", st))
  }
  expect_error(raise("bogus", "x"), class = "askotch_error_internal")
})

test_that("bad x is rejected", {
  x2 <- x
  x2[3, 2] <- NA
  expect_input_error(krr(x2, y), "`x`.*row 3, column 2")
  x2[3, 2] <- NaN
  expect_input_error(krr(x2, y), "`x`")
  x2[3, 2] <- Inf
  expect_input_error(krr(x2, y), "`x`")
  expect_input_error(krr(matrix(letters[1:10], 5), 1:5), "`x`")
  expect_input_error(krr(data.frame(a = 1:5, b = letters[1:5]), 1:5), "`b`")
  expect_input_error(krr(list(1, 2), 1:2), "`x`")
  expect_input_error(krr(x[1, , drop = FALSE], y[1]), "at least 2 rows")
  expect_input_error(krr(x[0, , drop = FALSE], y[0]), "at least 2 rows")
})

test_that("bad y is rejected", {
  expect_input_error(krr(x, y[-1]), "`y`")
  expect_input_error(krr(x, c(y[-1], NA)), "`y`")
  expect_input_error(krr(x, c(y[-1], Inf)), "`y`")
  expect_input_error(krr(x, factor(rep("a", 50))), "`y`")
  expect_input_error(krr(x, factor(c(rep("a", 49), NA))), "`y`")
  expect_input_error(krr(x, list(y)), "`y`")
  expect_input_error(krr(x), "`y`")
})

test_that("bad numeric options are rejected", {
  for (bad in list(0, -1, NA, Inf, NaN, "a", c(1, 2))) {
    # a vector of positive lambdas is a path (see test-tune.R)
    if (length(bad) == 1L) expect_input_error(krr(x, y, lambda = bad), "`lambda`")
    expect_input_error(krr(x, y, bandwidth = bad), "`bandwidth`")
  }
  expect_input_error(krr(x, y, lambda = c(1, 0)), "`lambda`")
  expect_input_error(krr(x, y, max_passes = 0), "`max_passes`")
  expect_input_error(krr(x, y, time_limit = -1), "`time_limit`")
  expect_input_error(krr(x, y, tol = -1), "`tol`")
  expect_input_error(krr(x, y, seed = -1), "`seed`")
  expect_input_error(krr(x, y, seed = 1.5), "`seed`")
  expect_input_error(krr(x, y, threads = 0), "`threads`")
  expect_input_error(krr(x, y, standardize = NA), "`standardize`")
  expect_input_error(krr(x, y, progress = "yes"), "`progress`")
  expect_input_error(krr(x, y, lamda = 1), "lamda")
})

test_that("unknown names are rejected", {
  expect_input_error(krr(x, y, kernel = "poly"), "`kernel`")
  expect_input_error(krr(x, y, kernel = 3), "`kernel`")
  expect_input_error(krr(x, y, solver = "pcg2"), "`solver`")
  expect_input_error(krr(x, y, solver = list()), "`solver`")
  expect_input_error(krr(x, y, precision = "half"), "`precision`")
  expect_input_error(krr(x, y, device = "tpu"), "`device`")
  expect_input_error(askotch(sampling = "leverage"), "`sampling`")
  expect_input_error(askotch(rho = "big"), "`rho`")
  expect_input_error(askotch(rho = -1), "`rho`")
  expect_input_error(askotch(rank = 0), "`rank`")
  expect_input_error(askotch(rank = 2.5), "`rank`")
  expect_input_error(askotch(block_size = -3), "`block_size`")
  expect_input_error(askotch(mu = 0), "`mu`")
  expect_input_error(askotch(accelerated = NA), "`accelerated`")
  expect_input_error(skotch(accelerated = TRUE), "accelerated")
})

test_that("rank > block size and block size > n are rejected", {
  expect_input_error(krr(x, y, solver = askotch(block_size = 10, rank = 20)),
                     "`rank`")
  expect_input_error(krr(x, y, solver = askotch(block_size = 51)),
                     "`block_size`")
  expect_input_error(krr(x, y, solver = askotch(rank = 60)), "`rank`")
})

test_that("validation data are checked", {
  expect_input_error(krr(x, y, validation = list(x = x)), "`validation`")
  expect_input_error(krr(x, y, validation = list(x = x[, 1], y = y)),
                     "validation\\$x")
  expect_input_error(krr(x, y, validation = list(x = x, y = y[-1])),
                     "validation\\$y")
})

test_that("newdata with wrong columns is rejected", {
  fit <- krr(x, y, lambda = 1, solver = cholesky(), threads = 1)
  expect_input_error(predict(fit, x[, 1, drop = FALSE]), "`newdata`")
  expect_input_error(predict(fit, cbind(x, 1)), "`newdata`")
  x3 <- x
  x3[1, 1] <- Inf
  expect_input_error(predict(fit, x3), "`newdata`")
  expect_input_error(predict(fit, x, type = "class"), "class")
  expect_input_error(predict(fit, x, type = "prob"), "`type`")
  df <- data.frame(a = x[, 1], b = x[, 2], y = y)
  ffit <- krr(y ~ a + b, data = df, lambda = 1, solver = cholesky(),
              threads = 1)
  expect_input_error(predict(ffit, df[, c("a", "y")]), "`newdata`.*`b`")
})

test_that("a problem too large for the memory limit is a memory error", {
  big <- make_regression(3000, p = 5, seed = 1)
  # (the median bandwidth: no likelihood search before the solver's estimate)
  expect_error(krr(big$x, big$y, bandwidth = "median", solver = askotch(block_size = 3000),
                   mem_limit = 1e5, threads = 1),
               class = "askotch_error_memory")
  e <- tryCatch(krr(big$x, big$y, bandwidth = "median", solver = cholesky(),
                    mem_limit = 1e5, threads = 1), error = identity)
  expect_s3_class(e, "askotch_error_memory")
})

test_that("device = 'cuda' without a GPU is a classed error", {
  skip_if(has_cuda(), "a CUDA device is present")
  e <- tryCatch(krr(x, y, device = "cuda"), error = identity)
  expect_s3_class(e, "askotch_error")
  expect_true(inherits(e, "askotch_error_device") ||
                inherits(e, "askotch_error_not_built"))
  expect_match(conditionMessage(e), "CUDA")
  expect_message(dv <- askotch_devices(), "No CUDA device")
  expect_identical(nrow(dv), 0L)
  expect_named(dv, c("id", "name", "memory_gb", "compute_capability"))
})
