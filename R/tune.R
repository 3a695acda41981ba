# Choosing lambda, the bandwidth and length scales: maximum likelihood, GCV,
# LOO and K-fold CV ---------------------------------------------------------------
#
# krr(lambda = ..., bandwidth = ...) reads a specification (lambda_spec(),
# and the kernel's bandwidth rule), and fit_model() calls tune_hyper() between
# the settings and the solve. The result of a selection is stored in the fit
# as `fit$tuning`.

lambda_rules <- c("ml", "gcv", "loo", "cv", "paper")

# The default lambda path for lambda = "cv": noise-to-signal ratios.
default_lambda_path <- function() 10^seq(-6, 1, by = 0.5)

cv_folds <- function() {
  k <- getOption("askotch.cv_folds", 5L)
  if (!is.numeric(k) || length(k) != 1L || !is.finite(k) || k < 2 || k != round(k)) {
    abort_askotch(paste("option `askotch.cv_folds` must be a whole number of",
                        "folds, at least 2."), "input")
  }
  as.integer(k)
}

# The smallest lambda chosen from the data in single precision.
single_lambda_floor <- 1e-5

# lambda chosen from the data, raised to single_lambda_floor in single
# precision (which cannot factor or solve K + lambda I reliably below its
# rounding level); a path's lambdas are the user's
lambda_floored <- function(set, lambda) {
  if (set$precision == "single" && set$lambda_spec$rule != "path") {
    lambda <- max(lambda, single_lambda_floor)
  }
  lambda
}

# The relative duality gap to which cross-validation solves the folds of the
# losses other than the squared (at least; the fit's tol when larger): their
# held-out error rates then differ from converged fits' by far less than the
# rates' own sampling error (spam and Pima: at most 0.35 standard errors,
# inst/bench/RESULTS.md), at half the cost or less.
cv_fold_gap_tol <- function() {
  number_option("askotch.cv_gap_tol", 1e-3, function(g) g > 0 && g < 1, "in (0, 1)")
}

# The default lambda path of lambda = "cv" for the losses other than the
# squared: C = 1 / lambda from 0.1 to 1000, LIBSVM's usual range (Hsu, Chang
# and Lin's guide), where Joker converges in a few passes.
default_loss_lambda_path <- function() 10^seq(1, -3, by = -0.5)

# lambda = "cv" or a path for the other losses: K-fold cross-validation of
# the held-out classification error (regression losses: squared error),
# each fold's path warm-started from the largest lambda (cv_path()).
tune_loss_cv <- function(dat, set) {
  ls <- set$lambda_spec
  lams <- sort(if (ls$rule == "cv") default_loss_lambda_path() else ls$path,
               decreasing = TRUE)
  t0 <- now()
  path <- cv_path(dat$xs, dat$Yc, dat$tgt$task, set$kernel, lams, set)
  lambda <- path$lambda[which.min(path$cv)]
  path$selected <- path$lambda == lambda
  set$lambda <- lambda
  set$rule$time_limit <- max(set$rule$time_limit - (now() - t0),
                             set$rule$time_limit / 10)
  tuning <- list(lambda_rule = ls$rule, bandwidth_rule = set$kernel$bandwidth_rule,
                 n_used = dat$n, n_total = dat$n, path = path)
  list(dat = dat, set = set, tuning = tuning)
}

# Hyperparameter selection before the solve: returns dat (with the length
# scales folded into the scaling), set (with lambda and the kernel's
# bandwidth) and the tuning record.
tune_hyper <- function(dat, set, call = NULL) {
  ls <- set$lambda_spec
  bw_rule <- set$kernel$bandwidth_rule
  if (is_gp_classifier(set$posterior)) return(tune_laplace(dat, set))
  if (ls$rule == "fixed" && !bw_rule %in% c("ml", "ard") && is.null(dat$noise)) {
    return(list(dat = dat, set = set, tuning = NULL))
  }
  if (is_composite_kernel(set$kernel)) return(tune_composite(dat, set, call))
  if (set$loss$name != "squared") return(tune_loss_cv(dat, set))
  scale0 <- dat$scaling$scale
  sub <- tune_data(dat, set, call)
  if (!is.null(sub$noise_gp)) noise_gp_check(sub, set, call)
  clock <- tune_clock(set)
  sl <- tune_select(dat, set, sub, clock)
  dat <- sl$dat
  set <- sl$set
  sub <- sl$sub
  ml <- tune_ml(dat, set, sub, clock, sl)
  if (!is.null(sub$noise_gp)) ml <- noise_gp_tune(ml, sub, set, clock)
  kern <- ml$kernel
  ell <- ml$length_scales
  lambda <- ml$lambda
  # the full data (with the length scales) for CV
  xs_all <- if (is.null(ell)) dat$xs else
    sweep(dat$xs, 2L, ell, "/", check.margin = FALSE)
  by_validation <- ls$rule == "path" && path_solver(set$solver) && !is.null(set$validation)
  path <- NULL
  if (by_validation) {
    # the path is solved at once on all the data and the validation set
    # chooses (fit_path()); no cross-validation
    lambda <- max(ls$path)
  } else if (ls$rule %in% c("cv", "path")) {
    lams <- if (ls$rule == "cv") default_lambda_path() else ls$path
    path <- cv_path(xs_all, dat$Yc, dat$tgt$task, kern, lams, set)
    lambda <- path$lambda[which.min(path$cv)]
  }
  # the record, where its eigendecomposition costs little beside the choice:
  # lambda chosen on one (ml$eg) or by cross-validation; not after a
  # likelihood search over the kernel (bandwidth = "ml", "ard": the record
  # would cost a tenth of the fit at 2000 points; its search is
  # tuning$optim), once time_limit has stopped the tuning, or under a noise
  # model (the record's criteria are constant noise's)
  if (!clock$expired() && is.null(dat$noise) && (!is.null(ml$eg) || !is.null(path))) {
    path <- tune_path_record(path, lambda, ml, sub, set, by_validation)
  }
  lambda <- lambda_floored(set, lambda)
  if (!is.null(path)) path$selected <- abs(path$lambda - lambda) <= 1e-12 * lambda
  if (!is.null(ell)) {
    dat$xs <- xs_all
    dat$scaling$scale <- dat$scaling$scale * ell
  }
  set$kernel <- kern
  # the validation points in the chosen scaling (joint, length scales)
  if (!is.null(set$validation)) {
    set$validation$x <- sweep(set$validation$x, 2L, scale0 / dat$scaling$scale, "*",
                              check.margin = FALSE)
  }
  set <- tune_settle(set, dat, lambda, ml$noise_coef, clock, ml$noise_gp)
  tuning <- list(
    lambda_rule = if (by_validation) "validation" else if (ls$rule == "default") "ml" else ls$rule,
    bandwidth_rule = ml$bandwidth_rule,
    n_used = length(sub$rows),
    n_total = dat$n,
    length_scales = ell,
    models = sl$models,
    optim = if (!is.null(ml$opt)) ml$opt$optim,
    stochastic = if (!is.null(ml$refined)) ml$refined$optim,
    noise_coef = ml$noise_coef,
    noise_gp = ml$noise_gp$optim,
    path = path)
  list(dat = dat, set = set, tuning = tuning, noise_gp = ml$noise_gp)
}

# Maximum likelihood: the bandwidth or length scales (gp_optimise(), or the
# chosen kernel's search on these rows `sl$opt`), lambda by the likelihood, GCV or LOO on the
# eigendecomposition of the subsample's kernel, refined on all points by the
# stochastic likelihood when asked (option askotch.ml_method =
# "stochastic"). Constant targets have no likelihood to maximise: the
# default bandwidth rule keeps the median heuristic, a requested one is an
# error.
tune_ml <- function(dat, set, sub, clock = tune_clock(set), sl = list()) {
  ls <- set$lambda_spec
  bw_rule <- set$kernel$bandwidth_rule
  kern <- set$kernel
  xs <- sub$xs
  ell <- NULL
  lambda <- if (ls$rule == "fixed") ls$value else NA_real_
  opt <- NULL
  if (bw_rule %in% c("ml", "ard") && constant_targets(sub$Y) && !isTRUE(set$bandwidth_given)) {
    bw_rule <- "median"
    kern$bandwidth_rule <- bw_rule
  }
  if (bw_rule %in% c("ml", "ard") || !is.null(sub$noise)) {
    # a constant response carries no information on the bandwidth: its
    # likelihood is flat at s^2 = 0
    if (constant_targets(sub$Y)) {
      abort_askotch(sprintf(paste(
        "`y` is constant (on the points used for tuning), so `bandwidth = \"%s\"`",
        "has no likelihood to",
        "maximise; give `bandwidth` a number (or keep the default)."), bw_rule),
        "input")
    }
    opt <- if (!is.null(sl$opt)) sl$opt else {
      gp_optimise(xs, sub$Y, kern, ard = bw_rule == "ard",
                  lambda = if (ls$rule == "fixed") ls$value,
                  threads = set$threads, clock = clock, trend = sub$trend,
                  noise = sub$noise, fix_kernel = !bw_rule %in% c("ml", "ard"))
    }
    kern <- opt$kernel
    ell <- opt$length_scales
    if (!is.null(ell)) xs <- sweep(xs, 2L, ell, "/", check.margin = FALSE)
    if (ls$rule %in% c("default", "ml")) lambda <- opt$lambda
  }
  eg <- NULL
  if (is.na(lambda) && ls$rule %in% c("default", "ml", "gcv", "loo")) {
    K <- kernel_mat(xs, xs, kern, set$threads)
    if (sub$weighted) K <- K * outer(sub$d, sub$d)
    eg <- gp_eigen(K, sub$Y, sub$trend)
    lambda <- gp_eigen_best(eg, if (ls$rule == "default") "ml" else ls$rule)
  }
  refined <- NULL
  if (!sub$all && ls$rule %in% c("default", "ml") &&
      identical(getOption("askotch.ml_method", "subsample"), "stochastic")) {
    refined <- gp_refine_stochastic(
      dat$xs, dat$Yc, kern, lambda, ell,
      fit_kernel = bw_rule %in% c("ml", "ard"), seed = set$seed,
      threads = set$threads, clock = clock, device = set$device)
    kern <- refined$kernel
    ell <- refined$length_scales
    lambda <- refined$lambda
  }
  list(kernel = kern, length_scales = ell, lambda = lambda, xs = xs, eg = eg,
       opt = opt, refined = refined, bandwidth_rule = bw_rule,
       noise_coef = if (!is.null(opt)) opt$noise_coef)
}

# The criteria (likelihood, GCV, LOO; CV where computed) on a path of lambdas
# around the choice, for the record: exact, on all points (NULL otherwise).
tune_path_record <- function(path, lambda, ml, sub, set, by_validation) {
  ls <- set$lambda_spec
  if (!sub$all) return(path)
  eg <- function() {
    if (is.null(ml$eg)) {
      gp_eigen(kernel_mat(ml$xs, ml$xs, ml$kernel, set$threads), sub$Y, sub$trend)
    } else ml$eg
  }
  if (is.null(path) && ls$rule != "fixed" && !sub$weighted && !by_validation) {
    lams <- sort(unique(c(lambda * 10^seq(-2, 2, by = 0.5))), decreasing = TRUE)
    path <- gp_eigen_criteria(eg(), lams, loo = TRUE)
    path$cv <- NA_real_
  } else if (!is.null(path)) {
    path <- cbind(gp_eigen_criteria(eg(), path$lambda, loo = TRUE), cv = path$cv)
  }
  path
}

# K-fold cross-validation over a lambda path (decreasing). Exact (one
# eigendecomposition per training fold, every lambda in O(n^2)) when the
# folds are at most tune_exact_max_n() points; else the fit's solver with its
# state kept, each lambda warm-started from the previous one (Tu et al.
# 2016: the solver's lambda-free setup is reused along the path). Returns
# data.frame(lambda, cv): the mean squared error of the held-out
# predictions (of the +1/-1 targets for classification); for the other
# losses (always the fit's solver) the share of misclassified held-out
# points (classification) or their mean squared error.
cv_path <- function(xs, Yc, task, kernel, lambdas, set) {
  n <- nrow(xs)
  k <- min(cv_folds(), n)
  fold <- with_seed(set$seed + 11, sample(rep_len(seq_len(k), n)))
  r <- if (cv_holds_out(set)) cv_holdout(xs, Yc, task, kernel, lambdas, set, fold)
  if (is.null(r)) r <- cv_by_folds(xs, Yc, task, kernel, lambdas, set, fold)
  if (r$not_conv > 0L) {
    warn_askotch(sprintf(paste(
      "%d of the %d cross-validation fits stopped without converging;",
      "the CV errors may be inaccurate (raise `max_passes` or `time_limit`)."),
      r$not_conv, r$fits), "convergence")
  }
  data.frame(lambda = lambdas,
             cv = r$sse / (r$n_val * (if (cv_counts_errors(set, task)) 1 else ncol(Yc))))
}

# The folds one after the other, each with its own solves (cv_fold()):
# list(sse, not_conv, n_val) summed over the folds done.
cv_by_folds <- function(xs, Yc, task, kernel, lambdas, set, fold) {
  k <- max(fold)
  sse <- numeric(length(lambdas))
  not_conv <- 0L
  n_val <- 0L
  # time_limit bounds the whole call: the folds share half of it (the
  # final fit gets the rest), each fold an equal part of what is left; a
  # fold that cannot set up in its share ends the CV with the folds done
  deadline <- now() + set$rule$time_limit / 2
  for (f in seq_len(k)) {
    set$rule$time_limit <- budget_share(deadline, k - f + 1L)
    set$cv_deadline <- now() + set$rule$time_limit
    tr <- which(fold != f)
    va <- which(fold == f)
    Yt <- Yc[tr, , drop = FALSE]
    mu <- if (task %in% c("regression", "multioutput")) colMeans(Yt) else
      rep(0, ncol(Yt))
    Yt <- sweep(Yt, 2L, mu, "-", check.margin = FALSE)
    fd <- list(xt = xs[tr, , drop = FALSE], Yt = Yt, xv = xs[va, , drop = FALSE],
               Yv = Yc[va, , drop = FALSE], mu = mu, task = task)
    r <- tryCatch(cv_fold(fd, kernel, lambdas, set),
                  askotch_error_time_limit = function(e) if (f == 1L) stop(e))
    if (is.null(r)) {
      warn_askotch(sprintf(paste(
        "`time_limit` was reached during cross-validation: lambda was chosen",
        "from %d of the %d folds (raise `time_limit` for all of them)."), f - 1L, k),
        "time_limit")
      break
    }
    sse <- sse + r$sse
    not_conv <- not_conv + r$not_conv
    n_val <- n_val + length(va)
  }
  list(sse = sse, not_conv = not_conv, n_val = n_val, fits = k * length(lambdas))
}

# Whether the folds run as the columns of one state (cv_holdout()): the
# losses other than the squared (which take no observation weights) on
# dcd(), which holds the kernel matrix.
cv_holds_out <- function(set) {
  set$loss$name != "squared" && solver_c(set$solver)$name == "dcd" && set_features(set) == 0
}

# K-fold cross-validation on one dcd() state whose columns are the folds,
# each holding its fold's rows out of its fit (native_fit_set_rows()): the
# n x n kernel matrix is formed once for every fold and lambda (in single
# precision at the folds' default gap), and the held-out predictions are the
# state's products K a at those rows (kept by dcd(), no kernel pass). The
# lambdas are solved in turn, all folds at once, each warm-started from the
# last, until the path ends (cv_path_ends()). list(sse, not_conv, n_val,
# fits), or NULL when the state does not fit the memory budget (the folds
# then run one by one). A joint solve that stops short counts all k folds as
# unconverged (its criterion is the worst fold's gap).
cv_holdout <- function(xs, Yc, task, kernel, lambdas, set, fold) {
  patience <- cv_patience()
  cols <- holdout_columns(Yc, fold, task)
  fs <- cv_fold_settings(set, kernel, nrow(xs))
  fs$lambda <- lambdas[1L]
  fs$rule$tol <- max(fs$rule$tol, cv_fold_gap_tol())
  fs$objective <- FALSE # no record of the folds' objectives
  # the kernel matrix in single precision when the folds' tolerance is at
  # least single precision's own (its rounding, about 1e-7, is far below
  # the folds' gap): half the memory and less time
  if (fs$rule$tol >= precision_tol("single")) fs$precision <- "single"
  state <- tryCatch(state_new(xs, cols$Y, fs), askotch_error_memory = function(e) NULL)
  if (is.null(state)) return(NULL)
  on.exit(native_fit_free(state), add = TRUE)
  native_fit_set_rows(state, cols$use)
  deadline <- now() + set$rule$time_limit / 2
  sse <- se <- rep(NA_real_, length(lambdas))
  not_conv <- 0L
  for (i in seq_along(lambdas)) {
    # the first lambda forms the kernel matrix: half of the budget
    fs$rule$time_limit <- budget_share(deadline, if (i == 1L) 2L else length(lambdas) - i + 1L)
    if (i > 1L) native_fit_set_lambda(state, lambdas[i])
    res <- tryCatch(drive_solver(state, fs, list(task = task), xs, now(), use_floor = TRUE),
                    askotch_error_time_limit = function(e) if (i == 1L) stop(e))
    if (is.null(res)) {
      warn_askotch(sprintf(paste(
        "`time_limit` was reached during cross-validation: lambda was chosen",
        "from the first %d of the %d values (raise `time_limit` for all of them)."),
        i - 1L, length(lambdas)), "time_limit")
      break
    }
    if (!solve_reached(res$reason)) not_conv <- not_conv + max(fold)
    err <- holdout_errors(native_fit_products(state), Yc, fold, cols$mus, set, task)
    sse[i] <- sum(err)
    se[i] <- stats::sd(err) * sqrt(length(err))
    if (cv_path_ends(sse[seq_len(i)], se[seq_len(i)], patience)) break
  }
  list(sse = sse, not_conv = not_conv, n_val = nrow(xs), fits = max(fold) * sum(!is.na(sse)))
}

# The columns of cv_holdout()'s state, fold f's m outputs in columns
# (f - 1) m + 1..m: the targets Y (centred by the fold's training mean mus[[f]]
# for regression) and the rows each uses (use: 0 on the fold's own rows)
holdout_columns <- function(Yc, fold, task) {
  n <- nrow(Yc)
  m <- ncol(Yc)
  reg <- task %in% c("regression", "multioutput")
  mus <- lapply(seq_len(max(fold)), function(f) {
    if (reg) colMeans(Yc[fold != f, , drop = FALSE]) else rep(0, m)
  })
  list(Y = do.call(cbind, lapply(mus, function(mu) sweep(Yc, 2L, mu, "-", check.margin = FALSE))),
       use = do.call(cbind, lapply(seq_len(max(fold)), function(f) {
         matrix(as.numeric(fold != f), n, m)
       })),
       mus = mus)
}

# Each point's held-out error (cv_point_errors()) from the state's products P
# (n x k m; each fold's rows from its own columns, its training mean added)
holdout_errors <- function(P, Yc, fold, mus, set, task) {
  m <- ncol(Yc)
  err <- numeric(nrow(Yc))
  for (f in seq_len(max(fold))) {
    va <- which(fold == f)
    Pf <- sweep(P[va, (f - 1L) * m + seq_len(m), drop = FALSE], 2L, mus[[f]], "+",
                check.margin = FALSE)
    err[va] <- cv_point_errors(Pf, Yc[va, , drop = FALSE], set, task)
  }
  err
}

# Whether a cross-validation path (from the most regularised lambda on) may
# end: once each of the last `patience` values (option askotch.cv_patience,
# default 2) has a CV error above the least so far by more than its standard
# error (sse: the summed errors along the path, se: their standard errors,
# sd(e) sqrt(n)).
# The values beyond, the least regularised, are the slowest to solve, and on
# a U-shaped CV curve they lie further up its far side; NA in the record.
cv_path_ends <- function(sse, se, pat = cv_patience()) {
  i <- length(sse)
  best <- which.min(sse)
  if (!is.finite(pat) || i - best < pat) return(FALSE)
  all(sse[(i - pat + 1L):i] > sse[best] + se[best])
}

cv_patience <- function() {
  number_option("askotch.cv_patience", 2, function(p) p >= 1 && p == round(p),
                ", a whole number at least 1 (Inf: the whole path)")
}

# One fold's errors along the path, by the cheapest exact route that applies.
cv_fold <- function(fd, kernel, lambdas, set) {
  if (set$loss$name != "squared") {
    cv_fold_iterative(fd, kernel, lambdas, set)
  } else if (nrow(fd$xt) <= tune_exact_max_n()) {
    cv_fold_exact(fd, kernel, lambdas, set)
  } else if (path_solver(set$solver)) {
    cv_fold_path(fd, kernel, lambdas, set)
  } else {
    cv_fold_iterative(fd, kernel, lambdas, set)
  }
}

# An equal share of the time left until `deadline` for each of `parts`
# (Inf without a limit; never below a hundredth of a second, so that a
# share that is used up stops its solve at once with a result).
budget_share <- function(deadline, parts) {
  if (!is.finite(deadline)) return(Inf)
  max((deadline - now()) / parts, 0.01)
}

# Whether a fold's criterion counts misclassified points (the classification
# losses) rather than summing squared errors.
cv_counts_errors <- function(set, task) {
  set$loss$name != "squared" && task %in% c("binary", "multiclass")
}

# The fold's criterion for predictions P (validation rows x outputs) of the
# targets Yv: misclassified points (see cv_counts_errors()), else the sum of
# squared errors.
cv_fold_error <- function(P, Yv, set, task) sum(cv_point_errors(P, Yv, set, task))

# The criterion's terms, one per validation row: 1 for a misclassified point
# and 0 otherwise (see cv_counts_errors()), else its squared error summed
# over the outputs.
cv_point_errors <- function(P, Yv, set, task) {
  if (!cv_counts_errors(set, task)) return(rowSums((P - Yv)^2))
  if (ncol(Yv) == 1L) return(as.numeric(sign(P[, 1L]) != sign(Yv[, 1L])))
  as.numeric(max.col(P, ties.method = "first") != max.col(Yv, ties.method = "first"))
}

# One fold's squared validation errors along the path (list(sse, not_conv)),
# fd: the fold's training points xt, centred targets Yt, validation points
# xv and targets Yv, and the training mean mu. Exact: the eigendecomposition
# of the fold's kernel matrix gives every lambda at once.
cv_fold_exact <- function(fd, kernel, lambdas, set) {
  eg <- gp_eigen(kernel_mat(fd$xt, fd$xt, kernel, set$threads), fd$Yt)
  KQ <- kernel_mat(fd$xv, fd$xt, kernel, set$threads) %*% eg$vectors
  sse <- vapply(lambdas, function(l) {
    P <- sweep(KQ %*% (eg$Z / (eg$values + l)), 2L, fd$mu, "+", check.margin = FALSE)
    sum((P - fd$Yv)^2)
  }, 0)
  list(sse = sse, not_conv = 0L)
}

# The fold's settings: the fold's kernel and size, no validation or progress
cv_fold_settings <- function(set, kernel, n) {
  fs <- set
  fs$kernel <- kernel
  fs$validation <- NULL
  fs$progress <- FALSE
  fs$rule$n <- n
  fs
}

# The whole path at once, one solve per fold (Tu et al. 2016)
cv_fold_path <- function(fd, kernel, lambdas, set) {
  fs <- path_settings(cv_fold_settings(set, kernel, nrow(fd$xt)), fd$Yt, lambdas)
  Yp <- path_targets(fd$Yt, length(lambdas))
  state <- state_new(fd$xt, Yp, fs)
  on.exit(native_fit_free(state), add = TRUE)
  res <- drive_solver(state, fs, list(task = fd$task), fd$xt, now(), use_floor = TRUE)
  P <- state_scores(state, fs, fd$xv, state_points(state, fd$xt))
  cols <- path_columns(ncol(fd$Yt), length(lambdas))
  sse <- vapply(seq_along(lambdas), function(i) {
    Pi <- sweep(P[, cols[[i]], drop = FALSE], 2L, fd$mu, "+", check.margin = FALSE)
    sum((Pi - fd$Yv)^2)
  }, 0)
  list(sse = sse, not_conv = if (solve_reached(res$reason)) 0L else length(lambdas))
}

# One lambda after the other on one state, each warm-started from the last
cv_fold_iterative <- function(fd, kernel, lambdas, set) {
  fs <- cv_fold_settings(set, kernel, nrow(fd$xt))
  fs$lambda <- lambdas[1L]
  if (set$loss$name != "squared") fs$rule$tol <- max(fs$rule$tol, cv_fold_gap_tol())
  t0 <- now()
  made <- state_auto_new(fd$xt, fd$Yt, fs)
  state <- made$state
  on.exit(native_fit_free(state), add = TRUE)
  fs$solver <- made$solver
  scores <- cv_scores_fn(state, fs, fd)
  tgt <- list(task = fd$task)
  sse <- numeric(length(lambdas))
  not_conv <- 0L
  for (i in seq_along(lambdas)) {
    if (isTRUE(set$tol_auto)) fs$rule$tol <- lambda_tol(set, fd$Yt, lambdas[i])
    if (!is.null(set$cv_deadline)) {
      fs$rule$time_limit <- budget_share(set$cv_deadline, length(lambdas) - i + 1L)
    }
    if (i > 1L) { # a warm start from the last lambda's weights (native_fit_set_lambda())
      native_fit_set_lambda(state, lambdas[i])
      t0 <- now()
    }
    res <- drive_solver(state, fs, tgt, fd$xt, t0, use_floor = TRUE)
    if (!solve_reached(res$reason)) not_conv <- not_conv + 1L
    P <- sweep(scores(), 2L, fd$mu, "+", check.margin = FALSE)
    sse[i] <- cv_fold_error(P, fd$Yv, set, fd$task)
  }
  list(sse = sse, not_conv = not_conv)
}

# The fold's held-out scores at the state's current weights.  dcd() holds
# the training points' kernel matrix, so the validation block K(xv, xt),
# a quarter of it with 5 folds, is formed once for the whole path (each
# lambda a product with the weights); the other solvers form the kernel
# products each time (state_scores()).
cv_scores_fn <- function(state, fs, fd) {
  if (solver_c(fs$solver)$name != "dcd" || set_intercept(fs) > 0 || set_features(fs) > 0) {
    return(function() state_scores(state, fs, fd$xv, state_points(state, fd$xt)))
  }
  Kv <- kernel_mat(fd$xv, fd$xt, fs$kernel, fs$threads)
  function() Kv %*% native_fit_weights(state)
}
