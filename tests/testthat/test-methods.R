# print / summary / plot / coef / fitted / residuals and saveRDS round trips.

test_that("print, summary and plot run", {
  d <- make_regression(300, seed = 41)
  fit <- krr(d$x, d$y, lambda = 1, max_passes = 20, seed = 1, threads = 1,
             validation = list(x = d$x[1:50, ], y = d$y[1:50]))
  expect_output(print(fit), "Kernel ridge regression")
  s <- summary(fit)
  expect_s3_class(s, "summary.krr")
  out <- capture.output(print(s))
  for (field in c("n = 300", "Task", "Kernel", "Lambda", "Solver",
                  "Precision", "Device", "Iterations", "Passes", "Seconds",
                  "Residual \\(estimate\\)", "Residual \\(exact\\)",
                  "Converged", "Validation")) {
    expect_true(any(grepl(field, out)), info = field)
  }
  f <- tempfile(fileext = ".png")
  png(f)
  expect_invisible(plot(fit))
  dev.off()
  expect_gt(file.size(f), 0)
  f2 <- tempfile(fileext = ".pdf")
  pdf(f2)
  plot(krr(d$x, d$y, lambda = 1, solver = cholesky(), threads = 1))
  dev.off()
  expect_output(print(askotch()), "ASkotch")
  expect_output(print(skotch(block_size = 10)), "Skotch")
  expect_output(print(cholesky()), "Cholesky")
})

test_that("coef, fitted and residuals are consistent", {
  d <- make_regression(200, seed = 42)
  fit <- krr(d$x, d$y, lambda = 1, bandwidth = 1, solver = cholesky(),
             threads = 1)
  expect_length(coef(fit), 200)
  expect_equal(fitted(fit), unname(predict(fit, d$x)), tolerance = 1e-12)
  expect_equal(unname(predict(fit)), unname(fitted(fit)), tolerance = 1e-12)
  expect_equal(residuals(fit), d$y - fitted(fit))
  ref <- oracle_krr(d$x, d$y, d$x, "rbf", 1, 1)
  expect_lt(rel_err(coef(fit), ref$w), 1e-10)
  # KRR identity: residuals = lambda * w
  expect_equal(residuals(fit), 1 * coef(fit), tolerance = 1e-8)
})

test_that("the fitted object holds only plain R data and survives saveRDS", {
  d <- make_regression(150, seed = 43)
  fit <- krr(d$x, d$y, lambda = 1, max_passes = 30, seed = 1, threads = 1)
  walk <- function(o) {
    if (is.environment(o) || typeof(o) %in% c("externalptr", "closure")) {
      return(FALSE)
    }
    if (is.list(o)) return(all(vapply(o, walk, TRUE)))
    TRUE
  }
  fit$call <- NULL
  expect_true(walk(unclass(fit)[setdiff(names(fit), "terms")]))
  ffit <- local(krr(mpg ~ wt + hp, data = mtcars, lambda = 1, threads = 1,
                    solver = cholesky()))
  expect_identical(environment(ffit$terms), globalenv())
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  fit2 <- readRDS(f)
  expect_identical(predict(fit2, d$x), predict(fit, d$x))
})

test_that("predict works after readRDS in a fresh R session", {
  skip_on_cran()
  df <- iris
  fit <- krr(Species ~ ., data = df, lambda = 1, seed = 1, threads = 1)
  f <- tempfile(fileext = ".rds")
  out <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  script <- tempfile(fileext = ".R")
  writeLines(c(
    "library(askotch)",
    sprintf("fit <- readRDS('%s')", f),
    "p <- predict(fit, iris)",
    sprintf("saveRDS(p, '%s')", out)
  ), script)
  lib <- paste(.libPaths(), collapse = .Platform$path.sep)
  rscript <- file.path(R.home("bin"), "Rscript")
  status <- system2(rscript, c("--vanilla", shQuote(script)),
                    env = paste0("R_LIBS=", lib), stdout = FALSE,
                    stderr = FALSE)
  expect_identical(status, 0L)
  expect_identical(readRDS(out), predict(fit, iris))
})

test_that("rows of newdata with a missing value are predicted as NA", {
  f <- krr(dist ~ speed, data = cars, lambda = 0.1, bandwidth = 5, threads = 1)
  nd <- data.frame(speed = c(10, NA, 20, NaN), other = c(NA, 1, 2, 3))
  full <- predict(f, data.frame(speed = c(10, 20)))
  p <- predict(f, nd)
  expect_length(p, 4L)
  expect_equal(unname(p[c(1, 3)]), unname(full))
  expect_true(all(is.na(p[c(2, 4)])))
  se <- predict(f, nd, se.fit = TRUE)
  expect_true(all(is.na(se$se.fit[c(2, 4)])) && all(is.finite(se$se.fit[c(1, 3)])))
  iv <- predict(f, nd, interval = "prediction")
  expect_identical(dim(iv), c(4L, 3L))
  expect_true(all(is.na(iv[2, ])) && all(is.finite(iv[3, ])))
  # a matrix fit, classification keeps the factor's levels
  x <- as.matrix(iris[, 1:2])
  g <- krr(x, iris$Species, lambda = 0.1, bandwidth = 1, threads = 1)
  xn <- rbind(x[1:2, ], c(NA, 3))
  cl <- predict(g, xn)
  expect_s3_class(cl, "factor")
  expect_identical(levels(cl), levels(iris$Species))
  expect_identical(as.character(cl[1:2]), as.character(predict(g, x[1:2, ])))
  expect_true(is.na(cl[3]))
  expect_true(all(is.na(predict(g, xn, type = "decision")[3, ])))
  km <- kernel_machine(x, iris$Species, loss = "logistic", lambda = 0.1, threads = 1)
  pr <- predict(km, xn, type = "prob")
  expect_true(all(is.na(pr[3, ])) && all(abs(rowSums(pr[1:2, ]) - 1) < 1e-12))
  au <- augment(f, newdata = nd, se_fit = TRUE)
  expect_true(is.na(au$.fitted[2]) && is.na(au$.se.fit[2]) && is.finite(au$.se.fit[3]))
  # every row missing: all NA; infinite values stay an error
  expect_true(all(is.na(predict(f, data.frame(speed = c(NA, NA))))))
  expect_error(predict(f, data.frame(speed = Inf)), "infinite", class = "askotch_error_input")
})
