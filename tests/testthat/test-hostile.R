# The hostile-input matrix: a table of cases, each an expression and its
# expectation written down, run by one loop under a time limit (a hang fails
# the case instead of stalling the run).
#
#   err(name, expr, pattern, class): a classed error whose message matches
#     `pattern` (which names the argument or field);
#   val(name, expr, check): a value; check(v) returns TRUE, or a string
#     saying what is wrong. The oracles are base-R closed forms
#     (oracle_krr() in helper-oracle.R: solve() on the n x n system).
#
# To extend it, add rows to `cases`.

set.seed(11)
n <- 40
p <- 3
X <- matrix(rnorm(n * p), n)
Y <- sin(2 * X[, 1]) + X[, 2] / 2 + rnorm(n, sd = 0.1)
XT <- matrix(rnorm(5 * p), 5)
LAM <- 0.5
CL <- factor(ifelse(X[, 1] + X[, 3] > 0, "up", "down"))
C3 <- factor(c("a", "b", "c")[1L + (X[, 1] > 0) + (X[, 2] > 0.5)])

# the Gaussian kernel and the median heuristic (the oracles' model); the
# default model (kernel and scaling by likelihood) has its own cases
fit0 <- function(x = X, y = Y, bandwidth, ...) {
  if (missing(bandwidth)) {
    # a kernel object brings its own bandwidth
    if (inherits(list(...)$kernel, "askotch_kernel")) {
      return(krr(x, y, lambda = LAM, solver = cholesky(), threads = 1, seed = 1, ...))
    }
    bandwidth <- "median"
  }
  krr(x, y, lambda = LAM, bandwidth = bandwidth, solver = cholesky(), threads = 1,
      seed = 1, ...)
}
fitd <- function(x = X, y = Y, ...) krr(x, y, threads = 1, seed = 1, ...)
# a default fit equals the chosen model refitted by hand (the same kernel,
# scaling and maximum-likelihood estimates)
same_as_chosen <- function(x, y, xt, tol = 1e-6) {
  force(x)
  force(y)
  force(xt)
  function(f) {
    if (is.null(f$tuning$models)) return("no model choice recorded")
    g <- krr(x, y, kernel = f$kernel$name, standardize = f$standardize, threads = 1,
             seed = 1)
    close(predict(f, xt), predict(g, xt), tol)
  }
}
FIT <- fit0()
BW <- FIT$kernel$bandwidth
FITB <- krr(X, CL, lambda = LAM, solver = cholesky(), threads = 1, seed = 1)
FITF <- krr(mpg ~ wt + hp, data = mtcars, lambda = 1, solver = cholesky(),
            threads = 1, seed = 1)
FITK <- kernel_machine(X, CL, loss = loss_hinge(), lambda = 0.1, threads = 1,
                       seed = 1, max_passes = 20)
FITI <- kernel_machine(X, CL, loss = loss_hinge(), lambda = 0.1, threads = 1,
                       seed = 1, max_passes = 20, intercept = TRUE)
FITP <- krr(X, Y, lambda = c(1, 0.1, 0.01), bandwidth = "median", solver = bcd(p = 20),
            threads = 1, seed = 1)
FITL <- krr(X, Y, lambda = 1, solver = svrg(features = "linear"), threads = 1, seed = 1)
FITA <- krr(X, Y, bandwidth = "ard", threads = 1, seed = 1)
FITM <- krr(X, cbind(a = Y, b = -Y), lambda = LAM, solver = cholesky(), threads = 1)
GO <- data.frame(y = Y, a = X[, 1], b = X[, 2])
FITO <- krr(y ~ a + offset(3 * b), data = GO, lambda = LAM, bandwidth = 1.3,
            solver = cholesky(), threads = 1)
FITU <- krr(y ~ a + b, data = GO, mean = ~ a, lambda = LAM, bandwidth = 1.3,
            solver = cholesky(), threads = 1)
FITN <- krr(y ~ a + b, data = GO, noise = ~ a, bandwidth = 1.3, threads = 1)
FITG <- kernel_machine(X, CL, loss = loss_logistic(), posterior = "laplace", lambda = 0.5,
                       bandwidth = 1.3, threads = 1)
FITC <- krr(X, Y, kernel = kernel_rbf(1.3, dims = 1) + kernel_periodic(1, 1, dims = 2),
            lambda = LAM, solver = cholesky(), threads = 1)

# the exact predictions at XT for data (x, y) (standardised like krr())
exact <- function(x = X, y = Y, xt = XT, kernel = "rbf", bw = BW, lambda = LAM) {
  oracle_krr(x, y, xt, kernel, bw, lambda)$pred[, 1L]
}
# |a - b| <= tol * max(1, |b|) elementwise
close <- function(a, b, tol) {
  a <- unname(as.numeric(a))
  b <- unname(as.numeric(b))
  if (length(a) != length(b)) return(sprintf("length %d, not %d", length(a), length(b)))
  if (any(!is.finite(a))) return("non-finite values")
  e <- max(abs(a - b) / pmax(1, abs(b)))
  if (e <= tol) TRUE else sprintf("max relative error %.3g > %.3g", e, tol)
}
pred_close <- function(xt, target, tol, ...) {
  force(xt)
  force(target)
  function(fit) close(predict(fit, xt, ...), target, tol)
}

err <- function(name, expr, pattern, class = "askotch_error_input") {
  list(name = name, expr = substitute(expr), pattern = pattern, class = class)
}
val <- function(name, expr, check) {
  list(name = name, expr = substitute(expr), check = check)
}

# corrupted copies of fits
corrupt <- function(fit, ...) {
  ch <- list(...)
  for (nm in names(ch)) fit[nm] <- list(ch[[nm]])
  fit
}
W_NAN <- FIT$weights
W_NAN[3, 1] <- NaN
corruptions <- list(
  "NaN weights" = list(corrupt(FIT, weights = W_NAN), "`weights`"),
  "wrong-length center" = list(corrupt(FIT, center = 1:2), "`center`"),
  "missing levels" = list(corrupt(FITB, levels = NULL), "`levels`"),
  "kernel removed" = list(corrupt(FIT, kernel = NULL), "`kernel`"),
  "empty object" = list(structure(list(), class = "krr"), "empty"),
  "weights of wrong length" = list(corrupt(FIT, weights = FIT$weights[-1, , drop = FALSE]), "`weights`"),
  "negative scale" = list(corrupt(FIT, scale = -FIT$scale), "`scale`"),
  "NaN in x" = list(corrupt(FIT, x = FIT$x * NaN), "`x`"),
  "unknown task" = list(corrupt(FIT, task = "ranking"), "`task`"),
  "solver not a spec" = list(corrupt(FIT, solver = "cholesky"), "`solver`"),
  "negative lambda" = list(corrupt(FIT, lambda = -1), "`lambda`"),
  "bias removed from an intercept fit" = list(corrupt(FITI, bias = NULL), "`bias`"),
  "NaN in a path's weights" = list(corrupt(FITP, path_weights = lapply(
    FITP$path_weights, function(W) W * NaN)), "`path_weights`"),
  "path weights without their lambdas" = list(corrupt(FITP, lambda_path = NULL),
                                             "`lambda_path`"),
  "support not a list" = list(corrupt(FITK, support = "junk"), "`support`"),
  "primal not a number" = list(corrupt(FITK, primal = "junk"), "`primal`"),
  "NA memory limit" = list(corrupt(FIT, mem_limit = NA), "`mem_limit`"),
  "ARD length scales removed" = list(corrupt(FITA, length_scales = NULL), "`length_scales`"),
  "class levels on a regression" = list(corrupt(FITM, levels = "junk"), "`levels`"),
  "output names removed" = list(corrupt(FITM, y_names = NULL), "`y_names`"),
  "linear-features x removed" = list(corrupt(FITL, x = NULL), "`x`"),
  "linear-features y removed" = list(corrupt(FITL, y = NULL), "`y`"),
  "centres on an exact fit" = list(corrupt(FIT, centers = "junk"), "`centers`"),
  "negative seed" = list(corrupt(FIT, seed = -1), "`seed`"),
  "offset of the wrong length" = list(corrupt(FITO, offset = 1:3), "`offset`"),
  "trend coefficients of the wrong shape" = list(corrupt(FITU, trend = modifyList(
    FITU$trend, list(coef = FITU$trend$coef[-1L, , drop = FALSE]))), "`trend\\$coef`"),
  "a constant beside a trend" = list(corrupt(FITU, y_center = 1), "`y_center`"),
  "negative noise scale" = list(corrupt(FITN, noise = modifyList(FITN$noise, list(scale = -1))),
                                "`noise`"),
  "unknown posterior" = list(corrupt(FITG, posterior = "exact"), "`posterior`"),
  "composite numbers out of step" = list(corrupt(FITC, kernel = modifyList(
    FITC$kernel, list(spec = FITC$kernel$spec * 2))), "`kernel`"),
  "composite without its numbers" = list(corrupt(FITC, kernel = modifyList(
    FITC$kernel, list(spec = NULL))), "`kernel`")
)
methods <- list(
  predict = function(f) predict(f, XT), print = function(f) print(f),
  summary = function(f) summary(f), coef = function(f) coef(f),
  fitted = function(f) fitted(f), residuals = function(f) residuals(f),
  plot = function(f) plot(f), refit = function(f) refit(f, lambda = 1),
  simulate = function(f) simulate(f, nsim = 1, seed = 1),
  tidy = function(f) tidy(f), glance = function(f) glance(f),
  augment = function(f) augment(f), weights = function(f) stats::weights(f),
  logLik = function(f) stats::logLik(f), nobs = function(f) stats::nobs(f)
)

no_gpu <- nrow(askotch_devices(quiet = TRUE)) == 0L

cases <- list(
  # --- x: types, shapes, non-finite values, extremes ------------------------
  err("x with NA", fit0(replace(X, 5, NA)), "`x`.*row 5, column 1"),
  err("x with NaN", fit0(replace(X, 7, NaN)), "`x`.*NaN"),
  err("x with Inf", fit0(replace(X, 41, Inf)), "`x`.*row 1, column 2"),
  err("x with -Inf", fit0(replace(X, 2, -Inf)), "`x`"),
  err("x character matrix", fit0(matrix(letters[1:6], 3), 1:3), "`x`"),
  err("x complex matrix", fit0(X + 1i, Y), "`x`"),
  err("x a list", fit0(as.list(X[, 1])), "`x`"),
  err("x NULL", fit0(NULL), "`x`"),
  err("x a function", fit0(mean), "`x`"),
  err("x a 3-d array", fit0(array(1, c(4, 2, 2)), 1:4), "`x`"),
  err("x one row", fit0(X[1, , drop = FALSE], Y[1]), "`x`.*at least 2 rows"),
  err("x zero rows", fit0(X[0, , drop = FALSE], Y[0]), "`x`.*at least 2 rows"),
  err("x zero columns", fit0(matrix(numeric(0), n, 0)), "`x`.*at least one column"),
  err("x data frame with a factor", fit0(data.frame(a = X[, 1], b = CL)), "`b`"),
  val("x logical matrix", fit0(X > 0),
      pred_close(XT > 0, exact(X > 0, xt = XT > 0, bw = fit0(X > 0)$kernel$bandwidth), 1e-8)),
  val("x integer matrix", fit0(round(10 * X) + 0L),
      function(f) close(predict(f, round(10 * XT)),
                        exact(round(10 * X), xt = round(10 * XT), bw = f$kernel$bandwidth), 1e-8)),
  val("x numeric data frame", fit0(as.data.frame(X)),
      pred_close(as.data.frame(XT), exact(), 1e-8)),
  val("x a vector (p = 1)", fit0(X[, 1]),
      function(f) close(predict(f, XT[, 1]), exact(X[, 1, drop = FALSE],
                                                   xt = XT[, 1, drop = FALSE],
                                                   bw = f$kernel$bandwidth), 1e-8)),
  val("x * 1e200 (standardised: same model)", fit0(X * 1e200),
      pred_close(XT * 1e200, exact(), 1e-8)),
  val("x * 1e-200 (standardised: same model)", fit0(X * 1e-200),
      pred_close(XT * 1e-200, exact(), 1e-8)),
  val("x near .Machine$double.xmax", fit0(X * 4e307),
      pred_close(XT * 4e307, exact(), 1e-8)),
  val("column scaled by 1e-13 is not constant",
      fit0(X %*% diag(c(1, 1e-13, 1))),
      function(f) if (f$scale[2] == 1) "column dropped" else
        close(predict(f, XT %*% diag(c(1, 1e-13, 1))), exact(), 1e-8)),
  val("column with mean 1e13 and sd 1 is not constant",
      fit0(sweep(X, 2, c(0, 1e13, 0), "+")),
      function(f) if (f$scale[2] == 1) "column dropped" else
        close(predict(f, sweep(XT, 2, c(0, 1e13, 0), "+")),
              exact(sweep(X, 2, c(0, 1e13, 0), "+"),
                    xt = sweep(XT, 2, c(0, 1e13, 0), "+"), bw = f$kernel$bandwidth),
              1e-8)),
  val("constant column is centred only", fit0(cbind(X, 7)),
      function(f) if (f$scale[4] != 1) "scaled" else
        close(predict(f, cbind(XT, 7)), exact(cbind(X, 7), xt = cbind(XT, 7)), 1e-8)),
  val("column equal up to rounding is constant",
      fit0(cbind(X, 0.1 * 3 + c(0, .Machine$double.eps)[1 + (seq_len(n) %% 2)])),
      function(f) if (f$scale[4] == 1) TRUE else "not treated as constant"),
  err("x * 1e200 unstandardised overflows", fit0(X * 1e200, standardize = FALSE),
      "`x`.*overflow.*standardize = TRUE"),
  err("x * 1e25 unstandardised in single", fit0(X * 1e25, standardize = FALSE,
                                                 precision = "single"),
      "`x`.*single.*precision = \"double\""),
  err("x * 1e39 unstandardised in single", fit0(X * 1e39, standardize = FALSE,
                                                 precision = "single"), "`x`"),
  err("x * 1e-25 unstandardised in single", fit0(X * 1e-25, standardize = FALSE,
                                                  precision = "single"),
      "`bandwidth`.*single.*standardize = TRUE"),
  err("x * 1e-200 unstandardised in double", fit0(X * 1e-200, standardize = FALSE),
      "`bandwidth`.*standardize = TRUE"),
  err("x * 1e-200 unstandardised, default model", fitd(X * 1e-200, standardize = FALSE),
      "`x`.*underflow.*standardize = TRUE"),
  val("x * 1e200, default model", fitd(X * 1e200),
      same_as_chosen(X * 1e200, Y, XT * 1e200)),
  val("x * 1e-200, default model", fitd(X * 1e-200),
      same_as_chosen(X * 1e-200, Y, XT * 1e-200)),
  val("x near .Machine$double.xmax, default model", fitd(X * 4e307),
      same_as_chosen(X * 4e307, Y, XT * 4e307)),
  val("columns of very different magnitude, default model",
      fitd(X %*% diag(c(1e150, 1, 1e-150))),
      same_as_chosen(X %*% diag(c(1e150, 1, 1e-150)), Y, XT %*% diag(c(1e150, 1, 1e-150)))),
  val("y * 1e-200, default model", fitd(y = Y * 1e-200),
      function(f) close(predict(f, XT) * 1e200, predict(fitd(), XT), 1e-6)),
  val("y * 1e150, default model", fitd(y = Y * 1e150),
      function(f) close(predict(f, XT) / 1e150, predict(fitd(), XT), 1e-6)),
  val("x * 1e25 in single (standardised)", fit0(X * 1e25, precision = "single"),
      pred_close(XT * 1e25, exact(), 1e-3)),
  val("x * 1e-25 in single (standardised)", fit0(X * 1e-25, precision = "single"),
      pred_close(XT * 1e-25, exact(), 1e-3)),

  # --- y -------------------------------------------------------------------
  err("y with NA", fit0(y = replace(Y, 4, NA)), "`y`.*row 4"),
  err("y with NaN", fit0(y = replace(Y, 4, NaN)), "`y`"),
  err("y with Inf", fit0(y = replace(Y, 9, Inf)), "`y`.*row 9"),
  err("y too short", fit0(y = Y[-1]), "`y`.*40"),
  err("y a list", fit0(y = as.list(Y)), "`y`"),
  err("y missing", krr(X), "`y` is missing"),
  err("y complex", fit0(y = Y + 1i), "`y`"),
  err("y factor with one level", fit0(y = factor(rep("a", n))), "`y`.*1 level"),
  err("y factor with NA", fit0(y = factor(replace(as.character(CL), 2, NA))), "`y`"),
  err("y numbers stored as text", fit0(y = as.character(round(Y, 2))), "`y`.*as.numeric"),
  err("y * 1e200 (squared norm overflows)", fit0(y = Y * 1e200), "`y`.*overflow"),
  err("y * 1e39 in single", fit0(y = Y * 1e39, precision = "single"), "`y`.*single"),
  val("y * 1e-200", fit0(y = Y * 1e-200),
      function(f) close(predict(f, XT) * 1e200, exact(), 1e-8)),
  val("y * 1e30 in single", fit0(y = Y * 1e30, precision = "single"),
      function(f) close(predict(f, XT) / 1e30, exact(), 1e-3)),
  val("y constant", fit0(y = rep(3, n)), pred_close(XT, rep(3, 5), 1e-12)),
  val("y integer", fit0(y = round(10 * Y)),
      pred_close(XT, exact(y = round(10 * Y)), 1e-8)),
  val("y one-column data frame", fit0(y = data.frame(v = Y)), pred_close(XT, exact(), 1e-8)),
  val("y two-column matrix (multi-output)", fit0(y = cbind(a = Y, b = 2 * Y)),
      function(f) close(predict(f, XT), cbind(exact(), 2 * exact()), 1e-8)),
  val("y logical (binary classification)", fit0(y = X[, 1] > 0),
      function(f) if (identical(f$levels, c("FALSE", "TRUE"))) TRUE else "levels"),
  val("y factor with an unused level", fit0(y = factor(CL, levels = c("down", "up", "zz"))),
      function(f) if (identical(f$levels, c("down", "up"))) TRUE else "levels"),

  # --- lambda ----------------------------------------------------------------
  err("lambda 0", krr(X, Y, bandwidth = "median", lambda = 0), "`lambda`"),
  err("lambda negative", krr(X, Y, bandwidth = "median", lambda = -1), "`lambda`"),
  err("lambda NA", krr(X, Y, bandwidth = "median", lambda = NA), "`lambda`"),
  err("lambda NaN", krr(X, Y, bandwidth = "median", lambda = NaN), "`lambda`"),
  err("lambda Inf", krr(X, Y, bandwidth = "median", lambda = Inf), "`lambda`"),
  err("lambda text", krr(X, Y, bandwidth = "median", lambda = "1"), "`lambda`"),
  err("lambda path with NA", krr(X, Y, bandwidth = "median", lambda = c(1, NA)), "`lambda`"),
  err("lambda TRUE", krr(X, Y, bandwidth = "median", lambda = TRUE), "`lambda`"),
  err("lambda 1e39 in single", krr(X, Y, bandwidth = "median",
                                   lambda = 1e39, precision = "single", threads = 1),
      "`lambda`.*single.*precision = \"double\""),
  err("lambda 1e-39 in single", krr(X, Y, bandwidth = "median",
                                    lambda = 1e-39, precision = "single", threads = 1),
      "`lambda`.*single"),
  err("lambda subnormal in double", krr(X, Y, bandwidth = "median",
                                        lambda = 1e-310, threads = 1), "`lambda`"),
  val("lambda 1e300: the mean", krr(X, Y, bandwidth = "median",
                                    lambda = 1e300, threads = 1, solver = cholesky()),
      pred_close(XT, rep(mean(Y), 5), 1e-12)),
  val("lambda 1e300 (askotch): the mean", krr(X, Y, bandwidth = "median",
                                              lambda = 1e300, threads = 1, seed = 1),
      pred_close(XT, rep(mean(Y), 5), 1e-12)),
  val("lambda integer 1L", krr(X, Y, bandwidth = "median",
                               lambda = 1L, solver = cholesky(), threads = 1, seed = 1),
      pred_close(XT, exact(lambda = 1), 1e-8)),

  # --- bandwidth and kernels ---------------------------------------------------
  err("bandwidth 0", fit0(bandwidth = 0), "`bandwidth`"),
  err("bandwidth negative", fit0(bandwidth = -1), "`bandwidth`"),
  err("bandwidth NA", fit0(bandwidth = NA), "`bandwidth`"),
  err("bandwidth Inf", fit0(bandwidth = Inf), "`bandwidth`"),
  err("bandwidth NaN", fit0(bandwidth = NaN), "`bandwidth`"),
  err("bandwidth text", fit0(bandwidth = "mean"), "`bandwidth`"),
  err("bandwidth length 2", fit0(bandwidth = c(1, 2)), "`bandwidth`"),
  err("bandwidth 1e-300 (rate overflows)", fit0(bandwidth = 1e-300), "`bandwidth`.*double"),
  err("bandwidth 1e-40 in single", fit0(bandwidth = 1e-40, precision = "single"),
      "`bandwidth`.*single"),
  err("bandwidth 1e39 in single", fit0(bandwidth = 1e39, precision = "single"),
      "`bandwidth`.*single"),
  err("bandwidth 1e300", fit0(bandwidth = 1e300), "`bandwidth`"),
  err("bandwidth 1e-3: kernel is the identity", fit0(bandwidth = 1e-3),
      "identity.*larger `bandwidth`"),
  err("bandwidth 1e9: kernel is all ones", fit0(bandwidth = 1e9), "all ones.*smaller `bandwidth`"),
  err("bandwidth 1e-4 laplace in single: identity",
      fit0(kernel = "laplace", bandwidth = 1e-4, precision = "single"), "identity"),
  err("bandwidth 1e5 in single: all ones", fit0(bandwidth = 1e5, precision = "single"),
      "all ones.*precision = \"double\""),
  val("bandwidth 1e5 in double is usable", fit0(bandwidth = 1e5),
      pred_close(XT, exact(bw = 1e5), 1e-6)),
  val("bandwidth \"MEDIAN\"", fit0(bandwidth = "MEDIAN"), pred_close(XT, exact(), 1e-8)),
  val("bandwidth 0.7", fit0(bandwidth = 0.7), pred_close(XT, exact(bw = 0.7), 1e-8)),
  val("bandwidth overrides the kernel object's", fit0(kernel = kernel_rbf(5), bandwidth = 0.7),
      function(f) if (f$kernel$bandwidth == 0.7) TRUE else "not overridden"),
  err("kernel unknown name", fit0(kernel = "poly"), "`kernel`"),
  err("kernel a number", fit0(kernel = 1), "`kernel`"),
  err("kernel NA", fit0(kernel = NA_character_), "`kernel`"),
  err("kernel two names", fit0(kernel = c("rbf", "laplace")), "`kernel`"),
  err("kernel an uncalled constructor", fit0(kernel = kernel_rbf), "`kernel`"),
  val("kernel laplace", fit0(kernel = "laplace", bandwidth = 2),
      pred_close(XT, exact(kernel = "laplace", bw = 2), 1e-8)),
  val("kernel matern12", fit0(kernel = "matern12", bandwidth = 2),
      pred_close(XT, exact(kernel = "matern12", bw = 2), 1e-8)),
  val("kernel matern32", fit0(kernel = kernel_matern(3/2, 2)),
      pred_close(XT, exact(kernel = "matern32", bw = 2), 1e-8)),
  val("kernel matern52", fit0(kernel = kernel_matern("5/2", 2)),
      pred_close(XT, exact(kernel = "matern52", bw = 2), 1e-8)),
  val("kernel alias \"Gaussian\"", fit0(kernel = "Gaussian"), pred_close(XT, exact(), 1e-8)),
  err("kernel_matern(nu = 0)", kernel_matern(nu = 0), "`nu`"),
  err("kernel_matern(nu = 30)", kernel_matern(nu = 30), "`nu`"),
  err("kernel dims beyond x", fit0(kernel = kernel_rbf(1, dims = 7)), "`dims`"),
  err("kernel dims not a column name", fit0(kernel = kernel_rbf(1, dims = "zz")), "`dims`"),
  err("kernel dims zero", kernel_rbf(1, dims = 0), "`dims`"),
  err("kernel minus kernel", kernel_rbf(1) - kernel_rbf(1), "`\\+` and `\\*`"),
  err("kernel plus a number", kernel_rbf(1) + 2, "kernels"),
  err("composite with a bandwidth", fit0(kernel = kernel_rbf(1) + kernel_rbf(2), bandwidth = 1),
      "`bandwidth`"),
  err("periodic without a period", kernel_periodic(), "`period`"),
  err("polynomial degree 0", kernel_polynomial(degree = 0), "`degree`"),
  err("great-circle on one column", kernel_rbf(1, dims = 1, distance = "great_circle"),
      "two columns"),
  err("kernel_matern(nu = NA)", kernel_matern(nu = NA), "`nu`"),
  err("kernel_rbf(-1)", kernel_rbf(-1), "`bandwidth`"),
  err("kernel_laplace(\"x\")", kernel_laplace("x"), "`bandwidth`"),
  err("kernel_matern12(NaN)", kernel_matern12(NaN), "`bandwidth`"),

  # --- solver: specifications, options, wrong classes ---------------------------
  err("solver unknown name", krr(X, Y, solver = "lsqr"), "`solver`"),
  err("solver = mean", krr(X, Y, solver = mean, threads = 1), "`solver`"),
  err("solver a fake object", krr(X, Y, solver = structure(list(name = "foo"),
                                                          class = "askotch_solver")),
      "`solver`.*not a valid"),
  err("solver fake pcg with text rank",
      krr(X, Y, solver = structure(list(name = "pcg", rank = "a"),
                                   class = c("askotch_solver_pcg", "askotch_solver"))),
      "`rank`"),
  err("solver a number", krr(X, Y, solver = 1), "`solver`"),
  err("solver NA", krr(X, Y, solver = NA), "`solver`"),
  val("solver = pcg (uncalled constructor)", krr(X, Y, bandwidth = "median",
                                                 lambda = LAM, solver = pcg, tol = 1e-12,
                                                 threads = 1, seed = 1),
      pred_close(XT, exact(), 1e-6)),
  val("solver = \"CHOLESKY\"", krr(X, Y, bandwidth = "median",
                                   lambda = LAM, solver = "CHOLESKY", threads = 1, seed = 1),
      pred_close(XT, exact(), 1e-8)),
  err("askotch(rank = 1e10)", krr(X, Y, solver = askotch(rank = 1e10), threads = 1), "`rank`"),
  err("pcg(rank = 1e10)", krr(X, Y, solver = pcg(rank = 1e10), threads = 1), "`rank`"),
  err("eigenpro(rank = 1e10)", eigenpro(rank = 1e10), "`rank`"),
  err("askotch(block_size = 0)", askotch(block_size = 0), "`block_size`"),
  err("askotch(block_size = NaN)", askotch(block_size = NaN), "`block_size`"),
  err("askotch(block_size = 1.5)", askotch(block_size = 1.5), "`block_size`"),
  err("askotch(block_size = 2^31) in a fit", krr(X, Y, solver = askotch(block_size = 2^31),
                                                  threads = 1), "`block_size`"),
  err("askotch(rank = -1)", askotch(rank = -1), "`rank`"),
  err("askotch(rho = \"x\")", askotch(rho = "x"), "`rho`"),
  err("askotch(rho = -1)", askotch(rho = -1), "`rho`"),
  err("askotch(rho = Inf)", askotch(rho = Inf), "`rho`"),
  err("askotch(mu = -1)", askotch(mu = -1), "`mu`"),
  err("askotch(nu = 0)", askotch(nu = 0), "`nu`"),
  err("askotch(power_iters = 0)", askotch(power_iters = 0), "`power_iters`"),
  err("askotch(power_iters = 1e10)", askotch(power_iters = 1e10), "`power_iters`"),
  err("askotch(accelerated = NA)", askotch(accelerated = NA), "`accelerated`"),
  err("askotch(sampling = \"foo\")", askotch(sampling = "foo"), "`sampling`"),
  err("askotch(variant = \"v2\")", askotch(variant = "v2"), "`variant`"),
  err("askotch(variant = \"v1\", sampling = \"rls\")", askotch(variant = "v1", sampling = "rls"),
      "`sampling = \"rls\"`"),
  err("askotch(rls_subsample) without rls", askotch(rls_subsample = 10), "`rls_subsample`"),
  err("askotch(v1_beta = 2)", askotch(variant = "v1", v1_beta = 2), "`v1_beta`"),
  err("skotch(accelerated = TRUE)", skotch(accelerated = TRUE), "`accelerated`"),
  err("sap(block_size = -1)", sap(block_size = -1), "`block_size`"),
  err("sap(accelerated = \"yes\")", sap(accelerated = "yes"), "`accelerated`"),
  err("pcg(preconditioner = \"foo\")", pcg(preconditioner = "foo"), "`preconditioner`"),
  err("pcg(rho = NA)", pcg(rho = NA), "`rho`"),
  err("falkon(centers = -1)", falkon(centers = -1), "`centers`"),
  err("falkon(centers = 0)", falkon(centers = 0), "`centers`"),
  err("falkon(centers = 1e10) in a fit", krr(X, Y, solver = falkon(centers = 1e10), threads = 1),
      "`centers`"),
  err("eigenpro(version = 4)", eigenpro(version = 4), "`version`"),
  err("eigenpro(version = 2, centers = 10)", eigenpro(centers = 10), "`centers`"),
  err("eigenpro(step = -1)", eigenpro(step = -1), "`step`"),
  err("eigenpro(batch_size = 0)", eigenpro(batch_size = 0), "`batch_size`"),
  err("joker(block_size = 0)", joker(block_size = 0), "`block_size`"),
  err("joker(cg_iters = NA)", joker(cg_iters = NA), "`cg_iters`"),
  err("solver_info(\"foo\")", solver_info("foo"), "`solver`"),
  err("bcd(features = NA)", bcd(NA), "`features`"),
  err("bcd(features = 3)", bcd(3), "`features`"),
  err("bcd(p = NA)", bcd(p = NA), "`p`"),
  err("bcd(\"random\", p = Inf)", bcd("random", p = Inf), "`p`"),
  err("bcd(\"random\", p = 2^31)", bcd("random", p = 2^31), "`p`"),
  err("bcd(block_size = -1)", bcd(block_size = -1), "`block_size`"),
  err("bcd(block_size = 1e10) in a fit", krr(X, Y, bandwidth = "median", lambda = LAM, threads = 1,
                                             solver = bcd(p = 10, block_size = 1e10)),
      "`block_size`"),
  err("bcd(gamma = NaN)", bcd(gamma = NaN), "`gamma`"),
  err("bcd(\"random\", cache = TRUE)", bcd("random", cache = TRUE), "`cache`"),
  err("bcd(\"random\") with the linear kernel", krr(X, Y, bandwidth = "median",
                                                    lambda = LAM, kernel = "linear",
                                                     threads = 1, solver = bcd("random", p = 10)),
      "kernel"),
  err("a lambda path with NA", krr(X, Y, bandwidth = "median",
                                   lambda = c(1, NA), solver = bcd(p = 10), threads = 1),
      "`lambda`"),
  err("predict(lambda =) off the path", predict(krr(X, Y, bandwidth = "median",
                                                    lambda = c(1, 2), threads = 1, seed = 1,
                                                    solver = bcd(p = 10)), XT, lambda = 3),
      "`lambda`"),
  err("predict(lambda = \"a\") on a path", predict(krr(X, Y, bandwidth = "median",
                                                       lambda = c(1, 2), threads = 1,
                                                        seed = 1, solver = bcd(p = 10)), XT,
                                                    lambda = "a"), "`lambda`"),
  val("bcd(\"nystrom\") with all points as centres agrees with solve()",
      krr(X, Y, bandwidth = "median",
          lambda = LAM, threads = 1, seed = 1, tol = 1e-12, solver = bcd(p = n)),
      pred_close(XT, exact(), 1e-6)),
  val("bcd(\"random\") in single precision is finite",
      krr(X, Y, bandwidth = "median", lambda = LAM, threads = 1, seed = 1, precision = "single",
          solver = bcd("random", p = 30, block_size = 10), max_passes = 500),
      function(f) all(is.finite(predict(f, XT))) || "non-finite predictions"),
  val("askotch() agrees with solve()", krr(X, Y, bandwidth = "median",
                                           lambda = LAM, tol = 1e-11, threads = 1, seed = 1,
                                          solver = askotch(block_size = 10, rank = 5)),
      pred_close(XT, exact(), 1e-6)),
  val("skotch() agrees with solve()", krr(X, Y, bandwidth = "median",
                                          lambda = LAM, tol = 1e-11, threads = 1, seed = 1,
                                         solver = skotch(block_size = 20), max_passes = 2000),
      pred_close(XT, exact(), 1e-6)),
  val("sap() agrees with solve()", krr(X, Y, bandwidth = "median",
                                       lambda = LAM, tol = 1e-11, threads = 1, seed = 1,
                                      solver = sap(block_size = 10), max_passes = 2000),
      pred_close(XT, exact(), 1e-6)),
  val("cholesky() in single precision", fit0(precision = "single"),
      pred_close(XT, exact(), 1e-4)),

  # --- other options ------------------------------------------------------------
  err("precision \"quad\"", fit0(precision = "quad"), "`precision`"),
  err("precision NA", fit0(precision = NA), "`precision`"),
  val("precision \"SINGLE\"", fit0(precision = "SINGLE"),
      function(f) if (f$precision == "single") TRUE else "precision"),
  err("device \"tpu\"", fit0(device = "tpu"), "`device`"),
  if (no_gpu) err("device \"cuda\" without a GPU", fit0(device = "cuda"), "cuda",
                  class = "askotch_error"),
  err("max_passes 0", fit0(max_passes = 0), "`max_passes`"),
  err("max_passes NA", fit0(max_passes = NA), "`max_passes`"),
  err("max_passes text", fit0(max_passes = "10"), "`max_passes`"),
  err("time_limit -1", fit0(time_limit = -1), "`time_limit`"),
  err("time_limit 0", fit0(time_limit = 0), "`time_limit`"),
  err("tol -1", fit0(tol = -1), "`tol`"),
  err("tol NA", fit0(tol = NA), "`tol`"),
  err("tol Inf", fit0(tol = Inf), "`tol`"),
  err("tol 0 with no other limit", krr(X, Y, tol = 0, max_passes = Inf,
                                         solver = askotch(), threads = 1),
      "`tol = 0`"),
  err("standardize NA", fit0(standardize = NA), "`standardize`"),
  err("standardize \"yes\"", fit0(standardize = "yes"), "`standardize`"),
  err("seed -1", krr(X, Y, seed = -1), "`seed`"),
  err("seed 1.5", krr(X, Y, seed = 1.5), "`seed`"),
  err("seed 2^53", krr(X, Y, seed = 2^53), "`seed`"),
  err("seed text", krr(X, Y, seed = "a"), "`seed`"),
  err("progress NA", fit0(progress = NA), "`progress`"),
  err("threads 0", krr(X, Y, threads = 0), "`threads`"),
  err("threads -1", krr(X, Y, threads = -1), "`threads`"),
  err("threads 1.5", krr(X, Y, threads = 1.5), "`threads`"),
  err("threads NA", krr(X, Y, threads = NA), "`threads`"),
  val("threads .Machine$integer.max (capped)",
      krr(X, Y, bandwidth = "median",
          lambda = LAM, solver = cholesky(), threads = .Machine$integer.max, seed = 1),
      pred_close(XT, exact(), 1e-8)),
  val("threads 1e10 (capped)",
      krr(X, Y, bandwidth = "median", lambda = LAM, solver = cholesky(), threads = 1e10, seed = 1),
      pred_close(XT, exact(), 1e-8)),
  err("mem_limit -1", fit0(mem_limit = -1), "`mem_limit`"),
  err("mem_limit NA", fit0(mem_limit = NA), "`mem_limit`"),
  val("mem_limit 1e300 (capped)", fit0(mem_limit = 1e300), pred_close(XT, exact(), 1e-8)),
  err("keep_state NA", fit0(keep_state = NA), "`keep_state`"),
  err("weights negative", fit0(weights = replace(rep(1, n), 3, -1)), "`weights`.*at 3"),
  err("weights NA", fit0(weights = replace(rep(1, n), 3, NA)), "`weights`"),
  err("weights wrong length", fit0(weights = rep(1, n - 1)), "`weights`"),
  err("weights all zero", fit0(weights = rep(0, n)), "`weights`"),
  err("weights text", fit0(weights = rep("1", n)), "`weights`"),
  val("weights all one", fit0(weights = rep(1, n)), pred_close(XT, exact(), 1e-8)),
  err("validation not a list", fit0(validation = 1), "`validation`"),
  err("validation with 0 rows", fit0(validation = list(x = XT[0, , drop = FALSE], y = numeric(0))),
      "`validation\\$x`.*at least one row"),
  err("validation wrong columns", fit0(validation = list(x = XT[, 1:2], y = 1:5)),
      "`validation\\$x`"),
  err("validation y wrong length", fit0(validation = list(x = XT, y = 1:4)), "`validation\\$y`"),
  err("validation y NA", fit0(validation = list(x = XT, y = c(1:4, NA))), "`validation\\$y`"),
  err("unnamed extra argument (by position)",
      krr(X, Y, "rbf", "median", NULL, askotch(), "double", "auto", 100, NULL, Inf, NULL, TRUE,
          NULL, FALSE, NULL, NULL, FALSE, NULL, 99), "unnamed argument in position 20 \\(99\\)"),
  err("named unknown argument", fit0(lamda = 1), "`lamda`"),

  # --- formula interface ------------------------------------------------------------
  err("formula without response", krr(~ wt + hp, data = mtcars), "`formula`"),
  err("formula with unknown variable", krr(mpg ~ nope, data = mtcars), "`formula`"),
  err("formula unknown argument", krr(mpg ~ wt, data = mtcars, lamda = 1), "`lamda`"),
  err("formula newdata missing a variable", predict(FITF, mtcars[, c("mpg", "wt")]), "`hp`"),
  err("formula newdata a matrix", predict(FITF, as.matrix(mtcars)), "`newdata`"),
  val("formula fit agrees with solve()", FITF,
      function(f) close(predict(f, mtcars[1:5, ]),
                        exact(as.matrix(mtcars[, c("wt", "hp")]), mtcars$mpg,
                              as.matrix(mtcars[1:5, c("wt", "hp")]), bw = f$kernel$bandwidth,
                              lambda = 1), 1e-8)),

  # --- predict -------------------------------------------------------------------
  err("newdata wrong columns", predict(FIT, XT[, 1:2]), "`newdata`.*3 column"),
  val("newdata with NA: that row NA", predict(FIT, replace(XT, 2, NA)),
      function(v) is.na(v[2]) && close(v[-2], exact()[-2], 1e-8)),
  err("newdata with Inf", predict(FIT, replace(XT, 2, Inf)), "`newdata`"),
  err("newdata character", predict(FIT, matrix("a", 2, 3)), "`newdata`"),
  err("newdata a list", predict(FIT, list(1, 2, 3)), "`newdata`"),
  err("newdata missing a named column",
      predict(fit0(x = `colnames<-`(X, c("a", "b", "c"))), `colnames<-`(XT, c("a", "b", "z"))),
      "`c`"),
  val("newdata a vector of length p is one row", predict(FIT, XT[2, ]),
      function(v) close(v, exact()[2], 1e-8)),
  val("newdata with 0 rows", predict(FIT, XT[0, , drop = FALSE]),
      function(v) if (is.numeric(v) && length(v) == 0L) TRUE else "not numeric(0)"),
  val("newdata with extreme (finite) values", predict(FIT, XT * 1e300),
      function(v) close(v, rep(mean(Y), 5), 1e-12)),
  val("predict matches solve()", predict(FIT, XT), function(v) close(v, exact(), 1e-8)),
  err("type \"foo\"", predict(FIT, XT, type = "foo"), "`type`"),
  err("type \"class\" on regression", predict(FIT, XT, type = "class"), "`type = \"class\"`"),
  err("level 1.5", predict(FIT, XT, interval = "confidence", level = 1.5), "`level`"),
  err("level NA", predict(FIT, XT, interval = "confidence", level = NA), "`level`"),
  err("interval \"foo\"", predict(FIT, XT, interval = "foo"), "`interval`"),
  err("se.fit NA", predict(FIT, XT, se.fit = NA), "`se.fit`"),
  err("se.fit on classification", predict(FITB, XT, se.fit = TRUE), "regression fit"),
  err("method \"foo\"", predict(FIT, XT, se.fit = TRUE, method = "foo"), "`method`"),
  # --- standard errors by pathwise draws -----------------------------------------
  err("draws 0", predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = 0), "`draws`"),
  err("draws NA", predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = NA), "`draws`"),
  err("draws 1.5", predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = 1.5), "`draws`"),
  err("draws text", predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = "a"), "`draws`"),
  err("draws 1e10", predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = 1e10),
      "`draws`.*up to"),
  # draws or method without standard errors asked for: not silently ignored
  err("draws without se.fit", predict(FIT, XT, draws = 400), "`draws`.*se.fit = TRUE"),
  err("method without se.fit", predict(FIT, XT, method = "exact"), "`method`.*se.fit = TRUE"),
  err("pathwise on classification", predict(FITB, XT, se.fit = TRUE, method = "pathwise"),
      "regression fit"),
  err("se.fit on a hinge fit", predict(FITK, XT, se.fit = TRUE), "`se.fit`"),
  val("pathwise standard errors near the exact ones",
      predict(FIT, XT, se.fit = TRUE, method = "pathwise", draws = 4000),
      function(v) {
        ex <- predict(FIT, XT, se.fit = TRUE, method = "exact")$se.fit
        # 4000 draws: relative error of a standard error about 1.1%; 6%
        # is over 5 of those at each of 5 points
        e <- max(abs(v$se.fit / ex - 1))
        if (all(is.finite(v$se.fit)) && e < 0.06) TRUE else sprintf("relative error %.3g", e)
      }),
  # --- marginal likelihood and its rules --------------------------------------------
  err("krr_loglik lambda missing", krr_loglik(X, Y), "`lambda`"),
  err("krr_loglik lambda -1", krr_loglik(X, Y, lambda = -1), "`lambda`"),
  err("krr_loglik probes 0", krr_loglik(X, Y, lambda = 1, probes = 0), "`probes`"),
  err("krr_loglik probes 1e10", krr_loglik(X, Y, lambda = 1, probes = 1e10), "`probes`"),
  err("krr_loglik rank NA", krr_loglik(X, Y, lambda = 1, rank = NA), "`rank`"),
  err("krr_loglik method \"foo\"", krr_loglik(X, Y, lambda = 1, method = "foo"), "`method`"),
  err("krr_loglik y with NA", krr_loglik(X, replace(Y, 2, NA), lambda = 1), "`y`"),
  err("krr_loglik length_scales negative", krr_loglik(X, Y, lambda = 1, length_scales = c(1, -1, 1)),
      "`length_scales`"),
  err("krr_loglik length_scales wrong length", krr_loglik(X, Y, lambda = 1, length_scales = c(1, 1)),
      "`length_scales`"),
  err("krr_loglik gradient NA", krr_loglik(X, Y, lambda = 1, gradient = NA), "`gradient`"),
  val("krr_loglik equals logLik() and the closed form",
      krr_loglik(X, Y, lambda = LAM, bandwidth = BW, gradient = FALSE)$loglik,
      function(v) {
        # profile likelihood of the standardised y under s^2 (K + lambda I)
        xs <- scale(X)
        ys <- Y - mean(Y)
        K <- exp(-as.matrix(stats::dist(xs))^2 / (2 * BW^2))
        A <- K + LAM * diag(n)
        s2 <- drop(crossprod(ys, solve(A, ys))) / n
        ll <- -0.5 * (n * log(2 * pi * s2) + n +
                        as.numeric(determinant(A, logarithm = TRUE)$modulus))
        close(c(v, as.numeric(logLik(FIT))), c(ll, ll), 1e-8)
      }),
  err("lambda \"foo\"", krr(X, Y, bandwidth = "median", lambda = "foo", threads = 1), "`lambda`"),
  err("lambda \"ml\" with bandwidth \"foo\"", krr(X, Y, lambda = "ml", bandwidth = "foo", threads = 1),
      "`bandwidth`"),
  err("lambda \"gcv\" for the hinge loss",
      kernel_machine(X, CL, loss = loss_hinge(), lambda = "gcv", threads = 1), "`lambda = \"gcv\"`"),
  err("refit lambda \"ml\"", refit(FIT, lambda = "ml"), "`lambda`"),
  err("refit lambda path", refit(FIT, lambda = c(1, 2)), "`lambda`"),
  err("logLik of a hinge fit", logLik(FITK), "logLik"),
  err("askotch_mpi_gather of a one-process fit", askotch_mpi_gather(FIT), "`fit`"),
  err("predict unknown argument", predict(FIT, XT, foo = 1), "`foo`"),
  err("predict device \"tpu\"", predict(FIT, XT, device = "tpu"), "`device`"),

  # --- refit and simulate ------------------------------------------------------------
  err("refit lambda -1", refit(FIT, lambda = -1), "`lambda`"),
  err("refit lambda 1e39 on a single fit", refit(fit0(precision = "single"), lambda = 1e39),
      "`lambda`.*single"),
  err("refit newresp wrong length", refit(FIT, newresp = Y[-1]), "`y`"),
  err("refit newresp of another kind", refit(FIT, newresp = CL), "`newresp`"),
  err("refit warm_start NA", refit(FIT, warm_start = NA), "`warm_start`"),
  err("refit tol -1", refit(FIT, tol = -1), "`tol`"),
  err("refit unknown argument", refit(FIT, lamda = 1), "`lamda`"),
  val("refit lambda agrees with solve()", refit(FIT, lambda = 2),
      pred_close(XT, exact(lambda = 2), 1e-8)),
  err("simulate nsim 1e10", simulate(FIT, nsim = 1e10), "`nsim`.*up to"),
  err("simulate seed NA", simulate(FIT, seed = NA), "`seed`"),
  err("simulate seed text", simulate(FIT, seed = "a"), "`seed`"),
  err("simulate seed of length 2", simulate(FIT, seed = 1:2), "`seed`"),
  err("simulate nsim 0", simulate(FIT, nsim = 0), "`nsim`"),
  err("simulate nsim NA", simulate(FIT, nsim = NA), "`nsim`"),
  err("simulate features -1", simulate(FIT, features = -1), "`features`"),
  err("simulate method \"foo\"", simulate(FIT, method = "foo"), "`method`"),
  err("simulate noise NA", simulate(FIT, noise = NA), "`noise`"),
  err("simulate on classification", simulate(FITB), "regression fit"),
  val("simulate exact: finite, one row per point", simulate(FIT, nsim = 2, seed = 1, newdata = XT),
      function(v) if (is.data.frame(v) && all(dim(v) == c(5, 2)) &&
                        all(is.finite(as.matrix(v)))) TRUE else "shape or values"),

  # --- kernel_machine and losses -------------------------------------------------------
  err("loss unknown", kernel_machine(X, Y, loss = "foo"), "`loss`"),
  err("loss_huber(delta = -1)", loss_huber(delta = -1), "`delta`"),
  err("loss_svr(epsilon = NA)", loss_svr(epsilon = NA), "`epsilon`"),
  err("hinge loss with numeric y", kernel_machine(X, Y, loss = loss_hinge(), threads = 1), "`y`"),
  err("intercept -1", kernel_machine(X, Y, intercept = -1), "`intercept`"),
  err("features 0", kernel_machine(X, Y, features = 0), "`features`"),
  err("features 1e10", kernel_machine(X, Y, features = 1e10), "`features`"),
  err("weights with the hinge loss", kernel_machine(X, CL, loss = loss_hinge(), weights = rep(1, n),
                                                    threads = 1), "`weights`"),
  err("kernel_machine solver for another loss",
      kernel_machine(X, CL, loss = loss_hinge(), solver = cholesky(), threads = 1), "`solver`"),
  val("kernel_machine squared loss agrees with solve()",
      kernel_machine(X, Y, lambda = LAM, bandwidth = "median", solver = cholesky(), threads = 1,
                     seed = 1),
      pred_close(XT, exact(), 1e-8)),
  val("kernel_machine hinge: finite decision values", predict(FITK, XT, type = "decision"),
      function(v) if (length(v) == 5L && all(is.finite(v))) TRUE else "decision values"),

  # --- threads, devices, tidiers, caret ---------------------------------------------------
  err("askotch_threads(0)", askotch_threads(0), "`n`"),
  err("askotch_threads(NA)", askotch_threads(NA), "`n`"),
  err("askotch_threads(\"a\")", askotch_threads("a"), "`n`"),
  err("askotch_threads(1.5)", askotch_threads(1.5), "`n`"),
  val("askotch_threads(.Machine$integer.max) is capped", {
    old <- askotch_threads(.Machine$integer.max)
    now <- askotch_threads()
    askotch_threads(old)
    now
  }, function(v) if (v >= 1 && v <= max(1, parallel::detectCores())) TRUE else sprintf("%d", v)),
  err("askotch_devices(quiet = NA)", askotch_devices(quiet = NA), "`quiet`"),
  err("askotch_devices(quiet = \"yes\")", askotch_devices(quiet = "yes"), "`quiet`"),
  val("askotch_devices() is a data frame", askotch_devices(quiet = TRUE),
      function(v) if (is.data.frame(v) && all(c("id", "name") %in% names(v))) TRUE else "columns"),
  err("augment se_fit NA", augment(FIT, se_fit = NA), "`se_fit`"),
  err("augment newdata wrong columns", augment(FIT, newdata = XT[, 1:2]), "`newdata`"),
  val("glance r.squared from solve()", glance(FIT),
      function(g) {
        f <- exact(xt = X)
        close(g$r.squared, 1 - sum((Y - f)^2) / sum((Y - mean(Y))^2), 1e-8)
      }),
  val("tidy lists bandwidth and lambda", tidy(FIT),
      function(t) close(t$estimate, c(BW, LAM), 1e-15)),
  err("caret_krr(loss = \"foo\")", caret_krr(loss = "foo"), "`loss`"),
  err("caret_krr(lambda = 1)", caret_krr(lambda = 1), "`lambda`"),
  # a refit is a fit at one lambda: the old path is not mixed with new responses
  err("predict(lambda =) after refit(newresp =) of a path fit",
      predict(refit(FITP, newresp = Y + 5), XT, lambda = 0.1), "no lambda path"),
  val("refit(newresp =) of a path fit at its lambda equals a fresh fit",
      refit(FITP, newresp = Y + 5, tol = 1e-10),
      pred_close(XT, predict(krr(X, Y + 5, lambda = FITP$lambda, bandwidth = "median",
                                 solver = bcd(p = 20),
                                 threads = 1, seed = 1, tol = 1e-10), XT), 1e-6)),
  # the linear-features fit is not a Gaussian process with the kernel
  err("se.fit of a linear-features fit", predict(FITL, XT, se.fit = TRUE),
      "linear features"),
  err("simulate() of a linear-features fit", simulate(FITL), "linear features"),
  err("logLik() of a linear-features fit", logLik(FITL), "logLik"),
  val("glance() of a linear-features fit names no kernel", glance(FITL),
      function(g) if (identical(g$kernel, "linear") && is.na(g$bandwidth) &&
                      is.na(g$logLik)) TRUE else paste(g$kernel, g$bandwidth, g$logLik)),
  val("a default fit with a constant y", krr(X, rep(2, n), threads = 1, seed = 1),
      function(f) if (identical(f$kernel$bandwidth_rule, "median")) {
        close(predict(f, XT), rep(2, nrow(XT)), 1e-10)
      } else "not the median heuristic"),
  # the smaller cases of the third reliability round
  err("bandwidth = \"ml\" with a constant y", krr(X, rep(2, n), bandwidth = "ml"),
      "`y` is constant.*`bandwidth"),
  err("bandwidth = \"ard\" with a constant y", krr(X, rep(2, n), bandwidth = "ard"),
      "`y` is constant.*`bandwidth"),
  err("options(askotch.cv_folds = 1)", {
    old <- options(askotch.cv_folds = 1)
    on.exit(options(old))
    krr(X, Y, bandwidth = "median", lambda = "cv", threads = 1)
  }, "askotch.cv_folds"),
  err("block_size a function", krr(X, Y, solver = askotch(block_size = function(n) 10)),
      "`block_size`.*closure"),
  err("preconditioner a function", krr(X, Y, solver = pcg(preconditioner = identity)),
      "`preconditioner`"),
  err("block_size = TRUE", krr(X, Y, solver = askotch(block_size = TRUE)),
      "`block_size` takes a number, not TRUE"),
  err("rho = TRUE", krr(X, Y, solver = askotch(rho = TRUE)),
      "`rho` takes a number or a name"),
  val("solver = NULL is \"auto\"", krr(X, Y, bandwidth = "median",
                                       lambda = LAM, solver = NULL, threads = 1),
      function(f) if (inherits(f$solver, "askotch_solver_cholesky")) TRUE else format(f$solver)),
  val("kernel_machine() squared loss: solver \"auto\" by default",
      kernel_machine(X, Y, lambda = LAM, threads = 1),
      function(f) if (inherits(f$solver, "askotch_solver_cholesky")) TRUE else format(f$solver)),
  val("level = 1 - eps / 2 gives finite bounds",
      predict(FIT, XT, interval = "confidence", level = 1 - .Machine$double.eps / 2),
      function(v) if (all(is.finite(v))) TRUE else "non-finite bounds"),
  err("simulate(nsim = .Machine$integer.max)",
      simulate(FIT, nsim = .Machine$integer.max), "`nsim`"),
  err("a hand-made kernel object",
      krr(X, Y, kernel = structure(list(name = "foo"), class = "askotch_kernel")),
      "`kernel`.*no known kernel name"),
  err("a hand-made kernel object with a bad bandwidth",
      krr(X, Y, kernel = structure(list(name = "rbf", bandwidth = -1),
                                   class = "askotch_kernel")), "`bandwidth`"),
  err("a hand-made loss object",
      kernel_machine(X, CL, loss = structure(list(name = "foo"), class = "askotch_loss")),
      "`loss`.*no known loss name"),
  err("a hand-made Huber loss with delta = -1",
      kernel_machine(X, Y, loss = structure(list(name = "huber", param = -1),
                                            class = "askotch_loss")), "`delta`"),
  # --- the fourth round: refit with an offset, path methods, argument checks --
  val("refit(newresp =) of an offset fit subtracts the offset", {
    r <- refit(FITO, newresp = GO$y)
    r2 <- refit(FITO, newresp = GO$y + 1)
    c(predict(r, GO[1:5, ]) - predict(FITO, GO[1:5, ]), fitted(r2) + residuals(r2) - GO$y - 1)
  }, function(v) close(v, rep(0, 5 + n), 1e-8)),
  val("fitted(), coef() and residuals() read a path's lambda", {
    c(fitted(FITP, lambda = 1) - predict(FITP, X, lambda = 1),
      fitted(FITP, lambda = 1) + residuals(FITP, lambda = 1) - Y)
  }, function(v) close(v, rep(0, 2 * n), 1e-8)),
  val("coef() of a path's lambda is that lambda's weights", {
    coef(FITP, lambda = 0.1) - FITP$path_weights[[which(FITP$lambda_path$lambda == 0.1)]][, 1]
  }, function(v) close(v, rep(0, length(v)), 0)),
  err("fitted() with an unknown argument", fitted(FITP, lambda = 1, foo = 1), "`foo`"),
  err("coef() of a lambda not on the path", coef(FITP, lambda = 0.5), "lambda"),
  err("confint() of an unknown parameter", confint(FIT, parm = "foo"), "`parm`"),
  err("confint() of parameter 99", confint(FIT, parm = 99), "`parm`"),
  err("confint() with parm = NA", confint(FIT, parm = NA), "`parm`"),
  err("confint() with an unknown argument", confint(FIT, foo = 1), "`foo`"),
  err("vcov() with an unknown argument", vcov(FIT, foo = 1), "`foo`"),
  err("tidy() with an unknown argument", tidy(FIT, foo = 1), "`foo`"),
  err("glance() with an unknown argument", glance(FIT, foo = 1), "`foo`"),
  err("augment() with an unknown argument", augment(FIT, foo = 1), "`foo`"),
  err("simulate() with seed 2^40", simulate(FIT, seed = 2^40), "`seed`"),
  err("simulate() with seed 1.5", simulate(FIT, seed = 1.5), "`seed`"),
  err("a factor given as numbers in newdata", {
    g <- factor(rep(c("u", "v", "w"), length.out = n))
    f <- krr(y ~ a + g, data = data.frame(GO, g = g), lambda = LAM, bandwidth = 1.3,
             threads = 1)
    predict(f, data.frame(a = 0, g = 2))
  }, "`g`.*factor"),
  val("augment() reads a vector of p numbers as one point", augment(FIT, newdata = X[1, ]),
      function(v) if (nrow(v) == 1L) close(v$.fitted, predict(FIT, X[1, ]), 0) else
        sprintf("%d rows", nrow(v))),
  err("random features of inputs near the largest double",
      predict(krr(X, Y, lambda = 1, solver = svrg(), threads = 1, seed = 1),
              matrix(c(0.5, -0.3, 0.2, 1.2, 1.1, -1.3), 2, byrow = TRUE) * 1e308),
      "overflow", "askotch_error_numeric"),
  val("simulate() at no new points gives no rows", simulate(FIT, nsim = 2, seed = 1,
                                                           newdata = X[0, , drop = FALSE]),
      function(v) if (is.data.frame(v) && nrow(v) == 0L && ncol(v) == 2L) TRUE else
        "not a 0 x 2 data frame"),
  err("krr_loglik() with an unknown argument", krr_loglik(X, Y, lambda = 0.3, foo = 1),
      "`foo`"),
  val("tidy() of a linear-features fit has no bandwidth", tidy(FITL),
      function(v) if (is.na(v$estimate[v$term == "bandwidth"])) TRUE else "a bandwidth"),
  err("deviance() of a random-features machine", deviance(kernel_machine(
    X, CL, loss = loss_hinge(), features = 20, threads = 1, seed = 1)), "training points"),
  err("a data frame y with a factor column among several",
      krr(X, data.frame(a = Y, b = CL)), "numeric columns"),
  val("an identifier column in a formula warns", {
    d <- data.frame(y = Y, a = X[, 1], id = paste0("r", seq_len(n)))
    tryCatch(krr(y ~ ., data = d, lambda = LAM, solver = cholesky(), threads = 1),
             askotch_warning_input = function(w) conditionMessage(w))
  }, function(v) if (is.character(v) && grepl("`id`.*40 distinct", v)) TRUE else "no warning"),

  # --- mean functions, noise models, GP classifiers ------------------------------
  err("mean not a formula", krr(y ~ a, data = GO, mean = "a"), "`mean`"),
  err("mean with an unknown variable", krr(y ~ a, data = GO, mean = ~ zz), "`mean`.*`zz`"),
  err("mean with collinear terms", krr(y ~ a, data = GO, mean = ~ a + I(2 * a)),
      "`mean`.*rank"),
  err("likelihood unknown", krr(y ~ a, data = GO, mean = ~ a, likelihood = "rml"),
      "`likelihood`"),
  err("REML on a classification", krr(X, CL, likelihood = "reml"), "regression"),
  err("newdata without the mean's variable", predict(
    krr(y ~ a, data = GO, mean = ~ b, lambda = LAM, bandwidth = 1.3, threads = 1),
    data.frame(a = 0)), "`b`"),
  err("noise with weights", krr(y ~ a, data = GO, noise = ~ a, weights = rep(1, n)),
      "`noise`.*`weights`"),
  err("noise with GCV", krr(y ~ a, data = GO, noise = ~ a, lambda = "gcv"), "lambda"),
  err("posterior unknown", kernel_machine(X, CL, loss = loss_logistic(), posterior = "full"),
      "`posterior`"),
  err("posterior laplace with the hinge loss",
      kernel_machine(X, CL, loss = loss_hinge(), posterior = "laplace"), "laplace"),
  err("mean given to kernel_machine()", kernel_machine(y ~ a, data = GO, mean = ~ a),
      "`mean`"),
  err("logLik() of a kernel machine without a posterior", logLik(FITK), "laplace")
)
cases <- Filter(Negate(is.null), cases)

# corrupted objects: every method on every corruption
for (cn in names(corruptions)) {
  for (mn in names(methods)) {
    cases[[length(cases) + 1L]] <- list(
      name = sprintf("%s(): %s", mn, cn),
      expr = bquote(.(methods[[mn]])(corruptions[[.(cn)]][[1L]])),
      pattern = paste0("not a valid askotch fit.*", corruptions[[cn]][[2L]]),
      class = "askotch_error_object")
  }
}
# methods on objects that are not fits
for (mn in c("predict", "print", "summary", "coef", "refit", "simulate")) {
  cases[[length(cases) + 1L]] <- list(
    name = sprintf("%s() on an lm fit with class \"krr\" added", mn),
    expr = bquote(.(methods[[mn]])(structure(stats::lm(mpg ~ wt, mtcars),
                                             class = c("krr", "lm")))),
    pattern = "not a valid askotch fit", class = "askotch_error_object")
}

test_that("the hostile-input matrix has at least 150 cases", {
  expect_gte(length(cases), 150L)
  expect_false(anyDuplicated(vapply(cases, `[[`, "", "name")) > 0L)
})

grDevices::pdf(NULL)
run_case <- function(cs) {
  setTimeLimit(elapsed = 20, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf), add = TRUE)
  tryCatch(list(value = suppressMessages(utils::capture.output(
    v <- eval(cs$expr, environment()), file = nullfile()) ), v = v),
    error = function(e) list(error = e))
}
for (cs in cases) {
  test_that(paste("hostile:", cs$name), {
    res <- run_case(cs)
    if (is.null(cs$check)) {
      e <- res$error
      expect_true(!is.null(e), info = paste(cs$name, "gave no error"))
      if (!is.null(e)) {
        expect_true(inherits(e, cs$class),
                    info = paste(cs$name, ":", paste(class(e), collapse = "/"),
                                 conditionMessage(e)))
        expect_match(conditionMessage(e), cs$pattern, info = cs$name)
      }
    } else {
      expect_null(res$error, info = paste(cs$name, ":",
                                          if (!is.null(res$error)) conditionMessage(res$error)))
      if (is.null(res$error)) {
        ok <- cs$check(res$v)
        expect_true(isTRUE(ok), info = paste(cs$name, ":", ok))
      }
    }
  })
}
grDevices::dev.off()
