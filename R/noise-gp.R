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
# h (positive definite: a Schur product of positive definite matrices, F =
# G G^T) stands for the negative Hessian in the Laplace approximation of
# the marginal likelihood, with B = I + G^T K_g G,
#   log p(y | theta) ~ psi(h) - log det B / 2
# (R&W sec. 3.4.4), which the hyperparameters maximise by Nelder-Mead on the
# log scale from the constant-noise estimates. At a new point the latent's
# Laplace posterior is N(k^T a, k(z, z) - k^T G B^{-1} G^T k), and the
# relative noise variance is its log-normal mean exp(mean + var / 2).
#
# The estimation runs on at most noise_gp_max_n() of the tuning rows (each
# Newton step is O(n^3)); the latent at every training point is then its
# posterior mean, and the fit is the weighted fit with weights exp(-h_i).

# The most rows the latent noise process is estimated on (option
# askotch.noise_gp_max_n)
noise_gp_max_n <- function() {
  as.integer(number_option("askotch.noise_gp_max_n", 300,
                           function(v) v >= 10 && v == round(v), "(a whole number, at least 10)"))
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
  bad <- setdiff(nm[nm != ""], "kernel")
  if (length(bad) > 0L) {
    abort_askotch(sprintf("gp() in `noise` takes its variables and `kernel`, not %s.",
                          paste0("`", bad, "`", collapse = ", ")), "input", call)
  }
  vars <- args[nm == ""]
  if (length(vars) == 0L) {
    abort_askotch("gp() in `noise` needs at least one variable, e.g. gp(time).",
                  "input", call)
  }
  kernel <- if ("kernel" %in% nm) args[["kernel"]] else "matern32"
  ok <- c("matern12", "matern32", "matern52", "rbf")
  if (!(is.character(kernel) && length(kernel) == 1L && kernel %in% ok)) {
    abort_askotch(sprintf("gp(kernel = ) in `noise` must be one of %s.",
                          paste0("\"", ok, "\"", collapse = ", ")), "input", call)
  }
  f <- stats::reformulate(vapply(vars, function(v) paste(deparse(v), collapse = ""), ""))
  environment(f) <- environment(noise)
  list(formula = f, kernel = kernel)
}

# The latent's kernel matrix sd^2 k_g(Z1, Z2) on standardised covariates
noise_gp_kmat <- function(Z1, Z2, g) g$sd^2 * kernel_mat(Z1, Z2, g$kernel)

# The posterior mode of the latent given the hyperparameters (g: kernel with
# its length scale as bandwidth, sd) by Newton steps from a0 (the previous
# mode's a, or zeros): with the observed information W of l (exact, from
# gp_loglik_exact()), a_new = (I + W K_g)^{-1} (W h + grad l), an ascent
# direction wherever K_g^{-1} + W is positive definite; elsewhere the Fisher
# scoring step (W the Fisher information F, always positive definite).
# Returns the mode's a, h, psi, the Laplace log marginal likelihood lml and
# G R_B^{-1} (the variance's factor, vf), or NULL where K + lambda V is not
# positive definite.
noise_gp_mode <- function(xs, Y, kernel, lambda, Z, g, trend, a0, threads = 0L) {
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
  for (it in seq_len(100L)) {
    d <- noise_gp_direction(cur, Kg)
    t <- 1
    nw <- NULL
    while (t > 1e-8) {
      nw <- at(cur$a + t * d)
      if (!is.null(nw) && nw$psi >= cur$psi) break
      nw <- NULL
      t <- t / 2
    }
    if (is.null(nw)) break
    gain <- nw$psi - cur$psi
    cur <- nw
    if (gain <= 1e-10 * (1 + abs(cur$psi))) break
  }
  G <- noise_gp_factor(cur$info)
  RB <- chol(diag(n) + crossprod(G, Kg %*% G))
  list(a = cur$a, h = cur$h, psi = cur$psi, lml = cur$psi - sum(log(diag(RB))),
       vf = t(backsolve(RB, t(G), transpose = TRUE)))
}

# A Cholesky factor G (F = G G^T) of the Fisher information (positive
# definite), with a jitter of 1e-12 of its largest diagonal entry, more
# where rounding has made it indefinite
noise_gp_factor <- function(info) {
  for (j in c(1e-12, 1e-9, 1e-6)) {
    R <- suppressWarnings(chol(info + diag(j * max(diag(info)), nrow(info)), pivot = TRUE))
    if (attr(R, "rank") == nrow(info)) break
  }
  G <- matrix(0, nrow(info), nrow(info))
  G[attr(R, "pivot"), ] <- t(R)
  G
}

# The Newton direction in a from the state s: the observed information's
# step where it ascends, else Fisher scoring's
noise_gp_direction <- function(s, Kg) {
  n <- length(s$a)
  slope <- function(d) sum((s$grad - s$a) * drop(Kg %*% d))  # grad psi . dh
  d <- tryCatch(solve(diag(n) + s$hess %*% Kg, drop(s$hess %*% s$h) + s$grad) - s$a,
                error = function(e) NULL)
  if (!is.null(d) && all(is.finite(d)) && slope(d) > 0) return(d)
  G <- noise_gp_factor(s$info)
  RB <- chol(diag(n) + crossprod(G, Kg %*% G))
  c0 <- drop(s$info %*% s$h) + s$grad
  c0 - drop(G %*% backsolve(RB, backsolve(RB, crossprod(G, Kg %*% c0), transpose = TRUE))) -
    s$a
}

# The latent's Laplace posterior at standardised covariates Znew: mean and
# variance (nz$gp: the estimation rows' Z, a, vf, kernel, sd)
noise_gp_latent <- function(gp, Znew) {
  Ks <- noise_gp_kmat(Znew, gp$Z, gp)
  v <- gp$sd^2 - rowSums((Ks %*% gp$vf)^2)
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
  ell0 <- median_bandwidth(Z, gk$metric, set$seed)
  th0 <- c(if (est_bw) log(ml$kernel$bandwidth), if (est_lambda) log(ml$lambda), 0,
           log(ell0))
  lower <- c(if (est_bw) th0[1L] - log(100), if (est_lambda) log(ml_lambda_range[1L]),
             log(1e-3), log(ell0 / 100))
  upper <- c(if (est_bw) th0[1L] + log(100), if (est_lambda) log(ml_lambda_range[2L]),
             log(30), log(ell0 * 100))
  decode <- function(th) {
    k <- ml$kernel
    if (est_bw) k$bandwidth <- exp(th[1L])
    gk$bandwidth <- exp(th[length(th)])
    list(kernel = k, lambda = if (est_lambda) exp(th[est_bw + 1L]) else ml$lambda,
         g = list(kernel = gk, sd = exp(th[length(th) - 1L])))
  }
  memo <- new.env(parent = emptyenv())
  obj <- function(th) {
    thc <- pmin(pmax(th, lower), upper)
    d <- decode(thc)
    r <- noise_gp_mode(xs, Y, d$kernel, d$lambda, Z, d$g, tr, memo$a, set$threads)
    memo$evaluations <- (memo$evaluations %||% 0L) + 1L
    f <- if (is.null(r)) .Machine$double.xmax / 4 else {
      memo$a <- r$a
      -r$lml
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
  ml$noise_gp <- list(kernel = d$g$kernel, sd = d$g$sd, Z = Z, a = r$a, vf = r$vf,
                      rows = sub$rows[rows], loglik = r$lml,
                      optim = list(loglik = r$lml, convergence = res$convergence,
                                   evaluations = memo$evaluations))
  ml
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
noise_gp_check <- function(sub, ml, call) {
  if (ncol(sub$Y) > 1L) {
    abort_askotch("`noise = ~ gp()` models one response; fit each column separately.",
                  "input", call)
  }
  if (identical(ml$bandwidth_rule, "ard")) {
    abort_askotch(paste(
      "`noise = ~ gp()` needs one bandwidth for all columns: use bandwidth = \"ml\"",
      "(or a number) rather than \"ard\"."), "input", call)
  }
}
