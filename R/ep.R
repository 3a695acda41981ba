# Gaussian-process classification by expectation propagation -----------------
#
# kernel_machine(x, y, loss = loss_logistic(), posterior = "ep"). The model
# is that of posterior = "laplace" (R/laplace.R): latent prior
# f ~ GP(0, K~), K~ = K / lambda, logistic likelihood sigma(y_i f_i). EP
# (Minka 2001; Rasmussen and Williams 2006, sec. 3.6) replaces each
# likelihood term by a Gaussian site with precision tau~_i and shift nu~_i,
# chosen so that the posterior marginal of f_i matches the moments of the
# "tilted" distribution sigma(y_i f_i) N(f_i; cavity). The Laplace
# approximation centres its Gaussian at the mode, which for the logistic
# likelihood sits closer to zero than the posterior mean, and so gives
# probabilities that are too close to 1/2 (Kuss and Rasmussen 2005;
# Nickisch and Rasmussen 2008, who find EP the most accurate of the
# approximations they compare).
#
# Here all sites are updated together from the current posterior (a
# parallel version of R&W's Algorithm 3.5), each site's step halved when
# its update reverses direction and lengthened again while it does not,
# started from the Laplace approximation's sites (tau~ = W, nu~ = W f^ +
# grad log p(y | f^), whose posterior is the Laplace one). A sweep costs a
# Cholesky factor of B = I + S^(1/2) K~ S^(1/2) and a triangular solve with
# n right-hand sides for the marginal variances, in compiled code
# (native_gp_sites(): the posterior N(mu, Sigma) of the sites, its marginal
# variances and means, B's factor and the weights alpha of the posterior
# mean K~ alpha, as GPML's epComputeParams): exact, for up to option
# askotch.ep_max_n points. The tilted moments are integrals in one
# variable, by the trapezoidal rule. Predictions are those of a weighted GP
# regression with weights tau~ and pseudo-targets nu~ / tau~ (R&W sec.
# 3.6.2), through R/gp.R as for the Laplace approximation.

# EP's options: the most points and sweeps, the convergence tolerance on
# the sites' change between sweeps (relative), the latent scale's prior
ep_option <- function(name, default) number_option(name, default, function(v) v > 0, "above 0")
ep_max_n <- function() ep_option("askotch.ep_max_n", 5000)
ep_max_sweeps <- function() ep_option("askotch.ep_max_sweeps", 200L)
ep_tol <- function() ep_option("askotch.ep_tol", 1e-4)
# the scale U of the latent sd's prior in ep_search(): P(sd > U) = 0.05
ep_sd_prior <- function() ep_option("askotch.ep_sd_prior", 30)

# log Z, mean and variance of the tilted distributions
# sigma(y f) N(f; m, v) / Z, one per element of y, m, v, by the trapezoidal
# rule in compiled code (native_ep_tilted(); its spacing and error are
# described in src/core/loss/tilted.c)
ep_tilted <- function(y, m, v) {
  out <- native_ep_tilted(y, m, v)
  list(logZ = out[, 1L], mean = out[, 2L], var = out[, 3L])
}

# EP's log marginal likelihood (R&W sec. 3.6, in the form of GPML's
# infEP): the sites' tilted normalisers, the Gaussian terms and B's log
# determinant; NA where a site's cavity is not a proper Gaussian (its
# precision not above 0), where it is not defined
ep_logz <- function(post, tau, nu, y) {
  v <- post$var
  tc <- 1 / v - tau
  nc <- post$mean / v - nu
  if (!all(tc > 0)) return(NA_real_)
  lz <- ep_tilted(y, nc / tc, 1 / tc)$logZ
  # nu^T Sigma nu = nu^T mu for the zero prior mean
  sum(lz) - sum(log(diag(post$L))) + sum(nu * post$mean) / 2 - sum(v * nu^2) / 2 +
    sum(nc * ((tau / tc * nc - 2 * nu) * v)) / 2 + sum(log1p(tau / tc)) / 2
}

# EP for one +1/-1 column y, started from the Laplace sites at the latent
# mode f (the mode of y's logistic fit at the training points), or from
# given sites (a list of tau and nu); with gdot (W -> sum(W * dKt / dth_j),
# gpc_search()'s) also log Z's gradient in theta; converged when no site
# moves by more than tol relative to 1 + its size in a sweep
ep_column <- function(Kt, y, f, sites = NULL, gdot = NULL, threads = 0L, tol = ep_tol()) {
  if (is.null(sites)) {
    p <- stats::plogis(y * f)
    w <- pmax(p * (1 - p), 1e-12)
    sites <- list(tau = w, nu = w * f + y * (1 - p))
  }
  tau <- sites$tau
  nu <- sites$nu
  post <- native_gp_sites(Kt, tau, nu, threads = threads)
  converged <- FALSE
  damping <- rep(1, length(y))
  last <- numeric(length(y))
  for (sweep in seq_len(ep_max_sweeps())) {
    tc <- 1 / post$var - tau
    nc <- post$mean / post$var - nu
    ok <- tc > 0  # a site whose cavity is not a proper Gaussian keeps its values
    tnew <- tau
    nnew <- nu
    if (any(ok)) {
      th <- ep_tilted(y[ok], nc[ok] / tc[ok], 1 / tc[ok])
      tnew[ok] <- pmax(1 / th$var - tc[ok], 0)
      nnew[ok] <- th$mean / th$var - nc[ok]
    }
    change <- max(abs(tnew - tau) / (1 + tau), abs(nnew - nu) / (1 + abs(nu)))
    # parallel updates can make a site oscillate between two values about
    # its fixed point (slowly decaying, or not at all): a site's step is
    # halved (to 1/16) when its precision's update changes sign from its
    # last nonzero one, and lengthened again (to a full step) while it does
    # not; a site that does not move keeps both
    step <- tnew - tau
    damping <- ifelse(step * last < 0, pmax(damping / 2, 1 / 16),
                      ifelse(step != 0, pmin(1, damping * 1.5), damping))
    last <- ifelse(step != 0, step, last)
    tau <- tau + damping * step
    nu <- nu + damping * (nnew - nu)
    post <- native_gp_sites(Kt, tau, nu, threads = threads)
    if (change <= tol) {
      converged <- TRUE
      break
    }
  }
  list(tau = tau, nu = nu, alpha = post$alpha, logz = ep_logz(post, tau, nu, y),
       sweeps = sweep, converged = converged, change = change,
       gradient = if (!is.null(gdot)) ep_grad(post, tau, gdot))
}

# The gradient of EP's log marginal likelihood in the hyperparameters of
# the prior covariance Kt, at the sites' fixed point, where the sites'
# own dependence on them drops out (R&W eq. 5.27; Seeger 2005):
# 1/2 alpha^T dKt alpha - 1/2 tr(R dKt) with R = S^1/2 B^-1 S^1/2, S the
# sites' precisions: the contraction with (alpha alpha^T - R) / 2
ep_grad <- function(post, tau, gdot) {
  sw <- sqrt(tau)
  R <- outer(sw, sw) * chol2inv(post$L)
  gdot((tcrossprod(post$alpha) - R) / 2)
}

# The EP fields of a logistic fit (its weights are the posterior modes):
# per column the site precisions tau (the weighted-GP view's weights), the
# weights of the posterior mean (K w), log Z, the sweeps; warns (classed)
# when a column did not converge
ep_fit <- function(fit, call = NULL) {
  lam <- fit$lambda
  xs <- gp_xs(fit)
  Kt <- gp_kmat(fit, xs, xs) / lam
  Fh <- krr_scores(fit, xs)
  cols <- lapply(seq_len(fit$m), function(o) {
    ep_column(Kt, fit$y[, o], Fh[, o], threads = gp_threads(fit))
  })
  pick <- function(nm) vapply(cols, `[[`, numeric(if (nm %in% c("tau", "alpha")) fit$n else 1L),
                              nm)
  ep <- list(tau = matrix(pick("tau"), fit$n), weights = matrix(pick("alpha"), fit$n) / lam,
             logz = pick("logz"), sweeps = as.integer(pick("sweeps")),
             converged = as.logical(pick("converged")))
  if (!all(ep$converged)) {
    warn_askotch(sprintf(paste(
      "Expectation propagation did not converge in %d sweeps (largest relative change of",
      "the sites %.2g); its probabilities are those of the last sweep. A larger `lambda`",
      "or posterior = \"laplace\" avoids this."), ep_max_sweeps(),
      max(vapply(cols, `[[`, 1, "change"))), "convergence", call)
  }
  ep
}

# The fit as the weighted-GP view of R/laplace.R reads it: the EP
# posterior mean's weights in place of the mode's
ep_as_mean <- function(object) {
  object$weights <- object$ep$weights
  object$gp_id <- paste0(object$gp_id, ":ep")
  object
}

# The hyperparameters by EP's own marginal likelihood, maximised by
# gpc_search() (R/tune-laplace.R) over the same space (gpc_space()) from
# the Laplace search's optimum `start` with ep_grad()'s gradient, each
# evaluation's EP started from the previous evaluation's sites. On data a
# kernel separates, EP's marginal likelihood keeps growing with the latent
# scale, so each term t of the kernel (a listed kernel: one) has a
# penalised-complexity prior on its latent sd, sd_t = sqrt(a_t / lambda)
# with a_t its amplitude (the term's latent sd when its components have
# unit variance; Simpson et al. 2017): exponential with
# P(sd_t > U) = 0.05, U = 30 (option askotch.ep_sd_prior). At one sd of 30
# a class probability is within 1e-13 of 0 or 1, so the prior matters
# little where the likelihood has a maximum (U chosen on
# inst/bench/bench_gp_classifier.R: RESULTS.md). An evaluation at which EP
# fails or does not converge (its gradient holds only at the fixed point),
# or where the latent prior's largest variance max_i K_ii / lambda exceeds
# (10 U)^2 (for a listed kernel a prior probability below 1e-13; a costly
# EP), counts as failed. The optimum's log Z and
# log prior density are kept as optim$loglik and optim$log_prior, U as
# optim$sd_prior (vcov() evaluates the same objective). If no
# evaluation succeeds, the result is `start` (the Laplace search's), marked
# ep_failed.
ep_search <- function(space, Y, start, fit_lam, clock = NULL) {
  ev <- ep_value(space, Y, fit_lam)
  o <- gpc_search(space, fit_lam, start$lambda, start$th, ev$value, clock,
                  "EP marginal likelihood")
  if (!ev$succeeded()) return(c(start, list(ep_failed = TRUE)))
  o$optim$log_prior <- ev$log_prior(o$th, o$lambda)$value
  o$optim$sd_prior <- ev$U
  o$optim$loglik <- o$optim$loglik - o$optim$log_prior
  o
}

# EP's search objective for the +1/-1 columns Y as gpc_search()'s value():
# -(summed log Z_EP + the terms' log prior densities) and its gradient,
# NULL where EP failed or did not converge; each evaluation's EP starts from
# the last converged sites; U the prior's scale (ep_sd_prior()), tol EP's
# (ep_column()). Also log_prior(th, lambda), succeeded() (whether any
# evaluation has) and U.
ep_value <- function(space, Y, fit_lam, U = ep_sd_prior(), tol = ep_tol()) {
  # the terms' log prior densities on log sd_t = (log a_t - log lambda) / 2
  # (the constant Jacobians dropped), and their gradient in th
  log_prior <- function(th, lam) {
    a <- space$amps(th)
    lp <- vapply((a$log - log(lam)) / 2, pc_sd_logprior, c(value = 0, deriv = 0), U = U)
    g <- drop(lp["deriv", ] %*% a$J) / 2
    if (fit_lam) g[length(th)] <- -sum(lp["deriv", ]) / 2
    list(value = sum(lp["value", ]), g = g)
  }
  sites <- vector("list", ncol(Y))
  succeeded <- FALSE
  value <- function(K, gdot, lam, th) {
    if (max(diag(K)) / lam > (10 * U)^2) return(NULL)
    lp <- log_prior(th, lam)
    val <- list(f = -lp$value, g = -lp$g)
    for (j in seq_len(ncol(Y))) {
      r <- tryCatch({
        f0 <- if (is.null(sites[[j]])) laplace_mode(K, Y[, j], lam, threads = space$threads)$f
        ep_column(K / lam, Y[, j], f0, sites = sites[[j]], gdot = gdot,
                  threads = space$threads, tol = tol)
      }, error = function(e) NULL)
      if (is.null(r) || !r$converged || !is.finite(r$logz)) return(NULL)
      sites[[j]] <<- r[c("tau", "nu")]
      val$f <- val$f - r$logz
      val$g <- val$g - r$gradient
    }
    succeeded <<- TRUE
    val
  }
  list(value = value, log_prior = log_prior, succeeded = function() succeeded, U = U)
}
