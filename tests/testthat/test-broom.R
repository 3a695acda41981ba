# broom-style tidy() / glance() / augment() and the caret model definition.
# Oracles: the fit's own fields and methods, R^2 written out in base R,
# predict() on the same data, and a caret::train() run whose chosen
# parameters and final model are checked against krr() directly.

fit_mt <- function(...) {
  krr(mpg ~ wt + hp + qsec, data = mtcars, lambda = 0.5, bandwidth = 1.5,
      solver = cholesky(), threads = 1, ...)
}

test_that("tidy() lists the hyperparameters", {
  fit <- fit_mt()
  td <- tidy(fit)
  expect_s3_class(td, "data.frame")
  expect_equal(td$term, c("bandwidth", "lambda"))
  expect_equal(td$estimate, c(1.5, 0.5))
  km <- kernel_machine(mpg ~ wt + hp, data = mtcars, lambda = 0.5,
                       bandwidth = 1.5, intercept = 2, solver = cholesky(),
                       threads = 1)
  expect_equal(tidy(km)$term, c("bandwidth", "lambda", "intercept"))
  expect_equal(tidy(km)$estimate[3], 2)
})

test_that("glance() is one row with R^2 / accuracy and logLik when available", {
  fit <- fit_mt()
  g <- glance(fit)
  expect_equal(nrow(g), 1L)
  r2 <- 1 - sum((mtcars$mpg - fitted(fit))^2) /
    sum((mtcars$mpg - mean(mtcars$mpg))^2)
  expect_equal(g$r.squared, r2, tolerance = 1e-12)
  expect_equal(g$nobs, 32L)
  expect_equal(g$lambda, 0.5)
  expect_true(g$converged)
  expect_equal(g$kernel, "rbf")
  # logLik/AIC/BIC: NA without a logLik method, the method's value with one
  has_ll <- !is.null(utils::getS3method("logLik", "krr", optional = TRUE))
  if (has_ll) {
    expect_equal(g$logLik, as.numeric(logLik(fit)))
  } else {
    expect_true(is.na(g$logLik) && is.na(g$AIC) && is.na(g$BIC))
  }
  # weighted R^2
  fw <- fit_mt(weights = mtcars$cyl)
  w <- mtcars$cyl
  mu <- sum(w * mtcars$mpg) / sum(w)
  r2w <- 1 - sum(w * (mtcars$mpg - fitted(fw))^2) / sum(w * (mtcars$mpg - mu)^2)
  expect_equal(glance(fw)$r.squared, r2w, tolerance = 1e-12)
  # summary() reports the same weighted R^2, also from the residuals
  # lambda alpha / w it uses above option askotch.exact_max_n
  expect_equal(unname(summary(fw)$model[["R-squared (training)"]]), r2w,
               tolerance = 1e-12)
  old <- options(askotch.exact_max_n = 10)
  on.exit(options(old))
  expect_equal(unname(summary(fw)$model[["R-squared (training)"]]), r2w,
               tolerance = 1e-8)
  expect_equal(glance(fw)$r.squared, r2w, tolerance = 1e-8)
  options(old)
  # classification: training accuracy
  fc <- krr(Species ~ ., data = iris, lambda = 1, solver = cholesky(),
            threads = 1)
  expect_equal(glance(fc)$accuracy, mean(predict(fc, iris) == iris$Species))
  expect_null(glance(fc)$r.squared)
})

test_that("augment() adds .fitted and .resid", {
  fit <- fit_mt()
  a <- augment(fit, data = mtcars)
  expect_equal(nrow(a), 32L)
  expect_equal(a$.fitted, unname(predict(fit, mtcars)), tolerance = 1e-12)
  expect_equal(a$.resid, mtcars$mpg - a$.fitted, tolerance = 1e-12)
  expect_equal(a$mpg, mtcars$mpg)
  a0 <- augment(fit)
  expect_equal(a0$.fitted, unname(fitted(fit)))
  expect_equal(a0$.resid, unname(residuals(fit)))
  # new data without the response: no .resid
  nd <- mtcars[1:5, c("wt", "hp", "qsec")]
  an <- augment(fit, newdata = nd)
  expect_false(".resid" %in% names(an))
  expect_equal(an$.fitted, unname(predict(fit, nd)))
  # na.exclude: padded to the data's rows
  dn <- mtcars
  dn$hp[4] <- NA
  fe <- krr(mpg ~ wt + hp, data = dn, lambda = 0.5, solver = cholesky(),
            threads = 1, na.action = na.exclude)
  expect_equal(which(is.na(augment(fe)$.fitted)), 4L)
  # classification: the class
  fc <- krr(Species ~ ., data = iris, lambda = 1, solver = cholesky(),
            threads = 1)
  ac <- augment(fc, data = iris)
  expect_equal(ac$.fitted, unname(predict(fc, iris)))
  # se_fit: a column when predict() gives standard errors, else a warning
  se <- tryCatch(predict(fit, mtcars, se.fit = TRUE), error = function(e) NULL)
  if (is.list(se) && !is.null(se$se.fit)) {
    expect_equal(augment(fit, data = mtcars, se_fit = TRUE)$.se.fit,
                 unname(se$se.fit))
  } else {
    expect_warning(augment(fit, data = mtcars, se_fit = TRUE), "se.fit")
  }
})

test_that("augment(interval = ) adds predict()'s interval as .lower and .upper", {
  fit <- fit_mt()
  nd <- mtcars[1:5, ]
  for (iv in c("confidence", "prediction")) {
    p <- predict(fit, nd, interval = iv, level = 0.9)
    a <- augment(fit, newdata = nd, interval = iv, conf.level = 0.9)
    expect_equal(a$.lower, unname(p[, "lwr"]))
    expect_equal(a$.upper, unname(p[, "upr"]))
    expect_equal(a$.fitted, unname(p[, "fit"]))
  }
  # the training points: the same interval as predict() without new data,
  # which is predict() at the training data
  a0 <- augment(fit, interval = "prediction")
  p0 <- predict(fit, mtcars, interval = "prediction")
  expect_equal(a0$.lower, unname(p0[, "lwr"]), tolerance = 1e-10)
  # na.exclude: padded to the data's rows, as .fitted
  dn <- mtcars
  dn$hp[4] <- NA
  fe <- krr(mpg ~ wt + hp, data = dn, lambda = 0.5, solver = cholesky(),
            threads = 1, na.action = na.exclude)
  ae <- augment(fe, interval = "confidence", se_fit = TRUE)
  expect_equal(which(is.na(ae$.lower)), 4L)
  expect_equal(which(is.na(ae$.se.fit)), 4L)
  expect_equal(ae$.upper[-4], unname(predict(fe, dn[-4, ], interval = "confidence")[, "upr"]),
               tolerance = 1e-10)
  # a noise model: each point's own noise, so the widths differ with the covariate
  set.seed(7)
  d <- data.frame(t = seq(0, 1, length.out = 80))
  d$y <- sin(6 * d$t) + rnorm(80, sd = 0.05 + 0.5 * d$t)
  fn <- krr(y ~ t, data = d, noise = ~ t, kernel = "rbf", threads = 1)
  an <- augment(fn, data = d, interval = "prediction")
  z <- qnorm(0.975)
  pn <- predict(fn, d, se.fit = TRUE)
  half <- z * sqrt(pn$se.fit^2 + pn$residual.scale^2)
  expect_equal(an$.upper - an$.fitted, unname(half), tolerance = 1e-8)
  expect_gt(diff(range(an$.upper - an$.lower)), 0.5)
  # several outputs: one column per output
  mo <- krr(as.matrix(mtcars[, c("wt", "hp")]), cbind(a = mtcars$mpg, b = mtcars$qsec),
            lambda = 0.5, solver = cholesky(), threads = 1)
  am <- augment(mo, interval = "confidence")
  expect_true(all(c(".lower.a", ".upper.b") %in% names(am)))
  expect_error(augment(fit, interval = "bogus"), "`interval`", class = "askotch_error_input")
  expect_error(augment(fit, interval = "confidence", conf.level = 2), "`conf.level`",
               class = "askotch_error_input")
  fc <- krr(Species ~ ., data = iris, lambda = 1, solver = cholesky(), threads = 1)
  expect_error(augment(fc, interval = "confidence"), "regression",
               class = "askotch_error_input")
})

test_that("caret::train() tunes lambda and bandwidth with caret_krr()", {
  # loading caret asks Sys.timezone(), which warns on machines without
  # timedatectl: load it without warnings
  if (!suppressWarnings(requireNamespace("caret", quietly = TRUE))) {
    skip("caret is not installed")
  }
  train <- caret::train
  grid <- expand.grid(lambda = c(0.05, 1), bandwidth = c(1, 3))
  folds <- list(Fold1 = 1:20, Fold2 = 11:32, Fold3 = c(1:10, 21:32))
  ctrl <- caret::trainControl(method = "cv", index = folds)
  tr <- train(mpg ~ wt + hp + qsec, data = mtcars,
                     method = caret_krr(solver = cholesky(), threads = 1),
                     tuneGrid = grid, trControl = ctrl)
  # the resampled RMSE of each grid point written out with krr()
  x <- model.matrix(mpg ~ wt + hp + qsec - 1, mtcars)
  rmse <- apply(grid, 1, function(g) {
    mean(sapply(folds, function(tr_i) {
      f <- krr(x[tr_i, ], mtcars$mpg[tr_i], lambda = g[["lambda"]],
               bandwidth = g[["bandwidth"]], solver = cholesky(), threads = 1)
      te <- setdiff(1:32, tr_i)
      sqrt(mean((predict(f, x[te, ]) - mtcars$mpg[te])^2))
    }))
  })
  res <- merge(tr$results, cbind(grid, oracle = rmse))
  expect_equal(res$RMSE, res$oracle, tolerance = 1e-10)
  best <- grid[which.min(rmse), ]
  expect_equal(tr$bestTune$lambda, best$lambda)
  expect_equal(tr$bestTune$bandwidth, best$bandwidth)
  ref <- krr(x, mtcars$mpg, lambda = best$lambda, bandwidth = best$bandwidth,
             solver = cholesky(), threads = 1)
  expect_equal(unname(predict(tr, mtcars)), unname(predict(ref, x)),
               tolerance = 1e-10)
  # classification with class probabilities
  set.seed(3)
  trc <- train(Species ~ ., data = iris,
                      method = caret_krr(solver = cholesky(), threads = 1),
                      tuneGrid = data.frame(lambda = c(0.1, 1), bandwidth = 2),
                      trControl = caret::trainControl(method = "cv", number = 3,
                                                      classProbs = TRUE))
  pc <- predict(trc, iris)
  expect_s3_class(pc, "factor")
  expect_gt(mean(pc == iris$Species), 0.9)
  pp <- predict(trc, iris, type = "prob")
  expect_equal(colnames(pp), levels(iris$Species))
  expect_equal(unname(rowSums(pp)), rep(1, 150), tolerance = 1e-12)
  expect_equal(levels(iris$Species)[max.col(pp, "first")], as.character(pc))
  # the default grid
  g <- caret_krr()$grid(x, mtcars$mpg, len = 2)
  expect_equal(nrow(g), 4L)
  expect_error(caret_krr(lambda = 1), class = "askotch_error_input")
})

test_that("caret_krr() tunes lambda along a warm-started path per bandwidth", {
  if (!suppressWarnings(requireNamespace("caret", quietly = TRUE))) {
    skip("caret is not installed")
  }
  grid <- expand.grid(lambda = c(1, 0.1, 0.01), bandwidth = c(1, 2))
  lp <- caret_krr()$loop(grid)
  expect_equal(lp$loop[order(lp$loop$bandwidth), ],
               data.frame(lambda = c(1, 1), bandwidth = c(1, 2)), ignore_attr = TRUE)
  expect_equal(lapply(lp$submodels, `[[`, "lambda"), list(c(0.1, 0.01), c(0.1, 0.01)))
  set.seed(5)
  x <- matrix(rnorm(240), 120, dimnames = list(NULL, c("u", "v")))
  y <- factor(ifelse(x[, 1]^2 + x[, 2] + 0.3 * rnorm(120) > 1, "a", "b"))
  folds <- list(F1 = 1:80, F2 = 41:120, F3 = c(1:40, 81:120))
  ctrl <- caret::trainControl(method = "cv", index = folds, classProbs = TRUE)
  tr <- caret::train(x, y, method = caret_krr(loss = "hinge", tol = 1e-10, threads = 1),
                     tuneGrid = grid, trControl = ctrl)
  # each grid point's held-out accuracy from a cold fit at it
  acc <- apply(grid, 1, function(g) {
    mean(sapply(folds, function(i) {
      f <- kernel_machine(x[i, ], y[i], loss = loss_hinge(), lambda = g[["lambda"]],
                          bandwidth = g[["bandwidth"]], tol = 1e-10, threads = 1)
      mean(predict(f, x[-i, ]) == y[-i])
    }))
  })
  res <- merge(tr$results, cbind(grid, oracle = acc))
  expect_equal(res$Accuracy, res$oracle, tolerance = 1e-12)
  expect_equal(nrow(res), 6L)
  # the probabilities reuse the path's refits: one per submodel and resample
  fit <- kernel_machine(x[1:80, ], y[1:80], loss = loss_hinge(), lambda = 1,
                        bandwidth = 1, keep_state = TRUE, threads = 1)
  fit$caret_path <- new.env()
  m <- caret_krr(loss = "hinge")
  subs <- data.frame(lambda = c(0.01, 0.1))
  p1 <- m$predict(fit, x[81:120, ], submodels = subs)
  expect_false(askotch:::state_alive(fit$state))
  expect_setequal(ls(fit$caret_path), sprintf("%.17g", c(0.01, 0.1)))
  p2 <- m$prob(fit, x[81:120, ], submodels = subs)
  expect_length(p1, 3L)
  expect_length(p2, 3L)
  cold <- kernel_machine(x[1:80, ], y[1:80], loss = loss_hinge(), lambda = 0.01,
                         bandwidth = 1, threads = 1)
  expect_equal(p1[[2L]], predict(cold, x[81:120, ]))
  # without submodels the kept state is freed after the predictions too
  f2 <- kernel_machine(x[1:80, ], y[1:80], loss = loss_hinge(), lambda = 1,
                       bandwidth = 1, keep_state = TRUE, threads = 1)
  expect_equal(m$predict(f2, x[81:120, ]), predict(f2, x[81:120, ]))
  expect_false(askotch:::state_alive(f2$state))
})
