# Fit settings ------------------------------------------------------------------
#
# Every fit runs from one settings list, made by new_settings() and passed
# along whole (to tune_hyper(), fit_solver(), drive_solver(), the path and
# the GP statistics). It is built either from the user's arguments
# (settings_from_args(): krr(), kernel_machine(), krr(distributed = TRUE))
# or from a fitted object (settings_from_fit(): refit(), the GP
# statistics), and holds:
#   kernel      the kernel object, bandwidth resolved (a number)
#   lambda      the ridge (NA until chosen from the data), lambda_spec its rule
#   solver      the solver spec ("auto" resolved)
#   precision   "double" | "single";  device "cpu" | "cuda"
#   rule        the stop rule (stop_rule()); tol_auto: its tol is automatic
#   loss        the loss object; objective: record primal / dual objectives
#   features    random features M (0: the exact kernel); intercept c (0: none)
#   validation  NULL or the prepared validation set
#   seed, threads, mem_limit, progress, keep_state
#   obs_weights observation weights (NULL: none)
#   select      what tune_select() chooses by likelihood (kernels, scaling)
#   bandwidth_given  whether the bandwidth rule was the user's

# The user's arguments of a fit (krr(), kernel_machine()) as one list: the
# values of the settings' arguments in `env`, and the extras given.
fit_args <- function(env, ...) {
  nms <- c("kernel", "bandwidth", "lambda", "solver", "precision", "device",
           "max_passes", "tol", "time_limit", "validation", "standardize",
           "seed", "progress", "threads", "mem_limit", "keep_state",
           "weights", "features", "intercept", "mean", "likelihood", "noise", "posterior")
  args <- mget(intersect(nms, ls(env)), envir = env)
  extra <- list(...)
  for (nm in names(extra)) args[nm] <- list(extra[[nm]])
  if (is.null(args$intercept)) args$intercept <- FALSE
  args
}

new_settings <- function(kernel, lambda, solver, precision, device, rule, loss,
                         seed, threads = 0L, mem_limit = 0, progress = FALSE,
                         keep_state = FALSE, validation = NULL,
                         lambda_spec = NULL, tol_auto = FALSE, features = 0,
                         intercept = 0, objective = FALSE,
                         obs_weights = NULL) {
  stopifnot(inherits(rule, "askotch_stop_rule"), is.character(precision),
            is.character(device), is.numeric(seed))
  list(kernel = kernel, lambda = lambda, lambda_spec = lambda_spec,
       solver = solver, precision = precision, device = device, rule = rule,
       tol_auto = tol_auto, validation = validation, seed = seed,
       progress = progress, threads = as.integer(threads),
       mem_limit = mem_limit, keep_state = keep_state, loss = loss,
       features = features, intercept = intercept, objective = objective,
       obs_weights = obs_weights)
}

# Settings from the user's arguments `args` (fit_args()): every one checked
# and resolved (the solver's own options are resolved by the compiled code
# when the fit starts). `intercept` is the resolved constant c.
settings_from_args <- function(dat, loss, args, intercept = 0, objective = FALSE,
                               call = NULL) {
  n <- dat$n
  laplace <- is_gp_classifier(args$posterior)
  if (identical(args$posterior, "ep") && n > ep_max_n()) {
    abort_askotch(sprintf(paste(
      "posterior = \"ep\" works with the n x n kernel matrix and is available up to %d",
      "points (option askotch.ep_max_n); with n = %d use posterior = \"laplace\"."),
      ep_max_n(), n), "input", call)
  }
  lspec <- lambda_spec(args$lambda, loss, n, call, laplace)
  precision <- check_choice(args$precision, c("double", "single"), "precision", call)
  tl <- settings_tol(args$tol, lspec$value, dat$Yc, precision, loss, intercept, call)
  res <- check_resources(args, call)
  seed <- check_seed(args$seed, call)
  kern <- if (is_composite_kernel(args$kernel)) {
    settings_composite(args, dat$xs, dat$xnames, seed, loss, dat$standardize, call)
  } else settings_kernel(args, dat$xs, seed, loss, dat$tgt$task, call)
  device <- resolve_device(args$device, n, call)
  sv <- settings_solver(args, n, precision, res$mem_limit, loss, device, lspec,
                        kern, call)
  val <- NULL
  if (!is.null(args$validation)) {
    val <- prepare_validation(args$validation, dat$p, dat$xnames, dat$scaling,
                              dat$tgt, call)
  }
  # a solver that bounds its iterations itself (svrg()'s epochs) is not
  # bounded by max_passes
  max_iter <- solver_max_iter(sv$solver)
  rule <- stop_rule(tl$tol, if (is.finite(max_iter)) Inf else args$max_passes,
                    args$time_limit, n,
                    direct = inherits(sv$solver, "askotch_solver_cholesky"),
                    criterion = loss$criterion, max_iter = max_iter)
  if (!is.finite(rule$max_passes) && !is.finite(args$time_limit) && tl$tol == 0 &&
      !rule$direct && !is.finite(max_iter)) {
    abort_askotch(paste(
      "With `tol = 0`, at least one of `max_passes` and `time_limit` must",
      "be finite."), "input", call)
  }
  set <- new_settings(kern, lspec$value, sv$solver, precision, device, rule, loss, seed,
                      res$threads, res$mem_limit, args$progress, args$keep_state, val,
                      lspec, tl$tol_auto, sv$features, intercept, objective)
  set$tol_rule <- tl$tol_rule
  set$select <- settings_select(args, kern, dat, loss)
  set$bandwidth_given <- isTRUE(args$bandwidth_given)
  set$posterior <- args$posterior
  set
}

# Settings from a fitted object, for the compiled state's solves after the
# fit (refit(), the GP statistics).
settings_from_fit <- function(object, lambda, tol, max_passes, time_limit, progress) {
  rule <- stop_rule(tol, max_passes, time_limit, object$n,
                    direct = inherits(object$solver, "askotch_solver_cholesky"),
                    criterion = fit_loss(object)$criterion)
  new_settings(object$kernel, lambda, object$solver, object$precision,
               object$device, rule, fit_loss(object), object$seed,
               threads = if (is.null(object$threads)) 0L else object$threads,
               mem_limit = if (is.null(object$mem_limit)) 0 else object$mem_limit,
               progress = progress, keep_state = TRUE,
               features = fit_features(object), intercept = fit_intercept(object),
               objective = inherits(object, "kernel_machine"),
               obs_weights = object$obs_weights)
}

# The default tolerance of a precision (a number given by the user, and the
# losses other than the squared)
precision_tol <- function(precision) if (precision == "double") 1e-6 else 1e-4

# The stop rule's tolerance: an automatic rule's for the squared loss
# (tol_rule(); its lambda chosen from the data: tune_hyper() sets it), else
# the user's number or the precision's default.
settings_tol <- function(tol, lambda, Yc, precision, loss, intercept, call) {
  rule <- tol_rule(tol, loss, call)
  if (!is.na(rule)) {
    tol <- if (is.na(lambda)) 1e-3 else
      rule_tol(rule, Yc, lambda, precision, kdiag = 1 + intercept)
  } else if (is.null(tol)) {
    tol <- precision_tol(precision)
  }
  check_tol(tol, call)
  list(tol = tol, tol_auto = !is.na(rule), tol_rule = rule)
}

# The automatic tolerance rules of the squared loss: "uniform" (the default:
# the fitted function near the exact one at every point, auto_tol()) and
# "average" (its fitted values near the exact ones in root mean square,
# average_tol()).
tol_rules <- c("uniform", "average")

# The rule `tol` names (NULL: "uniform" for the squared loss), or NA for a
# number and for the other losses' default (a tolerance on the duality gap).
tol_rule <- function(tol, loss, call) {
  squared <- loss$name == "squared"
  if (is.null(tol)) return(if (squared) "uniform" else NA_character_)
  if (!is.character(tol)) return(NA_character_)
  if (!squared) {
    abort_askotch(sprintf(paste(
      "`tol = %s` names a rule of the squared loss; the %s loss stops on its",
      "relative duality gap: give `tol` as a number."), fmt_value(tol),
      loss$name), "input", call)
  }
  check_choice(tol, tol_rules, "tol", call)
}

# The automatic rule of a fit (validate_krr() checks it; fits made before
# there were two hold none: "uniform").
fit_tol_rule <- function(object) {
  r <- object$tol_rule
  if (is.null(r) || is.na(r)) "uniform" else r
}

# The tolerance of an automatic rule at lambda (`ts`: the targets' scales,
# `n` their rows; a distributed fit passes the reduced ones).
rule_tol <- function(rule, Yc, lambda, precision, kdiag = 1, ts = target_scales(Yc),
                     n = NROW(Yc)) {
  if (identical(rule, "average")) average_tol(precision, ts, n) else
    auto_tol(Yc, lambda, precision, kdiag, ts = ts)
}

# max_passes, time_limit, progress, keep_state checked; threads (0: the
# default) and mem_limit (0: none) resolved.
check_resources <- function(args, call) {
  check_positive(args$max_passes, "max_passes", allow_inf = TRUE, call = call)
  check_positive(args$time_limit, "time_limit", allow_inf = TRUE, call = call)
  check_flag(args$progress, "progress", call)
  check_flag(args$keep_state, "keep_state", call)
  threads <- args$threads
  if (is.null(threads)) threads <- 0L else {
    check_positive(threads, "threads", integerish = TRUE, call = call)
    threads <- threads_cap(threads)
  }
  mem_limit <- args$mem_limit
  if (is.null(mem_limit)) mem_limit <- 0 else {
    check_positive(mem_limit, "mem_limit", call = call)
    mem_limit <- min(mem_limit, 2^60)  # bytes: beyond any machine
  }
  list(threads = threads, mem_limit = mem_limit)
}

# `seed`: NULL (a random one) or a whole number in [0, 2^53)
check_seed <- function(seed, call) {
  if (is.null(seed)) return(floor(stats::runif(1L) * 2^31))
  if (!is.numeric(seed) || length(seed) != 1L || is.na(seed) ||
      seed < 0 || seed >= 2^53 || seed != round(seed)) {
    abort_askotch(sprintf(
      "`seed` must be NULL or a whole number in [0, 2^53), not %s.",
      fmt_value(seed)), "input", call)
  }
  as.numeric(seed)
}

# The kernel object with a numeric bandwidth: "median" resolved here, "ml"
# and "ard" started from it (tune_hyper() chooses them). The default
# bandwidth rule is "median" where maximum likelihood is not available
# (losses other than the squared, observation weights, svrg()) and for
# classification, whose +1/-1 targets the Gaussian likelihood does not
# model (on Fashion-MNIST the likelihood's choice matched the median
# heuristic's accuracy, with a near-interpolating lambda that makes large
# solves slow); kernel = "auto" is resolved by resolve_auto_kernel().
settings_kernel <- function(args, xs, seed, loss, task, call) {
  bw <- args$bandwidth
  w <- args$weights
  laplace <- is_gp_classifier(args$posterior)
  if (laplace) {
    # the GP classifier: the Gaussian kernel, its bandwidth by the Laplace
    # (or EP) marginal likelihood unless given (tune_laplace())
    if (is_auto_kernel(args$kernel)) args$kernel <- "rbf"
    if (!isTRUE(args$bandwidth_given)) bw <- "ml"
  } else if (!isTRUE(args$bandwidth_given) &&
      (loss$name != "squared" || isTRUE(task %in% c("binary", "multiclass")) ||
       (is.numeric(w) && any(w != 1, na.rm = TRUE)) ||
       is_svrg_spec(args$solver))) {
    bw <- "median"
  }
  kern <- as_kernel(resolve_auto_kernel(args$kernel, bw), bw,
                    isTRUE(args$bandwidth_given), call)
  if (!is.character(kern$bandwidth)) {
    kern$bandwidth_rule <- "fixed"
    return(kern)
  }
  if (kern$bandwidth != "median" && loss$name != "squared" &&
      !(laplace && kern$bandwidth == "ml")) {
    abort_askotch(sprintf(paste(
      "`bandwidth = \"%s\"` is only available for the squared loss."),
      kern$bandwidth), "input", call)
  }
  kern$bandwidth_rule <- kern$bandwidth
  kern$bandwidth <- median_bandwidth(xs, kern$metric, seed)
  kern
}

# kernel = "auto": chosen by likelihood among auto_kernels (tune_select())
# when the bandwidth is too ("ml" or "ard"); with a given or
# median-heuristic bandwidth there is no likelihood to choose by, and
# "auto" is the Gaussian kernel (the papers' setting).
resolve_auto_kernel <- function(kernel, bandwidth) {
  if (!is_auto_kernel(kernel)) return(kernel)
  ml <- is.character(bandwidth) && length(bandwidth) == 1L &&
    tolower(bandwidth) %in% c("ml", "ard")
  if (ml) auto_kernels[1L] else "rbf"
}

# whether a `solver` argument asks for svrg() (a spec, the constructor or
# its name), which cannot tune the bandwidth
is_svrg_spec <- function(solver) {
  inherits(solver, "askotch_solver_svrg") || identical(solver, svrg) ||
    (is.character(solver) && length(solver) == 1L && identical(tolower(solver), "svrg"))
}

is_auto_kernel <- function(kernel) {
  is.character(kernel) && length(kernel) == 1L && !is.na(kernel) &&
    tolower(kernel) == "auto"
}

# What tune_select() chooses among: the kernels (kernel = "auto") and the
# scaling (standardize = "auto", an isotropic bandwidth and columns of
# different spread); NULL when nothing is to be chosen.
settings_select <- function(args, kern, dat, loss) {
  if (is_composite_kernel(kern)) return(NULL)
  if (loss$name != "squared" || !kern$bandwidth_rule %in% c("ml", "ard")) return(NULL)
  auto <- is_auto_kernel(args$kernel)
  scaling <- isTRUE(dat$scaling_auto) && kern$bandwidth_rule == "ml" &&
    joint_differs(dat$scaling)
  if (!auto && !scaling) return(NULL)
  list(kernels = if (auto) auto_kernels, scaling = scaling)
}

# The solver spec ("auto" and NULL, the same, resolved) and the random
# features M.
settings_solver <- function(args, n, precision, mem_limit, loss, device, lspec,
                            kern, call) {
  solver <- args$solver
  solver <- if (is.null(solver) || identical(solver, "auto")) {
    auto_solver(n, precision, mem_limit, loss, args$features, device)
  } else as_solver(solver, call)
  check_solver_loss(solver, loss, call)
  # what the spec's fits cannot do (svrg(): refuses "cuda" asked for, not "auto")
  check_solver_settings(solver, lspec, kern, precision, args$device,
                        args$validation, call)
  M <- check_features(args$features, n, call)
  Mb <- spec_features(solver, n)
  if (Mb != 0) { # bcd("random"), svrg(): the spec's features are the fit's
    if (M > 0 && M != Mb) {
      abort_askotch(sprintf(paste(
        "`features` (%s) and the features of `solver` (%s) disagree; give",
        "the number once."), format(M), format(solver)), "input", call)
    }
    M <- Mb
  }
  list(solver = solver, features = M)
}

# The floor of the automatic tolerance: what the precision can reach.
precision_tol_floor <- function(precision) if (precision == "double") 1e-12 else 1e-5

# The default tolerance of the squared loss ("auto"): stop when the fitted
# function is within `frac` standard deviations of the response of the exact
# solution, at every point x. With r = y - (K + lambda I) w, the error
# f - f* = k(., X) (K + lambda I)^{-1} r has RKHS norm^2
# r^T (K + lambda I)^{-1} K (K + lambda I)^{-1} r <= ||r||^2 / (4 lambda)
# (the largest value of s / (s + lambda)^2 over s >= 0), so
# |f(x) - f*(x)| <= sqrt(k(x, x)) ||r|| / (2 sqrt(lambda)) for every x, for
# each output column. The exact criterion of several outputs is the worst
# column's relative residual max_j ||r_j|| / ||y_j||, hence
#   tol = 2 sqrt(lambda) frac min_j (sd(y_j) / ||y_j||) / sqrt(kdiag),
# kept within [floor, 1e-3]: the floor is what the precision can reach
# (1e-12 double, 1e-5 single; where it binds, the bound printed by summary()
# is the one reached). `ts`: the targets' scales (target_scales(); a
# distributed fit reduces them over the ranks).
auto_tol <- function(Yc, lambda, precision, kdiag = 1, frac = 1e-3,
                     ts = target_scales(Yc)) {
  floor <- precision_tol_floor(precision)
  if (!all(is.finite(ts$norm)) || !all(is.finite(ts$sd)) || min(ts$sd) <= 0) {
    return(floor)
  }
  tol <- 2 * sqrt(lambda) * frac * min(ts$sd / ts$norm) / sqrt(kdiag)
  min(max(tol, floor), 1e-3)
}

# The tolerance of the rule "average": stop when the fitted values at the
# training points are within `frac` standard deviations of the response of
# the exact solution's, in root mean square. With r = y - (K + lambda I) w,
# the fitted values' error is K (K + lambda I)^{-1} r, whose matrix has
# eigenvalues s / (s + lambda) < 1, so ||f(X) - f*(X)|| <= ||r|| whatever
# lambda (an intercept's c 1 1^T is part of K; a weighted fit's scaled
# system D K D + lambda I bounds the weighted mean square the same way).
# Per output column, ||r_j|| / sqrt(n) <= frac sd(y_j) holds when
#   tol = frac sqrt(n) min_j (sd(y_j) / ||y_j||),
# which is frac itself for centred targets; kept within [floor, 1e-3]. No
# bound follows at a single new point: for new points x from the training
# points' distribution the mean square error E_x (k(x, X) e)^2,
# e = (K + lambda I)^{-1} r, has ||K e||^2 / n as its sample estimate (an
# approximation, not a bound).
average_tol <- function(precision, ts, n, frac = 1e-3) {
  floor <- precision_tol_floor(precision)
  if (!all(is.finite(ts$norm)) || !all(is.finite(ts$sd)) || min(ts$sd) <= 0) {
    return(floor)
  }
  min(max(frac * sqrt(n) * min(ts$sd / ts$norm), floor), 1e-3)
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
  if (nv < 1L) {
    abort_askotch("`validation$x` must have at least one row.", "input", call)
  }
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

# `intercept`: FALSE / TRUE (c = 1) / a positive number c; returns c (0: none)
check_intercept <- function(intercept, call = NULL) {
  if (is.logical(intercept) && length(intercept) == 1L && !is.na(intercept)) {
    return(if (intercept) 1 else 0)
  }
  if (is.numeric(intercept) && length(intercept) == 1L && !is.na(intercept) &&
      intercept > 0 && is.finite(intercept)) {
    return(as.numeric(intercept))
  }
  abort_askotch(sprintf(
    "`intercept` must be TRUE, FALSE or a positive number, not %s.",
    fmt_value(intercept)), "input", call)
}

# `features`: NULL (0: the exact kernel) or a positive whole number M
check_features <- function(features, n, call = NULL) {
  if (is.null(features)) return(0)
  check_positive(features, "features", integerish = TRUE, call = call)
  if (features >= 2^31) {
    abort_askotch(sprintf("`features` must be below 2^31, not %s.",
                          fmt_value(features)), "input", call)
  }
  as.numeric(features)
}

# The loss must be compiled in and the solver must support it.
check_solver_loss <- function(solver, loss, call = NULL) {
  info <- askotch_info()
  if (!loss$name %in% info$losses) {
    abort_askotch(sprintf(paste(
      "The %s loss is not compiled into this build of askotch (compiled:",
      "%s)."), loss$name, paste(info$losses, collapse = ", ")),
      "not_built", call)
  }
  name <- solver_c(solver)$name
  def <- info$solvers[[name]]
  if (is.null(def)) {
    abort_askotch(sprintf(
      "The solver \"%s\" is not compiled into this build of askotch.", name),
      "not_built", call)
  }
  if (!loss$name %in% def$losses) {
    abort_askotch(sprintf(paste(
      "`solver`: %s does not support the %s loss (it supports: %s); use %s."),
      format(solver), loss$name, paste(def$losses, collapse = ", "),
      if (loss$name == "squared") "askotch()" else "joker()"), "input", call)
  }
  invisible(solver)
}

# The automatic tolerance of a squared-loss fit at lambda (its rule's:
# rule_tol()).
lambda_tol <- function(set, Yc, lambda) {
  rule_tol(set$tol_rule %||% "uniform", Yc, lambda, set$precision,
           kdiag = 1 + set_intercept(set))
}

# The `lambda` argument: list(value = a number (NA when chosen from the
# data), rule = "fixed" | "default" | "ml" | "gcv" | "loo" | "cv" | "path",
# path = the lambdas of a path).
lambda_spec <- function(lambda, loss, n, call = NULL, laplace = FALSE) {
  squared <- loss$name == "squared"
  # the GP classifier's lambda by its marginal likelihood: tune_laplace()
  if (laplace && (is.null(lambda) || identical(lambda, "ml"))) {
    return(list(value = NA_real_, rule = "ml"))
  }
  if (laplace && (length(lambda) > 1L ||
                  (is.character(lambda) && !identical(tolower(lambda), "paper")))) {
    abort_askotch(paste(
      "A GP classifier (posterior = \"laplace\" or \"ep\") chooses `lambda` by its",
      "marginal likelihood (lambda = NULL or \"ml\") or takes one positive number (or",
      "\"paper\")."),
      "input", call)
  }
  if (is.null(lambda)) {
    if (!squared) return(list(value = 1, rule = "fixed"))
    return(list(value = NA_real_, rule = "default"))
  }
  if (is.character(lambda)) {
    key <- if (length(lambda) == 1L && !is.na(lambda)) tolower(lambda) else ""
    if (!key %in% lambda_rules) {
      abort_askotch(sprintf(paste(
        "`lambda` must be a positive number, a vector of positive numbers",
        "(a path) or one of %s, not %s."),
        paste0("\"", lambda_rules, "\"", collapse = ", "), fmt_value(lambda)),
        "input", call)
    }
    if (key == "paper") return(list(value = 1e-6 * n, rule = "fixed"))
    if (!squared && key != "cv") {
      abort_askotch(sprintf(paste(
        "`lambda = \"%s\"` is only available for the squared loss; give a",
        "number, a vector of numbers or \"cv\" for the %s loss."), key, loss$name),
        "input", call)
    }
    return(list(value = NA_real_, rule = key))
  }
  if (is.numeric(lambda) && length(lambda) > 1L) {
    if (any(is.na(lambda)) || any(lambda <= 0) || any(!is.finite(lambda))) {
      abort_askotch(sprintf(
        "Every value of the `lambda` path must be a finite positive number, not %s.",
        paste(format(lambda), collapse = ", ")), "input", call)
    }
    return(list(value = NA_real_, rule = "path",
                path = sort(unique(as.numeric(lambda)), decreasing = TRUE)))
  }
  check_positive(lambda, "lambda", call = call)
  list(value = as.numeric(lambda), rule = "fixed")
}

# A stop rule: the loss's criterion (for the squared loss the relative
# residual of (K + lambda I) w = y; the relative duality gap for other
# losses) below `tol`, confirmed by an exact check (at most once per pass;
# for the squared loss only for n <= option askotch.exact_max_n, above which
# the running estimate decides; the gap is always computed), or
# `max_passes`, or `time_limit` seconds; an exact solver ends with reason
# "exact"; or `max_iter` iterations (reason "max_iter"; svrg()'s epochs).
# The compiled policy decides (krr_stop, src/core/krr.h), at
# iterations fixed by the iteration count alone, so that R, every rank of a
# distributed fit and the C driver stop at the same iteration whatever the
# machine's speed.
stop_rule <- function(tol, max_passes, time_limit, n, direct = FALSE,
                      criterion = "relative residual", max_iter = Inf) {
  structure(list(tol = tol, max_passes = max_passes, time_limit = time_limit,
                 max_iter = max_iter,
                 exact_max_n = getOption("askotch.exact_max_n", 50000),
                 n = n, direct = direct, criterion = criterion),
            class = "askotch_stop_rule")
}

set_intercept <- function(set) if (is.null(set$intercept)) 0 else set$intercept

# the features code of a fit's settings (krr_op_compose): M > 0 random
# features, -1 the linear operator on the points (svrg()'s linear and
# Nystrom features), 0 the exact kernel (krr() sets none)
set_features <- function(set) if (is.null(set$features)) 0 else set$features

# the features of a fit in features: M, or the columns of the points xs
feature_count <- function(set, xs) {
  M <- set_features(set)
  if (M < 0) ncol(xs) else M
}

# Per output column of centred targets: the (population) sd and the norm.
target_scales <- function(Yc) {
  Yc <- as.matrix(Yc)
  list(sd = sqrt(colMeans(sweep(Yc, 2L, colMeans(Yc))^2)),
       norm = sqrt(colSums(Yc^2)))
}
