# Heteroscedastic noise with a latent Gaussian process -----------------------------
#
# krr(x, y, noise = ~ gp(z1, z2)): the noise variance of point i is
#   s^2 lambda exp(h(z_i)),  h ~ GP(0, sd^2 k_g(.; ell)),
# k_g a listed kernel (Matern 3/2 by default) on the noise covariates, each
# centred and scaled by its training sd as for the log-linear model
# (R/noise.R), whose level lambda sets. It is the "second smooth" of a
# location-scale model (mgcv's gaulss, brms' sigma ~ gp()), the
# heteroscedastic GP of Goldberg, Williams and Bishop (1998).
#
# Given the hyperparameters theta (the kernel's scale, lambda, sd, ell), the
# latent values at the training points are estimated by their posterior
# mode h = K_g a, maximising psi(h) = l(h) - h^T K_g^{-1} h / 2, l the
# profile log likelihood of y given the noise variances (gp_loglik_exact()
# with noise = list(h)), by Newton steps in the parametrisation of
# Rasmussen and Williams (2006, Algorithm 3.1), in which K_g is never
# inverted (ties in z make it singular). The Fisher information F of l in
# h (s^2 profiled, positive semidefinite) serves where the observed
# information W is not positive definite. The Laplace approximation of the
# marginal likelihood,
#   log p(y | theta) ~ psi(h) - log det(I + W K_g) / 2
# (R&W sec. 3.4.4), plus the log density of a penalised-complexity prior on
# the process's length scale and sd (noise_gp_logprior()), is maximised over
# the hyperparameters by Nelder-Mead on the log scale from the
# constant-noise estimates. At a new point the
# latent's posterior is N(k^T a, k(z, z) - k^T (K_g + F^{-1})^{-1} k) (F:
# noise_gp_laplace() says why), and the relative noise variance is its
# log-normal mean exp(mean + var / 2).
#
# The estimation runs on at most noise_gp_max_n() of the tuning rows (each
# Newton step is O(n^3)); the latent at every training point is then its
# posterior mean, and the fit is the weighted fit with weights exp(-h_i).

# The most rows the latent noise process is estimated on (option
# askotch.noise_gp_max_n)
noise_gp_max_n <- function() {
  number_option("askotch.noise_gp_max_n", 300, function(v) v >= 10 && v == round(v),
                "(a whole number, at least 10, or Inf)")
}

# The gp() term of a noise formula: NULL when there is none, else
# list(formula = ~ z1 + z2 (its variables), kernel = the kernel's name).
# gp() must be the formula's only term.
noise_gp_term <- function(noise, call = NULL) {
  rhs <- noise[[length(noise)]]
  has_gp <- function(e) {
    is.call(e) && (identical(e[[1L]], as.name("gp")) ||
                     any(vapply(as.list(e)[-1L], has_gp, FALSE)))
  }
  if (!has_gp(rhs)) return(NULL)
  if (!(is.call(rhs) && identical(rhs[[1L]], as.name("gp")))) {
    abort_askotch(paste(
      "A `noise` formula with gp() has it as its only term, e.g.",
      "noise = ~ gp(time) or noise = ~ gp(lon, lat)."), "input", call)
  }
  args <- as.list(rhs)[-1L]
  nm <- names(args) %||% rep("", length(args))
  bad <- setdiff(nm[nm != ""], c("kernel", "prior"))
  if (length(bad) > 0L) {
    abort_askotch(sprintf("gp() in `noise` takes its variables, `kernel` and `prior`, not %s.",
                          paste0("`", bad, "`", collapse = ", ")), "input", call)
  }
  vars <- args[nm == ""]
  if (length(vars) == 0L || !all(vapply(vars, function(v) is.name(v) || is.call(v), FALSE))) {
    abort_askotch(paste(
      "gp() in `noise` takes variables (or expressions of them) unnamed, e.g.",
      "gp(time), and the kernel by name: gp(time, kernel = \"rbf\")."), "input", call)
  }
  kernel <- if ("kernel" %in% nm) args[["kernel"]] else "matern32"
  if (!(is.character(kernel) && length(kernel) == 1L && kernel %in% auto_kernels)) {
    abort_askotch(sprintf("gp(kernel = ) in `noise` must be a quoted name, one of %s.",
                          paste0("\"", auto_kernels, "\"", collapse = ", ")), "input", call)
  }
  f <- stats::reformulate(vapply(vars, function(v) paste(deparse(v), collapse = ""), ""))
  environment(f) <- environment(noise)
  prior <- if (!"prior" %in% nm) TRUE else tryCatch(
    eval(args[["prior"]], environment(noise)),
    error = function(e) abort_askotch(sprintf("gp(prior = ) in `noise` could not be evaluated: %s",
                                              conditionMessage(e)), "input", call))
  list(formula = f, kernel = kernel, prior = noise_gp_prior_spec(prior, call))
}

# gp(prior = ): TRUE (the default scales), FALSE (none: the Laplace
# marginal likelihood alone), or c(range = , sd = ). Returns NULL or the
# two scales.
noise_gp_prior_spec <- function(prior, call = NULL) {
  if (isTRUE(prior)) return(c(range = 0.5, sd = 1))
  if (isFALSE(prior)) return(NULL)
  if (!is.numeric(prior) || length(prior) != 2L ||
      !setequal(names(prior) %||% "", c("range", "sd")) ||
      !all(is.finite(prior) & prior > 0)) {
    abort_askotch(sprintf(paste(
      "gp(prior = ) in `noise` must be TRUE, FALSE or c(range = , sd = ), two",
      "positive numbers, not %s."), fmt_value(prior)), "input", call)
  }
  prior[c("range", "sd")]
}

# The prior's tail probability: P(ell < range) = P(sd > sd0)
noise_gp_prior_tail <- 0.05

# The penalised-complexity prior of a standard deviation (Simpson et al.
# 2017): exponential with P(sd > U) = noise_gp_prior_tail. Its log density
# on the log scale (times the Jacobian sd), log sd - rate sd up to a
# constant, and the derivative in log sd, 1 - rate sd; here and in EP's
# search (ep_search()).
pc_sd_logprior <- function(log_sd, U) {
  rate <- -log(noise_gp_prior_tail) / U
  c(value = log_sd - rate * exp(log_sd), deriv = 1 - rate * exp(log_sd))
}

# The log density of the penalised-complexity prior (Simpson et al. 2017;
# Fuglstad et al. 2019, for Matern fields in d dimensions) of the latent's
# log length scale and log sd, th = (log ell, log sd), up to a constant:
# P(ell < range) = P(sd > sd0) = noise_gp_prior_tail, ell in the standardised
# covariates' units. It shrinks towards the base model, constant noise
# (ell -> Inf or sd -> 0): ell's density is lambda1 (d / 2) ell^(-d/2 - 1)
# exp(-lambda1 ell^(-d/2)), sd's exponential of rate lambda2 (each times
# its Jacobian on the log scale).
noise_gp_logprior <- function(th, prior, d) {
  if (is.null(prior)) return(0)
  l1 <- -log(noise_gp_prior_tail) * prior[["range"]]^(d / 2)
  -d / 2 * th[[1L]] - l1 * exp(-d / 2 * th[[1L]]) +
    pc_sd_logprior(th[[2L]], prior[["sd"]])[["value"]]
}

# The latent's kernel matrix sd^2 k_g(Z1, Z2) on standardised covariates
noise_gp_kmat <- function(Z1, Z2, g) g$sd^2 * kernel_mat(Z1, Z2, g$kernel)

# The posterior mode of the latent given the hyperparameters (g: kernel with
# its length scale as bandwidth, sd) by Newton steps from a0 (the previous
# mode's a, or zeros): with the observed information W of l (exact, from
# gp_loglik_exact()), a_new = (I + W K_g)^{-1} (W h + grad l), an ascent
# direction wherever K_g^{-1} + W is positive definite; elsewhere, or where
# its line search fails, the Fisher scoring step (W the Fisher information,
# whose direction always ascends). It stops when a step's predicted gain
# (the Newton decrement) is below 1e-10 of |psi|. Returns the mode's a, h,
# psi, the Laplace log marginal likelihood lml and the latent's posterior
# matrix C (noise_gp_laplace(); only with `posterior`, as the search needs
# lml alone) and whether it converged, or NULL where K + lambda V is not
# positive definite.
noise_gp_mode <- function(xs, Y, kernel, lambda, Z, g, trend, a0, threads = 0L,
                          posterior = TRUE) {
  n <- nrow(xs)
  Kg <- noise_gp_kmat(Z, Z, g)
  at <- function(a) {
    h <- drop(Kg %*% a)
    v <- gp_loglik_exact(xs, Y, kernel, lambda, gradient = "info", threads = threads,
                         trend = trend, noise = list(h = h))
    if (!is.finite(v$loglik)) return(NULL)
    list(a = a, h = h, psi = v$loglik - sum(a * h) / 2, grad = v$gradient_h,
         info = v$info_h, hess = v$hess_h)
  }
  cur <- at(if (is.null(a0)) numeric(n) else a0)
  if (is.null(cur) && !is.null(a0)) cur <- at(numeric(n))
  if (is.null(cur)) return(NULL)
  converged <- FALSE
  for (it in seq_len(100L)) {
    nw <- NULL
    for (fisher in c(FALSE, TRUE)) {
      d <- noise_gp_direction(cur, Kg, fisher)
      dec <- sum((cur$grad - cur$a) * drop(Kg %*% d))  # grad psi . dh
      converged <- dec / 2 <= 1e-10 * (1 + abs(cur$psi))
      if (converged) break
      nw <- noise_gp_search(at, cur, d)
      if (!is.null(nw)) break
    }
    if (converged || is.null(nw)) break
    cur <- nw
  }
  lap <- noise_gp_laplace(cur, Kg, posterior)
  list(a = cur$a, h = cur$h, psi = cur$psi, lml = cur$psi - lap$logdet / 2, C = lap$C,
       converged = converged)
}

# The Laplace approximation at the mode s: the log posterior's Hessian is
# -(K_g^{-1} + W), W the observed information, so log p(y | theta) ~ psi -
# log det(I + W K_g) / 2. That needs K_g^{-1} + W positive definite (a
# strict maximum), checked by a Cholesky factor of the symmetric I + L^T W
# L, L L^T = K_g + 1e-10 max(diag K_g) I (K_g is singular with ties); where
# it is not, the Fisher information F replaces W. The latent's posterior
# covariance at new points, k(z, z) - k^T C k, takes F always, C = G B^{-1}
# G^T with F = G G^T and B = I + G^T K_g G: the likelihood is not
# log-concave in h, W can be indefinite, and with it the variance can
# exceed the prior's by orders of magnitude away from the data; with F it
# stays below. (C, O(n^3), only with `posterior`.)
noise_gp_laplace <- function(s, Kg, posterior = TRUE) {
  n <- length(s$a)
  L <- tryCatch(t(chol(Kg + diag(1e-10 * max(diag(Kg)), n))), error = function(e) NULL)
  RW <- if (!is.null(L)) {
    suppressWarnings(chol(diag(n) + crossprod(L, s$hess %*% L), pivot = TRUE))
  }
  observed <- !is.null(RW) && attr(RW, "rank") == n
  b <- if (posterior || !observed) noise_gp_B(s$info, Kg)
  R <- if (observed) RW else b$R
  C <- if (posterior) tcrossprod(t(backsolve(b$R, t(b$G), transpose = TRUE)))
  list(logdet = 2 * sum(log(diag(R))), C = C)
}

# Backtracking from a + d (halving, at least 2^-26 of it) to the first point
# that raises psi; NULL when none does
noise_gp_search <- function(at, cur, d) {
  t <- 1
  while (t > 1e-8) {
    nw <- at(cur$a + t * d)
    if (!is.null(nw) && nw$psi > cur$psi) return(nw)
    t <- t / 2
  }
  NULL
}

# B = I + G^T K_g G = R^T R for the Fisher information F = G G^T: G (a
# pivoted Cholesky factor of F with a jitter of 1e-12 of its largest
# diagonal entry, more where rounding has made it indefinite) and R
noise_gp_B <- function(info, Kg) {
  n <- nrow(info)
  for (j in c(1e-12, 1e-9, 1e-6)) {
    R <- suppressWarnings(chol(info + diag(j * max(diag(info)), n), pivot = TRUE))
    if (attr(R, "rank") == n) break
  }
  G <- matrix(0, n, n)
  G[attr(R, "pivot"), ] <- t(R)
  list(G = G, R = chol(diag(n) + crossprod(G, Kg %*% G)))
}

# The Newton direction in a from the state s: the observed information's
# step where it ascends (fisher = FALSE), else Fisher scoring's
noise_gp_direction <- function(s, Kg, fisher = FALSE) {
  n <- length(s$a)
  if (!fisher) {
    d <- tryCatch(solve(diag(n) + s$hess %*% Kg, drop(s$hess %*% s$h) + s$grad) - s$a,
                  error = function(e) NULL)
    if (!is.null(d) && all(is.finite(d)) && sum((s$grad - s$a) * drop(Kg %*% d)) > 0) {
      return(d)
    }
  }
  b <- noise_gp_B(s$info, Kg)
  c0 <- drop(s$info %*% s$h) + s$grad
  u <- chol_solve(b$R, crossprod(b$G, Kg %*% c0))
  c0 - drop(b$G %*% u) - s$a
}

# The latent's Laplace posterior at standardised covariates Znew: mean and
# variance (nz$gp: the estimation rows' Z, a, C, kernel, sd)
noise_gp_latent <- function(gp, Znew) {
  Ks <- noise_gp_kmat(Znew, gp$Z, gp)
  v <- gp$sd^2 - rowSums((Ks %*% gp$C) * Ks)
  list(mean = drop(Ks %*% gp$a), var = pmax(v, 0))
}

# The relative noise variance exp(h) at standardised covariates: the
# log-normal mean of the latent's posterior
noise_gp_relative <- function(gp, Zs) {
  l <- noise_gp_latent(gp, Zs)
  exp(l$mean + l$var / 2)
}

# The latent noise process's hyperparameters with the kernel's scale and
# lambda (each where estimated) by the Laplace marginal likelihood, on at
# most noise_gp_max_n() of the tuning rows `sub`, from ml (tune_ml()'s
# constant-noise estimates). Returns ml with the kernel, lambda and
# `noise_gp` (the latent's fields, its rows, the log marginal likelihood,
# Nelder-Mead's record).
noise_gp_tune <- function(ml, sub, set, clock) {
  ls <- set$lambda_spec
  est_bw <- ml$bandwidth_rule == "ml"
  est_lambda <- ls$rule %in% c("default", "ml")
  rows <- subsample_rows(length(sub$rows), noise_gp_max_n(), set$seed + 17)
  xs <- ml$xs[rows, , drop = FALSE]
  Y <- if (length(rows) == length(sub$rows)) sub$Y else
    centre_rows(sub$Y[rows, , drop = FALSE], "regression", sub$trend)
  tr <- trend_rows(sub$trend, rows)
  Z <- sub$noise_gp$Z[rows, , drop = FALSE]
  gk <- new_kernel(sub$noise_gp$kernel, "median")
  prior <- sub$noise_gp$prior
  ell0 <- median_bandwidth(Z, gk$metric, set$seed)
  th0 <- c(if (est_bw) log(ml$kernel$bandwidth), if (est_lambda) log(ml$lambda), 0,
           log(ell0))
  names(th0) <- c(if (est_bw) "bandwidth", if (est_lambda) "lambda", "sd", "length scale")
  # (single precision: lambda no lower than its floor, as tune_hyper() sets)
  lam_lo <- if (set$precision == "single") single_lambda_floor else ml_lambda_range[1L]
  lower <- c(if (est_bw) th0[1L] - log(100), if (est_lambda) log(lam_lo),
             log(1e-3), log(ell0 / 100))
  upper <- c(if (est_bw) th0[1L] + log(100), if (est_lambda) log(ml_lambda_range[2L]),
             log(30), log(ell0 * 100))
  decode <- function(th) {
    k <- ml$kernel
    if (est_bw) k$bandwidth <- exp(th[[1L]])
    gk$bandwidth <- exp(th[[length(th)]])
    list(kernel = k, lambda = if (est_lambda) exp(th[[est_bw + 1L]]) else ml$lambda,
         g = list(kernel = gk, sd = exp(th[[length(th) - 1L]])))
  }
  memo <- new.env(parent = emptyenv())
  obj <- function(th) {
    thc <- pmin(pmax(th, lower), upper)
    d <- decode(thc)
    r <- noise_gp_mode(xs, Y, d$kernel, d$lambda, Z, d$g, tr, memo$a, set$threads,
                       posterior = FALSE)
    memo$evaluations <- (memo$evaluations %||% 0L) + 1L
    f <- if (is.null(r)) .Machine$double.xmax / 4 else {
      memo$a <- r$a
      -r$lml - noise_gp_logprior(thc[length(thc) - 0:1], prior, ncol(Z))
    }
    tune_best(memo, thc, f, clock, "noise process (Laplace approximation)")
    f + 1e3 * sum((th - thc)^2)
  }
  res <- tune_optim(th0, obj, NULL, -Inf, Inf, list(maxit = 500L, reltol = 1e-7), memo, 1,
                    method = "Nelder-Mead")
  d <- decode(memo$best_th)
  r <- noise_gp_mode(xs, Y, d$kernel, d$lambda, Z, d$g, tr, memo$a, set$threads)
  if (is.null(r)) {
    abort_askotch(paste(
      "The noise process's likelihood could not be evaluated (K + lambda V is not",
      "numerically positive definite at any point tried); rescale `x` or use a",
      "log-linear noise model (noise = ~ z)."), "input")
  }
  ml$kernel <- d$kernel
  ml$lambda <- d$lambda
  # the process's sd and length scale on a bound of their range (the
  # others' bounds are the constant-noise search's)
  th <- memo$best_th
  edge <- (th <= lower + 1e-6 | th >= upper - 1e-6) & names(th0) %in% c("sd", "length scale")
  ml$noise_gp <- list(kernel = d$g$kernel, sd = d$g$sd, Z = Z, a = r$a, C = r$C,
                      rows = sub$rows[rows], loglik = r$lml,
                      optim = list(loglik = r$lml, convergence = res$convergence,
                                   message = res$message, evaluations = memo$evaluations,
                                   at_bound = names(th0)[edge], prior = prior,
                                   n_used = length(rows)))
  ml
}

# A fit whose latent noise process's sd or length scale ended on a bound of
# its search range warns (class askotch_warning_hyper), as warn_hyper() for
# lambda
warn_noise_gp <- function(fit, call = NULL) {
  b <- fit$tuning$noise_gp$at_bound
  if (is.null(fit$noise$gp) || length(b) == 0L) return(invisible(NULL))
  warn_askotch(sprintf(paste(
    "The noise process's %s ended on a bound of its search range: the data say",
    "little about it. A log-linear noise model (noise = ~ z) or constant noise may",
    "fit as well."), paste(b, collapse = " and ")), "hyper", call)
}

# The Laplace approximation of the marginal likelihood of a fit's latent
# noise process (NA when it was estimated on a subsample of the rows)
noise_gp_loglik <- function(object) {
  gp <- object$noise$gp
  if (length(gp$rows) < object$n) NA_real_ else gp$loglik
}

# summary()'s and tidy()'s noise rows under a latent noise process: the log
# noise variance where the latent is 0, log(lambda s^2), the latent's sd
# and its length scale in each covariate's units
noise_gp_table <- function(object) {
  nz <- object$noise
  est <- c(log(object$lambda * gp_signal_var(object)), nz$gp$sd,
           nz$gp$kernel$bandwidth * nz$scale)
  matrix(est, ncol = 1L, dimnames = list(
    c("(Intercept)", "gp_sd", paste0("gp_length_scale:", nz$names)), "estimate"))
}

# What a latent noise process needs: one output and one isotropic scale of
# the inputs (the composite kernels tune elsewhere and refuse it there)
noise_gp_check <- function(sub, set, call) {
  if (ncol(sub$Y) > 1L) {
    abort_askotch("`noise = ~ gp()` models one response; fit each column separately.",
                  "input", call)
  }
  if (identical(set$kernel$bandwidth_rule, "ard")) {
    abort_askotch(paste(
      "`noise = ~ gp()` needs one bandwidth for all columns: use bandwidth = \"ml\"",
      "(or a number) rather than \"ard\"."), "input", call)
  }
}
