# Solving again from a fit: keep_state, refit() with a new lambda, new
# responses, warm starts, and after saveRDS / readRDS.
#
# Tolerances: the fits run to tol = 1e-10 in double precision on
# well-conditioned problems (lambda >= 1e-2 n, cond(K + lambda I) <= 1e2), so
# predictions are within ~1e-8 of the exact solution, as in test-solvers.R.

d <- make_regression(300, p = 3, seed = 71)
bw <- 1.5
l1 <- 6
l2 <- 3
y2 <- cos(3 * d$x[, 2]) + d$x[, 1]

solver_cases <- list(
  askotch = function() askotch(block_size = 60, rank = 30),
  pcg = function() pcg(rank = 40),
  falkon = function() falkon(centers = 60),
  eigenpro = function() eigenpro(subsample = 200, rank = 30),
  cholesky = function() cholesky()
)

fit_case <- function(s, lambda = l1, y = d$y, ...) {
  krr(d$x, y, bandwidth = bw, lambda = lambda, solver = solver_cases[[s]](),
      tol = 1e-10, max_passes = 3000, seed = 5, threads = 1, ...)
}

oracle_for <- function(fit, y, lambda) {
  if (is.null(fit$centers)) oracle_krr(d$x, y, d$x, "rbf", bw, lambda)$pred
  else oracle_inducing(d$x, y, d$x, "rbf", bw, lambda, fit$centers)$pred
}

test_that("keep_state keeps an external pointer; the default keeps none", {
  f0 <- fit_case("pcg")
  expect_null(f0$state)
  f1 <- fit_case("pcg", keep_state = TRUE)
  expect_identical(typeof(f1$state), "externalptr")
  expect_true(askotch:::state_alive(f1$state))
  expect_error(krr(d$x, d$y, keep_state = NA), class = "askotch_error_input")
})

for (s in names(solver_cases)) {
  test_that(sprintf("%s: refit() with a new lambda matches the exact fit at that lambda", s), {
    fit <- fit_case(s, keep_state = TRUE)
    f2 <- refit(fit, lambda = l2)
    expect_identical(f2$lambda, l2)
    expect_true(f2$converged)
    expect_lt(rel_err(predict(f2, d$x), oracle_for(fit, d$y, l2)), 1e-8)
    fresh <- fit_case(s, lambda = l2)
    expect_lt(rel_err(predict(f2, d$x), predict(fresh, d$x)), 1e-8)
    # the original fit is unchanged
    expect_identical(fit$lambda, l1)
    expect_lt(rel_err(predict(fit, d$x), oracle_for(fit, d$y, l1)), 1e-8)
  })

  test_that(sprintf("%s: refit() with new responses matches a fresh fit", s), {
    fit <- fit_case(s, keep_state = TRUE)
    f2 <- refit(fit, newresp = y2)
    expect_true(f2$converged)
    expect_lt(rel_err(predict(f2, d$x), oracle_for(fit, y2, l1)), 1e-8)
    expect_equal(f2$y_center, mean(y2))
    fresh <- fit_case(s, y = y2)
    expect_lt(rel_err(predict(f2, d$x), predict(fresh, d$x)), 1e-8)
    expect_equal(residuals(f2), y2 - fitted(f2))
  })
}

test_that("a warm start from converged weights converges at the first check", {
  for (s in c("askotch", "pcg", "falkon")) {
    fit <- fit_case(s, keep_state = TRUE)
    expect_true(fit$converged)
    again <- refit(fit)
    expect_identical(again$reason, "tol", info = s)
    expect_identical(nrow(again$trace), 1L, info = s)
    expect_lte(again$iterations, 1L)
    expect_lte(again$resid_exact, 1e-10)
  }
})

test_that("refit() works without a kept state and after saveRDS / readRDS", {
  fit <- fit_case("askotch", keep_state = TRUE)
  f <- tempfile(fileext = ".rds")
  saveRDS(fit, f)
  back <- readRDS(f)
  # the pointer does not survive serialisation: the state is rebuilt
  expect_false(askotch:::state_alive(back$state))
  f2 <- refit(back, lambda = l2)
  expect_true(f2$converged)
  expect_lt(rel_err(predict(f2, d$x), oracle_for(fit, d$y, l2)), 1e-8)
  expect_true(askotch:::state_alive(f2$state))
  plain <- fit_case("askotch")
  f3 <- refit(plain, newresp = y2)
  expect_null(f3$state)
  expect_lt(rel_err(predict(f3, d$x), oracle_for(fit, y2, l1)), 1e-8)
})

test_that("a lambda path reuses the state", {
  fit <- fit_case("pcg", keep_state = TRUE)
  path <- Reduce(function(f, l) refit(f, lambda = l), c(4, 2, 1),
                 accumulate = TRUE, init = fit)
  for (f in path[-1]) {
    expect_true(f$converged)
    expect_lt(rel_err(predict(f, d$x), oracle_for(fit, d$y, f$lambda)), 1e-8)
  }
})

test_that("refit() works for classification and checks its arguments", {
  fit <- krr(Species ~ ., data = iris, lambda = 2, solver = cholesky(),
             threads = 1, keep_state = TRUE)
  rev_species <- factor(rev(as.character(iris$Species)), levels = levels(iris$Species))
  f2 <- refit(fit, newresp = rev_species)
  fresh <- krr(iris[, 1:4], rev_species, lambda = 2, solver = cholesky(), threads = 1)
  expect_equal(unname(predict(f2, iris, type = "decision")),
               unname(predict(fresh, iris[, 1:4], type = "decision")), tolerance = 1e-10)
  expect_error(refit(fit, newresp = iris$Sepal.Length), "`newresp`",
               class = "askotch_error_input")
  expect_error(refit(fit, newresp = factor(rep(c("a", "b"), 75))), "`newresp`",
               class = "askotch_error_input")
  expect_error(refit(fit, lambda = -1), "`lambda`", class = "askotch_error_input")
  expect_error(refit(fit, newresp = iris$Species[-1]), "`y`",
               class = "askotch_error_input")
  expect_error(refit(fit, nope = 1), class = "askotch_error_input")
})

test_that("solver_info() reads the compiled option tables", {
  si <- solver_info()
  expect_true(all(c("askotch", "askotch_v1", "pcg", "falkon", "eigenpro",
                    "eigenpro3", "cholesky") %in% si$name))
  a <- solver_info("askotch")
  expect_true(all(c("block_size", "rank", "rho", "power_iters", "seed",
                    "mem_limit") %in% a$option))
  expect_identical(a$default[a$option == "rho"], "damped")
  expect_identical(a$default[a$option == "power_iters"], "10")
  expect_error(solver_info("nope"), "`solver`", class = "askotch_error_input")
  # option checks come from the same tables
  expect_error(askotch(power_iters = 1001), "`power_iters`",
               class = "askotch_error_input")
  expect_error(pcg(rank = 3.5), "`rank`", class = "askotch_error_input")
})

test_that("the compiled option tables reject unknown names and accept every spec", {
  chk <- function(name, opts) .Call(askotch:::ffi_check_options, name, opts)
  expect_error(chk("askotch", list(rankk = 3)), "unknown option `rankk`",
               class = "askotch_error_input")
  expect_error(chk("nope", list()), "unknown solver", class = "askotch_error_input")
  expect_error(chk("askotch", list(rank = NA)), "`rank`", class = "askotch_error_input")
  expect_error(chk("falkon", list(centers = c(2, 0))), "`centers`",
               class = "askotch_error_input")
  specs <- list(askotch(), askotch(block_size = 50, rank = 10, rho = 0.5,
                                   sampling = "rls", rls_subsample = 40,
                                   mu = 1, nu = 2, power_iters = 3),
                skotch(), askotch(variant = "v1", v1_beta = 0.5, mu = 1),
                sap(), sap(accelerated = FALSE, block_size = 10), pcg(),
                pcg("greedy_cholesky", rank = 5, rho = "regularization"),
                falkon(), falkon(centers = 10), falkon(centers = c(3, 1, 2)),
                eigenpro(), eigenpro(version = 3, centers = 20, subsample = 10,
                                     rank = 5, batch_size = 7, step = 0.1),
                cholesky(), joker(), joker(block_size = 30, tr_iters = 5,
                                           cg_iters = 4))
  for (s in specs) {
    sc <- askotch:::solver_c(s)
    expect_true(sc$name %in% solver_info()$name)
    expect_null(chk(sc$name, sc$options))
  }
})

test_that("a failed refit does not poison the kept state", {
  # duplicated points: K + lambda I is singular in single precision at a tiny lambda
  xd <- d$x[rep(1:100, each = 2), ]
  yd <- d$y[rep(1:100, each = 2)]
  fit <- krr(xd, yd, bandwidth = bw, lambda = 1, solver = cholesky(),
             precision = "single", threads = 1, keep_state = TRUE)
  expect_error(refit(fit, lambda = 1e-12), class = "askotch_error_numeric")
  again <- refit(fit, lambda = 2)
  expect_true(again$converged)
  ref <- oracle_krr(xd, yd, xd, "rbf", bw, 2)$pred
  expect_lt(rel_err(predict(again, xd), ref), 1e-5)
})

test_that("specs resolve to values a rebuilt state accepts", {
  # pcg("none") resolves no rank; v1 accepts rank = block_size before data
  fit <- krr(d$x, d$y, bandwidth = bw, lambda = l1, solver = pcg("none"),
             tol = 1e-10, max_passes = 500, threads = 1)
  expect_null(fit$solver$rank)
  f2 <- refit(fit, lambda = l2)
  expect_lt(rel_err(predict(f2, d$x), oracle_for(fit, d$y, l2)), 1e-8)
  expect_s3_class(askotch(variant = "v1", block_size = 1000, rank = 1000),
                  "askotch_solver_askotch_v1")
  # whole-number options beyond 2^53 are input errors, not overflows
  expect_error(askotch(block_size = 1e19), "`block_size`", class = "askotch_error_input")
  expect_error(askotch(variant = "v1", block_size = 1e19), "`block_size`",
               class = "askotch_error_input")
  expect_error(eigenpro(subsample = 2^60), "`subsample`", class = "askotch_error_input")
})

test_that("solver specs saved by askotch 0.1.0 still print and refit", {
  old <- structure(list(name = "skotch", kind = 1L, block_size = 60, rank = 30L,
                        rank_given = TRUE, rho = "damped", accelerated = FALSE,
                        sampling = "uniform", variant = "journal",
                        rls_subsample = NULL, mu = NULL, nu = NULL,
                        power_iters = 10L, v1_beta = NULL),
                   class = c("askotch_solver_skotch", "askotch_solver"))
  expect_match(format(old), "^Skotch \\(block size 60, rank 30")
  sc <- askotch:::solver_c(old)
  expect_identical(sc$name, "askotch")
  expect_identical(sc$options$accelerated, FALSE)
  fit <- fit_case("askotch")
  fit$solver <- old
  f2 <- refit(fit, lambda = l2)
  expect_lt(rel_err(predict(f2, d$x), oracle_for(fit, d$y, l2)), 1e-8)
})

test_that("a new lambda keeps lambda * weights for the dual losses, the weights for squared", {
  set.seed(31)
  x <- matrix(rnorm(120), 60)
  yc <- ifelse(x[, 1] + 0.3 * rnorm(60) > 0, "a", "b")
  for (loss in list(loss_hinge(), loss_logistic(), loss_svr())) {
    y <- if (loss$name == "svr") x[, 2] else yc
    tp <- if (loss$name == "svr") "response" else "decision"
    fit <- kernel_machine(x, y, loss = loss, lambda = 0.2, solver = dcd(),
                          keep_state = TRUE, threads = 1)
    W <- fit$weights
    dimnames(W) <- NULL
    askotch:::native_fit_set_lambda(fit$state, 0.05)
    # alpha seeding: each point keeps its place in its box, [0, 1 / lambda] for the hinge
    expect_equal(askotch:::native_fit_weights(fit$state), W * 4, tolerance = 1e-14,
                 info = loss$name)
    # the warm-started refit reaches the cold fit at the new lambda
    f2 <- refit(fit, lambda = 0.05, tol = 1e-10)
    f3 <- kernel_machine(x, y, loss = loss, lambda = 0.05, solver = dcd(), tol = 1e-10,
                         threads = 1)
    expect_lt(max(abs(predict(f2, x, type = tp) - predict(f3, x, type = tp))), 1e-4,
              label = loss$name)
  }
  fit <- krr(x, x[, 2], lambda = 0.2, solver = pcg(), keep_state = TRUE, threads = 1)
  W <- fit$weights
  dimnames(W) <- NULL
  askotch:::native_fit_set_lambda(fit$state, 0.05)
  expect_equal(askotch:::native_fit_weights(fit$state), W, tolerance = 1e-14)
})
