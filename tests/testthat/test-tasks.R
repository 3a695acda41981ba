# Tasks: binary, multiclass, multi-output, formula interface, preprocessing.

test_that("binary factor: +1 is the second level, predictions are classes", {
  set.seed(31)
  n <- 300
  x <- matrix(rnorm(n * 2), n, 2)
  y <- factor(ifelse(x[, 1]^2 + x[, 2]^2 > 1.4, "out", "in"),
              levels = c("in", "out"))
  fit <- krr(x, y, lambda = 0.1, bandwidth = 1, solver = cholesky(),
             threads = 1)
  expect_identical(fit$task, "binary")
  expect_identical(fit$levels, c("in", "out"))
  ref <- oracle_krr(x, ifelse(y == "out", 1, -1), x, "rbf", 1, 0.1)
  # classification targets are not centred: compare raw scores K w
  sc <- oracle_scale(x)
  xs <- scale(x, sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", 1)
  w <- solve(K + 0.1 * diag(n), ifelse(y == "out", 1, -1))
  dec <- predict(fit, x, type = "decision")
  expect_lt(rel_err(dec, K %*% w), 1e-8)
  cls <- predict(fit, x)
  expect_s3_class(cls, "factor")
  expect_identical(levels(cls), c("in", "out"))
  expect_identical(cls, predict(fit, x, type = "class"))
  expect_identical(as.character(cls), ifelse(dec > 0, "out", "in"))
  expect_gt(mean(cls == y), 0.9)
})

test_that("character and logical y are treated as factors", {
  set.seed(32)
  x <- matrix(rnorm(200), 100, 2)
  yc <- ifelse(x[, 1] > 0, "pos", "neg")
  fit <- krr(x, yc, lambda = 0.1, solver = cholesky(), threads = 1)
  expect_identical(fit$levels, c("neg", "pos"))
  expect_gt(mean(predict(fit, x) == yc), 0.9)
  fitl <- krr(x, x[, 1] > 0, lambda = 0.1, solver = cholesky(), threads = 1)
  expect_identical(fitl$levels, c("FALSE", "TRUE"))
})

test_that("multiclass is one-vs-all with joint right-hand sides", {
  fit <- krr(as.matrix(iris[, 1:4]), iris$Species, lambda = 0.5,
             tol = 1e-10, max_passes = 300, seed = 1, threads = 1)
  expect_identical(fit$task, "multiclass")
  expect_identical(dim(fit$weights), c(150L, 3L))
  Y <- sapply(levels(iris$Species), function(l)
    ifelse(iris$Species == l, 1, -1))
  sc <- oracle_scale(as.matrix(iris[, 1:4]))
  xs <- scale(as.matrix(iris[, 1:4]), sc$center, sc$scale)
  K <- oracle_kernel(xs, xs, "rbf", fit$kernel$bandwidth)
  W <- solve(K + 0.5 * diag(150), Y)
  dec <- predict(fit, iris[, 1:4], type = "decision")
  expect_identical(colnames(dec), levels(iris$Species))
  expect_lt(rel_err(dec, K %*% W), 1e-8)
  cls <- predict(fit, iris[, 1:4])
  expect_identical(levels(cls), levels(iris$Species))
  expect_identical(as.integer(cls), unname(max.col(K %*% W, "first")))
  expect_gt(mean(cls == iris$Species), 0.95)
})

test_that("multi-output regression centres each column", {
  d <- make_regression(200, seed = 33)
  Y <- cbind(a = d$y, b = 10 + 2 * d$x[, 1])
  fit <- krr(d$x, Y, lambda = 2, bandwidth = 1.2, tol = 1e-11,
             max_passes = 300, seed = 1, threads = 1)
  expect_identical(fit$task, "multioutput")
  ref <- oracle_krr(d$x, Y, d$x[1:20, ], "rbf", 1.2, 2)
  pr <- predict(fit, d$x[1:20, ])
  expect_identical(dim(pr), c(20L, 2L))
  expect_identical(colnames(pr), c("a", "b"))
  expect_lt(rel_err(pr, ref$pred), 1e-8)
  expect_equal(fit$y_center, unname(colMeans(Y)))
  expect_identical(dim(coef(fit)), c(200L, 2L))
  expect_identical(dim(fitted(fit)), c(200L, 2L))
})

test_that("formula interface expands factors and keeps terms for predict", {
  df <- mtcars
  df$cyl <- factor(df$cyl)
  fit <- krr(mpg ~ wt + hp + cyl, data = df, lambda = 1, solver = cholesky(),
             threads = 1)
  expect_identical(fit$p, 5L)  # wt, hp, cyl4, cyl6, cyl8 (no intercept)
  x <- model.matrix(~ wt + hp + cyl + 0, df)
  fit_m <- krr(x, df$mpg, lambda = 1, solver = cholesky(), threads = 1,
               bandwidth = fit$kernel$bandwidth)
  expect_equal(unname(predict(fit, df)), unname(predict(fit_m, x)),
               tolerance = 1e-10)
  # newdata with one level only, columns in another order, extra columns
  nd <- df[df$cyl == "6", c("hp", "cyl", "wt", "qsec")]
  expect_equal(unname(predict(fit, nd)), unname(predict(fit, df)[df$cyl == "6"]),
               tolerance = 1e-12)
  expect_named(predict(fit, df[1:3, ]), rownames(df)[1:3])
  # formula fits: classification and validation data frames
  fc <- krr(Species ~ ., data = iris, lambda = 1, validation = iris,
            threads = 1, seed = 1)
  expect_identical(fc$task, "multiclass")
  expect_identical(fc$validation_metric, "accuracy")
  expect_gt(tail(fc$trace$validation, 1), 0.9)
})

test_that("standardisation uses mean and sd; constant columns are only centred", {
  set.seed(34)
  n <- 120
  x <- cbind(runif(n, 0, 100), 5, rnorm(n, 3, 0.01))
  y <- x[, 1] / 50 + 100 * (x[, 3] - 3) + rnorm(n, sd = 0.05)
  fit <- krr(x, y, lambda = 1, bandwidth = 2, solver = cholesky(),
             threads = 1)
  expect_equal(fit$center, unname(colMeans(x)))
  expect_equal(fit$scale, c(sd(x[, 1]), 1, sd(x[, 3])))
  expect_true(all(fit$x[, 2] == 0))
  ref <- oracle_krr(x, y, x, "rbf", 2, 1)
  expect_lt(rel_err(predict(fit, x), ref$pred), 1e-10)
  # without standardisation the raw x is used
  fit2 <- krr(x, y, lambda = 1, bandwidth = 50, solver = cholesky(),
              standardize = FALSE, threads = 1)
  expect_equal(fit2$x, unname(x))
  K <- oracle_kernel(x, x, "rbf", 50)
  w <- solve(K + diag(n), y - mean(y))
  expect_lt(rel_err(predict(fit2, x), K %*% w + mean(y)), 1e-9)
  # data frame x works like a matrix
  fit3 <- krr(as.data.frame(x), y, lambda = 1, bandwidth = 2,
              solver = cholesky(), threads = 1)
  expect_equal(predict(fit3, as.data.frame(x)), predict(fit, x),
               tolerance = 1e-12, ignore_attr = TRUE)
})
