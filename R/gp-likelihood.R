# Gaussian-process marginal likelihood, GCV, LOO and effective degrees of
# freedom of kernel ridge regression ---------------------------------------------
#
# The model: the centred targets y (each output column) are a draw of
#   y ~ N(0, s^2 (K + lambda I)),
# K the kernel matrix of the (standardised, optionally length-scaled) training
# points, lambda the noise-to-signal variance ratio and s^2 the signal
# variance, profiled out: s^2 = y^T (K + lambda I)^{-1} y / n. The profile log
# likelihood (Rasmussen and Williams 2006, eq. 2.30, with s^2 profiled) is
#   l = -n/2 log(2 pi s^2) - n/2 - 1/2 log det(K + lambda I)
# summed over output columns (which share K and lambda, each with its own
# s^2). Its gradient with respect to a log hyperparameter theta, A = K +
# lambda I and alpha = A^{-1} y, is (R&W eq. 5.9 with s^2 profiled)
#   dl/dtheta = n/2 alpha^T dA alpha / (y^T alpha) - 1/2 tr(A^{-1} dA).
#
# With a mean function (trend = list(F, reml), R/trend.R), each column y ~
# N(F beta, s^2 A): beta is profiled out by generalised least squares, beta =
# C^{-1} F^T A^{-1} y with C = F^T A^{-1} F, and y^T A^{-1} y becomes y^T P y,
# P = A^{-1} - A^{-1} F C^{-1} F^T A^{-1} (the GLS residual's A^{-1} norm).
# Maximum likelihood keeps the form above with y^T P y in place of y^T A^{-1}
# y. The restricted likelihood (REML; Harville 1974; Rasmussen and Williams
# 2006, eq. 2.45) is that of the n - q error contrasts:
#   l_R = -(n-q)/2 log(2 pi s^2) - (n-q)/2 - 1/2 log det A - 1/2 log det C,
# s^2 = y^T P y / (n - q). The gradients (envelope theorem for beta) are
#   dl/dtheta   = n/2 (P y)^T dA (P y) / (y^T P y) - 1/2 tr(A^{-1} dA),
#   dl_R/dtheta = (n-q)/2 (P y)^T dA (P y) / (y^T P y) - 1/2 tr(P dA).

# Size limits (options) ----------------------------------------------------------

# The search range of lambda by maximum likelihood, GCV and LOO (the kernel
# has unit diagonal, so the eigenvalues of K sum to n).
ml_lambda_range <- c(1e-8, 1e4)

# exact (eigendecomposition / Cholesky) criteria up to this n; above it the
# stochastic estimators (or a subsample, for the default lambda)
tune_exact_max_n <- function() getOption("askotch.tune_exact_max_n", 2000)

# One eigendecomposition for every lambda -------------------------------------------
#
# K = Q L Q^T once; then for any lambda, with z = Q^T y and d = l + lambda:
#   y^T A^{-1} y = sum z^2 / d, log det A = sum log d,
#   edf = tr(K A^{-1}) = sum l / d, residual y - K A^{-1} y = Q (lambda z / d),
#   leverages H_ii = sum_j Q_ij^2 l_j / d_j,
# so the likelihood, edf and GCV cost O(n) per lambda and the exact LOO
# O(n^2) (Golub, Heath and Wahba 1979; Wahba 1990, ch. 4).
# With a trend, G = Q^T F gives F^T A^{-1} F = G^T diag(1/d) G and the GLS
# fit per lambda in O(n q^2) (gp_eigen_gls()).
gp_eigen <- function(K, Y, trend = NULL) {
  e <- native_sym_eigen(K)
  l <- pmax(e$values, 0)
  list(values = l, vectors = e$vectors, Z = crossprod(e$vectors, Y),
       G = if (!is.null(trend)) crossprod(e$vectors, trend$F),
       reml = isTRUE(trend$reml), n = nrow(K), m = ncol(Y))
}

# The GLS pieces at one lambda (d = l + lambda) in the eigenbasis: Pz = Q^T P
# y (n x m), yPy, log det C and, for the diagonal of P, B = diag(1/d) G
# C^{-1/2} (P = Q (diag(1/d) - B B^T) Q^T). Without a trend P = A^{-1}.
gp_eigen_gls <- function(eg, d) {
  Zd <- eg$Z / d
  if (is.null(eg$G)) {
    return(list(Pz = Zd, yPy = colSums(eg$Z * Zd), logdetC = 0, B = NULL, q = 0L))
  }
  Gd <- eg$G / d
  C <- crossprod(eg$G, Gd)
  R <- chol((C + t(C)) / 2)
  beta <- chol_solve(R, crossprod(eg$G, Zd))
  Pz <- Zd - Gd %*% beta
  list(Pz = Pz, yPy = colSums(eg$Z * Pz), logdetC = 2 * sum(log(diag(R))),
       B = t(backsolve(R, t(Gd), transpose = TRUE)), q = ncol(eg$G))
}

# The criteria at each lambda of a vector: a data frame with lambda, loglik,
# the signal variance (mean over outputs), edf, rss, gcv and loo (mean
# squared errors per target value).
gp_eigen_criteria <- function(eg, lambda, loo = TRUE) {
  n <- eg$n
  m <- eg$m
  l <- eg$values
  Q2 <- if (loo) eg$vectors^2 else NULL
  rows <- lapply(lambda, function(lam) {
    d <- l + lam
    gl <- gp_eigen_gls(eg, d)
    nn <- if (eg$reml) n - gl$q else n
    s2 <- gl$yPy / nn
    logdet <- sum(log(d)) + if (eg$reml) gl$logdetC else 0
    ll <- sum(-nn / 2 * (log(2 * pi * s2) + 1)) - m / 2 * logdet
    # the residual y - fitted = lambda P y; edf = n - lambda tr(P)
    trP <- sum(1 / d) - if (is.null(gl$B)) 0 else sum(gl$B^2)
    edf <- n - lam * trP
    rss <- lam^2 * sum(gl$Pz^2)
    gcv <- rss / (n * m) / (1 - edf / n)^2
    lo <- NA_real_
    if (loo) {
      # the LOO residual (P y)_i / P_ii (Dubrule 1983; without a trend
      # r_i / (1 - H_ii))
      Py <- eg$vectors %*% gl$Pz
      Pd <- drop(Q2 %*% (1 / d))
      if (!is.null(gl$B)) Pd <- Pd - rowSums((eg$vectors %*% gl$B)^2)
      lo <- mean((Py / Pd)^2)
    }
    c(lam, ll, mean(s2), edf, rss, gcv, lo)
  })
  out <- as.data.frame(do.call(rbind, rows))
  names(out) <- c("lambda", "loglik", "signal_var", "edf", "rss", "gcv", "loo")
  out
}

# The lambda maximising the likelihood (or minimising GCV / LOO) of one
# eigendecomposition: a log grid over ml_lambda_range, then Brent's method
# around the best grid point.
gp_eigen_best <- function(eg, criterion = c("ml", "gcv", "loo"),
                          range = ml_lambda_range, grid = 61L) {
  criterion <- match.arg(criterion)
  # constant targets: every lambda fits them exactly (w = 0); keep 1
  if (all(eg$Z == 0)) return(1)
  f <- function(loglam) {
    cr <- gp_eigen_criteria(eg, exp(loglam), loo = criterion == "loo")
    switch(criterion, ml = -cr$loglik, gcv = cr$gcv, loo = cr$loo)
  }
  lg <- seq(log(range[1L]), log(range[2L]), length.out = grid)
  vals <- vapply(lg, f, 0)
  vals[!is.finite(vals)] <- Inf
  i <- which.min(vals)
  lo <- lg[max(1L, i - 1L)]
  hi <- lg[min(grid, i + 1L)]
  opt <- stats::optimize(f, c(lo, hi), tol = 1e-6)
  best <- if (opt$objective <= vals[i]) opt$minimum else lg[i]
  exp(best)
}

# Exact likelihood and gradient by Cholesky -------------------------------------------
#
# Hyperparameters: the kernel's bandwidth sigma (isotropic), or per-column
# length scales ell (ARD: x_j / ell_j with bandwidth 1), and lambda; the
# gradient is with respect to their logarithms. The matrices dK/dlog sigma
# and dK/dlog ell_j are formed in C from the kernel list (its column DLOGS
# and krr_kernel_dlog_ell in src/core/kernel_math.h, which derive them).

# The codes of dK/dtheta for theta = log sigma (ard = FALSE) or log
# ell_1..p (then sigma is the kernel's bandwidth, 1 for ARD).
kernel_grad_codes <- function(xs, ard) if (ard) seq_len(ncol(xs)) else -1L

# The kernel's statistics between every pair of rows of xs: squared
# Euclidean distances (from one cross product) for an L2 kernel, L1
# distances for an L1 kernel; the kernel matrix of any bandwidth is the
# kernel of them (native_kernel_eval()).
kernel_stat_matrix <- function(xs, metric) {
  if (metric == "L1") return(as.matrix(stats::dist(xs, method = "manhattan")))
  r <- rowSums(xs^2)
  tstat <- -2 * tcrossprod(xs)
  tstat <- tstat + r[col(tstat)] + r
  tstat[tstat < 0] <- 0
  diag(tstat) <- 0
  tstat
}

# The statistics (kernel_stat_matrix()) a likelihood search forms once for
# all its kernel matrices, or NULL: only for points of more than 200
# columns. Up to there the compiled kernel tiles (vectorised, threaded) form
# K from the points faster than the elementwise map from the statistics,
# whose cost does not grow with the columns (inst/bench/RESULTS.md,
# Gaussian-process regression).
search_stats <- function(xs, metric) if (ncol(xs) > 200L) kernel_stat_matrix(xs, metric)

# (R^T R)^{-1} B for an upper Cholesky factor R (two triangular solves)
chol_solve <- function(R, B) backsolve(R, backsolve(R, B, transpose = TRUE))

# K(xs, xs): from an isotropic kernel's statistics tstat (kernel_stat_matrix())
# when given, else from the points
kernel_at <- function(xs, kernel, tstat, threads) {
  if (is.null(tstat)) kernel_mat(xs, xs, kernel, threads) else native_kernel_eval(kernel, tstat)
}

# Exact profile log likelihood of centred targets Y at the points xs (already
# standardised and, for ARD, divided by the length scales), kernel with its
# bandwidth, noise ratio lambda; with the gradient w.r.t. (log bandwidth or
# log length scales, log lambda). With M = sum_c n/(2 y_c^T alpha_c) alpha_c
# alpha_c^T - m/2 A^{-1} the gradient in theta is tr(M dA/dtheta): the
# kernel's parts are contracted in C without forming dK, lambda's is
# lambda tr(M). tstat: the statistics of xs (kernel_stat_matrix(), isotropic
# kernels), from which K is formed elementwise and the gradient's
# contraction reads the pairs' distances.
# The factor is the compiled one (native_chol()), which returns NULL for a
# matrix that is not positive definite rather than an error (a handler for
# chol()'s error would also catch an interrupt's or setTimeLimit()'s) and
# whose bits do not depend on the thread count. A pivot below n eps max_i
# A_ii (LAPACK's rank tolerance for a pivoted factor) marks A as singular
# to working precision: the likelihood there is -Inf, as where the factor
# fails.
# noise: list(Z, gamma), a log-linear noise model (v = exp(Z gamma), the
# gradient in gamma after lambda's), or list(h), the log relative noise
# variances of the points themselves (v = exp(h); R/noise-gp.R): then the
# result has `gradient_h` (d loglik / dh_i, one output); gradient = "info"
# returns these, `info_h`, the Fisher information of the h_i with s^2
# profiled, (lambda v_i) (lambda v_j) P_ij^2 / 2 - c_i c_j 2 / nn with c_i =
# lambda v_i P_ii / 2 and P = A^{-1} (REML: the projection's P), and
# `hess_h`, the observed information (minus the Hessian in h), for one
# output, instead of the kernel's and lambda's gradient (gp_exact_info()).
# ai = TRUE (no mean function, no noise model): also `ai`, the average
# information in the gradient's parameters (gp_average_information()).
gp_loglik_exact <- function(xs, Y, kernel, lambda, ard = FALSE,
                            gradient = TRUE, threads = 0L, tstat = NULL,
                            trend = NULL, noise = NULL, ai = FALSE) {
  n <- nrow(xs)
  m <- ncol(Y)
  A <- kernel_at(xs, kernel, tstat, threads)
  # the noise model: lambda v_i, v = exp(Z gamma) (R/noise.R) or exp(h)
  v <- if (is.null(noise)) 1 else if (!is.null(noise$h)) exp(noise$h) else
    exp(drop(noise$Z %*% noise$gamma))
  dg <- seq.int(1L, by = n + 1L, length.out = n) # (in place; diag<- copies A)
  A[dg] <- A[dg] + lambda * v
  tiny <- n * .Machine$double.eps * max(A[dg])
  R <- native_chol(A, threads)
  rm(A)
  if (is.null(R) || !(min(diag(R))^2 >= tiny)) return(list(loglik = -Inf, gradient = NULL))
  solveA <- function(B) chol_solve(R, B)
  alpha <- solveA(Y)
  gls <- if (!is.null(trend)) gp_exact_gls(solveA, trend$F, alpha)
  if (!is.null(gls)) alpha <- gls$Py
  reml <- !is.null(gls) && isTRUE(trend$reml)
  nn <- if (reml) n - ncol(trend$F) else n
  yAy <- colSums(Y * alpha)
  s2 <- yAy / nn
  logdet <- 2 * sum(log(diag(R))) + if (reml) gls$logdetC else 0
  ll <- sum(-nn / 2 * (log(2 * pi * s2) + 1)) - m / 2 * logdet
  out <- list(loglik = ll, signal_var = s2, logdet = logdet, yAy = yAy)
  if (isFALSE(gradient)) return(out)
  Ai <- chol2inv(R)
  rm(R)
  lv <- if (!is.null(noise)) lambda * v  # the noise diagonal
  # the gradient is tr(M dA/dtheta) with M = -m/2 P + U U^T, P = A^{-1}
  # (REML: the projection A^{-1} - AFh AFh^T, its rank-k part moved into U)
  # and U the data terms: M is never formed, the contraction takes A^{-1},
  # -m/2 and U (native_kernel_deriv_dot())
  U <- sweep(alpha, 2L, sqrt(nn / (2 * yAy)), "*", check.margin = FALSE)
  if (reml) U <- cbind(U, sqrt(m / 2) * gls$AFh)
  dM <- -m / 2 * diag(Ai) + rowSums(U^2)
  if (!is.null(noise$h)) out$gradient_h <- dM * lv
  if (identical(gradient, "info")) {
    stopifnot(m == 1L)
    return(c(out, gp_exact_info(Ai, gls, reml, alpha[, 1L], lv, s2, nn, dM)))
  }
  codes <- kernel_grad_codes(xs, ard)
  if (ai && is.null(trend) && is.null(noise)) {
    out$ai <- gp_average_information(xs, Y, kernel, lambda, codes, alpha, Ai, tstat)
  }
  gk <- native_kernel_deriv_dot(xs, kernel, codes, Ai, -m / 2, U, threads, tstat)
  rm(Ai)
  if (!is.null(noise$Z)) {
    # dA/dgamma_j = lambda diag(v z_j)
    return(c(out, list(gradient = c(gk, sum(dM * lv), drop(crossprod(noise$Z, dM * lv))))))
  }
  out$gradient <- c(gk, lambda * sum(dM))
  out
}

# gp_loglik_exact()'s noise information (gradient = "info", one output):
# the Fisher information of the log relative noise variances h with s^2
# profiled (the joint information's Schur complement: c_i = lambda v_i
# P_ii / 2, I_ss = nn / 2 per s^4), and the observed information (minus the
# Hessian in h), its terms in P and in the data term's projection Q =
# A^{-1} - AFh AFh^T (with a mean function), with the profile's rank-one
# correction u u^T 2 / nn. dM: the diagonal of the gradient's M.
gp_exact_info <- function(Ai, gls, reml, a, lv, s2, nn, dM) {
  Q <- if (!is.null(gls)) Ai - tcrossprod(gls$AFh)
  P <- if (reml) Q else Ai
  F2 <- outer(lv, lv) * P^2 / 2
  Fh <- F2 - tcrossprod(lv * diag(P) / 2) * (2 / nn)
  Hh <- outer(lv * a, lv * a) / s2 * (if (!is.null(Q)) Q else Ai) - F2
  rm(F2)
  u <- lv * a^2 / (2 * s2)
  Hh <- Hh - tcrossprod(u) * (2 / nn)
  diag(Hh) <- diag(Hh) - dM * lv
  list(info_h = Fh, hess_h = Hh)
}

# The average information (Gilmour, Thompson and Cullis, Biometrics 1995)
# of the profile likelihood in (log kernel scales `codes`, log lambda) at a
# point gp_loglik_exact() has factored: with alpha = A^{-1} Y, Ai = A^{-1},
# Q = y^T alpha and u_i = (dA / dtheta_i) alpha, S_ij = n / (2 Q) (u_i^T
# A^{-1} u_j - (u_i^T alpha) (u_j^T alpha) / Q), summed over the outputs (PSD:
# a Gram matrix in the A^{-1} inner product, alpha projected out); its
# expectation is the Fisher information. O(n^2) per parameter: dK from the
# isotropic statistics tstat when given, else from the points.
gp_average_information <- function(xs, Y, kernel, lambda, codes, alpha, Ai, tstat = NULL) {
  n <- nrow(xs)
  DA <- lapply(codes, function(code) {
    D <- if (!is.null(tstat) && code == -1L) native_kernel_eval(kernel, tstat, -1L) else
      native_kernel_deriv(xs, xs, kernel, code)[, , 1L]
    D %*% alpha
  })
  S <- 0
  for (c in seq_len(ncol(Y))) {
    a <- alpha[, c]
    U <- cbind(vapply(DA, function(D) D[, c], numeric(n)), lambda * a)
    Q <- sum(Y[, c] * a)
    ua <- drop(crossprod(U, a))
    S <- S + n / (2 * Q) * (crossprod(U, Ai %*% U) - tcrossprod(ua) / Q)
  }
  S
}

# The GLS step of gp_loglik_exact(): with AF = A^{-1} F and C = F^T AF =
# R_C^T R_C, beta = C^{-1} F^T alpha, P y = alpha - AF beta, log det C, and
# AFh = AF R_C^{-1} (so A^{-1} F C^{-1} F^T A^{-1} = AFh AFh^T).
gp_exact_gls <- function(solveA, Fd, alpha) {
  AF <- solveA(Fd)
  C <- crossprod(Fd, AF)
  Rc <- chol((C + t(C)) / 2)
  beta <- chol_solve(Rc, crossprod(Fd, alpha))
  list(Py = alpha - AF %*% beta, logdetC = 2 * sum(log(diag(Rc))),
       AFh = t(backsolve(Rc, t(AF), transpose = TRUE)))
}

# Exact model statistics of a fit's kernel at one lambda (by one
# eigendecomposition): log likelihood, signal variance, edf, GCV and LOO.
# With observation weights (d = sqrt(w)) those of D K D and D y (the
# weighted residuals), the likelihood plus sum(log w) / 2 per output.
gp_exact_stats <- function(xs, Y, kernel, lambda, threads = 0L, d = NULL,
                           trend = NULL) {
  K <- kernel_mat(xs, xs, kernel, threads)
  if (!is.null(d)) {
    K <- K * outer(d, d)
    Y <- d * Y
    if (!is.null(trend)) trend$F <- d * trend$F
  }
  cr <- gp_eigen_criteria(gp_eigen(K, Y, trend), lambda, loo = TRUE)
  if (!is.null(d)) cr$loglik <- cr$loglik + ncol(Y) * sum(log(d))
  cr
}

# Stochastic estimates for large n ---------------------------------------------------
#
# The profile log likelihood, edf and gradient on all n points by stochastic
# Lanczos quadrature and Hutchinson estimates from one preconditioned CG run
# on [y, probes] (Gardner et al. 2018; Ubaru, Chen and Saad 2017; the
# preconditioner as control variate, Wenger et al. 2022), in C on the fit's
# device (src/core/linalg/slq.c has the method): krr_gp_slq. The reported
# standard errors are the probe terms' standard deviations over
# sqrt(probes); the quadrature error is negligible once CG has converged.
# pc (a preconditioner list(U, s) from an earlier call) and alpha (an
# earlier solve, the warm start) are the state kept across the steps of an
# optimiser; the result returns both.
gp_loglik_stochastic <- function(xs, Y, kernel, lambda, ard = FALSE,
                                 gradient = TRUE, probes = 30L, rank = 200L,
                                 seed = 1, tol = 1e-6, maxit = 200L,
                                 threads = 0L, d = NULL, pc = NULL,
                                 alpha = NULL, device = "cpu") {
  if (!is.null(d)) {
    stopifnot(!gradient)
    return(gp_loglik_stochastic_weighted(xs, Y, kernel, lambda, probes, rank,
                                         seed, tol, maxit, threads, d))
  }
  n <- nrow(xs)
  nk <- if (!gradient) -1L else if (ard) ncol(xs) else 1L
  v <- native_gp_slq(xs, Y, kernel, lambda, nk, probes, min(rank, n), maxit,
                     tol, seed %% 2^31, pc = pc, alpha = alpha,
                     device = device, threads = threads)
  list(loglik = v$loglik, signal_var = v$yAy / n, logdet = v$logdet,
       yAy = v$yAy, se = v$se, logdet_se = v$logdet_se, edf = v$edf,
       edf_se = v$edf_se, converged = v$converged, iterations = v$iterations,
       gradient = v$gradient, gradient_se = v$gradient_se, alpha = v$alpha,
       precond = v$precond, terms = v$terms)
}

# A Nystrom preconditioner of K + lambda I: landmarks drawn from `seed`;
# K ~ U diag(s) U^T with orthonormal U (n x r).
# (With d: of D K D + lambda I.)
nystrom_precond <- function(xs, kernel, lambda, rank, seed, threads = 0L,
                            d = NULL) {
  n <- nrow(xs)
  r <- min(rank, n)
  S <- with_seed(seed + 13, sort(sample.int(n, r)))
  Knr <- kernel_mat(xs, xs[S, , drop = FALSE], kernel, threads)
  if (!is.null(d)) Knr <- Knr * outer(d, d[S])
  e <- eigen(Knr[S, , drop = FALSE], symmetric = TRUE)
  keep <- e$values > 1e-12 * max(e$values)
  B <- Knr %*% sweep(e$vectors[, keep, drop = FALSE], 2L,
                     sqrt(e$values[keep]), "/")
  sv <- svd(B, nv = 0L)
  list(U = sv$u, s = sv$d^2, lambda = lambda, n = n)
}

precond_solve <- function(pc, V) {
  UtV <- crossprod(pc$U, V)
  pc$U %*% (UtV / (pc$s + pc$lambda)) + (V - pc$U %*% UtV) / pc$lambda
}

precond_sqrt <- function(pc, G) {
  UtG <- crossprod(pc$U, G)
  pc$U %*% (UtG * sqrt(pc$s + pc$lambda)) +
    sqrt(pc$lambda) * (G - pc$U %*% UtG)
}

precond_trace_inv <- function(pc) {
  sum(1 / (pc$s + pc$lambda)) + (pc$n - length(pc$s)) / pc$lambda
}

precond_logdet <- function(pc) {
  sum(log(pc$s + pc$lambda)) + (pc$n - length(pc$s)) * log(pc$lambda)
}

# K V for the standardised points (double precision, on the CPU).
# With d (observation weights: d = sqrt(w)), D K D V for D = diag(d).
kernel_times <- function(xs, V, kernel, threads = 0L, d = NULL) {
  if (!is.null(d)) V <- d * V
  KV <- native_kernel_apply(xs, xs, V, kernel, threads = threads)
  if (is.null(d)) KV else d * KV
}

# Batched preconditioned CG on (K + lambda I) X = B, every column at once
# (columns stop when their relative residual is below tol); returns X and,
# per column, the CG coefficients alpha_j, beta_j and r_0^T P^{-1} r_0.
mbcg <- function(xs, B, kernel, lambda, pc, tol = 1e-6, maxit = 200L,
                 threads = 0L, d = NULL) {
  k <- ncol(B)
  X <- matrix(0, nrow(B), k)
  R <- B
  Zp <- precond_solve(pc, R)
  D <- Zp
  rz <- colSums(R * Zp)
  rz0 <- rz
  bnorm <- sqrt(colSums(B^2))
  alphas <- betas <- matrix(NA_real_, maxit, k)
  active <- bnorm > 0
  it <- 0L
  while (any(active) && it < maxit) {
    it <- it + 1L
    a_idx <- which(active)
    Da <- D[, a_idx, drop = FALSE]
    AD <- kernel_times(xs, Da, kernel, threads, d) + lambda * Da
    a <- rz[a_idx] / colSums(Da * AD)
    X[, a_idx] <- X[, a_idx] + sweep(Da, 2L, a, "*")
    R[, a_idx] <- R[, a_idx] - sweep(AD, 2L, a, "*")
    Zn <- precond_solve(pc, R[, a_idx, drop = FALSE])
    rzn <- colSums(R[, a_idx, drop = FALSE] * Zn)
    b <- rzn / rz[a_idx]
    D[, a_idx] <- Zn + sweep(Da, 2L, b, "*")
    rz[a_idx] <- rzn
    alphas[it, a_idx] <- a
    betas[it, a_idx] <- b
    res <- sqrt(colSums(R[, a_idx, drop = FALSE]^2)) / bnorm[a_idx]
    active[a_idx[res <= tol]] <- FALSE
  }
  list(X = X, alphas = alphas[seq_len(it), , drop = FALSE],
       betas = betas[seq_len(it), , drop = FALSE], rz0 = rz0,
       converged = !any(active), iterations = it)
}

# e_1^T log(T) e_1 of the Lanczos tridiagonal from CG coefficients.
lanczos_quad <- function(alpha, beta) {
  ok <- !is.na(alpha)
  alpha <- alpha[ok]
  beta <- beta[ok]
  J <- length(alpha)
  if (J == 0L) return(0)
  d <- 1 / alpha + c(0, beta[-J] / alpha[-J])
  T <- diag(d, J)
  if (J > 1L) {
    off <- sqrt(beta[-J]) / alpha[-J]
    T[cbind(1:(J - 1L), 2:J)] <- off
    T[cbind(2:J, 1:(J - 1L))] <- off
  }
  e <- eigen(T, symmetric = TRUE)
  sum(e$vectors[1L, ]^2 * log(pmax(e$values, 1e-300)))
}

# The stochastic profile log likelihood and edf with observation weights
# (d = sqrt(w)): the likelihood of y ~ N(0, s^2 (K + lambda W^{-1})), which is
# that of D y ~ N(0, s^2 (D K D + lambda I)) plus sum(log w) / 2 per output,
# by the same estimators as krr_gp_slq, here in R on the CPU (batched CG
# below, the products in C).
gp_loglik_stochastic_weighted <- function(xs, Y, kernel, lambda, probes, rank,
                                          seed, tol, maxit, threads, d) {
  n <- nrow(xs)
  m <- ncol(Y)
  Y <- d * Y
  pc <- nystrom_precond(xs, kernel, lambda, rank, seed, threads, d)
  G <- with_seed(seed + 17, matrix(stats::rnorm(n * probes), n, probes))
  Zs <- precond_sqrt(pc, G)
  cg <- mbcg(xs, cbind(Y, Zs), kernel, lambda, pc, tol, maxit, threads, d)
  alpha <- cg$X[, seq_len(m), drop = FALSE]
  U <- cg$X[, m + seq_len(probes), drop = FALSE]
  yAy <- colSums(Y * alpha)
  s2 <- yAy / n
  terms <- vapply(seq_len(probes), function(i) {
    cg$rz0[m + i] * lanczos_quad(cg$alphas[, m + i], cg$betas[, m + i])
  }, 0)
  logdet <- precond_logdet(pc) + mean(terms)
  ll <- sum(-n / 2 * (log(2 * pi * s2) + 1)) - m / 2 * logdet + m * sum(log(d))
  PZ <- precond_solve(pc, Zs)
  tr_terms <- colSums(U * PZ) - colSums(PZ * PZ)
  tr_Ainv <- precond_trace_inv(pc) + mean(tr_terms)
  list(loglik = ll, signal_var = s2, logdet = logdet, yAy = yAy,
       se = m / 2 * stats::sd(terms) / sqrt(probes),
       logdet_se = stats::sd(terms) / sqrt(probes),
       edf = n - lambda * tr_Ainv,
       edf_se = lambda * stats::sd(tr_terms) / sqrt(probes),
       converged = cg$converged, iterations = cg$iterations)
}
