# Gaussian-process classification, before the solve: the search for lambda
# and the kernel's hyperparameters (a listed kernel's bandwidth, a
# composite's "ml" values) by the Laplace approximation's marginal
# likelihood (with posterior = "ep" then by EP's, ep_search() in R/ep.R),
# and the posterior modes by Newton's method (the model, and what the fit
# offers afterwards, are described in the file laplace.R).

laplace_tune_max_n <- function() getOption("askotch.laplace_tune_max_n", 1000)

# Up to this many points the mode on all of them is found by Newton's
# method too, and the logistic solver starts from it (it then only confirms
# the duality gap): at small lambda the dual method needs many passes.
laplace_newton_max_n <- function() getOption("askotch.laplace_newton_max_n", 5000)

# The posterior mode (Newton, R&W Algorithm 3.1) and log q of one +1/-1
# column y for the kernel matrix K and lambda, from the latent start f;
# `converged` says whether Psi's relative change fell below tol within
# maxit steps. Plain Newton steps can overshoot and diverge where Kt = K /
# lambda is large (a small lambda): from a point with f = Kt a (every point
# after the first step, and the zero start) each step is halved until
# Psi(f) = -a^T f / 2 + sum log p(y | f), concave in f, does not decrease
# (GPML's infLaplace searches along the step too). A warm start whose first
# step ends below Psi at zero is dropped for the zero start.
laplace_mode <- function(K, y, lambda, f = numeric(length(y)), tol = 1e-10,
                         maxit = 100L, threads = 0L) {
  Kt <- K / lambda
  t01 <- (y + 1) / 2
  psi <- function(a, f) -sum(a * f) / 2 + sum(stats::plogis(y * f, log.p = TRUE))
  a <- if (all(f == 0)) f
  obj <- if (is.null(a)) -Inf else psi(a, f)
  converged <- FALSE
  for (it in seq_len(maxit)) {
    pi <- stats::plogis(f)
    # the Newton step is the posterior of sites with precisions W = pi (1 - pi)
    # and shifts b = W f + grad log p(y | f): a = alpha, new f its mean
    w <- pi * (1 - pi)
    step <- native_gp_sites(Kt, w, w * f + (t01 - pi), var = FALSE, threads = threads)
    L <- step$L
    da <- step$alpha - if (is.null(a)) 0 else a
    df <- step$mean - f
    t <- 1
    new <- psi(step$alpha, step$mean)
    while (!is.null(a) && !(new >= obj) && t > 2^-30) {
      t <- t / 2
      new <- psi(a + t * da, f + t * df)
    }
    a <- if (is.null(a)) step$alpha else a + t * da
    f <- f + t * df
    if (!(new >= -length(y) * log(2))) {
      # a first step from a warm start that ends below Psi at zero (where
      # a = f = 0), -n log 2: start again from zero
      a <- f <- numeric(length(y))
      new <- -length(y) * log(2)
    }
    if (is.finite(new) && abs(new - obj) <= tol * (1 + abs(new))) {
      converged <- TRUE
      break
    }
    obj <- new
  }
  list(f = f, logq = new - sum(log(diag(L))), iterations = it, converged = converged)
}

# The weights alpha = grad log p(y | f^) / lambda (f^ = K alpha) of the
# modes of every column on all points, by Newton's method
laplace_modes <- function(dat, set) {
  K <- kernel_mat(dat$xs, dat$xs, set$kernel, set$threads)
  vapply(seq_len(ncol(dat$Yc)), function(j) {
    y <- dat$Yc[, j]
    f <- laplace_mode(K, y, set$lambda, threads = set$threads)$f
    ((y + 1) / 2 - stats::plogis(f)) / set$lambda
  }, numeric(dat$n))
}

# The hyperparameters by the summed log q on a subsample (laplace_search();
# with posterior = "ep" then by EP's log Z, ep_search(); a given lambda or
# kernel hyperparameter is kept), and the modes on all points as the
# solver's start (up to laplace_newton_max_n() points).
tune_laplace <- function(dat, set) {
  ls <- set$lambda_spec
  kern <- set$kernel
  fit_k <- identical(kern$bandwidth_rule, "ml")
  fit_lam <- ls$rule %in% c("default", "ml")
  tuning <- NULL
  if (fit_k || fit_lam) {
    clock <- tune_clock(set)
    rows <- subsample_rows(dat$n, laplace_tune_max_n(), set$seed)
    xs <- dat$xs[rows, , drop = FALSE]
    Ys <- dat$Yc[rows, , drop = FALSE]
    space <- gpc_space(xs, kern, fit_k, fit_lam, set$seed, set$threads)
    o <- laplace_search(space, Ys, if (fit_lam) NULL else ls$value, clock)
    o <- gpc_ep_stage(o, space, Ys, fit_lam, set, clock)
    tab <- space$table
    if (!is_composite_kernel(kern)) kern$bandwidth <- o$kernel$bandwidth else {
      kern[c("terms", "spec")] <- o$kernel[c("terms", "spec")]
    }
    if (!is.null(tab)) {
      tab$estimate <- exp(o$th[seq_len(NROW(tab))])
      gpc_bound_warning(o, space, fit_lam)
    }
    set$lambda <- o$lambda
    set$rule$time_limit <- max(set$rule$time_limit - clock$seconds(), set$rule$time_limit / 10)
    rule <- if (!fit_lam) "fixed" else if (isTRUE(o$by_ep)) "ep" else "laplace"
    tuning <- list(lambda_rule = rule,
                   bandwidth_rule = kern$bandwidth_rule, n_used = length(rows),
                   n_total = dat$n, composite = tab, optim = o$optim,
                   search = if (isTRUE(o$by_ep)) "ep" else "laplace")
  }
  set$kernel <- kern
  if (dat$n <= laplace_newton_max_n()) set$start_weights <- laplace_modes(dat, set)
  list(dat = dat, set = set, tuning = tuning)
}

# With posterior = "ep" (and option askotch.ep_tune), EP's search from the
# Laplace search's result o, unless the time limit has passed; marked by_ep
# when it ran and succeeded, else o with its message saying why.
gpc_ep_stage <- function(o, space, Ys, fit_lam, set, clock) {
  if (!identical(set$posterior, "ep") || !flag_option("askotch.ep_tune", TRUE)) return(o)
  keep <- "the Laplace search's values"
  if (clock$expired()) {
    o$optim$message <- sprintf("time_limit before EP's search: %s", keep)
    return(o)
  }
  e <- ep_search(space, Ys, o, fit_lam, clock)
  if (!isTRUE(e$ep_failed)) return(c(e, list(by_ep = TRUE)))
  o$optim$message <- sprintf("%s: %s", if (clock$expired()) "time_limit before an EP step converged"
                             else "EP failed at every step", keep)
  o
}

# The kernel's part of a GP classifier's search: the logarithms of a listed
# kernel's bandwidth (fit_k; within [sig0 / 100, 1000 sig0] of the rule's
# value sig0) or of a composite kernel's "ml" hyperparameters (the rows of
# composite_params(); from composite_start() within the ranges of
# composite_optimise(): amplitudes a factor 1e6, the others 1e3), nothing
# for given ones. If every amplitude is "ml", the first is held at 1 when
# lambda is estimated (lambda then carries the overall scale of the latent
# prior K / lambda). kernel(th) is the kernel at th, mat(k) its matrix at
# the points xs (a given kernel's formed once), dot(k, W) the contractions
# sum(W * dK / dth_j) with an n x n W, in C without forming the derivative
# matrices, and amps(th) the terms' log amplitudes and their Jacobian in th
# (a listed kernel: one term of amplitude 1).
gpc_space <- function(xs, kern, fit_k, fit_lam, seed, threads = 0L) {
  none <- numeric()
  if (!is_composite_kernel(kern)) {
    tstat <- search_stats(xs, kern$metric)
    sig0 <- kern$bandwidth
    return(list(th0 = if (fit_k) log(sig0) else none,
                lower = if (fit_k) log(sig0 / 100) else none,
                upper = if (fit_k) log(sig0 * 1000) else none,
                kernel = function(th) {
                  if (fit_k) kern$bandwidth <- exp(th[[1L]])
                  kern
                },
                mat = function(k) kernel_at(xs, k, tstat, threads),
                dot = function(k, W) {
                  if (!fit_k) return(none)
                  native_kernel_deriv_dot(xs, k, -1L, W, threads = threads, tstat = tstat)
                },
                amps = function(th) list(log = 0, J = matrix(0, 1L, length(th))),
                threads = threads))
  }
  pr <- composite_params(kern, hold_first = fit_lam)
  tab <- pr$table
  if (!NROW(tab)) {
    K0 <- kernel_mat(xs, xs, pr$kernel, threads)
    return(list(th0 = none, lower = none, upper = none, kernel = function(th) pr$kernel,
                mat = function(k) K0, dot = function(k, W) none,
                amps = composite_amps(pr$kernel, tab), threads = threads))
  }
  th0 <- log(composite_start(pr$kernel, tab, xs, seed, NULL))
  width <- ifelse(tab$what == "amplitude", log(1e6), log(1e3))
  c(gpc_space_composite(xs, pr$kernel, tab, th0, threads),
    list(lower = th0 - width, upper = th0 + width))
}

# A composite's part of gpc_space() for the hyperparameters of the table
# tab (composite_params()) at th0 (their logarithms) in the kernel k (a
# fitted composite: vcov() of a classifier).
gpc_space_composite <- function(xs, k, tab, th0, threads) {
  list(th0 = th0, table = tab, kernel = function(th) composite_set(k, tab, exp(th)),
       mat = function(kk) kernel_mat(xs, xs, kk, threads),
       dot = function(kk, W) native_kernel_deriv_dot(xs, kk, tab$code, W),
       amps = composite_amps(k, tab), threads = threads)
}

# The terms' log amplitudes at th and their Jacobian in th: those of the
# table's amplitude rows from th, the others the kernel k's (numbers).
composite_amps <- function(k, tab) {
  nt <- length(k$terms)
  given <- vapply(k$terms, function(t) {
    if (is.numeric(t$amplitude)) log(t$amplitude) else 0
  }, 0)
  function(th) {
    J <- matrix(0, nt, length(th))
    la <- given
    for (j in which(tab$what == "amplitude")) {
      la[tab$term[j]] <- th[[j]]
      J[tab$term[j], j] <- 1
    }
    list(log = la, J = J)
  }
}

# The search both GP classifiers run: L-BFGS-B from th0 (the kernel's part
# of space, gpc_space(), then log lambda when fit_lam, within [1e-6, 1e4];
# else lambda is given), each evaluation ticking the tuning clock (the
# progress line labelled `what`; at the time limit the search ends at its
# best point, tune_optim()). value(K, gdot, lambda, th) returns the
# objective to minimise and its gradient in th, list(f, g), for the kernel
# matrix K, where gdot(W) is the vector of sum(W * d(K / lambda) / dth_j)
# (every gradient here is such a contraction), or NULL where it failed
# (tune_memo() evaluates it once per th and handles failures). Returns the
# kernel and lambda at the optimum, th, and the search's record.
gpc_search <- function(space, fit_lam, lambda, th0, value, clock = NULL, what = "") {
  decode <- gpc_decode(space, fit_lam, lambda)
  objective <- gpc_objective(space, fit_lam, lambda, value)
  memo <- new.env(parent = emptyenv())
  eval_at <- function(th) tune_memo(memo, th, objective, clock, what)
  lower <- c(space$lower, if (fit_lam) log(1e-6))
  upper <- c(space$upper, if (fit_lam) log(1e4))
  opt <- tune_optim(pmin(pmax(th0, lower), upper), function(th) eval_at(th)$f,
                    function(th) eval_at(th)$g, lower, upper, list(maxit = 100), memo, 1)
  h <- decode(opt$par)
  list(kernel = h$kernel, lambda = h$lambda, th = opt$par,
       at_bound = abs(opt$par - lower) < 1e-6 | abs(opt$par - upper) < 1e-6,
       optim = list(loglik = -opt$value, convergence = opt$convergence,
                    evaluations = memo$evaluations, message = opt$message))
}

# The kernel and lambda at th (the kernel's part of space, then log lambda
# when fit_lam, else lambda given)
gpc_decode <- function(space, fit_lam, lambda) {
  nk <- length(space$th0)
  function(th) {
    list(kernel = space$kernel(th[seq_len(nk)]),
         lambda = if (fit_lam) exp(th[[nk + 1L]]) else lambda)
  }
}

# The search's objective at th: value() (gpc_search()) on the kernel matrix
# at th, list(f = Inf) where it failed
gpc_objective <- function(space, fit_lam, lambda, value) {
  decode <- gpc_decode(space, fit_lam, lambda)
  function(th) {
    h <- decode(th)
    K <- space$mat(h$kernel)
    # d(K / lambda) / dth_j = (dK / dth_j) / lambda; d(K / lambda) /
    # dlog lambda = -K / lambda
    gdot <- function(W) {
      c(space$dot(h$kernel, W), if (fit_lam) -sum(W * K)) / h$lambda
    }
    value(K, gdot, h$lambda, th) %||% list(f = Inf)
  }
}

# A composite's estimates on the edge of their search range warn (as
# tune_composite()'s do)
gpc_bound_warning <- function(o, space, fit_lam) {
  what <- c(space$table$what, if (fit_lam) "lambda")[o$at_bound]
  if (!length(what)) return(invisible())
  warn_askotch(sprintf(paste(
    "The marginal-likelihood estimate of the composite GP classifier's %s ended on",
    "the bound of its search range: the model may not need that part, or needs",
    "another start; see fit$tuning$composite."), paste(unique(what), collapse = ", ")),
    "hyper")
}

# The summed log q (laplace_grad()) maximised by gpc_search() from the
# kernel's start (gpc_space()) and lambda = 1, each evaluation's modes
# started from the last evaluation's that converged.
laplace_search <- function(space, Y, lambda, clock = NULL) {
  fit_lam <- is.null(lambda)
  gpc_search(space, fit_lam, lambda, c(space$th0, if (fit_lam) 0), laplace_value(space, Y),
             clock, "Laplace marginal likelihood")
}

# -(summed log q) and its gradient for the +1/-1 columns Y, as gpc_search()'s
# value(); each evaluation's modes start from the last converged ones
laplace_value <- function(space, Y) {
  modes <- matrix(0, nrow(Y), ncol(Y))
  function(K, gdot, lam, th) {
    val <- list(f = 0, g = numeric(length(th)))
    for (j in seq_len(ncol(Y))) {
      m <- tryCatch(laplace_mode(K, Y[, j], lam, modes[, j], threads = space$threads),
                    error = function(e) NULL)
      # an evaluation whose mode did not converge fails, and its modes are
      # not the next evaluation's start
      if (is.null(m) || !m$converged) return(NULL)
      modes[, j] <<- m$f
      gq <- laplace_grad(K / lam, m$f, Y[, j], gdot, space$threads)
      val$f <- val$f - gq$logq
      val$g <- val$g - gq$gradient
    }
    val
  }
}

# log q and its gradient in the hyperparameters of the prior covariance Kt
# at the mode f of the +1/-1 column y (R&W Algorithm 5.1: the explicit
# terms and the implicit one through the mode's dependence on them);
# gdot(W) the contractions sum(W * dKt / dth_j). For the logistic
# likelihood the third derivative of log p is -pi (1 - pi) (1 - 2 pi). Every
# term is linear in dKt_j = C (symmetric): 1/2 a^T C a - 1/2 tr(R C) +
# s2^T (I - Kt R) C a = sum(W * C) with W = (a a^T - R) / 2 + u a^T,
# u = s2 - R Kt s2.
laplace_grad <- function(Kt, f, y, gdot, threads = 0L) {
  n <- length(y)
  pi <- stats::plogis(f)
  w <- pi * (1 - pi)
  sw <- sqrt(w)
  # B's factor and the marginal variances diag((Kt^-1 + W)^-1)
  post <- native_gp_sites(Kt, w, numeric(n), threads = threads)
  L <- post$L
  a <- (y + 1) / 2 - pi  # grad log p at the mode: f = Kt a
  logq <- -sum(a * f) / 2 + sum(stats::plogis(y * f, log.p = TRUE)) - sum(log(diag(L)))
  Rm <- outer(sw, sw) * chol2inv(L)                 # W^1/2 B^-1 W^1/2
  # d log q / d f^_i = 1/2 [(Kt^-1 + W)^-1]_ii d3_i: only -1/2 log det B
  # depends on the mode there, through dW_ii / df_i = -d3_i
  s2 <- post$var / 2 * (-w * (1 - 2 * pi))
  u <- s2 - drop(Rm %*% drop(Kt %*% s2))
  list(logq = logq, gradient = gdot(outer(a / 2 + u, a) - Rm / 2))
}
