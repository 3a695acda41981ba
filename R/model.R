# The fitted model shared by krr() and kernel_machine(): data preparation,
# the fit (settings, tuning, the solve), the fitted object, the formula
# interface and the kernel scores of a fitted object.

# The device of a kernel product between nnew new points and the fit's
# points: the fit's device (or `device`), "auto" resolved by the product's
# size; "cpu" for random-feature fits.
score_device <- function(object, nnew, device = NULL) {
  dev <- if (is.null(device)) object$device else device
  dev <- check_choice(dev, c("auto", "cpu", "cuda"), "device")
  if (dev == "cpu" || fit_features(object) > 0) return("cpu")
  have <- length(native_devices()$name) > 0L
  if (dev == "cuda" && !have && !is.null(device)) {
    resolve_device("cuda", nrow(object$x))  # signals the classed error
  }
  if (have && (dev == "cuda" ||
               auto_uses_cuda(as.numeric(nnew) * nrow(object$x)))) "cuda" else "cpu"
}

# Kernel scores K(xnew, xtrain) %*% w for standardised new points.
krr_scores <- function(object, xs, device = NULL) {
  dev <- score_device(object, nrow(xs), device)
  W <- object$weights
  dimnames(W) <- NULL
  threads <- as.integer(if (is.null(object$threads)) 0L else object$threads)
  if (is_linear_fit(object) || fit_features(object) > 0) {
    s <- if (is_linear_fit(object)) {
      xs %*% W  # the linear operator's features (svrg("linear")): x^T w
    } else { # random features: z(x)^T theta (on the CPU)
      native_features_apply(xs, W, object$kernel, object$features, object$seed,
                            object$precision, threads)
    }
    # finite points whose projections overflow (|x| near the largest double)
    if (!all(is.finite(min_max(s)))) {
      abort_askotch(paste(
        "The features of some rows of `newdata` overflow (values near the",
        "largest double): rescale the inputs."), "numeric")
    }
  } else {
    xp <- object$x
    nz <- nonzero_rows(W)
    if (!is.null(nz)) {
      xp <- xp[nz, , drop = FALSE]
      W <- W[nz, , drop = FALSE]
    }
    s <- native_kernel_apply(xs, xp, W, object$kernel, object$precision, dev, threads)
  }
  if (!is.null(object$bias) && any(object$bias != 0)) {
    s <- sweep(s, 2L, object$bias, "+", check.margin = FALSE)
  }
  s
}

# Build the standardised feature matrix of newdata.
new_features <- function(object, newdata, na_ok = FALSE) {
  if (!is.null(object$terms)) {
    if (!is.data.frame(newdata) && !is.list(newdata)) {
      abort_askotch(sprintf(
        "`newdata` must be a data frame (the model was fitted with a formula), not %s.",
        fmt_value(newdata)), "input")
    }
    vars <- all.vars(object$terms)
    miss <- setdiff(vars, names(newdata))
    if (length(miss) > 0L) {
      abort_askotch(sprintf(
        "`newdata` is missing the variable(s) %s used by the model.",
        paste0("`", miss, "`", collapse = ", ")), "input")
    }
    # a column of NAs only is logical in R: read it as missing numbers
    for (v in intersect(vars, names(newdata))) {
      if (is.logical(newdata[[v]]) && all(is.na(newdata[[v]])) &&
          !v %in% names(object$xlevels)) newdata[[v]] <- as.numeric(newdata[[v]])
    }
    # a factor of the fit given as numbers: contrasts would fail on it
    for (v in intersect(names(object$xlevels), names(newdata))) {
      col <- newdata[[v]]
      if (!is.factor(col) && !is.character(col) && !all(is.na(col))) {
        abort_askotch(sprintf(paste(
          "`newdata`'s column `%s` must be a factor or character vector (levels %s),",
          "as in the training data, not %s."), v,
          paste(object$xlevels[[v]], collapse = ", "), class(col)[1L]), "input")
      }
    }
    build <- function(f) tryCatch(f, error = function(e) abort_askotch(sprintf(
      "Cannot build the model matrix of `newdata`: %s", conditionMessage(e)), "input"))
    mf <- build(stats::model.frame(object$terms, newdata, xlev = object$xlevels,
                                   na.action = stats::na.pass))
    x <- build(stats::model.matrix(object$terms, mf, contrasts.arg = object$contrasts))
    attr(x, "assign") <- NULL
    attr(x, "contrasts") <- NULL
    x <- as_feature_matrix(x, "newdata", na_ok = na_ok)
    # the offset: offset() terms, and the offset argument evaluated in newdata
    off <- stats::model.offset(mf)
    if (!is.null(object$offset_expr)) {
      off <- (if (is.null(off)) 0 else off) +
        eval_offset(object$offset_expr, newdata, nrow(x))
    }
  } else {
    if (is.atomic(newdata) && is.null(dim(newdata)) && object$p > 1L &&
        length(newdata) == object$p) {
      newdata <- matrix(newdata, nrow = 1L,
                        dimnames = list(NULL, names(newdata)))
    }
    x <- match_columns(as_feature_matrix(newdata, "newdata", na_ok = na_ok),
                       object$xnames)
    off <- NULL
  }
  if (ncol(x) != object$p) {
    abort_askotch(sprintf(
      "`newdata` must have %d column(s) like the training data, not %d.",
      object$p, ncol(x)), "input")
  }
  xs <- apply_scaling(x, object$center, object$scale)
  dimnames(xs) <- NULL
  nf <- list(xs = xs, rownames = rownames(x), offset = off,
             trend = if (!is.null(object$trend)) trend_design_new(object, newdata, x),
             noise = if (!is.null(object$noise)) noise_design_new(object, newdata, x))
  for (f in c("trend", "noise")) {
    if (!is.null(nf[[f]]) && !na_ok && !all(is.finite(nf[[f]]))) {
      abort_askotch(sprintf("The design of `%s` at `newdata` has missing or infinite values.",
                            c(trend = "mean", noise = "noise")[[f]]), "input")
    }
  }
  if (na_ok) nf <- complete_rows(nf)
  nf
}

# The points a predict() method scores: the training points (newdata NULL)
# or newdata's complete rows; nf (new_features(), NULL for the training
# points), ok (the complete rows, NULL: all), rn (newdata's row names) and
# rk (those of the complete rows).
predict_points <- function(object, newdata) {
  if (is.null(newdata)) {
    return(list(xs = if (is.null(object$x_train)) object$x else object$x_train,
                nf = NULL, ok = NULL, rn = NULL, rk = NULL))
  }
  nf <- new_features(object, newdata, na_ok = TRUE)
  rn <- nf$rownames
  list(xs = nf$xs, nf = nf, ok = nf$ok, rn = rn, rk = if (is.null(rn)) rn else rn[nf$ok])
}

# The rows of new features without a missing value (in x or the offset):
# nf$ok marks them, and xs and the offset keep only them (predict() returns
# NA for the others, as predict.lm() with na.pass).
complete_rows <- function(nf) {
  ok <- rowSums(is.na(nf$xs)) == 0
  if (length(nf$offset) > 1L) ok <- ok & !is.na(nf$offset)
  for (f in c("trend", "noise")) {
    if (!is.null(nf[[f]])) ok <- ok & rowSums(!is.finite(nf[[f]])) == 0
  }
  nf$ok <- ok
  if (all(ok)) return(nf)
  nf$xs <- nf$xs[ok, , drop = FALSE]
  if (length(nf$offset) > 1L) nf$offset <- nf$offset[ok]
  for (f in c("trend", "noise")) {
    if (!is.null(nf[[f]])) nf[[f]] <- nf[[f]][ok, , drop = FALSE]
  }
  nf
}

# A prediction of the complete rows (ok) grown to all rows: NA (of the
# same type; a factor keeps its levels) for the others, row names rn. In a
# list (se.fit = TRUE) its fit and se.fit grow, attributes kept.
na_expand <- function(out, ok, rn) {
  if (is.null(ok) || all(ok)) return(out)
  grow <- function(v) {
    at <- attributes(v)
    idx <- replace(rep(NA_integer_, length(ok)), ok, seq_len(sum(ok)))
    g <- if (is.matrix(v)) v[idx, , drop = FALSE] else v[idx]
    for (a in setdiff(names(at), c("names", "dim", "dimnames", "levels", "class"))) {
      attr(g, a) <- at[[a]]
    }
    if (is.matrix(g)) rownames(g) <- rn else names(g) <- rn
    g
  }
  if (!is.list(out)) return(grow(out))
  out$fit <- grow(out$fit)
  out$se.fit <- grow(out$se.fit)
  out
}

# The columns of a new matrix matched by name when the training x had
# names: every training column must be present (extra columns are ignored);
# a matrix without names is used by position.
match_columns <- function(x, xnames) {
  if (is.null(xnames) || is.null(colnames(x))) return(x)
  miss <- setdiff(xnames, colnames(x))
  if (length(miss) > 0L) {
    abort_askotch(sprintf(paste(
      "`newdata` is missing the column(s) %s of the training data (its",
      "columns: %s); columns are matched by name."),
      paste0("`", miss, "`", collapse = ", "),
      paste0("`", colnames(x), "`", collapse = ", ")), "input")
  }
  x[, xnames, drop = FALSE]
}

# The offset to add to regression predictions: the training offset for the
# training points (nf NULL), else that of new data (0 when none).
pred_offset <- function(object, nf) {
  off <- if (is.null(nf)) object$offset else nf$offset
  if (is.null(off)) 0 else off
}

task_label <- function(x) {
  switch(x$task,
         regression = "regression",
         multioutput = "multi-output regression",
         binary = sprintf("binary classification (%s vs %s)",
                          x$levels[2L], x$levels[1L]),
         multiclass = sprintf("one-vs-all classification, %d classes",
                              length(x$levels)),
         x$task)
}

resid_text <- function(x) {
  if (!is.na(x$resid_exact)) {
    sprintf("relative residual %.3g", x$resid_exact)
  } else {
    sprintf("estimated relative residual %.3g", x$resid_est)
  }
}

# In-sample scores K w plus the target mean (n x m), without the offset
fitted_scores <- function(object) {
  s <- krr_scores(object, if (is.null(object$x_train)) object$x else
    object$x_train)
  sweep(s, 2L, object$y_center, "+", check.margin = FALSE) + trend_values(object)
}

# One output as a vector, several as a matrix with named columns
fit_columns <- function(object, s) {
  if (ncol(s) == 1L) s[, 1L] else {
    colnames(s) <- if (!is.null(object$levels)) object$levels else
      object$y_names
    s
  }
}

# The fit shared by krr() and kernel_machine(): data, settings (from the
# user's arguments `args`, see fit_args()), the solve, the fitted object.
fit_model <- function(x, y, loss, args, machine, call, ecall) {
  cc <- check_intercept(args$intercept, ecall)
  nz <- noise_setup(args$noise, x, args$weights, ecall)
  tr <- trend_setup(args$mean, args$likelihood %||% "ml", x, ecall, gls = !is.null(nz))
  ow <- obs_weights_rows(x, y, args$weights, ecall)
  # a composite kernel's periods, length scales and dims are in x's units
  if (is_composite_kernel(args$kernel) && identical(args$standardize, "auto")) {
    args$standardize <- FALSE
  }
  if (!is.null(tr) && length(ow$dropped)) tr$F <- tr$F[-ow$dropped, , drop = FALSE]
  dat <- krr_data(ow$x, ow$y, args$standardize, loss, ecall,
                  center = cc == 0 && (is.null(tr) || tr$intercept), w = ow$w)
  dat$trend <- tr
  dat$noise <- nz
  set <- settings_from_args(dat, loss, args, intercept = cc, objective = machine,
                            call = ecall)
  local_blas_threads(set$threads)
  if (!is.null(tr)) check_trend_fit(tr, dat, set, ecall)
  check_numerics(dat, set, ecall)
  set$obs_weights <- check_weights_model(ow$w, set, ecall)
  set$zero_weight <- ow$dropped
  tn <- tune_hyper(dat, set, ecall)
  check_lambda_numeric(tn$set$lambda, tn$set$precision, ecall)
  path <- tn$set$lambda_spec$rule == "path" && path_solver(tn$set$solver)
  # a mean function's columns are solved with the targets (R/trend.R)
  rhs <- if (is.null(tr)) tn$dat$Yc else cbind(tn$dat$Yc, tr$F)
  res <- if (path) fit_path(tn$dat$xs, tn$dat$Yc, tn$set, tn$dat$tgt) else
    solve_spec(tn$set$solver, tn$dat$xs, rhs, tn$set, tn$dat$tgt)
  if (!is.null(res$solver)) tn$set$solver <- res$solver # "auto"'s choice, made at the start
  # a path keeps its stop rule: every lambda to the tightest of their tolerances
  if (path) tn$set$lambda <- res$lambda
  gls <- if (!is.null(tr)) {
    trend_gls(res$weights, tr, ncol(tn$dat$Yc), tn$dat$y_center, tn$dat$tgt$names)
  }
  if (!is.null(gls)) {
    res$weights <- gls$alpha
    tn$dat$y_center[] <- 0
  }
  fit <- new_krr(tn$dat, tn$set, res, call = call)
  fit$trend <- gls$trend
  if (!is.null(nz)) fit$noise <- noise_fit_fields(nz, tn$tuning$noise_coef,
                                                    tn$noise_gp[names(tn$noise_gp) != "optim"])
  fit[names(res$fields)] <- res$fields  # a spec's own fields (svrg(): epochs)
  if (!set$objective && !is.null(res$theta)) {
    # features (bcd("random"), svrg()): predictions z(x)^T theta, or x^T w
    # for the linear operator (features code -1)
    fit$features <- set_features(tn$set)
    theta <- res$theta
    colnames(theta) <- colnames(fit$weights)
    fit$weights <- theta
  }
  fit$length_scales <- tn$tuning$length_scales
  fit$tuning <- tn$tuning
  if (path) fit <- path_fields(fit, res)
  if (set$objective) fit <- as_kernel_machine(fit, tn$dat, tn$set, res)
  if (is_gp_classifier(set$posterior)) fit$posterior <- set$posterior
  if (identical(set$posterior, "ep")) fit$ep <- ep_fit(fit, ecall)
  warn_not_converged(validate_krr(fit), ecall)
}

# Data preparation: the feature matrix, its scaling, the targets (as the
# loss prepares them).
krr_data <- function(x, y, standardize, loss, call = NULL, center = TRUE,
                     w = NULL) {
  x <- as_feature_matrix(x, "x", call)
  n <- nrow(x)
  if (n < 2L) {
    abort_askotch(sprintf("`x` must have at least 2 rows, not %d.", n),
                  "input", call)
  }
  tgt <- loss_check_targets(loss, prepare_targets(y, n, call), call)
  check_standardize(standardize, call)
  scaling <- compute_scaling(x, standardize)
  xs <- apply_scaling(x, scaling$center, scaling$scale)
  xnames <- colnames(x)
  dimnames(xs) <- NULL
  cen <- loss_targets(loss, tgt, center, w)
  # "auto": per column until tune_select() chooses by likelihood
  auto <- identical(standardize, "auto")
  list(xs = xs, n = n, p = ncol(x), xnames = xnames, scaling = scaling,
       standardize = if (auto) TRUE else standardize, scaling_auto = auto,
       tgt = tgt, Y = tgt$Y, Yc = cen$Yc, y_center = cen$y_center)
}

# The "krr" object: plain R data only (but the optional solver state).
new_krr <- function(dat, set, res, call) {
  solver <- solver_resolved(set$solver, res$options, res$extras)
  centers <- res$centers
  if (length(centers) > 0L) solver$centers <- centers
  W <- res$weights
  colnames(W) <- dat$tgt$names
  rule <- set$rule
  structure(c(list(
    weights = W,
    # prediction points: the training points, or the centres
    x = if (length(centers) > 0L) dat$xs[centers, , drop = FALSE] else dat$xs,
    x_train = if (length(centers) > 0L) dat$xs else NULL,
    centers = if (length(centers) > 0L) centers else NULL,
    xnames = dat$xnames,
    center = dat$scaling$center,
    scale = dat$scaling$scale,
    standardize = dat$standardize,
    y = dat$Y,
    y_center = dat$y_center,
    y_names = dat$tgt$names,
    kernel = set$kernel,
    lambda = set$lambda,
    loss = set$loss,
    solver = solver,
    precision = set$precision,
    device = set$device,
    threads = set$threads,
    mem_limit = set$mem_limit,
    seed = set$seed,
    tol = rule$tol,
    tol_auto = isTRUE(set$tol_auto),
    tol_rule = if (isTRUE(set$tol_auto)) set$tol_rule %||% "uniform" else NA_character_,
    max_passes = rule$max_passes,
    time_limit = rule$time_limit,
    validation_metric = if (is.null(set$validation)) NA_character_ else
      set$validation$metric),
    solve_fields(res, isTRUE(set$tol_auto)),
    list(n = dat$n, p = dat$p, m = ncol(dat$Y), task = dat$tgt$task,
         levels = dat$tgt$levels, obs_weights = set$obs_weights,
         zero_weight = set$zero_weight, terms = NULL, call = call,
         state = res$state,
         # the key of what the standard errors reuse (R/gp.R, gp_cached())
         gp_id = gp_new_id())
  ), class = "krr")
}

# The fields of a fit that one solve sets (krr() and refit()). A fit that
# stopped at its precision floor (reason "precision") has converged when the
# tolerance was the automatic one (the floor is then the best the precision
# can do, and summary() reports the accuracy reached); a tolerance the user
# set and the precision cannot reach is not met.
solve_fields <- function(res, tol_auto = FALSE) {
  list(trace = res$trace,
       converged = res$reason %in% c("tol", "exact") ||
         (res$reason == "precision" && tol_auto),
       reason = res$reason, iterations = res$iterations, passes = res$passes,
       seconds = res$seconds, resid_est = res$resid_est,
       resid_exact = res$resid_exact, resid_floor = res$resid_floor)
}

# A predictor column of characters or a factor with a level for most rows
# (an identifier, say) becomes that many indicator columns: a warning, so
# that it is not done silently (lm() does the same expansion).
warn_many_levels <- function(mf, tt, call) {
  vars <- attr(tt, "term.labels")
  n <- nrow(mf)
  for (v in intersect(vars, names(mf))) {
    col <- mf[[v]]
    if (!(is.character(col) || is.factor(col))) next
    k <- length(unique(col))
    if (n >= 10 && k > n / 2) {
      warn_askotch(sprintf(paste(
        "Predictor `%s` is %s with %d distinct values in %d rows: it becomes",
        "%d indicator columns. If it identifies rows, leave it out of the",
        "formula."), v, if (is.character(col)) "character" else "a factor", k, n,
        k), "input", call)
    }
  }
}

# The formula methods of krr() and kernel_machine(): the model frame (built
# the standard way, like lm(): `subset`, `weights`, `na.action` and `offset`
# evaluated in `data`, then in the caller's frame `env`), then the default
# method `fit_fun` on the model matrix.
formula_fit <- function(mfcall, env, validation, fit_fun, ecall, mcall, ...,
                        mean = NULL, noise = NULL) {
  m <- match(c("formula", "data", "subset", "weights", "na.action",
               "offset"), names(mfcall), 0L)
  mfc <- mfcall[c(1L, m)]
  mfc$drop.unused.levels <- TRUE
  mfc[[1L]] <- quote(stats::model.frame)
  # a mean function's design on every row of `data`, carried through the
  # model frame so that `subset` and `na.action` drop the same rows
  tr <- formula_trend(mean, mfcall, env, ecall)
  if (!is.null(tr)) mfc$askotch_trend <- tr$F
  nzd <- formula_trend(noise, mfcall, env, ecall, "noise")
  if (!is.null(nzd)) mfc$askotch_noise <- nzd$F
  mf <- tryCatch(eval(mfc, env), error = function(e) abort_askotch(sprintf(
    "Cannot build the model frame from `formula` and `data`: %s",
    conditionMessage(e)), "input", ecall))
  tt <- stats::terms(mf)
  if (attr(tt, "response") == 0L) {
    abort_askotch("`formula` must have a response, e.g. y ~ x1 + x2.",
                  "input", ecall)
  }
  attr(tt, "intercept") <- 0L
  y <- stats::model.response(mf)
  w <- stats::model.weights(mf)
  off <- stats::model.offset(mf)
  if (!is.null(off)) y <- subtract_offset(y, off, ecall)
  warn_many_levels(mf, tt, ecall)
  X <- stats::model.matrix(tt, mf)
  contr <- attr(X, "contrasts")
  attr(X, "assign") <- NULL
  attr(X, "contrasts") <- NULL
  xlev <- stats::.getXlevels(tt, mf)
  if (is.data.frame(validation)) {
    validation <- formula_validation(validation, tt, xlev, contr, mfcall$offset, ecall)
  }
  if (!is.null(tr)) tr$F <- unname_rows(mf[["(askotch_trend)"]])
  if (!is.null(nzd)) nzd$F <- unname_rows(mf[["(askotch_noise)"]])
  # the mean function and the noise model are krr()'s
  fit <- if (identical(fit_fun, krr.default)) {
    fit_fun(x = X, y = y, validation = validation, weights = w, ...,
            mean = if (is.null(tr)) mean else tr, noise = nzd)
  } else {
    if (!is.null(mean) || !is.null(noise)) {
      abort_askotch("`mean` and `noise` are arguments of krr(), not of this function.",
                    "input", ecall)
    }
    fit_fun(x = X, y = y, validation = validation, weights = w, ...)
  }
  # Keep plain data: do not serialise the caller's environment with the
  # terms (predict() finds variables in `newdata`, functions on the search
  # path).
  tt_pred <- stats::delete.response(tt)
  environment(tt_pred) <- globalenv()
  fit$terms <- tt_pred
  fit$xlevels <- xlev
  fit$contrasts <- contr
  fit$response_name <- deparse(tt[[2L]])
  # the full formula (for update() and formula()), without its environment
  fml <- stats::formula(tt)
  environment(fml) <- globalenv()
  fit$formula <- fml
  fit$offset <- off
  fit$offset_expr <- mfcall$offset
  naf <- if (is.null(mfcall$na.action)) getOption("na.action") else
    tryCatch(eval(mfcall$na.action, env), error = function(e) NULL)
  exclude <- identical(naf, "na.exclude") ||
    identical(naf, stats::na.exclude)
  fit$na.action <- model_exclusions(attr(mf, "na.action"), fit$zero_weight,
                                    nrow(mf), exclude)
  fit$call <- krr_call(mcall)
  fit
}

# A formula fit's validation data frame as list(x, y): its model frame
# with the fit's terms, levels and contrasts, the offset subtracted
formula_validation <- function(validation, tt, xlev, contr, offset, ecall) {
  vd <- validation
  vmf <- tryCatch(
    stats::model.frame(tt, vd, xlev = xlev, na.action = stats::na.pass),
    error = function(e) abort_askotch(sprintf(
      "Cannot build the model frame of `validation`: %s",
      conditionMessage(e)), "input", ecall))
  vy <- stats::model.response(vmf)
  voff <- stats::model.offset(vmf)
  if (!is.null(offset)) {
    voff <- (if (is.null(voff)) 0 else voff) +
      eval_offset(offset, vd, nrow(vmf), "validation")
  }
  if (!is.null(voff)) vy <- subtract_offset(vy, voff, ecall)
  list(x = stats::model.matrix(tt, vmf, contrasts.arg = contr), y = vy)
}

# The mean function of a formula fit evaluated in `data` (NULL for none or
# the constant mean), as an "askotch_trend" that krr.default() takes as is.
formula_trend <- function(mean, mfcall, env, ecall, arg = "mean") {
  if (is.null(mean)) return(NULL)
  check_mean_formula(mean, ecall, arg)
  if (arg == "mean" && trend_constant(mean)) return(NULL)
  data <- if (is.null(mfcall$data)) NULL else eval(mfcall$data, env)
  if (is.null(data)) data <- environment(mean)
  if (is.matrix(data)) data <- as.data.frame(data)
  if (arg == "noise") {
    return(structure(noise_build(mean, data, ecall), class = "askotch_noise"))
  }
  structure(trend_build(mean, data, ecall), class = "askotch_trend")
}

unname_rows <- function(M) {
  rownames(M) <- NULL
  M
}

# Regression response minus a known offset (one value per row).
subtract_offset <- function(y, off, call = NULL) {
  if (!is.numeric(y)) {
    abort_askotch(paste(
      "`offset` (or an offset() term) needs a numeric response (regression),",
      "not a classification."), "input", call)
  }
  if (length(off) != NROW(y) || any(!is.finite(off))) {
    abort_askotch(sprintf(paste(
      "`offset` must be finite with one value per row (%d), not %s."),
      NROW(y), fmt_value(off)), "input", call)
  }
  y - off  # a matrix response: the offset recycles down each column
}

# The offset argument of a formula fit evaluated in new data.
eval_offset <- function(expr, data, n, arg = "newdata") {
  off <- tryCatch(eval(expr, data, globalenv()), error = function(e)
    abort_askotch(sprintf(
      "Cannot evaluate the fit's `offset` (%s) in `%s`: %s",
      paste(deparse(expr), collapse = " "), arg, conditionMessage(e)),
      "input"))
  if (!is.numeric(off) || length(off) != n) {
    abort_askotch(sprintf(paste(
      "The fit's `offset` (%s) evaluated in `%s` must give %d number(s),",
      "not %s."), paste(deparse(expr), collapse = " "), arg, n,
      fmt_value(off)), "input")
  }
  as.numeric(off)
}

# The rows of the data left out of the fit: those removed by na.action and
# those of weight zero (positions among the model frame's rows, mapped back
# to the data's rows), as an "omit" or "exclude" (na.exclude was used)
# object for naresid() / napredict() (NULL when none).
model_exclusions <- function(naa, zero, nmf, exclude) {
  if (length(zero) == 0L) return(naa)
  n_all <- nmf + length(naa)
  kept <- setdiff(seq_len(n_all), as.integer(naa))
  out <- sort(c(as.integer(naa), kept[zero]))
  class(out) <- if (exclude || inherits(naa, "exclude")) "exclude" else "omit"
  out
}

# Turn a "krr" fit made by fit_model() into a "kernel_machine".
as_kernel_machine <- function(fit, dat, set, res) {
  fit$intercept <- set$intercept
  fit$features <- set$features
  class(fit) <- c("kernel_machine", "krr")
  km_fields(fit, res)
}

# The fields a solve sets beyond solve_fields(): the bias, the support
# vectors, the last objective values; in features mode theta replaces the
# weights and the training points are dropped.
km_fields <- function(fit, res) {
  alpha <- res$weights
  cc <- fit_intercept(fit)
  fit$bias <- if (cc > 0) cc * colSums(alpha) else rep(0, ncol(alpha))
  colnames(alpha) <- colnames(fit$weights)
  fit$support <- support_vectors(fit_loss(fit), alpha, fit$lambda)
  tr <- res$trace
  last <- function(v) {
    if (is.null(v) || all(is.na(v))) NA_real_ else utils::tail(v[!is.na(v)], 1L)
  }
  fit$primal <- last(tr$primal)
  fit$dual <- last(tr$dual)
  fit$gap <- last(tr$gap)
  if (fit_features(fit) != 0) {
    theta <- res$theta
    colnames(theta) <- colnames(fit$weights)
    fit$weights <- theta
    fit$x <- NULL
    fit$x_train <- NULL
    fit$y <- NULL
  }
  fit
}

# Support vectors (alpha_i != 0) and those at the bound of the dual box, per
# column, for the losses that have them (NULL otherwise); the bound is the
# compiled loss table's (krr_loss_dual_bound).
support_vectors <- function(loss, alpha, lambda) {
  bound <- native_loss_bound(loss$name, loss_param(loss), lambda)
  if (is.na(bound)) return(NULL)
  a <- abs(alpha)
  scale <- max(a, if (is.finite(bound)) bound else 0, .Machine$double.xmin)
  nz <- a > 1e-12 * scale
  at <- if (is.finite(bound)) a >= bound * (1 - 1e-8) else nz & FALSE
  list(count = colSums(nz), at_bound = colSums(at), any = sum(rowSums(nz) > 0),
       bound = bound)
}
