# krr(): fitting ------------------------------------------------------------------

#' Fit kernel ridge regression
#'
#' Solves the kernel ridge regression system \eqn{(K + \lambda I) w = y} for the
#' weights \eqn{w}, where \eqn{K} is the kernel matrix of the (standardised)
#' training points, by default with the ASkotch solver, which never forms
#' \eqn{K} and needs only \eqn{O(n)} memory. Predictions at new points \eqn{x}
#' are \eqn{\sum_i w_i k(x, x_i)} (plus the mean of the training targets for
#' regression): the posterior mean of a Gaussian process with covariance
#' \eqn{k} and noise variance \eqn{\lambda}.
#'
#' @section Tasks:
#' * numeric vector `y`: regression. Targets are centred; the mean is added
#'   back by [predict()][predict.krr].
#' * numeric matrix `y`: multi-output regression, each column centred, all
#'   columns solved jointly (one right-hand side each).
#' * factor with 2 levels: binary classification with targets -1 (first level)
#'   and +1 (second level); the predicted class is the sign of the score.
#' * factor with more than 2 levels: one-vs-all classification, one column of
#'   +1/-1 targets per level, solved jointly; the predicted class has the
#'   largest score.
#' * character or logical `y` is treated as `factor(y)` (levels sorted).
#'   Unused factor levels are dropped.
#'
#' @section Preprocessing:
#' With `standardize = TRUE` each column of `x` is centred by its training mean
#' and divided by its training standard deviation ([sd()]); constant columns
#' are only centred. The same transformation is applied to new data in
#' [predict()][predict.krr]. The bandwidth is chosen *after* standardisation.
#'
#' @section Stopping:
#' The solver runs in slices of about half a second. After each slice the
#' trace records the solver's running residual estimate. The fit stops when
#' * the relative residual \eqn{\|(K + \lambda I) w - y\|_F / \|y\|_F} is at
#'   most `tol` (reason `"tol"`): once the running estimate is below `tol`, the
#'   exact residual (one extra pass over the kernel) is computed, at most once
#'   per pass, and must be below `tol` too. For more than 50 000 training
#'   points (option `askotch.exact_max_n`) the exact check is skipped and the
#'   estimate alone decides;
#' * `max_passes` passes over the data are done (reason `"max_passes"`; one
#'   pass is \eqn{n / b} iterations with block size \eqn{b});
#' * `time_limit` seconds have elapsed (reason `"time_limit"`); or
#' * a direct solver ([cholesky()]) has finished (reason `"exact"`).
#'
#' For the inducing-point solvers ([falkon()] and `eigenpro(version = 3)`)
#' the residual is that of the (smaller) inducing-point normal equations
#' \eqn{(K_{nm}^T K_{nm} + \lambda K_{mm}) a = K_{nm}^T y}, and `x`,
#' `weights` refer to the centres.
#'
#' The exact final relative residual is computed (and stored) whenever
#' \eqn{n \le} 50 000. `converged` is `TRUE` for reasons `"tol"` and
#' `"exact"`.
#'
#' The default `tol` is `1e-8` in double precision and `1e-5` in single
#' precision (whose rounding errors prevent much smaller residuals); for
#' prediction purposes far looser tolerances (1e-3 to 1e-5) usually give the
#' same accuracy. Interrupting (Ctrl-C / Esc) frees all memory held by the
#' solver.
#'
#' @param x A numeric matrix or data frame of numeric columns (n rows), or a
#'   formula for `krr.formula()`.
#' @param y Response: numeric vector or matrix, factor, character or logical
#'   vector; see *Tasks*.
#' @param kernel A kernel name (`"rbf"`, `"laplace"`, `"matern12"`,
#'   `"matern32"`, `"matern52"`) or a kernel object such as [kernel_rbf()].
#' @param bandwidth A positive number or `"median"` (median heuristic, see
#'   [kernels]). When given explicitly it overrides the bandwidth stored in a
#'   kernel object.
#' @param lambda Ridge parameter \eqn{\lambda > 0} of \eqn{(K + \lambda I) w =
#'   y} (absolute, not divided by n). Default `1e-6 * n`.
#' @param solver A solver specification: [askotch()] (default), [skotch()],
#'   [sap()], [pcg()], [falkon()], [cholesky()], or one of their names.
#' @param precision `"double"` or `"single"` floating point arithmetic in the
#'   solver and predictions.
#' @param device `"auto"` (CUDA when a device is available and n >= 50 000,
#'   else CPU), `"cpu"` or `"cuda"`.
#' @param max_passes Maximum number of passes over the data.
#' @param tol Tolerance on the relative residual; default `1e-8` (double) or
#'   `1e-5` (single). Use `0` to run until `max_passes` or `time_limit`.
#' @param time_limit Maximum solve time in seconds (`Inf` for none).
#' @param validation Optional `list(x = , y = )` of held-out data (for the
#'   formula method also a data frame with the response); the trace then
#'   records the validation RMSE (regression) or accuracy (classification),
#'   at most once per pass and at the end.
#' @param standardize Centre and scale the columns of `x`?
#' @param seed Seed for the solver's random numbers and the bandwidth
#'   subsample; `NULL` draws one from R's random number generator, so
#'   [set.seed()] makes fits reproducible (for a fixed number of threads).
#' @param progress Show a progress bar (after 2 seconds)?
#' @param threads Number of CPU threads; `NULL` uses [askotch_threads()].
#' @param mem_limit Bytes the solver may allocate beyond the data; `NULL` uses
#'   the available memory. A fit that cannot fit signals an error of class
#'   `askotch_error_memory` suggesting a smaller block size.
#' @param data A data frame for the formula method.
#' @param ... For `krr.formula()`, arguments passed to `krr.default()`.
#'   Unknown arguments are an error.
#' @return An object of class `"krr"`, a list holding only plain R data
#'   (it can be saved with [saveRDS()] and used in another session) with
#'   components including `weights` (n x m), `x` (standardised training
#'   points), `center`, `scale`, `y_center`, `kernel` (with the resolved
#'   bandwidth), `lambda`, `solver` (with the resolved block size and rank),
#'   `precision`, `device`, `trace` (data frame: `iteration`, `passes`,
#'   `seconds`, `resid_est`, `block_resid`, `resid_exact`, `validation`),
#'   `converged`, `reason`, `iterations`, `passes`, `seconds` (wall time of
#'   the solve, including residual checks and validation), `resid_est`,
#'   `resid_exact`, `task`, `levels`, `call`.
#' @seealso [predict.krr()], [summary.krr()], [plot.krr()], [askotch()],
#'   [kernels], `vignette("getting-started", package = "askotch")`.
#' @examples
#' set.seed(1)
#' x <- matrix(runif(400), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(200, sd = 0.1)
#' fit <- krr(x, y, lambda = 0.01 * 200, threads = 1)
#' fit
#' predict(fit, x[1:5, ])
#'
#' # formula interface, classification
#' fit2 <- krr(Species ~ ., data = iris, lambda = 1, threads = 1)
#' table(predict(fit2, iris), iris$Species)
#' @export
krr <- function(x, ...) UseMethod("krr")

#' @rdname krr
#' @export
krr.default <- function(x, y, kernel = "rbf", bandwidth = "median",
                        lambda = NULL, solver = askotch(),
                        precision = "double", device = "auto",
                        max_passes = 100, tol = NULL, time_limit = Inf,
                        validation = NULL, standardize = TRUE, seed = NULL,
                        progress = interactive(), threads = NULL,
                        mem_limit = NULL, ...) {
  ecall <- krr_call(sys.call())
  extra <- list(...)
  if (length(extra) > 0L) {
    nm <- names(extra)
    nm[is.null(nm) | !nzchar(nm)] <- "<unnamed>"
    abort_askotch(sprintf("Unknown argument(s) to krr(): %s.",
                          paste0("`", nm, "`", collapse = ", ")),
                  "input", ecall)
  }
  if (missing(y)) abort_askotch("`y` is missing.", "input", ecall)

  # data ---------------------------------------------------------------------
  x <- as_feature_matrix(x, "x", ecall)
  n <- nrow(x)
  p <- ncol(x)
  if (n < 2L) {
    abort_askotch(sprintf("`x` must have at least 2 rows, not %d.", n),
                  "input", ecall)
  }
  tgt <- prepare_targets(y, n, ecall)
  Y <- tgt$Y
  check_flag(standardize, "standardize", ecall)
  scaling <- compute_scaling(x, standardize)
  xs <- apply_scaling(x, scaling$center, scaling$scale)
  xnames <- colnames(x)
  dimnames(xs) <- NULL
  y_center <- if (tgt$task %in% c("regression", "multioutput"))
    colMeans(Y) else rep(0, ncol(Y))
  Yc <- sweep(Y, 2L, y_center, "-", check.margin = FALSE)
  dimnames(Yc) <- NULL

  # options --------------------------------------------------------------------
  if (is.null(lambda)) lambda <- 1e-6 * n
  check_positive(lambda, "lambda", call = ecall)
  lambda <- as.numeric(lambda)
  precision <- check_choice(precision, c("double", "single"), "precision", ecall)
  if (is.null(tol)) tol <- if (precision == "double") 1e-8 else 1e-5
  if (!is.numeric(tol) || length(tol) != 1L || is.na(tol) || tol < 0 ||
      !is.finite(tol)) {
    abort_askotch(sprintf("`tol` must be a non-negative number, not %s.",
                          fmt_value(tol)), "input", ecall)
  }
  check_positive(max_passes, "max_passes", allow_inf = TRUE, call = ecall)
  check_positive(time_limit, "time_limit", allow_inf = TRUE, call = ecall)
  check_flag(progress, "progress", ecall)
  if (is.null(threads)) threads <- 0L else {
    check_positive(threads, "threads", integerish = TRUE, call = ecall)
  }
  if (is.null(mem_limit)) mem_limit <- 0 else {
    check_positive(mem_limit, "mem_limit", call = ecall)
  }
  if (is.null(seed)) {
    seed <- floor(stats::runif(1L) * 2^31)
  } else if (!is.numeric(seed) || length(seed) != 1L || is.na(seed) ||
             seed < 0 || seed >= 2^53 || seed != round(seed)) {
    abort_askotch(sprintf(
      "`seed` must be NULL or a whole number in [0, 2^53), not %s.",
      fmt_value(seed)), "input", ecall)
  }
  seed <- as.numeric(seed)

  bandwidth_given <- !missing(bandwidth)
  kern <- as_kernel(kernel, bandwidth, bandwidth_given, ecall)
  if (identical(kern$bandwidth, "median")) {
    kern$bandwidth <- median_bandwidth(xs, kern$metric, seed)
    kern$bandwidth_rule <- "median"
  } else {
    kern$bandwidth_rule <- "fixed"
  }
  solver <- resolve_solver(as_solver(solver, ecall), n, ecall)
  device <- resolve_device(device, n, ecall)

  val <- NULL
  if (!is.null(validation)) {
    val <- prepare_validation(validation, p, xnames, scaling, tgt, ecall)
  }
  if (!is.finite(max_passes) && !is.finite(time_limit) && tol == 0 &&
      solver$name != "cholesky") {
    abort_askotch(paste(
      "With `tol = 0`, at least one of `max_passes` and `time_limit` must",
      "be finite."), "input", ecall)
  }

  # solve --------------------------------------------------------------------
  res <- run_solver(xs, Yc, kern, lambda, solver, precision, device,
                    max_passes, tol, time_limit, val, seed, progress,
                    threads, mem_limit, tgt)

  solver$block_size <- res$block_size
  if (!is.null(solver$rank)) solver$rank <- as.integer(res$rank)
  if (solver$name == "eigenpro") solver$step <- res$step
  W <- res$weights
  colnames(W) <- tgt$names
  centers <- res$centers
  if (length(centers) > 0L) solver$centers <- centers
  structure(list(
    weights = W,
    # prediction points: the training points, or Falkon's centres
    x = if (length(centers) > 0L) xs[centers, , drop = FALSE] else xs,
    x_train = if (length(centers) > 0L) xs else NULL,
    centers = if (length(centers) > 0L) centers else NULL,
    xnames = xnames,
    center = scaling$center,
    scale = scaling$scale,
    standardize = standardize,
    y = Y,
    y_center = unname(y_center),
    y_names = tgt$names,
    kernel = kern,
    lambda = lambda,
    solver = solver,
    precision = precision,
    device = device,
    threads = as.integer(threads),
    seed = seed,
    tol = tol,
    max_passes = max_passes,
    time_limit = time_limit,
    trace = res$trace,
    validation_metric = if (is.null(val)) NA_character_ else val$metric,
    converged = res$reason %in% c("tol", "exact"),
    reason = res$reason,
    iterations = res$iterations,
    passes = res$passes,
    seconds = res$seconds,
    resid_est = res$resid_est,
    resid_exact = res$resid_exact,
    n = n,
    p = p,
    m = ncol(Y),
    task = tgt$task,
    levels = tgt$levels,
    terms = NULL,
    call = tryCatch(match.call(krr.default, ecall), error = function(e) ecall)
  ), class = "krr")
}

#' @rdname krr
#' @param formula A model formula `response ~ predictors`; the model matrix is
#'   built without an intercept (factors are expanded to indicator columns).
#'   The fitted object does not keep the formula's environment: at prediction
#'   time variables come from `newdata` and functions from the search path.
#' @export
krr.formula <- function(formula, data = NULL, validation = NULL, ...) {
  ecall <- krr_call(sys.call())
  if (missing(data) || is.null(data)) data <- environment(formula)
  mf <- tryCatch(
    stats::model.frame(formula, data = data, na.action = stats::na.pass,
                       drop.unused.levels = TRUE),
    error = function(e) abort_askotch(sprintf(
      "Cannot build the model frame from `formula` and `data`: %s",
      conditionMessage(e)), "input", ecall))
  tt <- stats::terms(mf)
  if (attr(tt, "response") == 0L) {
    abort_askotch("`formula` must have a response, e.g. y ~ x1 + x2.",
                  "input", ecall)
  }
  attr(tt, "intercept") <- 0L
  y <- stats::model.response(mf)
  X <- stats::model.matrix(tt, mf)
  contr <- attr(X, "contrasts")
  attr(X, "assign") <- NULL
  attr(X, "contrasts") <- NULL
  xlev <- stats::.getXlevels(tt, mf)
  if (is.data.frame(validation)) {
    vd <- validation
    vmf <- tryCatch(
      stats::model.frame(tt, vd, xlev = xlev, na.action = stats::na.pass),
      error = function(e) abort_askotch(sprintf(
        "Cannot build the model frame of `validation`: %s",
        conditionMessage(e)), "input", ecall))
    validation <- list(x = stats::model.matrix(tt, vmf,
                                               contrasts.arg = contr),
                       y = stats::model.response(vmf))
  }
  fit <- krr.default(x = X, y = y, validation = validation, ...)
  # Keep plain data: do not serialise the caller's environment with the
  # terms (predict() finds variables in `newdata`, functions on the search
  # path).
  tt_pred <- stats::delete.response(tt)
  environment(tt_pred) <- globalenv()
  fit$terms <- tt_pred
  fit$xlevels <- xlev
  fit$contrasts <- contr
  fit$response_name <- deparse(tt[[2L]])
  fit$call <- krr_call(match.call(expand.dots = TRUE))
  fit
}

# Show calls of the methods as calls of the generic krr().
krr_call <- function(call) {
  if (is.call(call) && is.name(call[[1L]]) &&
      as.character(call[[1L]]) %in% c("krr.default", "krr.formula")) {
    call[[1L]] <- as.name("krr")
  }
  call
}

prepare_validation <- function(validation, p, xnames, scaling, tgt, call) {
  if (!is.list(validation) || is.data.frame(validation) ||
      is.null(validation$x) || is.null(validation$y)) {
    abort_askotch(paste(
      "`validation` must be a list with components `x` and `y`",
      "(for the formula interface also a data frame)."), "input", call)
  }
  vx <- as_feature_matrix(validation$x, "validation$x", call)
  if (ncol(vx) != p) {
    abort_askotch(sprintf(
      "`validation$x` must have %d columns like `x`, not %d.", p, ncol(vx)),
      "input", call)
  }
  vy <- validation$y
  nv <- nrow(vx)
  if (tgt$task %in% c("binary", "multiclass")) {
    if (!(is.factor(vy) || is.character(vy) || is.logical(vy)) ||
        length(vy) != nv) {
      abort_askotch(sprintf(paste(
        "`validation$y` must be a factor (or character) vector with %d",
        "values."), nv), "input", call)
    }
    vy <- as.character(vy)
    metric <- "accuracy"
  } else {
    vy <- as.matrix(vy)
    if (!is.numeric(vy) || nrow(vy) != nv || ncol(vy) != ncol(tgt$Y) ||
        any(!is.finite(vy))) {
      abort_askotch(sprintf(paste(
        "`validation$y` must be numeric and finite with %d row(s) and %d",
        "column(s)."), nv, ncol(tgt$Y)), "input", call)
    }
    storage.mode(vy) <- "double"
    metric <- "rmse"
  }
  xs <- apply_scaling(vx, scaling$center, scaling$scale)
  dimnames(xs) <- NULL
  list(x = xs, y = vy, metric = metric)
}

# The solver loop ------------------------------------------------------------

now <- function() proc.time()[["elapsed"]]

run_solver <- function(xs, Yc, kern, lambda, solver, precision, device,
                       max_passes, tol, time_limit, val, seed, progress,
                       threads, mem_limit, tgt) {
  n <- nrow(xs)
  prec_code <- if (precision == "double") 1L else 0L
  dev_code <- if (device == "cuda") 1L else 0L
  exact_max_n <- getOption("askotch.exact_max_n", 50000)
  y_center <- if (tgt$task %in% c("regression", "multioutput"))
    colMeans(tgt$Y) else rep(0, ncol(tgt$Y))

  t0 <- now()
  state <- .Call(ffi_fit_init, xs, Yc, as.integer(kern$code),
                 as.numeric(kern$bandwidth), lambda, prec_code, dev_code,
                 solver_to_c(solver, seed, mem_limit, threads))
  on.exit(.Call(ffi_fit_free, state), add = TRUE)
  centers <- .Call(ffi_fit_centers, state)  # Falkon, EigenPro 3; else integer(0)
  xpred <- if (length(centers) > 0L) xs[centers, , drop = FALSE] else xs

  val_metric <- function() {
    w <- .Call(ffi_fit_weights, state)
    s <- .Call(ffi_kernel_apply, val$x, xpred, w, as.integer(kern$code),
               as.numeric(kern$bandwidth), prec_code, dev_code,
               as.integer(threads))
    if (val$metric == "rmse") {
      s <- sweep(s, 2L, y_center, "+", check.margin = FALSE)
      sqrt(mean((s - val$y)^2))
    } else {
      pred <- scores_to_class(s, tgt$levels)
      mean(as.character(pred) == val$y)
    }
  }

  if (progress) {
    total <- if (is.finite(max_passes)) max_passes else NA
    pb <- tryCatch(cli::cli_progress_bar(
      name = "krr", total = total, clear = TRUE,
      format = paste("{cli::pb_name}{cli::pb_bar} passes {cli::pb_current}",
                     "| {cli::pb_elapsed} | {cli::pb_status}"),
      format_done = "", .envir = environment()),
      error = function(e) NULL)
  } else {
    pb <- NULL
  }

  cap <- 1e6
  rows <- vector("list", 64L)
  nrow_trace <- 0L
  slice <- 1
  per_iter <- NA_real_
  last_exact_pass <- -Inf
  last_val_pass <- -Inf
  reason <- NA_character_
  exact_at_end <- NA_real_
  d <- NULL
  repeat {
    ts <- now()
    d <- .Call(ffi_fit_step, state, as.integer(slice))
    dt <- now() - ts
    pi_new <- max(dt, 1e-4) / slice
    per_iter <- if (is.na(per_iter)) pi_new else 0.5 * per_iter + 0.5 * pi_new
    passes <- d[["passes"]]
    est <- d[["resid_est"]]
    exact <- NA_real_
    if (d[["done"]] >= 1) {
      reason <- if (solver$name == "cholesky") "exact" else "tol"
    } else if (is.finite(est) && est <= tol) {
      if (n <= exact_max_n) {
        if (passes - last_exact_pass >= 1) {
          exact <- .Call(ffi_fit_residual, state)
          last_exact_pass <- passes
          if (exact <= tol) reason <- "tol"
        }
      } else {
        reason <- "tol"
      }
    }
    elapsed <- now() - t0
    if (is.na(reason)) {
      if (passes >= max_passes - 1e-9) {
        reason <- "max_passes"
      } else if (elapsed >= time_limit) {
        reason <- "time_limit"
      }
    }
    if (!is.na(reason) && is.na(exact) && n <= exact_max_n) {
      exact <- .Call(ffi_fit_residual, state)
    }
    vm <- NA_real_
    if (!is.null(val) && (!is.na(reason) || passes - last_val_pass >= 1)) {
      vm <- val_metric()
      last_val_pass <- passes
    }
    nrow_trace <- nrow_trace + 1L
    if (nrow_trace > length(rows)) length(rows) <- 2L * length(rows)
    rows[[nrow_trace]] <- c(d[["iter"]], passes, now() - t0, est,
                            d[["block_resid"]], exact, vm)
    if (!is.null(pb)) {
      tryCatch(cli::cli_progress_update(
        id = pb, set = min(round(passes, 2), if (is.finite(max_passes))
          max_passes else passes),
        status = sprintf("residual %.2e", est), .envir = environment()),
        error = function(e) NULL)
    }
    if (!is.na(reason)) {
      exact_at_end <- exact
      break
    }
    # next slice: about half a second, not beyond max_passes / time_limit
    # (and at most one pass, so the trace has a row per pass or per slice)
    ipp <- d[["iter"]] / max(passes, 1e-12)  # iterations per pass
    slice <- max(1, min(floor(0.5 / per_iter), ceiling(ipp - 1e-9)))
    if (is.finite(max_passes)) {
      slice <- min(slice, max(1, ceiling((max_passes - passes) * ipp - 1e-9)))
    }
    if (is.finite(time_limit)) {
      slice <- min(slice, max(1, floor((time_limit - elapsed) / per_iter)))
    }
    slice <- min(slice, cap)
  }
  if (!is.null(pb)) {
    tryCatch(cli::cli_progress_done(id = pb, .envir = environment()),
             error = function(e) NULL)
  }
  W <- .Call(ffi_fit_weights, state)
  seconds <- now() - t0
  tr <- do.call(rbind, rows[seq_len(nrow_trace)])
  trace <- data.frame(iteration = as.integer(tr[, 1L]), passes = tr[, 2L],
                      seconds = tr[, 3L], resid_est = tr[, 4L],
                      block_resid = tr[, 5L], resid_exact = tr[, 6L],
                      validation = tr[, 7L])
  list(weights = W, trace = trace, reason = reason,
       iterations = as.integer(d[["iter"]]), passes = d[["passes"]],
       seconds = seconds, resid_est = d[["resid_est"]],
       resid_exact = exact_at_end, block_size = d[["block_size"]],
       rank = d[["rank"]], step = d[["step_L"]], centers = centers)
}
