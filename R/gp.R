# Gaussian-process uncertainty of squared-loss krr() fits ------------------------
#
# The model (Rasmussen and Williams 2006, ch. 2): y_i = mu + f(x_i) + e_i with
# f ~ GP(0, s^2 k), e_i ~ N(0, lambda s^2), k the fit's kernel on the
# standardised points (k(x, x) = 1 for every kernel of the package); mu is
# estimated by the mean of y (the centring krr() does) and s^2 by maximum
# likelihood, s^2 = y_c^T (K + lambda I)^{-1} y_c / n = sum(y_c * w) / n.
#
# The predictor at x is m(x) = ybar + k_x^T A^{-1} (y - ybar 1), A = K + lambda I,
# a linear function c_x^T y of the data with c_x^T 1 = 1, so mu cancels from
# its error and, under the model, its mean-squared error for mu + f(x) is
#
#   s^2 [ k(x, x) - k_x^T A^{-1} k_x + b_x^2 (1^T K 1 + n lambda) ],
#   b_x = (1 - 1^T A^{-1} k_x) / n,
#
# the GP posterior variance plus the term that the estimate ybar of mu adds;
# the covariance of the errors at x and x' is s^2 [k(x, x') -
# k_x^T A^{-1} k_x' + b_x b_x' (1^T K 1 + n lambda)].  Both methods below
# compute these, exactly (Cholesky) or within a bound (Nystrom).
#
# Observation weights w_i (noise variance lambda s^2 / w_i): A = K + lambda
# W^{-1} and mu is estimated by the weighted mean pi^T y, pi = w / sum(w).
# With c_x = A^{-1} k_x + beta_x pi, beta_x = 1 - 1^T A^{-1} k_x, the
# predictor is c_x^T y (c_x^T 1 = 1) and its error variance
#   s^2 [c^T A c - 2 c^T k_x + k(x, x)]
#     = s^2 [k(x, x) - k_x^T A^{-1} k_x + beta_x^2 pi^T A pi],
# pi^T A pi = pi^T K pi + lambda / sum(w): the formula above with b_x =
# beta_x / n and c0 = n^2 pi^T A pi (= 1^T K 1 + n lambda without weights).

# Which fits have this model: squared-loss krr() regression on the full
# kernel (no inducing points, no random features).
gp_check <- function(object, what, call = NULL) {
  why <- NULL
  if (inherits(object, "kernel_machine") || fit_loss(object)$name != "squared") {
    why <- "a squared-loss krr() fit"
  } else if (!object$task %in% c("regression", "multioutput")) {
    why <- paste("a regression fit (a classification fit's scores are a",
                 "least-squares fit to +1/-1 codes, not a Gaussian model of",
                 "the classes)")
  } else if (!is.null(object$centers) || fit_features(object) != 0) {
    why <- paste("a fit on the full kernel (an inducing-point solver such as",
                 "falkon() fits a different, low-rank model; random or linear",
                 "features another kernel)")
  }
  if (!is.null(why)) {
    abort_askotch(sprintf("%s needs %s.", what, why), "input", call)
  }
  invisible(object)
}

gp_xs <- function(object) if (is.null(object$x_train)) object$x else object$x_train


# c0 = n^2 pi^T A pi (see above) from 1^T K 1 (unweighted) or pi^T K pi
gp_c0 <- function(object, piKpi) {
  # the trend's term: gp_add_trend_var(); none for a Laplace view (R/laplace.R)
  if (!is.null(object$trend) || isTRUE(object$gp_no_mean)) return(0)
  w <- fit_obs_weights(object)
  object$n^2 * (piKpi + object$lambda / sum(w))
}

# centred targets, n x m (with a mean function the GLS residuals y - F beta,
# of which the weights are A^{-1} (y - F beta))
gp_yc <- function(object) {
  sweep(object$y, 2L, object$y_center, check.margin = FALSE) - trend_values(object)
}

# The maximum-likelihood signal variance s^2 of each output,
# y_c^T (K + lambda I)^{-1} y_c / n with the fitted weights (REML: / (n - q)).
gp_signal_var <- function(object) {
  s2 <- colSums(gp_yc(object) * object$weights) / (object$n - trend_reml_q(object))
  names(s2) <- object$y_names
  s2
}

gp_threads <- function(object) {
  as.integer(if (is.null(object$threads)) 0L else object$threads)
}

# K(x1, x2) in double precision
gp_kmat <- function(object, x1, x2) {
  native_kernel_matrix(x1, x2, object$kernel, threads = gp_threads(object))
}

# The prior variances k(x, x) at the rows of x (1 but for a composite kernel
# with linear or polynomial components)
gp_kdiag <- function(object, x) {
  if (!is_composite_kernel(object$kernel)) return(rep(1, nrow(x)))
  native_kernel_diag(x, object$kernel)
}

# Blocks of at most `budget` numbers: row index sets of length <= budget / n
gp_blocks <- function(nnew, n, budget = 2^22) {
  b <- max(1L, min(nnew, floor(budget / n)))
  split(seq_len(nnew), ceiling(seq_len(nnew) / b))
}

# The largest n for the exact (Cholesky) method under method = "auto".
gp_exact_max_n <- function() getOption("askotch.gp_exact_max_n", 5000)
# The largest n for which method = "auto" replaces a loose Nystrom bracket by
# the exact variance (the kernel matrix and its Cholesky factor, two n x n
# matrices: 1.6 GB and a factorisation of about 10 s on two cores at n = 1e4;
# 6.4 GB and about a minute at 2e4).
gp_exact_fallback_n <- function() getOption("askotch.gp_exact_fallback_n", 10000)

gp_method <- function(method, object, choices, arg, call) {
  if (!is.character(method) || length(method) < 1L) {
    abort_askotch(sprintf("`%s` must be one of %s.", arg,
                          paste0("\"", choices, "\"", collapse = ", ")),
                  "input", call)
  }
  method <- check_choice(method[1L], choices, arg, call)
  if (method == "auto") {
    method <- if (object$n <= gp_exact_max_n()) "exact" else choices[3L]
  }
  method
}

# Exact method: the Cholesky factor R of A = K + lambda W^{-1} (R^T R = A),
# u = A^{-1} 1 and c0 = n^2 pi^T A pi (1^T K 1 + n lambda without weights),
# kept by gp_cached().
gp_exact_factor <- function(object) {
  gp_cached(object, list("exact"), function() gp_exact_factor_make(object),
            size = function(f) length(f$R))
}

gp_exact_factor_make <- function(object) {
  xs <- gp_xs(object)
  n <- nrow(xs)
  K <- gp_kmat(object, xs, xs)
  w <- fit_obs_weights(object)
  pw <- w / sum(w)
  c0 <- gp_c0(object, drop(crossprod(pw, K %*% pw)))
  diag(K) <- diag(K) + object$lambda / w
  R <- tryCatch(chol(K), error = function(e) abort_askotch(sprintf(
    "The Cholesky factorisation of K + lambda W^{-1} failed: %s",
    conditionMessage(e)), "numeric"))
  rm(K)
  u <- chol_solve(R, rep(1, n))
  list(R = R, u = u, c0 = c0, n = n)
}

# For new points xnew: Z = R^{-T} K(X, xnew) (so k_x^T A^{-1} k_x' =
# (Z^T Z)[x, x']) and b = (1 - 1^T A^{-1} k_x) / n.
gp_exact_cross <- function(object, fac, xnew) {
  Ks <- gp_kmat(object, gp_xs(object), xnew)
  list(Z = backsolve(fac$R, Ks, transpose = TRUE),
       b = (1 - drop(crossprod(fac$u, Ks))) / fac$n)
}

# The unit-scale error variance (s^2 = 1) at the rows of xnew, exactly,
# in blocks of bounded memory.
gp_var_exact <- function(object, xnew) {
  fac <- gp_exact_factor(object)
  v <- numeric(nrow(xnew))
  for (idx in gp_blocks(nrow(xnew), fac$n)) {
    cr <- gp_exact_cross(object, fac, xnew[idx, , drop = FALSE])
    v[idx] <- gp_kdiag(object, xnew[idx, , drop = FALSE]) - colSums(cr$Z^2) +
      cr$b^2 * fac$c0
  }
  list(var = pmax(v, 0), lower = NULL, upper = NULL)
}

# The unit-scale error covariance at the rows of xnew (exact method).
gp_cov_exact <- function(object, xnew) {
  fac <- gp_exact_factor(object)
  cr <- gp_exact_cross(object, fac, xnew)
  C <- gp_kmat(object, xnew, xnew) - crossprod(cr$Z) +
    fac$c0 * tcrossprod(cr$b)
  (C + t(C)) / 2
}

# Nystrom method ------------------------------------------------------------------
#
# Greedy pivoted Cholesky (e.g. Harbrecht, Peters and Schneider 2012) gives
# K_hat = L L^T with E = K - K_hat >= 0 and its diagonal exactly, so
# ||E||_2 <= tr(E) = e.  From K_hat + lambda I <= A <= K_hat + (lambda + e) I,
#   P_e = (K_hat + (lambda + e) I)^{-1} <= A^{-1} <= (K_hat + lambda I)^{-1} = P_0,
# both by the Woodbury identity with L.  So k^T A^{-1} k lies between
# k^T P_e k and k^T P_0 k, and 1^T A^{-1} k within
# sqrt(1^T (P_0 - P_e) 1 * k^T (P_0 - P_e) k) of both 1^T P_e k and 1^T P_0 k
# (Cauchy-Schwarz for A^{-1} - P_e >= 0 and P_0 - A^{-1} >= 0): the variance
# lies in a computable interval; its lower end is reported.
# With observation weights the same is done for K' = D K D,
# D = W^{1/2}: A^{-1} = D (K' + lambda I)^{-1} D, so k^T A^{-1} k and
# 1^T A^{-1} k are the forms above in k' = D k and D 1 (the pivoted
# Cholesky of K', diag(K') = w).

gp_rank <- function(n) min(n, getOption("askotch.gp_rank", 1000))

# give_up: NULL as soon as the trace error is known to exceed lambda
gp_nystrom_factor <- function(object, give_up = FALSE) {
  xs <- gp_xs(object)
  n <- nrow(xs)
  lam <- object$lambda
  r <- gp_rank(n)
  w <- fit_obs_weights(object)
  dw <- sqrt(w)
  # the factor of K' = D K D is D L for the factor L of K with the pivots
  # chosen by the weighted residual diagonal w_i diag(E)_i (compiled, in
  # blocks of pivots: linalg/pchol.c); stop once tr(E') is negligible
  # against lambda, or at a pivot too small to divide by (its share stays
  # in e)
  pc <- native_pivoted_cholesky(xs, object$kernel,
                                if (is.null(object$obs_weights)) NULL else as.numeric(w),
                                r, 1e-6 * lam, 1e-12, gp_threads(object))
  j <- pc$rank
  L <- if (j == r) pc$L else pc$L[, seq_len(j), drop = FALSE]
  pc$L <- NULL
  if (!is.null(object$obs_weights)) L <- L * dw
  d <- w * pc$d
  # tr(E) with a margin for the rounding of the running diagonal
  e <- sum(d) * (1 + 1e-10) + n * j * 4 * .Machine$double.eps
  if (give_up && e > lam) return(NULL)
  pw <- matrix(dw^2 / sum(dw^2), n, 1L)
  c0 <- gp_c0(object, sum(pw * native_kernel_apply(xs, xs, pw, object$kernel,
                                                     threads = gp_threads(object))))
  one <- matrix(dw, n, 1L)  # D 1
  # L = U diag(sv) V^T: (L L^T + mu I)^{-1} = U diag(1 / (sv^2 + mu)) U^T +
  # (I - U U^T) / mu; the residual norms ||(I - U U^T) k||^2 are formed
  # without cancellation against the low-rank part (gp_resid2())
  sv <- svd(L, nv = 0L)
  U <- sv$u
  h <- drop(crossprod(U, one))
  res1 <- one[, 1L] - drop(U %*% h)
  list(U = U, ev = sv$d^2, e = e, lam = lam, c0 = c0, n = n, rank = j,
       h = h, r1 = sum(res1^2), res1 = res1, dw = dw)
}

# ||(I - U U^T) g||^2 for the columns g of G with P = U^T G: ||g||^2 -
# ||p||^2 where that keeps 8 or more significant digits (the difference is at
# least 1e-8 of ||g||^2), the explicit residual for the other columns (a
# point close to the span of the pivots, and any column when lambda is tiny).
gp_resid2 <- function(U, G, P) {
  g2 <- colSums(G^2)
  rr <- g2 - colSums(P^2)
  bad <- which(!(rr >= 1e-8 * g2))
  if (length(bad)) {
    rr[bad] <- colSums((G[, bad, drop = FALSE] -
                          U %*% P[, bad, drop = FALSE])^2)
  }
  pmax(rr, 0)
}

# x^T P_mu y for P_mu = (K_hat + mu I)^{-1} from the projections px = U^T x,
# py = U^T y (columns) and the residuals' inner product rr.
gp_pform <- function(px, py, ev, rr, mu) {
  colSums(px * py / (ev + mu)) + rr / mu
}

# x^T (P_0 - P_e) y, computed directly (the difference is not cancelled).
gp_pdiff <- function(px, py, ev, rr, lam, e) {
  colSums(px * py * (e / ((ev + lam) * (ev + lam + e)))) +
    rr * (e / (lam * (lam + e)))
}

# Variance interval at the rows of xnew (unit scale).
# give_up: return list(gave_up = TRUE) without the bracket when the trace
# error exceeds lambda
gp_var_nystrom <- function(object, xnew, give_up = FALSE) {
  # kept by gp_cached(): NULL (gave up) serves only calls that give up
  fac <- gp_cached(object, list("nystrom", gp_rank(object$n)),
                   function() gp_nystrom_factor(object, give_up),
                   size = function(f) length(f$U), use = function(f) give_up || !is.null(f))
  if (is.null(fac) || (give_up && fac$e > fac$lam)) return(list(gave_up = TRUE))
  n <- fac$n
  lam <- fac$lam
  e <- fac$e
  ev <- fac$ev
  xs <- gp_xs(object)
  lo <- hi <- numeric(nrow(xnew))
  h <- matrix(fac$h)
  d1 <- gp_pdiff(h, h, ev, fac$r1, lam, e)  # 1^T (P_0 - P_e) 1
  for (idx in gp_blocks(nrow(xnew), n, 2^24)) {
    G <- gp_kmat(object, xs, xnew[idx, , drop = FALSE])
    if (!is.null(object$obs_weights)) G <- G * fac$dw
    P <- crossprod(fac$U, G)
    rr <- gp_resid2(fac$U, G, P)
    # res1 is orthogonal to U: res1^T (I - U U^T) k = res1^T k
    r1 <- drop(crossprod(fac$res1, G))
    hP <- matrix(fac$h, length(fac$h), ncol(P))
    q0 <- gp_pform(P, P, ev, rr, lam)            # k^T P_0 k
    dk <- gp_pdiff(P, P, ev, rr, lam, e)         # k^T (P_0 - P_e) k
    t0 <- gp_pform(hP, P, ev, r1, lam)           # 1^T P_0 k
    te <- t0 - gp_pdiff(hP, P, ev, r1, lam, e)   # 1^T P_e k
    delta <- sqrt(d1 * pmax(dk, 0))
    tlo <- pmax(t0, te) - delta
    thi <- pmin(t0, te) + delta
    # (1 - t)^2 over [tlo, thi]
    a <- 1 - thi
    b <- 1 - tlo
    sq_min <- ifelse(a <= 0 & b >= 0, 0, pmin(a^2, b^2))
    sq_max <- pmax(a^2, b^2)
    kd <- gp_kdiag(object, xnew[idx, , drop = FALSE])
    lo[idx] <- kd - q0 + sq_min * fac$c0 / n^2
    hi[idx] <- kd - q0 + dk + sq_max * fac$c0 / n^2
  }
  lo <- pmax(lo, 0)
  hi <- pmax(hi, lo)
  # the reported variance is the lower end: the exact variance with K
  # replaced by its Nystrom approximation, which the exact one approaches as
  # the rank grows; the upper end carries tr(E), a loose bound on ||E||_2
  # (the midpoint overstated the variance tenfold at n = 3000, p = 10)
  list(var = lo, lower = lo, upper = hi, rank = fac$rank, e = e)
}

# Pathwise Monte Carlo method ---------------------------------------------------------
#
# The error of the predictor c_x^T y at x, for data drawn from the model, is
# d(x) = g(x) - c_x^T (g(X) + e) (unit scale) with g the prior process and e
# the noise, and E[d(x)^2] is the variance above.  Pathwise conditioning
# (Wilson et al. 2020) draws d for all new points at once: a prior draw g by
# M random Fourier features, pseudo-data r = g(X) + e, one solve of
# A v = r - rbar, and d(x) = g(x) - rbar - k_x^T v.  A feature kernel K_w
# with a fixed draw of frequencies w would bias E[d^2] by c^T (K_w - K) c;
# with fresh frequencies for every draw E_w[K_w] = K (Rahimi and Recht 2007),
# so the mean of d^2 over the draws is unbiased for the exact variance (given
# exact solves: an iterative solver's tolerance adds its own error), and
# the draws are independent, so its Monte Carlo standard error is estimated
# from the draws themselves (relative to the variance at least sqrt(2 / S)
# for S draws, the Gaussian case; given the frequencies w, d^2 / v_w is
# chi-squared on one degree of freedom, v_w the variance under the feature
# kernel K_w).  One draw has no standard error (NA).  Its cost is that of S right-hand sides
# of the fit's solver plus O((n + n_new) M p) per draw: no n x n matrix.

# the random features of one pathwise draw
gp_pathwise_features <- function() getOption("askotch.gp_pathwise_features", 256)

# The draws are kept (gp_cached()) and reused at any new
# points: after the first call the variance costs one kernel product with
# `draws` columns and the prior's features at the new points, no solve.
gp_var_pathwise <- function(object, xnew, draws, Fnew = NULL) {
  draws <- as.integer(draws)
  M <- as.numeric(gp_pathwise_features())
  # (the control variate's rank in the key: draws made under another rank option are not reused)
  cvr <- if (gp_cv_applies(object)) gp_cv_rank(object$n)
  dr <- gp_cached(object, list("pathwise", draws, M, cvr), function() {
    gp_pathwise_draws(object, draws, M, cv_rank = cvr)
  }, size = function(v) as.numeric(object$n) * draws)
  U <- gp_pathwise_eval(object, dr, xnew, Fnew)
  # with the Nystrom control variate where it applies (R/gp-pathwise-cv.R)
  est <- gp_cv_estimate(U^2, if (!is.null(dr$cv)) gp_cv_eval(object, dr$cv, xnew))
  list(var = est$var, lower = NULL, upper = NULL, mc_se = est$mc_se,
       draws = as.integer(draws), cv_rank = dr$cv$rank, with_trend = TRUE)
}

# A Nystrom bracket that leaves the exact variance more than twice the
# reported (lower) end at some point warns: the rank is too small for this
# lambda, and the standard errors there may be several times too small
# (down to 0 where the lower end is clipped).
gp_warn_loose <- function(object, v, loose, call) {
  warn_askotch(sprintf(paste(
    "The Nystrom standard errors (rank %d) are loose at %d of %d new points:",
    "there the exact variance may exceed the one reported by more than a",
    "factor of 2 (the interval that holds it is attr(se.fit, \"var_range\");",
    "tr(K - K_hat) = %.3g against lambda = %.3g). Use method = \"pathwise\"",
    "(a Monte Carlo estimate: the fit's solve with `draws` columns; for a",
    "fit that converged), method = \"exact\" (an n x n Cholesky factor,",
    "n = %d) or raise options(askotch.gp_rank = )."),
    v$rank, sum(loose), length(loose), v$e, object$lambda[1L], object$n),
    "accuracy", call)
}

# The solution of A V = B for an n x q matrix B with the fit's own solver and
# tolerance (its kept state when alive, which is left as it was).
gp_solve <- function(object, B) {
  set <- settings_from_fit(object, object$lambda, object$tol, object$max_passes,
                      object$time_limit, FALSE)
  # a kept state solves B with its own setup; a new one is built for B
  dimnames(B) <- NULL
  state <- krr_state(object, B)
  kept <- identical(state, object$state)
  on.exit({
    if (kept) {
      native_fit_set_targets(state, gp_yc(object))
      W <- object$weights
      dimnames(W) <- NULL
      native_fit_set_weights(state, W)
    } else {
      native_fit_free(state)
    }
  }, add = TRUE)
  if (kept) native_fit_set_targets(state, B)
  res <- drive_solver(state, set, list(task = "multioutput"), gp_xs(object))
  if (!solve_reached(res$reason)) {
    abort_askotch(sprintf(paste(
      "The solves for the posterior draws (simulate(), or predict()'s",
      "pathwise standard errors) stopped without converging (reason: %s);",
      "raise `max_passes` or `time_limit` of the fit with refit()."),
      res$reason), "numeric")
  }
  res$weights
}

# Predictive standard errors and intervals: predict.krr() with se.fit or
# interval.  `fit` is the n_new x m matrix of predictions.
gp_predict <- function(object, xs, fit, rn, se.fit, interval, level, method,
                       draws, call, Fnew = NULL, Znew = NULL) {
  v <- gp_add_trend_var(object, gp_variance(object, xs, method, draws, call, Fnew),
                        xs, Fnew)
  s2 <- gp_signal_var(object)
  se <- sqrt(outer(v$var, s2))
  dimnames(se) <- list(rn, object$y_names)
  noise_sd <- sqrt(object$lambda * s2)
  # each point's own noise variance under a noise model (R/noise.R)
  noise_var <- outer(rep_len(noise_at(object, Znew), nrow(se)), noise_sd^2)
  if (!is.null(object$noise)) noise_sd <- sqrt(noise_var)
  one <- object$task == "regression"
  se <- gp_se_attributes(se, v, s2, rn, object$y_names, one)
  fit_out <- gp_intervals(fit, se, noise_var, interval, level, rn, object$y_names, one)
  if (!se.fit) return(fit_out)
  se_out <- se
  if (one) {
    se_out <- stats::setNames(se[, 1L], rn)
    for (a in c("var_range", "rank", "trace_error", "var_mc_se", "draws", "control_rank")) {
      attr(se_out, a) <- attr(se, a)
    }
  }
  if (one && is.matrix(noise_sd)) noise_sd <- stats::setNames(noise_sd[, 1L], rn)
  list(fit = fit_out, se.fit = se_out, df = Inf,
       residual.scale = if (one) unname(noise_sd) else noise_sd)
}

# The posterior variance of the mean at xs (s^2 excluded) by `method`, with
# "auto"'s fallbacks when the Nystrom bracket is loose.
gp_variance <- function(object, xs, method, draws, call, Fnew = NULL) {
  auto <- is.character(method) && length(method) >= 1L &&
    identical(method[1L], "auto")
  method <- gp_method(method, object, c("auto", "exact", "nystrom",
                                        "pathwise"), "method", call)
  v <- switch(method,
    exact = gp_var_exact(object, xs),
    pathwise = gp_var_pathwise(object, xs, draws, Fnew),
    # "auto" above the exact range: no bracket when the factor leaves a trace
    # error above lambda (it cannot then be tight away from the pivots) and
    # the exact variance is out of reach
    nystrom = gp_var_nystrom(object, xs,
                             give_up = auto && object$n > gp_exact_fallback_n()))
  loose <- if (is.null(v$lower)) FALSE else v$upper > 2 * v$lower
  if (isTRUE(v$gave_up) || any(loose)) {
    # a loose bracket: "auto" falls back to the exact variance while its
    # n x n factor is affordable, to the pathwise estimate above, and
    # "nystrom" warns
    if (auto && object$n <= gp_exact_fallback_n()) {
      v <- gp_var_exact(object, xs)
    } else if (auto) {
      # the draws' solves run with the fit's own solver and limits: for a fit
      # that did not converge (they would stop short too, after as long as
      # the fit took) and when they stop short anyway (a time limit), the
      # bracket with its warning rather than an error
      v <- if (!isTRUE(object$converged)) NULL else
        tryCatch(gp_var_pathwise(object, xs, draws, Fnew),
                 askotch_error_numeric = function(e) NULL,
                 askotch_error_input = function(e) {
                   if (is_composite_kernel(object$kernel)) NULL else stop(e)
                 })
      if (is.null(v)) {
        v <- gp_var_nystrom(object, xs)
        loose <- v$upper > 2 * v$lower
        if (any(loose)) gp_warn_loose(object, v, loose, call)
      }
    } else {
      gp_warn_loose(object, v, loose, call)
    }
  }
  v
}

# The universal-kriging term of a mean function added to a simple-kriging
# variance (the exact and Nystrom methods; the pathwise draws carry it)
gp_add_trend_var <- function(object, v, xs, Fnew) {
  if (is.null(object$trend) || isTRUE(v$with_trend)) return(v)
  uk <- trend_uk_var(object, xs, Fnew)
  v$var <- v$var + uk
  if (!is.null(v$lower)) {
    v$lower <- v$lower + uk
    v$upper <- v$upper + uk
  }
  v
}

# u_x = f(x) - W_F^T k_x at the rows of xs (n_new x q), in double precision
trend_u <- function(object, xs, Fnew) {
  tr <- object$trend
  if (is.null(Fnew)) Fnew <- tr$F
  kw <- native_kernel_apply(xs, gp_xs(object), tr$weights, object$kernel,
                            device = score_device(object, nrow(xs)),
                            threads = gp_threads(object))
  Fnew - kw
}

# The universal-kriging term u_x^T C^{-1} u_x of the variance (unit scale)
trend_uk_var <- function(object, xs, Fnew) {
  U <- trend_u(object, xs, Fnew)
  rowSums((U %*% object$trend$cov_unscaled) * U)
}

# The REML log likelihood from the stochastic estimates of log det A and
# y^T P y (the profile likelihood's pieces with Y the GLS residuals) and
# log det C (exact), per output summed; weights add sum(log w) / 2 per output.
trend_reml_from <- function(object, st) {
  nn <- object$n - ncol(object$trend$F)
  m <- object$m
  ldC <- 2 * sum(log(diag(chol(solve(object$trend$cov_unscaled)))))
  dw <- gp_dw(object)
  sum(-nn / 2 * (log(2 * pi * st$yAy / nn) + 1)) - m / 2 * (st$logdet + ldC) +
    if (is.null(dw)) 0 else m * sum(log(dw))
}

# The se matrix's attributes: the bracket of the exact variance (Nystrom),
# the Monte Carlo standard error (pathwise), s^2 included.
gp_se_attributes <- function(se, v, s2, rn, y_names, one) {
  if (!is.null(v$lower)) {
    # the interval holding the exact variance of the mean (s^2 included)
    rng <- array(c(outer(v$lower, s2), outer(v$upper, s2)),
                 c(length(v$var), length(s2), 2L),
                 list(rn, y_names, c("lower", "upper")))
    attr(se, "var_range") <- if (one) matrix(
      rng[, 1L, ], ncol = 2L, dimnames = list(rn, c("lower", "upper"))) else rng
    attr(se, "rank") <- v$rank
    attr(se, "trace_error") <- v$e
  }
  if (!is.null(v$mc_se)) {
    # the Monte Carlo standard error of the variance estimate (s^2 included)
    mse <- outer(v$mc_se, s2)
    dimnames(mse) <- list(rn, y_names)
    attr(se, "var_mc_se") <- if (one) stats::setNames(mse[, 1L], rn) else mse
    attr(se, "draws") <- v$draws
    attr(se, "control_rank") <- v$cv_rank
  }
  se
}

# The fitted values, or with interval = "confidence" / "prediction" the
# fit and its bounds (the prediction interval adds the noise variance).
gp_intervals <- function(fit, se, noise_var, interval, level, rn, y_names, one) {
  if (interval != "none") {
    z <- stats::qnorm((1 - level) / 2, lower.tail = FALSE)
    sd <- if (interval == "confidence") se else sqrt(se^2 + noise_var)
    out <- array(c(fit, fit - z * sd, fit + z * sd),
                 c(nrow(fit), ncol(fit), 3L),
                 list(rn, y_names, c("fit", "lwr", "upr")))
    out <- aperm(out, c(1L, 3L, 2L))
    fit_out <- if (one) out[, , 1L, drop = TRUE] else out
    if (one && nrow(fit) == 1L) {
      fit_out <- matrix(fit_out, 1L, dimnames = list(rn, c("fit", "lwr", "upr")))
    }
  } else {
    fit_out <- if (one) stats::setNames(fit[, 1L], rn) else fit
  }
  fit_out
}

# Posterior samples -----------------------------------------------------------------

#' Posterior samples of a Gaussian-process regression fit
#'
#' Draws from the distribution of \eqn{\mu + f(x)} given the data under the
#' Gaussian-process model of a squared-loss [krr()] regression fit (see the
#' *Uncertainty* section of [predict.krr()]): mean the fit's predictions,
#' covariance \eqn{\hat s^2 [k(x, x') - k_x^T (K + \lambda I)^{-1} k_{x'} +
#' b_x b_{x'} (1^T K 1 + n \lambda)]}, the same covariance whose diagonal
#' `predict(se.fit = TRUE)` reports. With `noise = TRUE` independent noise of
#' variance \eqn{\lambda \hat s^2} is added (draws of new responses, as
#' [stats::simulate()] gives for `lm` fits); for a fit with observation
#' weights, \eqn{\lambda \hat s^2 / w_i} at the training points and
#' \eqn{\lambda \hat s^2} at new points (see [predict.krr()] for the
#' weighted model).
#'
#' `method = "exact"` forms the covariance at the new points (a Cholesky
#' factorisation of \eqn{K + \lambda I} and one of the covariance, to which
#' a jitter of \eqn{10^{-10}} is added on the diagonal, raised tenfold up to
#' \eqn{10^{-6}} if the factorisation fails; the jitter used is the
#' attribute `"jitter"`).
#'
#' `method = "pathwise"` uses pathwise conditioning (Wilson et al. 2020):
#' a draw \eqn{g} of the prior GP by `features` random Fourier features
#' (Rahimi and Recht 2007), pseudo-data \eqn{r = g(X) + \sqrt{\lambda}
#' \varepsilon}, and the sample \eqn{\hat m(x) + \hat s (g(x) - \hat m_r(x))}
#' where \eqn{\hat m_r} is the fit's predictor applied to \eqn{r}: one solve
#' of \eqn{(K + \lambda I) v = r - \bar r} per draw, all draws at once as a
#' matrix of right-hand sides, with the fit's own solver, tolerance and
#' stopping rules (its kept state when `keep_state = TRUE`). The update uses
#' the exact kernel; only the prior draw is approximate: each draw has its
#' own random frequencies, so that the draws' covariance is the exact
#' posterior covariance in expectation over them (one set of features shared
#' by all draws would give the covariance of that one random-feature kernel,
#' whose error, of order \eqn{1/\sqrt{M}} in the prior, is several percent of
#' a small posterior variance). Memory and time are those of the fit plus
#' \eqn{O((n + n_{new}) M p)} per draw, \eqn{M} = `features`.
#'
#' @param object A squared-loss `"krr"` regression fit.
#' @param nsim Number of draws.
#' @param seed `NULL` or an integer for [set.seed()], as for
#'   [stats::simulate()]; the random features are drawn from the same stream.
#' @param newdata Points to sample at (as for [predict.krr()]); `NULL`: the
#'   training points.
#' @param method `"auto"` (`"exact"` when both the number of training points
#'   and of new points are at most `getOption("askotch.gp_exact_max_n",
#'   5000)`, else `"pathwise"`), `"exact"` or `"pathwise"`.
#' @param noise Add observation noise to the draws?
#' @param features Number of random Fourier features of each pathwise prior
#'   draw. Each draw has its own, so their number does not bias the draws'
#'   covariance; it sets how close each draw is to Gaussian (a sum of
#'   `features` random cosines) and the time, \eqn{O((n + n_{new})
#'   \,\code{features}\, p)} per draw.
#' @param ... Unused; any argument given here is an error naming it.
#' @return A data frame with one column per draw (`sim_1`, `sim_2`, ...; for
#'   multi-output fits each column is an n x m matrix) and one row per point,
#'   with attribute `"seed"` as for [stats::simulate()].
#' @references Wilson, J. T., Borovitskiy, V., Terenin, A., Mostowsky, P. and
#'   Deisenroth, M. P. (2020). Efficiently sampling functions from Gaussian
#'   process posteriors. *ICML*.
#'
#'   Rahimi, A. and Recht, B. (2007). Random features for large-scale kernel
#'   machines. *NeurIPS*.
#' @examples
#' set.seed(1)
#' x <- matrix(seq(0, 1, length.out = 40))
#' y <- sin(6 * x[, 1]) + rnorm(40, sd = 0.2)
#' fit <- krr(x, y, lambda = 0.1, solver = cholesky(), threads = 1)
#' xg <- matrix(seq(0, 1, length.out = 50))
#' draws <- simulate(fit, nsim = 5, seed = 3, newdata = xg)
#' matplot(xg, draws, type = "l", lty = 1)
#' points(x, y)
#' # pathwise conditioning (the method for large n)
#' dp <- simulate(fit, nsim = 5, seed = 3, newdata = xg, method = "pathwise")
#' @importFrom stats simulate
#' @export
simulate.krr <- function(object, nsim = 1, seed = NULL, newdata = NULL,
                         method = c("auto", "exact", "pathwise"),
                         noise = FALSE, features = 256, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  ecall <- sys.call()
  check_no_dots(list(...), "simulate", ecall)
  gp_check(object, "simulate()", ecall)
  check_positive(nsim, "nsim", integerish = TRUE, call = ecall,
                 max = .Machine$integer.max)
  check_positive(features, "features", integerish = TRUE, call = ecall,
                 max = .Machine$integer.max)
  check_flag(noise, "noise", ecall)
  # set.seed()'s seeds: whole numbers of R's integer range
  if (!is.null(seed) && !(is.numeric(seed) && length(seed) == 1L && is.finite(seed) &&
                          seed == round(seed) && abs(seed) <= .Machine$integer.max)) {
    abort_askotch(sprintf(paste("`seed` must be NULL or a whole number of R's integer",
                                "range (as for set.seed()), not %s."),
                          fmt_value(seed)), "input", ecall)
  }
  if (is.null(newdata)) {
    xs <- gp_xs(object)
    rn <- NULL
    # the training points' own noise (a latent process's: its log-normal mean, as predict())
    noise_w <- if (is.null(object$noise$gp)) 1 / fit_obs_weights(object) else
      noise_at(object, NULL)
    Fnew <- NULL
  } else {
    nf <- new_features(object, newdata)
    xs <- nf$xs
    rn <- nf$rownames
    noise_w <- noise_at(object, nf$noise)
    Fnew <- nf$trend
  }
  # the draws are a nrow(xs) x (nsim m) matrix (and n x (nsim m) solves)
  cells <- as.numeric(max(nrow(xs), object$n)) * nsim * object$m
  if (cells > .Machine$integer.max) {
    abort_askotch(sprintf(paste(
      "`nsim` = %s draws of %d points (%d outputs) would need %.3g numbers,",
      "more than one matrix holds; simulate fewer at a time."),
      format(nsim), max(nrow(xs), object$n), object$m, cells), "input", ecall)
  }
  if (!is.character(method) || length(method) < 1L) method <- NA_character_
  method <- check_choice(method[1L], c("auto", "exact", "pathwise"), "method",
                         ecall)
  if (method == "auto") {
    method <- if (max(object$n, nrow(xs)) <= gp_exact_max_n()) "exact" else
      "pathwise"
  }
  # the RNG, as stats:::simulate.lm handles it
  if (!exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    stats::runif(1)
  }
  if (is.null(seed)) {
    rng_state <- get(".Random.seed", envir = globalenv())
  } else {
    old <- get(".Random.seed", envir = globalenv())
    set.seed(seed)
    rng_state <- structure(seed, kind = as.list(RNGkind()))
    on.exit(assign(".Random.seed", old, envir = globalenv()), add = TRUE)
  }
  nsim <- as.integer(nsim)
  q <- nsim * object$m
  mu <- sweep(krr_scores(object, xs), 2L, object$y_center, "+",
              check.margin = FALSE) + trend_values(object, Fnew)
  jitter <- NULL
  if (nrow(xs) == 0L) { # no points: no draws to make
    val <- simulate_frame(object, mu, matrix(0, 0L, q), nsim, rn)
    attr(val, "seed") <- rng_state
    return(val)
  }
  if (method == "exact") {
    ex <- simulate_exact(object, xs, q, noise, noise_w, ecall, Fnew)
    U <- ex$U
    jitter <- ex$jitter
  } else {
    U <- gp_pathwise(object, xs, q, as.numeric(features), noise, noise_w, Fnew = Fnew)
  }
  val <- simulate_frame(object, mu, U, nsim, rn)
  attr(val, "seed") <- rng_state
  if (!is.null(jitter)) attr(val, "jitter") <- jitter
  val
}

# q standard posterior draws at xs (noise: plus the noise, lambda / w, of
# each point) from the Cholesky factor of the exact posterior covariance,
# with the smallest jitter from 1e-10 up to 1e-6 that makes it factor.
simulate_exact <- function(object, xs, q, noise, noise_w, ecall, Fnew = NULL) {
  nn <- nrow(xs)
  C <- gp_cov_exact(object, xs)
  if (!is.null(object$trend)) {
    U <- trend_u(object, xs, Fnew)
    C <- C + U %*% object$trend$cov_unscaled %*% t(U)
    C <- (C + t(C)) / 2
  }
  if (noise) diag(C) <- diag(C) + object$lambda * noise_w
  jitter <- 1e-10
  repeat {
    R <- tryCatch(chol(C + diag(jitter, nn)), error = function(e) NULL)
    if (!is.null(R) || jitter >= 1e-6) break
    jitter <- jitter * 10
  }
  if (is.null(R)) {
    abort_askotch(paste(
      "The posterior covariance is not positive definite even with a",
      "jitter of 1e-6; use method = \"pathwise\"."), "numeric", ecall)
  }
  list(U = crossprod(R, matrix(stats::rnorm(nn * q), nn, q)), jitter = jitter)
}

# simulate()'s data frame: the mean mu plus the standard draws U scaled by
# the signal sd; the columns of U hold the m outputs of draw 1, then of
# draw 2, and so on
simulate_frame <- function(object, mu, U, nsim, rn) {
  m <- object$m
  s <- sqrt(gp_signal_var(object))
  sims <- lapply(seq_len(nsim), function(k) {
    cols <- (k - 1L) * m + seq_len(m)
    d <- mu + sweep(U[, cols, drop = FALSE], 2L, s, "*", check.margin = FALSE)
    if (m == 1L) d[, 1L] else {
      dimnames(d) <- list(rn, object$y_names)
      d
    }
  })
  names(sims) <- paste0("sim_", seq_len(nsim))
  rown <- if (is.null(rn)) as.character(seq_len(nrow(mu))) else rn
  if (m == 1L) as.data.frame(sims, row.names = rown) else
    structure(sims, row.names = rown, class = "data.frame")
}

# q unit-scale pathwise draws (Wilson et al. 2020) at the rows of xnew.
# noise_w: the relative noise variance at each new point (1 / w_i at the
# training points of a weighted fit, else 1)
gp_pathwise <- function(object, xnew, q, M, noise, noise_w = 1, Fnew = NULL) {
  U <- gp_pathwise_eval(object, gp_pathwise_draws(object, q, M), xnew, Fnew)
  if (noise) U <- U + sqrt(object$lambda * noise_w) *
      matrix(stats::rnorm(nrow(xnew) * q), nrow(xnew), q)
  U
}

# The part of q pathwise draws that does not depend on the new points: the
# prior's feature seeds and coefficients, the centring rbar and the solve
# V = A^{-1} (r - rbar) of the pseudo-data r = g(X) + e.  A draw is then a
# function that gp_pathwise_eval() evaluates at any points.
gp_pathwise_draws <- function(object, q, M, cv_rank = NULL) {
  xs <- gp_xs(object)
  n <- nrow(xs)
  # every draw has its own random frequencies (one feature seed per column),
  # so that the draws' prior covariance is K in expectation (Rahimi and
  # Recht 2007), not one random-feature kernel shared by all of them
  fseed <- floor(stats::runif(q) * 2^31)
  theta <- matrix(stats::rnorm(M * q), M, q)
  dr <- list(fseed = fseed, theta = theta, M = M)
  w <- fit_obs_weights(object)
  fx <- gp_prior_at(object, dr, xs, score_device(object, as.numeric(n) * q))
  noise <- sqrt(object$lambda / w) * matrix(stats::rnorm(n * q), n, q)
  r <- fx + noise
  # the fit's centring: the weighted mean (a mean function: gp_pathwise_eval())
  dr$rbar <- if (is.null(object$trend)) colSums(w * r) / sum(w) else rep(0, q)
  dr$V <- gp_solve(object, sweep(r, 2L, dr$rbar, check.margin = FALSE))
  # the control variate of that rank (gp_cv_rank(), where gp_cv_applies())
  if (!is.null(cv_rank)) dr$cv <- gp_cv_draws(object, dr, noise, cv_rank)
  dr
}

gp_prior_at <- function(object, dr, x, dev) {
  native_features_apply(x, dr$theta, object$kernel, dr$M, dr$fseed,
                        threads = gp_threads(object), device = dev)
}

# The draws' errors d(x) = g(x) - rbar - k_x^T V at the rows of xnew, on the
# fit's device ("auto": by the size of the product, ncol(V) columns of
# nrow(xnew) points against n)
gp_pathwise_eval <- function(object, dr, xnew, Fnew = NULL) {
  dev <- score_device(object, as.numeric(nrow(xnew)) * ncol(dr$V))
  fit_r <- native_kernel_apply(xnew, gp_xs(object), dr$V, object$kernel,
                               device = dev, threads = gp_threads(object))
  d <- gp_prior_at(object, dr, xnew, dev) - sweep(fit_r, 2L, dr$rbar, "+", check.margin = FALSE)
  if (is.null(object$trend)) return(d)
  # the trend's part of the predictor's weights: u_x^T C^{-1} F^T V
  d - trend_u(object, xnew, Fnew) %*%
    (object$trend$cov_unscaled %*% crossprod(object$trend$F, dr$V))
}

lambda_rule_label <- function(tn) {
  labels <- c(ml = "maximum likelihood", gcv = "GCV", loo = "leave-one-out CV",
              cv = sprintf("%d-fold CV", cv_folds()),
              path = sprintf("%d-fold CV over the given path", cv_folds()),
              validation = "the validation set, over the given path",
              laplace = "the Laplace marginal likelihood",
              ep = paste("expectation propagation's marginal likelihood, under a prior on",
                         "the latent scale"),
              fixed = "given")
  what <- if (tn$lambda_rule %in% names(labels)) labels[[tn$lambda_rule]] else tn$lambda_rule
  if (!is.null(tn$noise_gp) && tn$lambda_rule == "ml") {
    # jointly with the latent noise process (R/noise-gp.R)
    n_gp <- tn$noise_gp$n_used %||% tn$n_used
    what <- sprintf("the Laplace approximation with the noise process%s%s",
                    if (is.numeric(tn$noise_gp$prior)) ", under its prior" else "",
                    if (n_gp < tn$n_total) sprintf(", on %d of %d points", n_gp,
                                                   tn$n_total) else "")
  } else if (!is.null(tn$stochastic)) {
    what <- sprintf(paste("%s (stochastic, all %d points, from a subsample",
                          "of %d)"), what, tn$n_total, tn$n_used)
  } else if (tn$lambda_rule %in% c("ml", "gcv", "loo", "laplace", "ep") &&
             tn$n_used < tn$n_total) {
    what <- sprintf("%s on a subsample of %d points", what, tn$n_used)
  }
  what
}

# How the kernel and scaling were chosen (tune_select()'s table)
model_choice_label <- function(models) {
  ch <- models[models$chosen %in% TRUE, , drop = FALSE]
  nu <- models$n_used[1L]
  na <- if (is.null(models$n_all)) nu else models$n_all[1L]
  sprintf("kernel%s chosen by likelihood among %d candidates%s (fit$tuning$models)",
          if (ch$scaling[1L] == "joint") " and one scale for all columns" else "",
          nrow(models), if (isTRUE(nu < na)) sprintf(", screened on %s of %s points",
                                                     format(nu), format(na)) else "")
}

# The Gaussian-process entries of summary()'s "Model" section (after
# model_stats()'s), in order; NULL entries are left out.
gp_model_stats <- function(object) {
  if (!gp_applicable(object)) return(list())
  # the stochastic estimates cost tens of kernel passes: only up to
  # option askotch.gp_summary_max_n (logLik() computes them at any n)
  cheap <- object$n <= getOption("askotch.gp_summary_max_n", 5000)
  st <- if (cheap) tryCatch(gp_fit_stats(object), error = function(e) NULL)
  tn <- object$tuning
  exact <- !is.null(st) && st$method == "exact"
  ell <- object$length_scales
  if (!is.null(ell)) names(ell) <- object$xnames
  compact(list(
    "Lambda chosen by" = if (!is.null(tn)) lambda_rule_label(tn),
    "Length scales" = ell,
    "Effective degrees of freedom" = if (exact) st$edf else if (!is.null(st))
      sprintf("%s (Hutchinson estimate, se %s)", format(signif(st$edf, 4)),
              format(signif(st$edf_se, 2))),
    "Log marginal likelihood" = if (exact) st$loglik else if (!is.null(st))
      sprintf("%s (SLQ estimate, se %s)", format(signif(st$loglik, 6)),
              format(signif(st$se, 2)))
    else if (!cheap)
      "not computed (n above option askotch.gp_summary_max_n; see logLik())",
    "GCV error" = if (!is.null(st)) st$gcv,
    "LOO error" = if (exact) st$loo
  ))
}

# Can the GP statistics be computed for this fit? (the squared loss on the
# exact kernel at the training points: not an inducing-point or
# random-features fit, not an intercept model)
gp_applicable <- function(object) {
  fit_loss(object)$name == "squared" && is.null(object$centers) &&
    fit_features(object) == 0 && fit_intercept(object) == 0
}

# The model statistics at the fit's hyperparameters: exact (one
# eigendecomposition) for n <= tune_exact_max_n(), else the stochastic
# estimates (preconditioned SLQ and Hutchinson; GCV from the
# estimated edf; no LOO). NULL when not applicable.
gp_fit_stats <- function(object) {
  if (!gp_applicable(object)) return(NULL)
  Y <- gp_yc(object)
  threads <- if (is.null(object$threads)) 0L else object$threads
  trend <- trend_lik(object)
  if (object$n <= tune_exact_max_n()) {
    # with a mean function beta is profiled from the targets afresh
    if (!is.null(trend)) Y <- object$y
    cr <- gp_exact_stats(object$x, Y, object$kernel, object$lambda, threads,
                         gp_dw(object), trend)
    # a latent noise process: the Laplace approximation of its marginal likelihood
    if (!is.null(object$noise$gp)) cr$loglik <- noise_gp_loglik(object)
    return(list(loglik = cr$loglik, edf = cr$edf, gcv = cr$gcv, loo = cr$loo,
                method = "exact"))
  }
  st <- gp_loglik_stochastic(object$x, Y, object$kernel, object$lambda,
                             gradient = FALSE, seed = object$seed,
                             threads = threads, d = gp_dw(object))
  if (!is.null(object$noise$gp)) st$loglik <- noise_gp_loglik(object)
  n <- object$n
  # the (weighted) residual sum of squares
  rss <- sum(fit_obs_weights(object) * (object$y - fitted_scores(object))^2)
  # Y holds the GLS residuals: the profile likelihood's value; REML from
  # its pieces
  if (isTRUE(trend$reml)) st$loglik <- trend_reml_from(object, st)
  list(loglik = st$loglik, edf = st$edf, edf_se = st$edf_se,
       gcv = rss / (n * ncol(Y)) / (1 - st$edf / n)^2, loo = NA_real_,
       method = "stochastic", se = st$se)
}

# sqrt of the observation weights of a fit, NULL without
gp_dw <- function(object) {
  w <- object$obs_weights
  if (is.null(w) || all(w == 1)) NULL else sqrt(w)
}
