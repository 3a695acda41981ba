# Maximum likelihood for the kernel's scale and lambda, the choice of the
# kernel and of the input scaling by likelihood, and the clock of the search
# -------------------------------------------------------------------------

# A random subsample of at most `size` rows (all when n <= size), drawn from
# the fit's seed without touching the user's random numbers.
subsample_rows <- function(n, size, seed) {
  if (n <= size) return(seq_len(n))
  with_seed(seed + 7, sort(sample.int(n, size)))
}

# Centre the regression targets of a subsample (classification: +1/-1 as is;
# with a mean function its GLS fit takes the place of the centring).
centre_rows <- function(Y, task, trend = NULL) {
  if (is.null(trend) && task %in% c("regression", "multioutput")) {
    sweep(Y, 2L, colMeans(Y), "-", check.margin = FALSE)
  } else Y
}

# Points used for "ml" / "gcv" / "loo" (and the default) when n is above
# tune_exact_max_n(): a uniform subsample of this size.
tune_subsample <- function() getOption("askotch.tune_subsample", 2000)

# The rows the likelihood and the criteria are evaluated on (all up to
# tune_exact_max_n(), else a subsample; at most `size` when given), their
# targets, and the observation
# weights' scaling: y ~ N(0, s^2 (K + lambda W^{-1})) has the likelihood of
# D y ~ N(0, s^2 (D K D + lambda I)), D = W^{1/2}, up to the constant
# sum(log w) / 2 per output.
tune_data <- function(dat, set, call, size = NULL) {
  ls <- set$lambda_spec
  bw_rule <- set$kernel$bandwidth_rule
  n <- dat$n
  w <- set$obs_weights
  weighted <- !is.null(w) && any(w != 1)
  if (weighted && (!ls$rule %in% c("fixed", "default", "ml") ||
                   bw_rule %in% c("ml", "ard"))) {
    abort_askotch(paste(
      "With observation `weights`, lambda can be chosen by maximum likelihood",
      "only (lambda = NULL or \"ml\"), with a given or median bandwidth."),
      "input", call)
  }
  if (is.null(size)) size <- if (n <= tune_exact_max_n()) n else tune_subsample()
  rows <- subsample_rows(n, size, set$seed)
  Y <- if (length(rows) == n) dat$Yc else
    centre_rows(dat$Yc[rows, , drop = FALSE], dat$tgt$task, dat$trend)
  trend <- trend_rows(dat$trend, rows)
  d <- if (weighted) sqrt(w[rows]) else NULL
  if (weighted) {
    Y <- d * Y
    if (!is.null(trend)) trend$F <- d * trend$F
  }
  list(rows = rows, xs = dat$xs[rows, , drop = FALSE], Y = Y, d = d,
       weighted = weighted, all = length(rows) == n, trend = trend,
       noise = if (!is.null(dat$noise) && is.null(dat$noise$gp)) {
         list(Z = dat$noise$Z[rows, , drop = FALSE])
       },
       noise_gp = if (!is.null(dat$noise$gp)) {
         list(Z = dat$noise$Z[rows, , drop = FALSE], kernel = dat$noise$gp$kernel,
              prior = dat$noise$gp$prior)
       })
}

# The settings once the hyperparameters are chosen: lambda, the noise
# model's weights exp(-z^T gamma) (R/noise.R) or, under a latent noise
# process noise_gp (R/noise-gp.R), exp(-h) at its posterior mean, what is
# left of time_limit (it bounds the tuning and the solve together) and the
# automatic tolerance at lambda.
tune_settle <- function(set, dat, lambda, noise_coef, clock, noise_gp = NULL) {
  set$lambda <- lambda
  if (!is.null(noise_coef)) set$obs_weights <- exp(-drop(dat$noise$Z %*% noise_coef))
  if (!is.null(noise_gp)) set$obs_weights <- exp(-noise_gp_latent(noise_gp, dat$noise$Z)$mean)
  set$rule$time_limit <- max(set$rule$time_limit - clock$seconds(), set$rule$time_limit / 10)
  if (isTRUE(set$tol_auto)) set$rule$tol <- lambda_tol(set, dat$Yc, lambda)
  set
}

# Maximum likelihood bandwidth (or ARD length scales) and lambda by L-BFGS-B
# on the log scale with the exact gradient (Cholesky); `lambda` given: only
# the kernel's scale is optimised. Starting values: `start` (list(theta),
# the log scales and log lambda of an earlier search), else the
# median-heuristic bandwidth and the ML lambda there. The search range is
# the median bandwidth / 100 to x 1000 whatever the start. An isotropic
# kernel's statistics (distances) of many columns are formed once for every
# evaluation (search_stats()). With
# an isotropic kernel and lambda estimated (no mean function, no noise
# model) the search runs in whitened variables (gp_whitening(),
# tune_optim_whitened()).
gp_optimise <- function(xs, Y, kernel, ard = FALSE, lambda = NULL,
                        threads = 0L, clock = NULL, start = NULL,
                        what = "maximum likelihood", trend = NULL, noise = NULL,
                        fix_kernel = FALSE) {
  # targets near unit scale (powers of two: exact); the likelihood of c y is
  # that of y less n log c per column
  u <- apply(abs(as.matrix(Y)), 2L, function(v) {
    m <- max(v)
    if (m > 0) pow2_unit(m) else 1
  })
  Y <- sweep(as.matrix(Y), 2L, u, "/", check.margin = FALSE)
  ll_shift <- -(nrow(Y) - if (isTRUE(trend$reml)) ncol(trend$F) else 0) * sum(log(u))
  p <- ncol(xs)
  fit_lambda <- is.null(lambda)
  tstat <- if (!ard) search_stats(xs, kernel$metric)
  nk <- if (ard) p else 1L
  nz <- if (is.null(noise)) 0L else ncol(noise$Z)
  b <- gp_optimise_box(xs, Y, kernel, nk, lambda, tstat, threads, start, trend, nz,
                       fix_kernel)
  decode <- function(th) {
    k <- kernel
    if (ard) {
      k$bandwidth <- 1
      ell <- exp(th[seq_len(p)])
      x <- sweep(xs, 2L, ell, "/", check.margin = FALSE)
    } else {
      k$bandwidth <- exp(th[1L])
      ell <- NULL
      x <- xs
    }
    lam <- if (fit_lambda) exp(th[nk + 1L]) else lambda
    gam <- th[nk + fit_lambda + seq_len(nz)]
    list(kernel = k, ell = ell, x = x, lambda = lam, gamma = gam)
  }
  memo <- new.env(parent = emptyenv())
  white <- is.null(trend) && nz == 0L && fit_lambda && !fix_kernel && !ard &&
    flag_option("askotch.ml_whiten", TRUE)
  # the first evaluation (at the start) also returns the average information
  # for the whitening, from its own factor
  S0 <- NULL
  want_ai <- white
  # the objective; where K + lambda I is not numerically positive
  # definite the point fails, as tune_memo() handles
  loglik_at <- function(th) {
    d <- decode(th)
    v <- gp_loglik_exact(d$x, Y, d$kernel, d$lambda, ard = ard,
                         threads = threads, tstat = tstat, trend = trend,
                         noise = if (nz > 0L) list(Z = noise$Z, gamma = d$gamma), ai = want_ai)
    if (want_ai) S0 <<- v$ai
    want_ai <<- FALSE
    # the gradient's order: kernel, lambda, noise coefficients
    g <- v$gradient
    if (!is.null(g)) g <- g[c(seq_len(nk), if (fit_lambda) nk + 1L, nk + 1L + seq_len(nz))]
    if (!is.null(g) && fix_kernel) g[seq_len(nk)] <- 0
    list(f = -v$loglik, g = if (!is.null(g)) -g)
  }
  eval_at <- function(th) tune_memo(memo, th, loglik_at, clock, what)
  scale_f <- nrow(xs) * ncol(Y)
  W <- if (white) {
    tryCatch({
      eval_at(b$th0)
      if (!is.null(S0)) gp_whitening(S0)
    }, askotch_tune_time = function(e) "time_limit")
  }
  plain <- function() {
    tune_optim(b$th0, function(th) eval_at(th)$f / scale_f,
               function(th) eval_at(th)$g / scale_f, b$lower, b$upper,
               ml_optim_control(scale_f), memo, scale_f)
  }
  res <- if (identical(W, "time_limit")) {
    tune_optim_best(memo, b$th0, scale_f, 1L, W)
  } else if (is.null(W)) {
    plain()
  } else {
    res <- tune_optim_whitened(b, W, eval_at, memo, scale_f)
    # a search that ends on a bound the likelihood rises away from has not
    # found an optimum: the plain search from the start decides (the better
    # of the two)
    if (res$convergence == 0L && !bound_kkt(res$par, eval_at(res$par)$g, b)) {
      res2 <- plain()
      if (!(res2$value >= res$value)) res <- res2
    }
    res
  }
  if (!is.finite(memo$best_f %||% Inf)) {
    abort_askotch(paste(
      "The kernel matrix of the tuning points is not numerically positive",
      "definite at any bandwidth tried: the likelihood cannot be maximised.",
      "Give `bandwidth` and `lambda` numbers, or rescale `x` (standardize = TRUE)."),
      "input")
  }
  d <- decode(res$par)
  list(kernel = d$kernel, length_scales = d$ell, lambda = d$lambda,
       noise_coef = if (nz > 0L) d$gamma,
       theta = c(res$par[seq_len(nk)], log(d$lambda), d$gamma),
       optim = list(loglik = -res$value * scale_f + ll_shift,
                    convergence = res$convergence,
                    evaluations = memo$evaluations %||% 0L, message = res$message))
}

# L-BFGS-B's control for a likelihood search whose objective is divided by
# scale_f: it stops when no log-scale parameter's gradient exceeds 1e-3
# log-likelihood units. In the whitened variables (unit curvature) that is
# 1e-3 standard errors from the maximum and a gain below 1e-6 units; there
# the line search otherwise went on for twenty-odd evaluations at one point,
# where the rounding of log det (K + lambda I) hides a decrease that small.
ml_optim_control <- function(scale_f) list(maxit = 200, pgtol = 1e-3 / scale_f)

# L-BFGS-B in z = W^{-1} (theta - theta0) (gp_whitening()), unbounded.
# Beyond the box b the function is continued from the clamped point c by
# its gradient there and a steep quadratic, f(c) + g(c).(theta - c) + rho /
# 2 |theta - c|^2: once differentiable across the bound, so that the
# quasi-Newton model stays consistent; where g pushes outward its minimum
# lies just beyond the bound (then c is the constrained optimum), and it is
# below f(c) by at most |g|^2 / (2 rho), negligible with rho 1e4 times the
# largest curvature (W^T S W = I). The result's par is c, its value f(c).
tune_optim_whitened <- function(b, W, eval_at, memo, scale_f) {
  raw <- function(z) b$th0 + drop(W %*% z)
  to_th <- function(z) pmin(pmax(raw(z), b$lower), b$upper)
  rho <- 1e4 / min(svd(W, 0L, 0L)$d)^2
  cont <- function(z) {
    th <- raw(z)
    c <- to_th(z)
    v <- eval_at(c)
    out <- th - c
    list(f = v$f + sum(v$g * out) + rho / 2 * sum(out^2), g = v$g + rho * out)
  }
  res <- tune_optim(numeric(length(b$th0)), function(z) cont(z)$f / scale_f,
                    function(z) drop(crossprod(W, cont(z)$g)) / scale_f,
                    -Inf, Inf, ml_optim_control(scale_f), memo, scale_f, to_par = to_th)
  res$value <- eval_at(res$par)$f / scale_f
  res
}

# Whether theta, with the gradient g of -log likelihood there, satisfies the
# box b's optimality conditions on its bounds: at a lower bound the
# likelihood does not rise inward (g >= 0), at an upper one g <= 0, to 0.01
# log-likelihood units per unit of log scale.
bound_kkt <- function(th, g, b) {
  !any(th <= b$lower & g < -0.01) && !any(th >= b$upper & g > 0.01)
}

# A whitening of gp_optimise()'s search at its start theta0 = (log kernel
# scales, log lambda), used for an isotropic kernel with lambda estimated, no
# mean function and no noise model (options(askotch.ml_whiten = FALSE)
# turns it off): W with W^T S W = I for the average information S of
# the profile likelihood, so that L-BFGS-B searches z = W^{-1} (theta -
# theta0), in which the likelihood's curvature is near the identity. The
# log bandwidth and log lambda are strongly correlated (correlation 0.94 to
# 0.998 on Friedman 1 and NorthAmericanRainfall): in theta L-BFGS-B takes
# about 13 evaluations, in z about 8, and a diagonal scaling does not help.
# S is the average-information matrix of the profile likelihood at theta0
# (gp_average_information()), which the search's first evaluation returns
# from its own factor. NULL (no whitening) where S is not numerically
# positive definite (or the start failed: no S). (With ARD
# length scales, several of which often end on a bound, the whitened search
# took half the plain one's evaluations on two sets and three to six times
# them on a third, with either continuation beyond the box: not used there.)
gp_whitening <- function(S) {
  if (!all(is.finite(S))) return(NULL)
  e <- eigen((S + t(S)) / 2, symmetric = TRUE)
  if (!all(is.finite(e$values)) || !(min(e$values) > 1e-10 * max(e$values))) return(NULL)
  e$vectors %*% (t(e$vectors) / sqrt(e$values))
}

# gp_optimise()'s start and box on the log scale (kernel scales, log lambda
# when estimated, the nz noise coefficients): the start `start$theta` (an
# earlier search's kernel, lambda, noise), else the kernel's bandwidth and
# the ML lambda there with no noise effect; the kernel within /100 and x1000
# of its bandwidth (fixed there with fix_kernel), the noise coefficients of
# standardised covariates within +-10.
gp_optimise_box <- function(xs, Y, kernel, nk, lambda, tstat, threads, start, trend,
                            nz, fix_kernel) {
  sig0 <- kernel$bandwidth
  fit_lambda <- is.null(lambda)
  th0 <- if (!is.null(start)) {
    st <- start$theta
    c(st[seq_len(nk)], if (fit_lambda) st[nk + 1L],
      if (nz > 0L) st[nk + 1L + seq_len(nz)] %||% rep(0, nz))
  } else {
    lam0 <- if (fit_lambda) {
      K0 <- kernel_at(xs, kernel, tstat, threads)
      gp_eigen_best(gp_eigen(K0, Y, trend), "ml")
    }
    c(rep(log(sig0), nk), if (fit_lambda) log(lam0), rep(0, nz))
  }
  kl <- if (fix_kernel) log(sig0) else log(sig0 / 100)
  ku <- if (fix_kernel) log(sig0) else log(sig0 * 1000)
  lower <- c(rep(kl, nk), if (fit_lambda) log(ml_lambda_range[1L]), rep(-10, nz))
  upper <- c(rep(ku, nk), if (fit_lambda) log(ml_lambda_range[2L]), rep(10, nz))
  th0[is.na(th0)] <- 0
  list(th0 = pmin(pmax(th0, lower), upper), lower = lower, upper = upper)
}

# Refine maximum-likelihood hyperparameters on all n points (option
# askotch.ml_method = "stochastic", n above tune_exact_max_n()): L-BFGS-B on
# the stochastic profile likelihood (gp_loglik_stochastic(), in C), from the
# subsample's estimate, within a factor 100 of it, at most `maxit`
# iterations (option askotch.ml_stochastic_maxit, 20). The probes are fixed
# by `seed` (common random numbers); each point gets its own preconditioner
# (rank: option askotch.ml_stochastic_rank, 500), which keeps both the CG
# iterations and the estimates' variance small, and the gradient is taken by
# central differences with that point's probes and preconditioner. Each
# solve of y starts from the previous one; CG stops at a relative residual of
# 1e-3, where the estimates agree with tighter solves well inside their
# standard errors. The search stops when two evaluations in a row change the
# best log likelihood by less than the change's standard error (refine_stop):
# such steps are inside the estimate's stochastic error.
gp_refine_stochastic <- function(xs, Y, kernel, lambda, ell, fit_kernel,
                                 seed, threads = 0L, clock = NULL,
                                 maxit = getOption("askotch.ml_stochastic_maxit",
                                                   20L), device = "cpu") {
  ard <- !is.null(ell)
  p <- ncol(xs)
  nk <- if (!fit_kernel) 0L else if (ard) p else 1L
  scale0 <- if (ard) ell else kernel$bandwidth
  th0 <- c(if (nk > 0L) log(scale0), log(lambda))
  lower <- pmax(th0 - log(100), c(rep(-Inf, nk), log(ml_lambda_range[1L])))
  upper <- pmin(th0 + log(100), c(rep(Inf, nk), log(ml_lambda_range[2L])))
  decode <- function(th) {
    k <- kernel
    e <- ell
    if (nk > 0L && ard) e <- exp(th[seq_len(p)])
    if (nk > 0L && !ard) k$bandwidth <- exp(th[1L])
    x <- if (ard) sweep(xs, 2L, e, "/", check.margin = FALSE) else xs
    list(kernel = k, ell = e, x = x, lambda = exp(th[nk + 1L]))
  }
  memo <- new.env(parent = emptyenv())
  memo$small <- 0L
  rank <- getOption("askotch.ml_stochastic_rank", 500L)
  # at a new point (track): a preconditioner built there; the differences
  # of the gradient reuse that point's (pc) and the warm start
  eval_at <- function(th, track = TRUE) {
    d <- decode(th)
    v <- gp_loglik_stochastic(d$x, Y, d$kernel, d$lambda, ard = ard,
                              gradient = FALSE, probes = 30L, rank = rank,
                              seed = seed, tol = 1e-3, maxit = 400L,
                              threads = threads, pc = if (!track) memo$pc,
                              alpha = memo$alpha, device = device)
    if (!track) return(-v$loglik)
    memo$pc <- v$precond
    memo$alpha <- v$alpha
    memo$th <- th
    memo$val <- list(f = -v$loglik, se = v$se)
    refine_stop(memo, -v$loglik, v$terms * ncol(Y) / 2)
    # (after the search, no clock: a time limit signalled here would escape)
    tune_best(memo, th, -v$loglik, if (isTRUE(memo$done)) NULL else clock,
              "stochastic likelihood, all points")
    if (identical(memo$best_th, th)) memo$best_terms <- v$terms * ncol(Y) / 2
    -v$loglik
  }
  # the gradient by central differences (step 0.01 in the log scale) of the
  # function with the probes and the preconditioner of the point fixed, a
  # smooth function whose differences are precise: the Hutchinson estimate
  # of the gradient (gp_loglik_stochastic) is unbiased but, at small lambda,
  # far noisier, and a gradient inconsistent with its function stalls the
  # line search
  grad_at <- function(th) {
    if (!identical(memo$th, th)) eval_at(th)
    vapply(seq_along(th), function(j) {
      e <- replace(numeric(length(th)), j, 0.01)
      (eval_at(th + e, FALSE) - eval_at(th - e, FALSE)) / 0.02
    }, 0)
  }
  sc <- nrow(xs) * ncol(Y)
  res <- tune_optim(th0, function(th) eval_at(th) / sc,
                    function(th) grad_at(th) / sc, lower, upper,
                    list(maxit = maxit, factr = 1e10), memo, sc)
  memo$done <- TRUE
  if (!identical(memo$th, res$par)) eval_at(res$par)
  d <- decode(res$par)
  v <- memo$val
  list(kernel = d$kernel, length_scales = d$ell, lambda = d$lambda,
       optim = list(loglik = -v$f, se = v$se, step_se = memo$step_se,
                    convergence = res$convergence,
                    evaluations = memo$evaluations,
                    message = res$message))
}

# Count the evaluations of a stochastic search and whether the value moved
# from the best one by less than the change's standard error: the probes
# are the same at both points (common random numbers), so the standard
# deviation of the probes' terms' differences (terms: the probes'
# contributions to -f) over sqrt(probes) estimates it. After two such
# evaluations in a row, signal askotch_tune_converged (tune_optim keeps the
# best point).
refine_stop <- function(memo, f, terms) {
  memo$evaluations <- (if (is.null(memo$evaluations)) 0L else memo$evaluations) + 1L
  if (isTRUE(memo$done) || is.null(memo$best_f) || !is.finite(f)) return(invisible())
  se <- stats::sd(terms - memo$best_terms) / sqrt(length(terms))
  memo$step_se <- se
  small <- abs(f - memo$best_f) < se
  memo$small <- if (small) memo$small + 1L else 0L
  if (memo$small >= 2L) {
    tune_best(memo, memo$th, f, NULL, "")
    stop(structure(class = c("askotch_tune_converged", "condition"),
                   list(message = "steps inside the stochastic error", call = NULL)))
  }
}

# The clock and progress display of the hyperparameter search: tick(what,
# loglik) after each likelihood evaluation updates the status line (the
# step, the log likelihood, the seconds) and, once the fit's time_limit has
# passed, signals askotch_tune_time, on which the search keeps its best point.
# The tuning takes at most half the time_limit: the solve gets the rest.
tune_clock <- function(set, envir = parent.frame()) {
  t0 <- now()
  k <- 0L
  limit <- set$rule$time_limit / 2
  pb <- if (isTRUE(set$progress)) {
    cli::cli_progress_bar(name = "tuning", total = NA, clear = TRUE,
                          format = "{cli::pb_name} {cli::pb_spin} {cli::pb_status}",
                          .envir = envir)
  }
  tick <- function(what, loglik) {
    k <<- k + 1L
    if (!is.null(pb)) {
      cli::cli_progress_update(id = pb, status = sprintf(
        "%s: step %d, log-likelihood %s, %.1f s", what, k,
        format(signif(loglik, 7)), now() - t0), .envir = envir)
    }
    if (is.finite(limit) && now() - t0 > limit) {
      stop(structure(class = c("askotch_tune_time", "condition"),
                     list(message = "time_limit reached while tuning", call = NULL)))
    }
  }
  list(tick = tick, seconds = function() now() - t0,
       expired = function() is.finite(limit) && now() - t0 > limit)
}

# A search's objective at th, list(f, g), evaluated once per th
# (optim() asks for the value and the gradient separately): compute(th)
# returns list(f, g) with f not finite where the point failed, which then
# gets a value far above any other and a zero gradient (L-BFGS-B refuses
# infinite values, and its line search backs away from such a point). The
# evaluations are counted in memo$evaluations, the best point kept and the
# clock ticked (tune_best()).
tune_memo <- function(memo, th, compute, clock, what) {
  if (!is.null(memo$th) && identical(memo$th, th)) return(memo$val)
  memo$evaluations <- (memo$evaluations %||% 0L) + 1L
  v <- compute(th)
  memo$th <- th
  ok <- is.finite(v$f)
  memo$val <- list(f = if (ok) v$f else .Machine$double.xmax / 4,
                   g = if (ok && !is.null(v$g) && all(is.finite(v$g))) v$g else
                     rep(0, length(th)))
  tune_best(memo, th, v$f, clock, what)
  memo$val
}

# Keep the best point of a search in memo (best_th, best_f), then tick the clock
tune_best <- function(memo, th, f, clock, what) {
  if (is.finite(f) && (is.null(memo$best_f) || f < memo$best_f)) {
    memo$best_th <- th
    memo$best_f <- f
  }
  if (!is.null(clock)) clock$tick(what, -f)
}

# L-BFGS-B (or `method`, unbounded) on the log scale; stopped by the tuning
# clock, the best point so far (memo) with convergence code 1 and message
# "time_limit", or by a stochastic search's stopping rule (refine_stop),
# with code 0. to_par maps the search's variables to the parameters memo
# holds (a whitened search).
tune_optim <- function(th0, fn, gr, lower, upper, control, memo, scale, to_par = identity,
                       method = "L-BFGS-B") {
  best <- function(code, message) tune_optim_best(memo, to_par(th0), scale, code, message)
  tryCatch({
    res <- stats::optim(th0, fn, gr, method = method, lower = lower, upper = upper,
                        control = control)
    res$par <- to_par(res$par)
    res
  },
    askotch_tune_time = function(e) best(1L, "time_limit"),
    askotch_tune_converged = function(e) best(0L, conditionMessage(e)))
}

# A stopped search's result as optim() gives it: the best point of memo (th0
# when none) with convergence `code` and `message`
tune_optim_best <- function(memo, th0, scale, code, message) {
  list(par = if (is.null(memo$best_th)) th0 else memo$best_th,
       value = if (is.null(memo$best_f)) NA_real_ else memo$best_f / scale,
       counts = c("function" = NA_integer_, gradient = NA_integer_),
       convergence = code, message = message)
}

# Choosing the kernel and the input scaling by likelihood --------------------------

# The kernels krr(kernel = "auto") chooses among by maximum likelihood: the
# Matern family from the smoothness the defaults study favours (3/2), the
# rougher and smoother members, and the Gaussian kernel, their limit.
auto_kernels <- c("matern32", "matern12", "matern52", "rbf")

# The points the kernel and the scaling are chosen on: at most this many of
# the tuning rows (option askotch.select_subsample).
select_subsample <- function() getOption("askotch.select_subsample", 500)

# The kernel (kernel = "auto") and the input scaling (standardize = "auto")
# by maximum likelihood on a subsample of the tuning rows: first the scaling
# (each column by its own sd, or all by one scale) with the first kernel,
# then the other kernels at the chosen scaling. Each candidate's bandwidth
# (or length scales) and lambda are estimated by gp_optimise(); the
# select_finalists_n() of the largest likelihoods are then estimated on all
# tuning rows, and the largest likelihood there wins (every candidate has the same
# hyperparameters, so this is also the choice by AIC or BIC). Returns dat
# and sub with the chosen scaling, set with the chosen kernel, the record
# `models` and `opt`, the winner's search on all tuning rows (tune_ml()
# reuses it).
tune_select <- function(dat, set, sub, clock) {
  sel <- set$select
  if (is.null(sel) || constant_targets(sub$Y)) return(list(dat = dat, set = set, sub = sub))
  rows <- subsample_rows(length(sub$rows), select_subsample(), set$seed + 3)
  Y <- if (length(rows) == length(sub$rows)) sub$Y else
    centre_rows(sub$Y[rows, , drop = FALSE], dat$tgt$task, sub$trend)
  tr <- trend_rows(sub$trend, rows)
  nzr <- if (!is.null(sub$noise)) list(Z = sub$noise$Z[rows, , drop = FALSE])
  ard <- set$kernel$bandwidth_rule == "ard"
  lam <- if (set$lambda_spec$rule == "fixed") set$lambda_spec$value
  # each search starts at its own median bandwidth and the ML lambda there
  # (another candidate's lambda can sit at a bound of its range, where a
  # search started from it stays)
  try_one <- function(name, ratio) {
    xs <- scale_columns(sub$xs[rows, , drop = FALSE], ratio)
    o <- gp_optimise(xs, Y, candidate_kernel(name, xs, set), ard, lam, set$threads, clock,
                     what = sprintf("choosing the kernel (%s)", name), trend = tr,
                     noise = nzr)
    list(name = name, ratio = ratio, opt = o, loglik = o$optim$loglik)
  }
  first <- if (is.null(sel$kernels)) set$kernel$name else sel$kernels[1L]
  tried <- list(try_one(first, NULL))
  if (sel$scaling && !clock$expired()) {
    tried <- c(tried, list(try_one(first, joint_ratio(dat$scaling))))
  }
  best <- tried[[best_index(tried, "loglik")]]
  # a search stopped by time_limit leaves the other candidates untried
  for (nm in setdiff(sel$kernels, first)) {
    if (clock$expired()) break
    tried <- c(tried, list(try_one(nm, best$ratio)))
  }
  tried <- if (length(rows) < length(sub$rows)) {
    select_finalists(tried, sub, set, clock, ard, lam)
  } else lapply(tried, function(t) c(t, list(loglik_all = t$loglik, opt_all = t$opt)))
  i <- best_index(tried, "loglik_all")
  out <- select_apply(dat, set, sub, tried[[i]])
  out$models <- select_record(tried, i, length(rows), length(sub$rows))
  out$opt <- tried[[i]]$opt_all
  out
}

# How many candidates of the subsample's screening are estimated again on all
# tuning rows (option askotch.select_finalists, 3): on NorthAmericanRainfall
# the 500-point screening ranked the best kernel (Matern 1/2, 49 log
# likelihood units above the next on all points) third in 5 of 10 seeds, never
# lower (inst/bench/bench_select_finalists.R).
select_finalists_n <- function() {
  k <- getOption("askotch.select_finalists", 3L)
  if (!is.numeric(k) || length(k) != 1L || !isTRUE(k >= 1 && k == round(k))) {
    abort_askotch("option `askotch.select_finalists` must be a whole number, at least 1.",
                  "input")
  }
  as.integer(k)
}

# The select_finalists_n() candidates of the largest likelihoods on the
# subsample, estimated again on all tuning rows from their subsample
# estimates: the subsample screens, all tuning rows decide (loglik_all,
# opt_all; the others keep loglik_all = NA).
select_finalists <- function(tried, sub, set, clock, ard, lam) {
  top <- order(-candidate_lls(tried, "loglik"))
  for (i in seq_along(tried)) tried[[i]]$loglik_all <- NA_real_
  for (i in top[seq_len(min(select_finalists_n(), length(top)))]) {
    if (i != top[1L] && clock$expired()) break
    t <- tried[[i]]
    xs <- scale_columns(sub$xs, t$ratio)
    o <- gp_optimise(xs, sub$Y, candidate_kernel(t$name, xs, set), ard, lam, set$threads,
                     clock, start = t$opt,
                     what = sprintf("choosing the kernel (%s, all tuning points)", t$name),
                     trend = sub$trend, noise = sub$noise)
    tried[[i]]$opt_all <- o
    tried[[i]]$loglik_all <- o$optim$loglik
  }
  tried
}

# Whether every target column is constant (no likelihood to maximise)
constant_targets <- function(Y) {
  all(apply(as.matrix(Y), 2L, function(v) max(v) - min(v)) == 0)
}

# The candidates' likelihoods `field` (-Inf where not finite or not computed)
candidate_lls <- function(tried, field) {
  ll <- vapply(tried, function(t) t[[field]], 0)
  ll[!is.finite(ll)] <- -Inf
  ll
}

# The candidate of the largest likelihood `field` (the first among equals)
best_index <- function(tried, field) which.max(candidate_lls(tried, field))

# The kernel `name` with the fit's bandwidth rule, its search started from
# the median bandwidth of the points xs
candidate_kernel <- function(name, xs, set) {
  k <- new_kernel(name, set$kernel$bandwidth_rule)
  k$bandwidth <- median_bandwidth(xs, k$metric, set$seed)
  k$bandwidth_rule <- set$kernel$bandwidth_rule
  k
}

# Per-column scaling to one scale: the factors s_j / s applied to the
# per-column standardised points (joint_scaling()'s scale s)
joint_ratio <- function(scaling) {
  js <- joint_scaling(scaling, scaling$varying, "joint")
  scaling$scale / js$scale
}

scale_columns <- function(xs, ratio) {
  if (is.null(ratio)) xs else sweep(xs, 2L, ratio, "*", check.margin = FALSE)
}

# dat, sub and set with the chosen kernel (its search on all tuning rows) and
# scaling
select_apply <- function(dat, set, sub, best) {
  if (!is.null(best$ratio)) {
    dat$xs <- scale_columns(dat$xs, best$ratio)
    sub$xs <- scale_columns(sub$xs, best$ratio)
    dat$scaling$scale <- dat$scaling$scale / best$ratio
    dat$standardize <- "joint"
  }
  set$kernel <- best$opt_all$kernel
  list(dat = dat, set = set, sub = sub)
}

# One row per candidate: kernel, scaling, maximised log likelihood on the
# selection points and (finalists) on all tuning points, the subsample's
# estimates, and which was chosen (candidate i)
select_record <- function(tried, i, n_used, n_all) {
  data.frame(
    kernel = vapply(tried, function(t) t$name, ""),
    scaling = vapply(tried, function(t) if (is.null(t$ratio)) "columns" else "joint", ""),
    loglik = vapply(tried, function(t) t$loglik, 0),
    loglik_all = vapply(tried, function(t) t$loglik_all, 0),
    bandwidth = vapply(tried, function(t) {
      if (is.null(t$opt$length_scales)) t$opt$kernel$bandwidth else NA_real_
    }, 0),
    lambda = vapply(tried, function(t) t$opt$lambda, 0),
    chosen = seq_along(tried) == i,
    n_used = n_used, n_all = n_all)
}
