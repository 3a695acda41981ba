# The fit loop: a solver state in C driven from R in slices ----------------------
#
# The compiled state (one external pointer) is created by state_new(), run by
# drive_solver() until the stop rule says so, and either freed or kept in the
# fit (keep_state = TRUE, for refit()).

# After a slice: the stop reason (NA to go on) and the exact criterion when
# it was computed.  `memo` (an environment) remembers the pass of the last
# exact check; `exact_fn()` computes the exact criterion (one kernel pass).
# The checks happen at iterations fixed by the iteration count alone (the
# compiled step ends a slice at the first iteration whose estimate is below
# `tol`, and slices end at the iterations where a gap check is due), so the
# stopping iteration does not depend on the machine's speed or load.
stop_check <- function(rule, d, t0, memo, exact_fn, deadline = rule$time_limit,
                       final_exact = TRUE) {
  passes <- d[["passes"]]
  iter <- d[["iter"]]
  est <- d[["resid_est"]]
  exact <- NA_real_
  reason <- NA_character_
  memo$floor_exact <- NA_real_
  gap <- rule$criterion != "relative residual"
  # the first gap check after one pass
  if (is.na(memo$due_iter)) memo$due_iter <- ceiling(iters_per_pass(d) - 1e-9)
  due <- gap && iter >= memo$due_iter
  exact_ok <- gap || rule$n <= rule$exact_max_n
  if (d[["done"]] >= 1) {
    reason <- if (rule$direct) "exact" else "tol"
  } else if (!is.null(memo$floor_fn) && iter >= memo$floor_iter &&
             (reason <- floor_check(rule, d, memo, exact_fn, exact_ok,
                                    deadline - (now() - t0))) %in%
             c("tol", "precision")) {
    exact <- memo$floor_exact
  } else if (!is.na(memo$floor_exact)) {
    exact <- memo$floor_exact # a floor check that did not stop (for the trace)
  } else if (due || (is.finite(est) && est <= rule$tol && iter >= memo$next_exact_iter)) {
    # The duality gap is also checked at passes 1, 2, 4, 8, ... (at most
    # log2(passes) extra kernel passes), and for every n: a block method's
    # running estimate (a projected gradient norm) is not on the gap's scale
    # and can level off at its rounding floor above a small `tol`.
    ipp <- iters_per_pass(d)
    if (due) memo$due_iter <- max(2 * iter, 1)
    if (exact_ok) {
      exact <- exact_fn()
      # the next exact check at least a pass later
      memo$next_exact_iter <- iter + max(1, ceiling(ipp - 1e-9))
      if (!is.na(exact) && exact <= rule$tol) reason <- "tol"
    } else {
      reason <- "tol"
    }
  }
  elapsed <- now() - t0 # after the exact check: it counts against time_limit
  if (is.na(reason)) {
    if (isTRUE(memo$exact_cut)) {
      reason <- "time_limit" # the exact check itself ran out of time
    } else if (passes >= rule$max_passes - 1e-9) {
      reason <- "max_passes"
    } else if (elapsed >= deadline) {
      reason <- "time_limit"
    }
  }
  if (!is.na(reason) && is.na(exact) && exact_ok &&
      (final_exact || reason != "time_limit")) {
    exact <- exact_fn()
    # the last iterate meets the tolerance (the running estimate lagged
    # behind): converged, not "max_passes" with a residual below tol
    if (reason %in% c("max_passes", "time_limit") && !is.na(exact) && exact <= rule$tol) {
      reason <- "tol"
    }
  }
  list(reason = reason, exact = exact, elapsed = elapsed)
}

# The precision floor. A solver in floating point computes with a kernel
# matrix K~ whose entries carry rounding errors (of relative size u times the
# squared distances over the bandwidth, u the unit roundoff, and more from
# the sums over p), so it solves (K~ + lambda I) w = y: its iterates reach
# the true relative residual ||(K~ - K) W||_F / ||Y||_F and no lower, whatever
# `tol` asks. In single precision this is often above 1e-5 (Fashion-MNIST at
# n = 5000: 4.7e-5, where every solver levels off at 3e-5 to 4.2e-5). It is
# measured once, at the first stall, as the difference between the
# single- and double-precision products K W, and scaled with ||W|| after
# that. In double precision the model u (||K||_F / sqrt(n) + lambda) ||W||_F
# stands in for it (a double product cannot be checked against a better
# one). Once a pass (at fixed iterations, so the stopping iteration stays
# independent of the machine's speed) the running estimate is compared with
# its best value; when it has not improved by 10% over max(3 passes, 10% of
# the passes) and the exact residual is within `floor_factor` times the
# floor, the fit stops with reason "precision". A budget fit (tol = 0) runs
# its budget.
floor_factor <- 2

# K(x1, x2) v for the fit's kernel: in the fit's precision and device
# (double = FALSE) or in double precision on the CPU
set_kernel_apply <- function(set) {
  function(x1, x2, v, double) {
    if (double) native_kernel_apply(x1, x2, v, set$kernel, threads = set$threads) else
      native_kernel_apply(x1, x2, v, set$kernel, set$precision, set$device, set$threads)
  }
}

# ||(K~ - K) W||_F, K~ the kernel of the fit's precision and device; in
# double precision the model above.
rounding_floor <- function(xs, W, set) {
  if (set$precision == "double") {
    krms <- kernel_rms_norm(xs, set$kernel, as.integer(set$threads), set$seed)
    return(2^-53 * (krms + set$lambda) * sqrt(sum(W^2)))
  }
  kapp <- set_kernel_apply(set)
  sqrt(sum((kapp(xs, xs, W, FALSE) - kapp(xs, xs, W, TRUE))^2))
}
# Falkon in single precision: its criterion is the residual of the normal
# equations H a = b, H = K_nm^T K_nm + lambda K_mm, b = K_nm^T y, whose
# products K_nm a and K_nm^T u run in single precision (everything m x m in
# double): the floor is ||K~_nm^T (K~_nm a) - K_nm^T (K_nm a)|| / ||b||,
# measured the same way (Friedman 1 at n = 2e4, 1401 centres: about 1e-3,
# where single-precision Falkon levelled off and ran to max_passes).
falkon_floor <- function(xs, centers, A, Yc, set) {
  kapp <- set_kernel_apply(set)
  xc <- xs[centers, , drop = FALSE]
  vf <- kapp(xc, xs, kapp(xs, xc, A, FALSE), FALSE)
  vd <- kapp(xc, xs, kapp(xs, xc, A, TRUE), TRUE)
  bn <- sqrt(sum(kapp(xc, xs, Yc, TRUE)^2))
  sqrt(sum((vf - vd)^2)) / max(bn, 1e-300)
}

floor_check <- function(rule, d, memo, exact_fn, exact_ok, time_left = Inf) {
  passes <- d[["passes"]]
  iter <- d[["iter"]]
  est <- d[["resid_est"]]
  memo$floor_exact <- NA_real_
  memo$floor_iter <- iter + max(1, ceiling(iters_per_pass(d) - 1e-9))
  if (!is.finite(est)) return(NA_character_)
  if (is.na(memo$best_est) || est < 0.9 * memo$best_est) {
    memo$best_est <- est
    memo$best_pass <- passes
    return(NA_character_)
  }
  if (passes - memo$best_pass < max(3, 0.1 * passes)) return(NA_character_)
  # the floor and the exact check cost up to three kernel passes: not when
  # the time limit cannot afford them
  if (is.finite(time_left) &&
      (is.na(memo$t_exact) || time_left < 4 * memo$t_exact)) {
    return(NA_character_)
  }
  fl <- floor_factor * memo$floor_fn()
  memo$floor <- fl / floor_factor
  if (est > fl) return(NA_character_)
  if (!exact_ok) return("precision")
  exact <- exact_fn()
  memo$floor_exact <- exact
  memo$next_exact_iter <- iter + max(1, ceiling(iters_per_pass(d) - 1e-9))
  if (!is.na(exact) && exact <= max(fl, rule$tol)) {
    if (exact <= rule$tol) "tol" else "precision"
  } else {
    NA_character_
  }
}

# The floor's constant ||K||_F / sqrt(n) = sqrt(n mean(K_ij^2)), estimated on
# at most 1000 of the standardised points.
kernel_rms_norm <- function(xs, kernel, threads, seed) {
  n <- nrow(xs)
  s <- if (n > 1000L) {
    idx <- with_seed(seed, sample.int(n, 1000L))
    xs[idx, , drop = FALSE]
  } else xs
  K <- native_kernel_matrix(s, s, kernel, threads = threads)
  sqrt(n * mean(K^2))
}

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

# The relative duality gap (P + D) / max(|P|, |D|) of the compiled loss
# table (D: the dual objective the solver minimises, so P + D >= 0).
gap_of <- function(P, D) (P + D) / pmax(abs(P), abs(D), 1e-300)

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

# Fit: a new state, the loop, the results (the state freed unless kept).
# The clock starts before the data are uploaded (time_limit counts it).
fit_solver <- function(xs, Yc, set, tgt) {
  t0 <- now()
  state <- state_new(xs, Yc, set)
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
  res <- drive_solver(state, set, tgt, xs, t0, ynorm = sqrt(sum(Yc^2)))
  keep <- isTRUE(set$keep_state)
  if (keep) res$state <- state
  if (!is.null(min_rank)) res$solver <- set$solver
  res
}

# theta = Z^T alpha (M x m) of a random-features state; with an intercept
# the compiled operator has one more feature, sqrt(c), whose row
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

# Run a state until its stop rule says so; slices of about half a second
# (at most a pass, never beyond max_passes / time_limit), R interrupts
# between slices.
drive_solver <- function(state, set, tgt, xs, t0 = now(), ynorm = NA_real_) {
  rule <- set$rule
  centers <- native_fit_centers(state)  # inducing-point solvers; else integer(0)
  # the relative floor for weights W (see rounding_floor, falkon_floor), or NULL
  floor_of <- NULL
  if (is.finite(ynorm) && ynorm > 0 && !rule$direct && rule$tol > 0 &&
      rule$criterion == "relative residual" && set_intercept(set) == 0 &&
      length(set$obs_weights) == 0L) {
    if (length(centers) == 0L && set_features(set) == 0) {
      floor_of <- function(W) rounding_floor(xs, W, set) / ynorm
    } else if (length(centers) > 0L && set$precision == "single" &&
               solver_c(set$solver)$name == "falkon" &&
               (!is.null(tgt$Y) || !is.null(tgt$Yc))) {
      # the tuning loops pass the fold's (centred) targets as tgt$Yc
      Yc <- if (!is.null(tgt$Yc)) tgt$Yc else loss_targets(set$loss, tgt, TRUE)$Yc
      floor_of <- function(W) falkon_floor(xs, centers, W, Yc, set)
    }
  }
  # measured once, then scaled with ||W||
  floor_fn <- if (!is.null(floor_of)) function() {
    W <- native_fit_weights(state)
    wn <- sqrt(sum(W^2))
    if (is.null(memo$floor_per_w)) memo$floor_per_w <- floor_of(W) / max(wn, 1e-300)
    memo$floor_per_w * wn
  }
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
  obj_now <- c(NA_real_, NA_real_)
  # The compiled code stops at the deadline: in the setup with
  # askotch_error_time_limit, iterations at the end of an iteration, and an
  # exact check (counted inside time_limit) with NA.
  set_deadline <- function(limit) {
    native_fit_deadline(state, limit - (now() - t0))
  }
  if (is.finite(rule$time_limit)) {
    on.exit(native_fit_deadline(state, Inf), add = TRUE)
  }
  exact_fn <- function() {
    te <- now()
    on.exit(memo$t_exact <- now() - te)
    if (is.finite(rule$time_limit)) set_deadline(rule$time_limit)
    tryCatch({
      if (!objective) return(native_fit_residual(state))
      pd <- native_fit_objective(state)
      obj_now <<- pd
      if (set$loss$name == "squared") native_fit_residual(state) else
        gap_of(pd[[1L]], pd[[2L]])
    }, askotch_error_time_limit = function(e) {
      memo$exact_cut <- TRUE
      NA_real_
    })
  }
  step <- function(slice) {
    if (is.finite(rule$time_limit)) set_deadline(deadline)
    tryCatch(
      native_fit_step(state, slice, rule$tol, memo$next_exact_iter),
      askotch_error_time_limit = function(e) {
        abort_askotch(c(
          sprintf(paste("The setup of solver `%s` did not finish within `time_limit` =",
                        "%g s: %s."), solver_c(set$solver)$name, rule$time_limit,
                  conditionMessage(e)),
          paste("Use a larger `time_limit`, or a smaller problem (fewer",
                "points, or a smaller block size, rank or number of",
                "centres).")), "time_limit")
      })
  }
  pb <- NULL
  if (set$progress) {
    total <- if (is.finite(rule$max_passes)) rule$max_passes else NA
    pb <- cli::cli_progress_bar(
      name = "krr", total = total, clear = TRUE,
      format = paste("{cli::pb_name}{cli::pb_bar} passes {cli::pb_current}",
                     "| {cli::pb_elapsed} | {cli::pb_status}"),
      format_done = "", .envir = environment())
  }
  memo <- new.env(parent = emptyenv())
  memo$next_exact_iter <- 0
  memo$due_iter <- NA_real_
  memo$t_exact <- NA_real_
  memo$exact_cut <- FALSE
  memo$floor_fn <- floor_fn
  memo$floor_iter <- 0
  memo$best_est <- NA_real_
  memo$floor_exact <- NA_real_
  # With a time limit the final exact check (one kernel pass) is part of the
  # budget: the iterations stop early enough for it, or, when it would take
  # more than half the limit, it is skipped (the estimate is reported).
  deadline <- rule$time_limit
  final_exact <- TRUE
  rows <- vector("list", 64L)
  vrows <- vector("list", 64L)
  nrow_trace <- 0L
  slice <- 1
  # seconds per slice (R checks for interrupts between slices); a slice's
  # length never changes the fit
  slice_s <- getOption("askotch.slice_seconds", 0.5)
  per_iter <- NA_real_
  last_val_pass <- -Inf
  repeat {
    ts <- now()
    d <- step(slice)
    if (rule$criterion == "relative residual" && is.finite(d[["resid_est"]]) &&
        d[["resid_est"]] > 1e8) {
      diverged(d, solver_c(set$solver)$name)
    }
    dt <- now() - ts
    pi_new <- max(dt, 1e-4) / slice
    per_iter <- if (is.na(per_iter)) pi_new else 0.5 * per_iter + 0.5 * pi_new
    passes <- d[["passes"]]
    if (is.finite(rule$time_limit) && !rule$direct &&
        (rule$criterion != "relative residual" || rule$n <= rule$exact_max_n)) {
      t_chk <- if (is.finite(memo$t_exact)) memo$t_exact else
        per_iter * iters_per_pass(d)
      final_exact <- t_chk <= 0.5 * rule$time_limit
      deadline <- if (final_exact) rule$time_limit - t_chk else rule$time_limit
    }
    chk <- stop_check(rule, d, t0, memo, exact_fn, deadline, final_exact)
    elapsed <- chk$elapsed
    vm <- NA_real_
    if (!is.null(val_metric) && (!is.na(chk$reason) || passes - last_val_pass >= 1)) {
      vm <- val_metric()
      last_val_pass <- passes
    }
    nrow_trace <- nrow_trace + 1L
    if (nrow_trace > length(rows)) length(rows) <- 2L * length(rows)
    if (length(set$path) > 1L) { # a path: each lambda's metric; the trace the best
      if (nrow_trace > length(vrows)) length(vrows) <- 2L * length(vrows)
      vrows[[nrow_trace]] <- if (length(vm) > 1L) vm else rep(NA_real_, length(set$path))
      vm <- if (all(is.na(vm))) NA_real_ else
        if (set$validation$metric == "rmse") min(vm) else max(vm)
    }
    rows[[nrow_trace]] <- c(d[["iter"]], passes, now() - t0, d[["resid_est"]],
                            d[["block_resid"]], chk$exact, vm,
                            if (objective) obj_now)
    obj_now <- c(NA_real_, NA_real_)
    if (!is.null(pb)) {
      cli::cli_progress_update(
        id = pb, set = min(round(passes, 2), if (is.finite(rule$max_passes))
          rule$max_passes else passes),
        status = sprintf("%s %.2e", rule$criterion, d[["resid_est"]]),
        .envir = environment())
    }
    if (!is.na(chk$reason)) break
    ipp <- iters_per_pass(d)
    slice <- max(1, min(floor(slice_s / per_iter), ceiling(ipp - 1e-9)))
    if (rule$criterion != "relative residual" && !is.na(memo$due_iter)) {
      # end the slice where the next gap check is due
      slice <- min(slice, max(1, memo$due_iter - d[["iter"]]))
    }
    if (!is.null(floor_fn)) {
      # end the slice where the next precision-floor check is due
      slice <- min(slice, max(1, memo$floor_iter - d[["iter"]]))
    }
    if (is.finite(rule$max_passes)) {
      slice <- min(slice, max(1, ceiling((rule$max_passes - passes) * ipp - 1e-9)))
    }
    if (is.finite(rule$time_limit)) {
      slice <- min(slice, max(1, floor((deadline - elapsed) / per_iter)))
    }
    slice <- min(slice, 1e6)
  }
  if (!is.null(pb)) cli::cli_progress_done(id = pb, .envir = environment())
  W <- native_fit_weights(state)
  tr <- do.call(rbind, rows[seq_len(nrow_trace)])
  trace <- data.frame(iteration = as.integer(tr[, 1L]), passes = tr[, 2L],
                      seconds = tr[, 3L], resid_est = tr[, 4L],
                      block_resid = tr[, 5L], resid_exact = tr[, 6L],
                      validation = tr[, 7L])
  if (objective) {
    # P, and the dual objective -D (D is the dual the solver minimises):
    # primal >= dual, both equal at the solution
    trace$primal <- tr[, 8L]
    trace$dual <- -tr[, 9L]
    trace$gap <- gap_of(tr[, 8L], tr[, 9L])
  }
  list(weights = W, trace = trace, reason = chk$reason,
       iterations = as.integer(d[["iter"]]), passes = d[["passes"]],
       seconds = now() - t0, resid_est = d[["resid_est"]],
       resid_exact = chk$exact,
       resid_floor = if (is.null(memo$floor)) NA_real_ else memo$floor,
       centers = centers,
       options = native_fit_options(state), extras = d,
       theta = if (set_features(set) > 0) features_theta(state, set_features(set)),
       path_validation = if (length(set$path) > 1L && !is.null(val_metric))
         do.call(rbind, vrows[seq_len(nrow_trace)]))
}

# A solve whose result is as accurate as asked, or as its precision allows
solve_reached <- function(reason) reason %in% c("tol", "exact", "precision")

# the columns of each of L lambdas for m outputs (list of L index vectors)
path_columns <- function(m, L) lapply(seq_len(L), function(l) (l - 1L) * m + seq_len(m))

# The fit's solver state: the kept one when alive, else a new one built from
# the fit's own data and options (the same centres and resolved choices).
krr_state <- function(object) {
  if (state_alive(object$state)) return(object$state)
  xs <- if (is.null(object$x_train)) object$x else object$x_train
  set <- settings_from_fit(object, object$lambda, object$tol, object$max_passes,
                      object$time_limit, FALSE)
  tgt <- list(task = object$task, Y = object$y)
  state_new(xs, loss_targets(set$loss, tgt, set$intercept == 0,
                             set$obs_weights)$Yc, set)
}

# TRUE when a kept state is alive (not freed, not read back from a file)
state_alive <- function(state) !is.null(state) && native_fit_alive(state)
