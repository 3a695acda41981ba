# Platt scaling (kernel_machine(probability = TRUE)): the sigmoid against a
# direct minimisation of the same objective in base R, the cross-validated
# decision values against fold fits made by hand, the probabilities'
# shape, and the refusals.

platt_obj <- function(ab, dv, t) {
  z <- ab[1] * dv + ab[2]
  sum(t * z + log1p(exp(-z)))
}

test_that("the Platt sigmoid minimises the smoothed cross-entropy", {
  set.seed(1)
  for (case in 1:3) {
    f <- rnorm(200, sd = c(1, 3, 0.2)[case])
    y <- as.integer(runif(200) < plogis(c(2, -0.7, 5)[case] * f + 0.3))
    ab <- ffi("platt_sigmoid")(f, y)
    np <- sum(y)
    nn <- 200 - np
    t <- ifelse(y == 1, (np + 1) / (np + 2), 1 / (nn + 2))
    o <- stats::optim(c(0, 0), platt_obj, dv = f, t = t, method = "BFGS",
                      control = list(reltol = 1e-14, maxit = 1000))
    expect_equal(unname(ab), o$par, tolerance = 1e-4)
    expect_lte(platt_obj(ab, f, t), o$value + 1e-8)
  }
  # separable data: the smoothed targets keep the sigmoid finite
  ab <- ffi("platt_sigmoid")(c(-2, -1, 1, 2), c(0, 0, 1, 1))
  expect_true(all(is.finite(ab)) && ab[["A"]] < 0)
})

test_that("probability = TRUE fits the sigmoid to 5-fold out-of-fold decision values", {
  set.seed(2)
  x <- cbind(a = runif(150), b = runif(150))
  cls <- factor(ifelse(x[, 1] + x[, 2] + rnorm(150, sd = 0.3) > 1, "hi", "lo"))
  fit <- kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.05, bandwidth = 0.4,
                        probability = TRUE, threads = 1, seed = 3)
  expect_equal(fit$platt$folds, 5L)
  # the folds by hand: the same stratified split, fits with the same settings
  # (the folds stop at a relative duality gap of 1e-3, as lambda = "cv"'s)
  y1 <- as.integer(cls == levels(cls)[2])
  ids <- ffi("platt_fold_ids")(1L + y1, 5L, fit$seed)
  expect_equal(as.vector(table(ids, y1)[, 1]), rep(sum(y1 == 0) / 5, 5), tolerance = 0.21)
  dv <- numeric(150)
  for (k in 1:5) {
    sub <- kernel_machine(fit$x[ids != k, ], cls[ids != k], loss = loss_hinge(), lambda = 0.05,
                          kernel = fit$kernel, standardize = FALSE, threads = 1, seed = 3,
                          tol = 1e-3)
    dv[ids == k] <- predict(sub, fit$x[ids == k, ], type = "decision")
  }
  ab <- ffi("platt_sigmoid")(dv, y1)
  expect_equal(c(fit$platt$A, fit$platt$B), unname(ab), tolerance = 1e-8)
  xn <- cbind(a = c(0.1, 0.5, 0.9), b = c(0.1, 0.5, 0.9))
  p <- predict(fit, xn, type = "prob")
  f <- predict(fit, xn, type = "decision")
  expect_equal(unname(p), unname(plogis(-(ab[["A"]] * f + ab[["B"]]))), tolerance = 1e-12)
  expect_true(p[1] > 0.5 && p[3] < 0.5)  # "lo" is the second level: likely at low x
})

test_that("one-vs-rest Platt probabilities are normalised over the classes", {
  fit <- kernel_machine(Species ~ ., data = iris, loss = loss_squared_hinge(), lambda = 0.1,
                        probability = TRUE, threads = 1)
  expect_length(fit$platt$A, 3L)
  p <- predict(fit, iris, type = "prob")
  expect_equal(dim(p), c(150L, 3L))
  expect_equal(unname(rowSums(p)), rep(1, 150), tolerance = 1e-12)
  expect_gt(mean(levels(iris$Species)[max.col(p)] == iris$Species), 0.9)
  expect_output(print(summary(fit)), "Platt")
  # a one-vs-rest hinge fit's support counts are one per class (and validate)
  fh <- kernel_machine(Species ~ ., data = iris, loss = loss_hinge(), lambda = 0.1, threads = 1)
  expect_length(fh$support$count, 3L)
  expect_gt(mean(predict(fh, iris) == iris$Species), 0.9)
})

test_that("probability = TRUE refuses what it cannot calibrate", {
  set.seed(3)
  x <- matrix(runif(60), 30)
  expect_error(kernel_machine(x, x[, 1], loss = loss_huber(), probability = TRUE, threads = 1),
               class = "askotch_error_input")
  cls <- factor(c(rep("a", 27), rep("b", 3)))
  expect_error(kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.1, probability = TRUE,
                              threads = 1), class = "askotch_error_input")
  cls2 <- factor(rep(c("a", "b"), 15))
  expect_error(kernel_machine(x, cls2, loss = loss_hinge(), lambda = 0.1, probability = TRUE,
                              features = 20, threads = 1), class = "askotch_error_input")
  expect_error(kernel_machine(x, cls2, loss = loss_hinge(), probability = NA),
               class = "askotch_error_input")
  fit <- kernel_machine(x, cls2, loss = loss_hinge(), lambda = 0.1, threads = 1)
  expect_error(predict(fit, x, type = "prob"), "probability = TRUE", class = "askotch_error_input")
})

test_that("refit() fits the Platt sigmoid again at the new lambda", {
  set.seed(6)
  x <- cbind(a = runif(120), b = runif(120))
  cls <- factor(ifelse(x[, 1] - x[, 2] + rnorm(120, sd = 0.3) > 0, "p", "q"))
  fit <- kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.05, bandwidth = 0.4,
                        probability = TRUE, threads = 1, seed = 7)
  r <- refit(fit, lambda = 0.3)
  direct <- kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.3, bandwidth = 0.4,
                           probability = TRUE, threads = 1, seed = 7)
  expect_false(isTRUE(all.equal(r$platt$A, fit$platt$A)))
  expect_equal(r$platt, direct$platt, tolerance = 1e-8)
  expect_equal(predict(r, x[1:5, ], type = "prob"), predict(direct, x[1:5, ], type = "prob"),
               tolerance = 1e-6)
})
