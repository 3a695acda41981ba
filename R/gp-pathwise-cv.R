# A control variate for the pathwise variance estimate ---------------------------
#
# The pathwise estimate of the posterior variance v(x) averages d(x)^2 over
# draws d of the prediction error (gp_var_pathwise(); unit scale, constant
# mean estimated by the mean, no observation weights).  Each draw costs a
# solve with the fit's solver, and the average's relative error is about
# sqrt(2 / S) for S draws.  The same draw in a low-rank model costs O(n r)
# and has an expectation known in closed form, so it can carry most of the
# estimate (a control variate; e.g. Owen 2013, "Monte Carlo theory, methods
# and examples", ch. 8):
#
# * The greedy pivoted Cholesky factor L (n x r, pivots P; Harbrecht, Peters
#   and Schneider 2012) gives K_hat = L L^T = K_XP K_PP^{-1} K_PX.  Given a
#   prior draw f, the conditional mean f_N = K_.P K_PP^{-1} f(P) is a draw of
#   the Gaussian process with covariance K_hat exactly (f(P) ~ N(0, K_PP)):
#   at the training points f_N(X) = L c and at x f_N(x) = b_x^T c, with
#   c = L_P^{-1} f(P), b_x = L_P^{-1} K_Px and L_P = L[P, ] (lower
#   triangular, L_P L_P^T = K_PP).
# * With the draw's own noise e, the Nystrom model's error is
#   d_N(x) = f_N(x) - rbar_N - khat_x^T (K_hat + lambda I)^{-1} (r_N - rbar_N),
#   r_N = f_N(X) + e, rbar_N its mean, khat_x = L b_x; by the push-through
#   identity (K_hat + lambda I)^{-1} L = L (G + lambda I)^{-1}, G = L^T L,
#   d_N(x) = b_x^T (c - t) - rbar_N with t = (G + lambda I)^{-1} L^T (r_N - rbar_N).
# * Its expectation is the Nystrom model's posterior variance (the formula of
#   gp_var_exact() with K_hat): with H = (G + lambda I)^{-1},
#   v_N(x) = lambda b_x^T H b_x + (1 - 1^T L H b_x)^2 (||L^T 1||^2 / n^2 + lambda / n).
#
# The estimate v_N(x) + mean(d^2 - d_N^2) is unbiased for v(x) at any rank
# (for random features with fresh frequencies, as the plain estimate: the
# average of their covariance is K).  The rank decides its spread: d_N
# follows d ever closer as the factor's trace error falls below lambda
# (measured in inst/bench/RESULTS.md, "Gaussian-process regression").  Its
# Monte Carlo standard error is estimated from the draws' differences.

# The factor's rank (option askotch.gp_cv_rank) within
# askotch.gp_cv_max_bytes for its n x r numbers; NULL (no control variate)
# below 10.
gp_cv_rank <- function(n) {
  r <- min(n, getOption("askotch.gp_cv_rank", 2000),
           floor(getOption("askotch.gp_cv_max_bytes", 2^31) / (8 * n)))
  if (r < 10) NULL else as.integer(r)
}

# Does the control variate apply? (the plain estimate's model: a constant
# mean estimated by the mean, no observation weights; and
# draws of at least 64 random features, close enough to draws of the
# kernel at the pivots: with a few, d_N has heavy tails)
gp_cv_applies <- function(object) {
  is.null(object$obs_weights) && is.null(object$trend) && !is.null(gp_cv_rank(object$n)) &&
    gp_pathwise_features() >= 64
}

# The control variate's draws for the pathwise draws dr (their prior's
# frequencies and coefficients) and their noise e (n x S), with a factor of
# at most `rank`: what gp_cv_eval() needs at new points, r x r and r x S
# numbers (L itself is dropped).
gp_cv_draws <- function(object, dr, noise, rank) {
  xs <- gp_xs(object)
  n <- nrow(xs)
  lam <- object$lambda
  # pivots stop where the residual variance falls below 1% of the noise's:
  # c = L_P^{-1} f(P) divides by the pivots, and a random-feature draw's f(P)
  # is not one of K_PP (only its average over the frequencies is), so tiny
  # pivots would give rare, huge d_N (heavy tails, a Monte Carlo error
  # underestimated); such pivots barely change the posterior
  pc <- native_pivoted_cholesky(xs, object$kernel, NULL, rank, 1e-6 * lam,
                                0.01 * lam, gp_threads(object))
  k <- pc$rank
  L <- if (k == ncol(pc$L)) pc$L else pc$L[, seq_len(k), drop = FALSE]
  pc$L <- NULL
  LP <- L[pc$pivots, , drop = FALSE]
  LP[upper.tri(LP)] <- 0  # triangular up to rounding
  xp <- xs[pc$pivots, , drop = FALSE]
  cc <- forwardsolve(LP, gp_prior_at(object, dr, xp, "cpu"))
  R <- chol(crossprod(L) + diag(lam, k))  # G + lambda I = R^T R
  rN <- L %*% cc + noise
  rbar <- colMeans(rN)
  tt <- backsolve(R, forwardsolve(t(R), crossprod(L, sweep(rN, 2L, rbar, check.margin = FALSE)),
                                  upper.tri = FALSE), upper.tri = TRUE)
  l1 <- colSums(L)
  list(xp = xp, LP = LP, R = R, ct = cc - tt, rbar = rbar, rank = k,
       yl = forwardsolve(t(R), l1), c_pi = sum(l1^2) / n^2 + lam / n, lam = lam)
}

# At the rows of xnew: the Nystrom model's variance v_N and its draws d_N
# (nrow(xnew) x S)
gp_cv_eval <- function(object, cv, xnew) {
  v <- numeric(nrow(xnew))
  D <- matrix(0, nrow(xnew), ncol(cv$ct))
  Rt <- t(cv$R)
  for (idx in gp_blocks(nrow(xnew), cv$rank)) {
    B <- forwardsolve(cv$LP, gp_kmat(object, cv$xp, xnew[idx, , drop = FALSE]))
    Y <- forwardsolve(Rt, B)  # R^{-T} b_x: b_x^T H b_x = ||Y_x||^2
    tau <- 1 - drop(crossprod(cv$yl, Y))
    v[idx] <- cv$lam * colSums(Y^2) + tau^2 * cv$c_pi
    D[idx, ] <- sweep(crossprod(B, cv$ct), 2L, cv$rbar, check.margin = FALSE)
  }
  list(var = v, draws = D)
}

# The estimate and its Monte Carlo standard error from the squared draws
# U2 (rows: points) and, when given, the control variate at the same points
gp_cv_estimate <- function(U2, cv = NULL) {
  S <- ncol(U2)
  Z <- if (is.null(cv)) U2 else U2 - cv$draws^2
  m <- rowMeans(Z)
  mc <- if (S > 1L) sqrt(pmax(rowSums((Z - m)^2), 0) / (S - 1L) / S) else
    rep(NA_real_, length(m))
  list(var = if (is.null(cv)) m else pmax(cv$var + m, 0), mc_se = mc)
}
