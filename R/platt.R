# Platt scaling: class probabilities for the margin losses ---------------------
#
# P(y = 1 | f) = 1 / (1 + exp(A f + B)) fitted to out-of-fold decision
# values (Platt 1999), as LIBSVM's `-b 1` does: 5-fold cross-validation
# with the fit's own kernel, lambda, loss and solver, then the sigmoid by
# Newton's method with a backtracking line search on the cross-entropy with
# Platt's smoothed targets (Lin, Lin and Weng 2007, algorithm 2). One
# sigmoid per one-vs-rest column; predict() normalises the columns.

platt_folds <- function() 5L

# The sigmoid's (A, B) for decision values f and 0/1 labels y (Lin, Lin and
# Weng 2007): targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2), Newton steps on
# F(A, B) = sum t (A f + B) + log(1 + exp(-A f - B)), evaluated stably.
platt_sigmoid <- function(f, y) {
  np <- sum(y == 1)
  nn <- length(y) - np
  t <- ifelse(y == 1, (np + 1) / (np + 2), 1 / (nn + 2))
  obj <- function(a, b) {
    z <- a * f + b
    sum(ifelse(z >= 0, t * z + log1p(exp(-z)), (t - 1) * z + log1p(exp(z))))
  }
  a <- 0
  b <- log((nn + 1) / (np + 1))
  fv <- obj(a, b)
  for (it in seq_len(100L)) {
    z <- a * f + b
    # p = 1 / (1 + e^z), formed without overflow
    p <- ifelse(z >= 0, exp(-z) / (1 + exp(-z)), 1 / (1 + exp(z)))
    q <- 1 - p
    d2 <- p * q
    h11 <- sum(f^2 * d2) + 1e-12
    h22 <- sum(d2) + 1e-12
    h21 <- sum(f * d2)
    d1 <- t - p
    g1 <- sum(f * d1)
    g2 <- sum(d1)
    if (abs(g1) < 1e-5 && abs(g2) < 1e-5) break
    det <- h11 * h22 - h21^2
    da <- -(h22 * g1 - h21 * g2) / det
    db <- -(-h21 * g1 + h11 * g2) / det
    gd <- g1 * da + g2 * db
    step <- 1
    while (step >= 1e-10) {
      nf <- obj(a + step * da, b + step * db)
      if (nf < fv + 1e-4 * step * gd) break
      step <- step / 2
    }
    if (step < 1e-10) break
    a <- a + step * da
    b <- b + step * db
    fv <- nf
  }
  c(A = a, B = b)
}

# The class number (1 .. levels) of each training row, from the +1/-1
# targets (binary: one column, +1 the second level)
platt_classes <- function(fit) {
  Y <- as.matrix(fit$y)
  if (ncol(Y) == 1L) 1L + (Y[, 1L] > 0) else max.col(Y, ties.method = "first")
}

# Stratified fold numbers 1..k for the classes of `cls`, from `seed`.
platt_fold_ids <- function(cls, k, seed) {
  ids <- integer(length(cls))
  with_seed(seed + 11, {
    for (lv in unique(cls)) {
      i <- which(cls == lv)
      ids[i] <- sample(rep_len(seq_len(k), length(i)))
    }
  })
  ids
}

# The fold fits' tolerance: the fit's; for the losses other than the
# squared at most the relative duality gap of lambda = "cv"'s folds
# (cv_fold_gap_tol(), R/tune.R), which leaves the decision values, and so
# the sigmoid, to within the cross-validation's own noise
platt_fold_tol <- function(fit) {
  if (isTRUE(fit$tol_auto)) return(fit_tol_rule(fit))
  if (fit_loss(fit)$name == "squared") fit$tol else max(fit$tol, cv_fold_gap_tol())
}

# The out-of-fold decision values of a classification fit: each fold
# predicted by a fit on the others with the fit's hyperparameters and
# solver, on its (scaled) training points. A fold fit that does not
# converge is counted, not warned about one by one.
platt_oof <- function(fit, call) {
  xs <- if (is.null(fit$x_train)) fit$x else fit$x_train
  cls <- platt_classes(fit)
  yf <- factor(fit$levels[cls], levels = fit$levels)
  ids <- platt_fold_ids(cls, platt_folds(), fit$seed)
  dv <- matrix(0, nrow(xs), fit$m)
  unconverged <- 0L
  # the fit's settings for the fold fits (fit_args() fields; the solver by
  # name, its sizes chosen for the fold)
  args <- list(kernel = fit$kernel, bandwidth = "median", lambda = fit$lambda,
               solver = fit$solver$name, precision = fit$precision, device = fit$device,
               max_passes = fit$max_passes,
               tol = platt_fold_tol(fit),
               time_limit = Inf, standardize = FALSE, seed = fit$seed, progress = FALSE,
               threads = if (isTRUE(fit$threads > 0)) fit$threads,
               mem_limit = if (isTRUE(fit$mem_limit > 0)) fit$mem_limit, keep_state = FALSE,
               intercept = if (fit_intercept(fit) > 0) fit_intercept(fit) else FALSE,
               posterior = "none", bandwidth_given = FALSE)
  for (k in seq_len(platt_folds())) {
    out <- ids == k
    sub <- withCallingHandlers(
      fit_model(xs[!out, , drop = FALSE], yf[!out], fit_loss(fit), args, machine = TRUE,
                call = call, ecall = call),
      askotch_warning_convergence = function(w) {
        unconverged <<- unconverged + 1L
        invokeRestart("muffleWarning")
      })
    dv[out, ] <- predict.krr(sub, xs[out, , drop = FALSE], type = "decision")
  }
  if (unconverged > 0L) {
    warn_askotch(sprintf(paste(
      "%d of the %d cross-validation fits behind the Platt probabilities stopped",
      "before their tolerance; the probabilities use their decision values."),
      unconverged, platt_folds()), "convergence", call)
  }
  list(dv = dv, cls = cls)
}

# The fit with fit$platt = list(A, B, folds): one sigmoid per column.
platt_calibrate <- function(fit, call) {
  if (!fit$task %in% c("binary", "multiclass")) {
    abort_askotch("`probability = TRUE` needs classification (a factor response).", "input",
                  call)
  }
  if (fit_features(fit) != 0L || is_gp_classifier(fit$posterior)) {
    abort_askotch(paste("`probability = TRUE` needs the exact kernel (no random features;",
                        "a GP classifier (posterior = \"laplace\" or \"ep\") has its own",
                        "probabilities)."),
                  "input", call)
  }
  if (min(tabulate(platt_classes(fit), length(fit$levels))) < platt_folds()) {
    abort_askotch(sprintf(paste("`probability = TRUE` fits its sigmoid by %d-fold",
                                "cross-validation: every class needs %d points."),
                          platt_folds(), platt_folds()), "input", call)
  }
  oof <- platt_oof(fit, call)
  ab <- vapply(seq_len(ncol(oof$dv)), function(j) {
    yj <- if (ncol(oof$dv) == 1L) oof$cls == 2L else oof$cls == j
    platt_sigmoid(oof$dv[, j], as.integer(yj))
  }, c(A = 0, B = 0))
  fit$platt <- list(A = unname(ab["A", ]), B = unname(ab["B", ]), folds = platt_folds())
  fit
}

# Platt probabilities of decision values s (a vector, or one column per class,
# normalised over the classes)
platt_prob <- function(object, s) {
  pl <- object$platt
  if (is.matrix(s)) {
    p <- stats::plogis(-(sweep(s, 2L, pl$A, "*") + rep(pl$B, each = nrow(s))))
    return(p / rowSums(p))
  }
  stats::plogis(-(pl$A * s + pl$B))
}
