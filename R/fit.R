# The fit loop: a solver state in C driven from R in slices ----------------------
#
# The compiled state (one external pointer) is created by state_new(), run by
# drive_solver() until the stop rule says so, and either freed or kept in the
# fit (keep_state = TRUE, for refit()).

# The rule as the compiled policy's numbers (see ffi_fit_stop), the fit's
# clock started at t0.
stop_numbers <- function(rule, t0, use_floor, objective) {
  gap <- rule$criterion != "relative residual"
  as.numeric(c(rule$tol, rule$max_passes, rule$time_limit, now() - t0, gap,
               gap || rule$n <= rule$exact_max_n, rule$direct, use_floor,
               objective, rule$max_iter %||% Inf))
}

# The precision floor. A solver in floating point computes with a kernel
# matrix K~ whose entries carry rounding errors, so its true relative
# residual levels off at ||(K~ - K) W||_F / ||Y||_F and no lower, whatever
# `tol` asks. The compiled policy (src/core/solvers/stop.c) decides where
# this applies, measures the floor on the state's own points at the first
# stall and stops the fit with reason "precision" when the exact residual
# is within twice the floor; R only says whether a solve may stop there
# (stop_numbers()'s use_floor) and reads the floor back (resid_floor).

# The bound on |f(x) - f*(x)| (response units, every x) of each output that
# a relative residual `resid` gives (see auto_tol()): the worst column's
# (per_column, the exact criterion) or the Frobenius one (the running
# estimate, which bounds every column's ||r_j|| by resid ||Y||_F).
pred_error_bound <- function(resid, Yc, lambda, kdiag = 1, per_column = TRUE,
                             nrm = target_scales(Yc)$norm) {
  scale <- if (per_column) nrm else rep(sqrt(sum(nrm^2)), length(nrm))
  resid * scale * sqrt(kdiag) / (2 * sqrt(lambda))
}

# iterations per pass of a solver's diagnostics (n / b for block methods)
iters_per_pass <- function(d) d[["iter"]] / max(d[["passes"]], 1e-12)

# A compiled solver state for standardised points xs and targets Yc.
state_new <- function(xs, Yc, set) {
  sc <- solver_c(set$solver)
  opts <- c(sc$options, list(seed = set$seed),
            if (set$mem_limit > 0) list(mem_limit = set$mem_limit))
  native_fit_init(xs, Yc, set$kernel, set$lambda, set$precision, set$device,
                  sc$name, opts, set$loss$name, loss_param(set$loss),
                  set_features(set), set_intercept(set), set$obs_weights,
                  set$threads)
}

# The solve of a fit's settings: fit_solver(), or a spec's own steps around
# it (svrg(): its Nystrom features, its trace of one row per epoch).
solve_spec <- function(spec, xs, Yc, set, tgt) UseMethod("solve_spec")
#' @export
solve_spec.default <- function(spec, xs, Yc, set, tgt) fit_solver(xs, Yc, set, tgt)

# Fit: a new state, the loop, the results (the state freed unless kept).
# The clock starts before the data are uploaded (time_limit counts it).
fit_solver <- function(xs, Yc, set, tgt) {
  t0 <- now()
  state <- state_auto_new(xs, Yc, set)
  set$solver <- state$solver
  state <- state$state
  min_rank <- attr(set$solver, "auto_min_rank")
  if (!is.null(min_rank)) {
    # solver = "auto" above auto_pcg_max_n(): PCG only at the rank its
    # memory budget allows (resolved by the compiled solver), else ASkotch
    attr(set$solver, "auto_min_rank") <- NULL
    if (native_fit_options(state)$rank < min_rank) {
      native_fit_free(state)
      set$solver <- askotch()
      state <- state_new(xs, Yc, set)
    }
  }
  keep <- FALSE
  on.exit(if (!keep) native_fit_free(state), add = TRUE)
  # a known solution to start from (the GP classifier's mode, R/laplace.R)
  if (!is.null(set$start_weights)) native_fit_set_weights(state, set$start_weights)
  res <- drive_solver(state, set, tgt, xs, t0, use_floor = TRUE)
  keep <- isTRUE(set$keep_state)
  if (keep) res$state <- state
  res$solver <- set$solver
  res
}

# A new state for solver = "auto": when the compiled solver refuses the
# chosen one's memory (dcd()'s n x n kernel matrix), the solver marked as its
# fallback (attribute "auto_fallback"); list(state, solver).
state_auto_new <- function(xs, Yc, set) {
  fallback <- attr(set$solver, "auto_fallback")
  attr(set$solver, "auto_fallback") <- NULL
  if (is.null(fallback)) return(list(state = state_new(xs, Yc, set), solver = set$solver))
  tryCatch(list(state = state_new(xs, Yc, set), solver = set$solver),
           askotch_error_memory = function(e) {
             set$solver <- fallback
             list(state = state_new(xs, Yc, set), solver = fallback)
           })
}

# theta = Z^T alpha (M x m) of a state in features (M random features, or
# the M columns of the linear operator's points); with an intercept the
# compiled operator has one more feature, sqrt(c), whose row
# (sqrt(c) colSums(alpha)) gives the bias, added separately
features_theta <- function(state, M) {
  theta <- native_fit_features_theta(state)
  theta[seq_len(M), , drop = FALSE]
}

# The points a live state's weights belong to: its centres among the
# training points xs (inducing-point solvers), else all of them.
state_points <- function(state, xs) {
  cen <- native_fit_centers(state)
  if (length(cen) > 0L) xs[cen, , drop = FALSE] else xs
}

# The rows of the weights W (n x m) with a nonzero entry, when they are at
# most 90% of the rows -- the support vectors of a hinge, squared-hinge or
# SVR fit: a kernel product over those rows alone has the same sums (in
# another order).  NULL: all rows.
nonzero_rows <- function(W) {
  nz <- which(rowSums(W != 0 | is.na(W)) > 0)  # NaN weights stay visible
  if (length(nz) > 0.9 * nrow(W)) return(NULL)
  if (length(nz) == 0L) 1L else nz
}

# Scores of a live state at standardised points xnew (the constant added
# back to regression targets not included): K(xnew, X) w, or in features
# mode z(xnew)^T theta, plus c * colSums(w) with an intercept.
state_scores <- function(state, set, xnew, xpred) {
  w <- native_fit_weights(state)
  M <- set_features(set)
  if (M > 0) {
    theta <- features_theta(state, M)
    s <- native_features_apply(xnew, theta, set$kernel, M, set$seed, set$precision,
                               set$threads)
  } else {
    nz <- nonzero_rows(w)
    ws <- if (is.null(nz)) w else w[nz, , drop = FALSE]
    if (!is.null(nz)) xpred <- xpred[nz, , drop = FALSE]
    s <- native_kernel_apply(xnew, xpred, ws, set$kernel, set$precision, set$device,
                             set$threads)
  }
  cc <- set_intercept(set)
  if (cc > 0) s <- sweep(s, 2L, cc * colSums(w), "+", check.margin = FALSE)
  s
}

# The validation metric closure of a state
# (a lambda path solved at once, set$path: one value per lambda, from the
# columns of that lambda)
validation_fn <- function(state, set, tgt, xpred, y_center) {
  val <- set$validation
  if (is.null(val)) return(NULL)
  metric <- function(s) {
    if (val$metric == "rmse") {
      s <- sweep(s, 2L, y_center, "+", check.margin = FALSE)
      sqrt(mean((s - val$y)^2))
    } else {
      mean(as.character(scores_to_class(s, tgt$levels)) == val$y)
    }
  }
  function() {
    s <- state_scores(state, set, val$x, xpred)
    L <- length(set$path)
    if (L < 2L) return(metric(s))
    vapply(path_columns(ncol(s) / L, L), function(j) metric(s[, j, drop = FALSE]), 0)
  }
}

# The relative residual above which a spec's iterations diverge (1e8; the
# methods: svrg(), whose dual residual starts at ||Z Z^T y|| / (lambda ||y||)
# and whose compiled solver reports a non-finite criterion itself)
diverge_level <- function(spec) UseMethod("diverge_level")
#' @export
diverge_level.default <- function(spec) 1e8

# A relative residual above 1e8 (it is 1 at the zero start): the iterations
# diverge, which only a step size too large for the problem does (EigenPro's
# step from a subsample's eigenvalues can be, with a small subsample and many
# corrected directions). An error, not a fit with a residual of 1e38.
diverged <- function(d, solver) {
  abort_askotch(c(
    sprintf("The iterations diverged (relative residual %.3g after %s passes).",
            d[["resid_est"]], format(signif(d[["passes"]], 3))),
    if (solver %in% c("eigenpro", "eigenpro3")) paste(
      "EigenPro's step size, estimated from the eigenvalues of a subsample, is",
      "too large here: use a larger `subsample`, a smaller `rank`, or a",
      "smaller `step`.") else
      "Try another solver (solver = \"pcg\" or \"cholesky\") or a larger `lambda`."),
    "numeric")
}

# One call of the compiled loop (krr_solver_run): up to `slice` iterations,
# ending at a check that ran or at the policy's reason.
run_slice <- function(state, set, slice) {
  rule <- set$rule
  r <- tryCatch(
    native_fit_run(state, slice),
    askotch_error_time_limit = function(e) {
      abort_askotch(c(
        sprintf(paste("The setup of solver `%s` did not finish within `time_limit` =",
                      "%g s: %s."), solver_c(set$solver)$name, rule$time_limit,
                conditionMessage(e)),
        paste("Use a larger `time_limit`, or a smaller problem (fewer",
              "points, or a smaller block size, rank or number of",
              "centres).")), "time_limit")
    })
  for (k in c("exact", "floor")) if (is.nan(r[[k]])) r[[k]] <- NA_real_
  r$objective[is.nan(r$objective)] <- NA_real_
  r
}

# Run a state until its stop rule says so (the compiled policy decides:
# stop_rule()); R runs slices of about half a second (at most a pass) and
# between them checks for interrupts, updates the progress bar, computes the
# validation metric (at most once a pass) and records the trace. use_floor =
# TRUE lets the solve stop at the precision floor where the compiled policy
# finds that it applies.
drive_solver <- function(state, set, tgt, xs, t0 = now(), use_floor = FALSE) {
  rule <- set$rule
  centers <- native_fit_centers(state)  # inducing-point solvers; else integer(0)
  # (a promise: read only with a validation set -- a distributed fit's
  # centres are global rows, not rows of this rank's xs)
  val_metric <- validation_fn(state, set, tgt,
                              if (length(centers) > 0L) xs[centers, , drop = FALSE] else xs,
                              loss_targets(set$loss, tgt,
                                           set_intercept(set) == 0,
                                           set$obs_weights)$y_center)
  # kernel_machine() fits record the primal and dual objectives at each
  # exact check (krr() fits keep their trace as it was)
  objective <- isTRUE(set$objective) && length(centers) == 0L
  native_fit_stop(state, stop_numbers(rule, t0, use_floor, objective))
  pb <- progress_start(set)
  tr <- trace_rows()
  slice <- 1
  # seconds per slice (R checks for interrupts between slices); a slice's
  # length never changes the fit
  slice_s <- getOption("askotch.slice_seconds", 0.5)
  per_iter <- NA_real_
  last_val_pass <- -Inf
  iter0 <- 0
  repeat {
    ts <- now()
    r <- run_slice(state, set, slice)
    d <- r$diag
    if (rule$criterion == "relative residual" && is.finite(d[["resid_est"]]) &&
        d[["resid_est"]] > diverge_level(set$solver)) {
      diverged(d, solver_c(set$solver)$name)
    }
    pi_new <- max(now() - ts, 1e-4) / max(1, d[["iter"]] - iter0)
    per_iter <- if (is.na(per_iter)) pi_new else 0.5 * per_iter + 0.5 * pi_new
    iter0 <- d[["iter"]]
    passes <- d[["passes"]]
    vm <- NA_real_
    # (a pass apart up to rounding: a solver counting one pass per iteration
    # plus a fractional setup must be checked at every iteration)
    if (!is.null(val_metric) && (!is.na(r$reason) || passes - last_val_pass >= 1 - 1e-9)) {
      vm <- val_metric()
      last_val_pass <- passes
    }
    tr$add(d, now() - t0, r$exact, vm, if (objective) r$objective, set)
    progress_update(pb, rule, d)
    if (!is.na(r$reason)) break
    slice <- max(1, min(floor(slice_s / per_iter), ceiling(iters_per_pass(d) - 1e-9), 1e6))
  }
  if (!is.null(pb)) cli::cli_progress_done(id = pb$id, .envir = environment())
  list(weights = native_fit_weights(state), trace = tr$frame(objective),
       reason = r$reason,
       iterations = as.integer(d[["iter"]]), passes = d[["passes"]],
       seconds = now() - t0, resid_est = d[["resid_est"]],
       resid_exact = r$exact, resid_floor = r$floor,
       centers = centers,
       options = native_fit_options(state), extras = d,
       theta = if (set_features(set) != 0) features_theta(state, feature_count(set, xs)),
       vectors = native_fit_vectors(state),
       path_validation = if (length(set$path) > 1L && !is.null(val_metric)) tr$path())
}

# A cli progress bar of a fit (NULL without progress = TRUE), and its update
# after a slice. Its total is the passes the fit is expected to need: from
# the rate at which the log residual has fallen since the first update, the
# passes to reach the tolerance (at most max_passes; max_passes until there
# is a rate). The line stays short (under 80 columns with cli's bar).
progress_start <- function(set, envir = parent.frame()) {
  if (!set$progress) return(NULL)
  rule <- set$rule
  total <- if (is.finite(rule$max_passes)) rule$max_passes else NA
  pb <- new.env(parent = emptyenv())
  pb$id <- cli::cli_progress_bar(
    name = "krr", total = total, clear = TRUE,
    format = paste("{cli::pb_name}{cli::pb_bar} {cli::pb_current}/{cli::pb_total} passes",
                   "| {cli::pb_elapsed} | {cli::pb_status}"),
    format_done = "", .envir = envir)
  pb
}
progress_update <- function(pb, rule, d, envir = parent.frame()) {
  if (is.null(pb)) return(invisible())
  passes <- round(d[["passes"]], 2)
  r <- d[["resid_est"]]
  if (is.null(pb$p1) && passes > 0 && is.finite(r) && r > 0) {
    pb$p1 <- passes
    pb$r1 <- r
  }
  total <- progress_total(pb, rule, passes, r)
  cli::cli_progress_update(
    id = pb$id, set = min(passes, total, na.rm = TRUE), total = total,
    status = sprintf("%s %.1e", if (rule$criterion == "relative residual") "resid" else
      rule$criterion, r), .envir = envir)
}
progress_total <- function(pb, rule, passes, r) {
  mp <- if (is.finite(rule$max_passes)) rule$max_passes else NA_real_
  tol <- rule$tol
  if (is.null(pb$p1) || passes <= pb$p1 || !is.numeric(tol) || !(tol > 0) ||
      !is.finite(r) || !(r > 0)) return(mp)
  rate <- (log(r) - log(pb$r1)) / (passes - pb$p1)
  if (!(rate < 0)) return(mp)
  # above the current passes: cli ends a bar whose count reaches its total
  est <- round(max(passes + 0.1, passes + (log(tol) - log(r)) / rate), 1)
  min(est, mp, na.rm = TRUE)
}

# The trace of a fit, one row per slice: add() a row (for a lambda path the
# best lambda's validation metric, each lambda's kept for path()), frame()
# the data frame (with the primal, dual and gap of kernel_machine() fits).
trace_rows <- function() {
  rows <- vector("list", 64L)
  vrows <- vector("list", 64L)
  n <- 0L
  add <- function(d, seconds, exact, vm, obj, set) {
    n <<- n + 1L
    if (n > length(rows)) length(rows) <<- 2L * length(rows)
    if (length(set$path) > 1L) {
      if (n > length(vrows)) length(vrows) <<- 2L * length(vrows)
      vrows[[n]] <<- if (length(vm) > 1L) vm else rep(NA_real_, length(set$path))
      vm <- if (all(is.na(vm))) NA_real_ else
        if (set$validation$metric == "rmse") min(vm) else max(vm)
    }
    rows[[n]] <<- c(d[["iter"]], d[["passes"]], seconds, d[["resid_est"]],
                    d[["block_resid"]], exact, vm, obj)
  }
  frame <- function(objective) {
    tr <- do.call(rbind, rows[seq_len(n)])
    trace <- data.frame(iteration = as.integer(tr[, 1L]), passes = tr[, 2L],
                        seconds = tr[, 3L], resid_est = tr[, 4L],
                        block_resid = tr[, 5L], resid_exact = tr[, 6L],
                        validation = tr[, 7L])
    if (objective) {
      # P, and the dual objective -D (D is the dual the solver minimises):
      # primal >= dual, both equal at the solution; the relative duality
      # gap as the compiled loss table computes it (krr_duality_gap)
      trace$primal <- tr[, 8L]
      trace$dual <- -tr[, 9L]
      trace$gap <- tr[, 10L]
    }
    trace
  }
  path <- function() do.call(rbind, vrows[seq_len(n)])
  list(add = add, frame = frame, path = path)
}

# A solve whose result is as accurate as asked, or as its precision allows
solve_reached <- function(reason) reason %in% c("tol", "exact", "precision")

# the columns of each of L lambdas for m outputs (list of L index vectors)
path_columns <- function(m, L) lapply(seq_len(L), function(l) (l - 1L) * m + seq_len(m))

# The fit's solver state: the kept one when alive, else a new one built from
# the fit's own data and options (the same centres and resolved choices),
# for the targets Y when given (the solver sizes its setup, e.g. PCG's
# automatic rank, for Y's columns), else the fit's own.
krr_state <- function(object, Y = NULL) {
  if (state_alive(object$state)) return(object$state)
  xs <- if (is.null(object$x_train)) object$x else object$x_train
  set <- settings_from_fit(object, object$lambda, object$tol, object$max_passes,
                      object$time_limit, FALSE)
  if (is.null(Y)) {
    tgt <- list(task = object$task, Y = object$y)
    Y <- loss_targets(set$loss, tgt, set$intercept == 0, set$obs_weights)$Yc
  }
  state_new(xs, Y, set)
}

# TRUE when a kept state is alive (not freed, not read back from a file)
state_alive <- function(state) !is.null(state) && native_fit_alive(state)
