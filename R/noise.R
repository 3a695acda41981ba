# Heteroscedastic noise: a log-linear noise model --------------------------------
#
# krr(x, y, noise = ~ z1 + z2): the noise variance of point i is
#   s^2 lambda exp(z_i^T gamma),
# z_i the covariates' design (model.matrix() without its intercept, whose
# role lambda plays) with each column centred and scaled by its training
# mean and sd, so that lambda is the noise-to-signal ratio at the average
# covariates. gamma is estimated with lambda, the kernel's scale and the
# mean function's coefficients by maximum (or restricted) likelihood: the
# likelihood of y ~ N(F beta, s^2 (K + lambda V)), V = diag(exp(Z gamma)),
# with dA/dgamma_j = lambda V diag(z_j) in the exact gradient
# (gp_loglik_exact()). The fit is then the weighted fit with observation
# weights w_i = exp(-z_i^T gamma) (R/weights.R): every solver, standard
# error and likelihood of weighted fits applies, and prediction intervals
# at new points use their own noise variance. The mean is estimated by GLS
# (a constant at least), as the weights make the plain mean the wrong
# estimate.

# The noise model of the training rows from `noise` (a one-sided formula, or
# the design the formula method built): NULL, or list(Z (standardised),
# center, scale, terms, xlevels, contrasts).
noise_setup <- function(noise, x, weights, call = NULL) {
  if (is.null(noise)) return(NULL)
  if (!is.null(weights)) {
    abort_askotch(paste(
      "`noise` and `weights` cannot be combined: give the known relative",
      "precisions as a covariate of `noise`, or use `weights` alone."), "input", call)
  }
  des <- if (inherits(noise, "askotch_noise")) noise else {
    check_mean_formula(noise, call, "noise")
    noise_build(noise, x_columns_frame(x, "noise", call), call)
  }
  Z <- des$F
  if (ncol(Z) == 0L || !all(is.finite(Z))) {
    abort_askotch(paste(
      "`noise` needs at least one covariate term, with finite values on the",
      "rows fitted."), "input", call)
  }
  ctr <- colMeans(Z)
  sc <- sqrt(colMeans(sweep(Z, 2L, ctr)^2))
  const <- !(sc > 1e-12 * pmax(abs(ctr), 1))
  if (any(const)) {
    abort_askotch(sprintf("The noise covariate(s) %s are constant on the rows fitted.",
                          paste(colnames(Z)[const], collapse = ", ")), "input", call)
  }
  check_trend_design(cbind(1, Z), call)
  list(Z = noise_standardise(list(center = ctr, scale = sc), Z), center = ctr, scale = sc,
       terms = des$terms, xlevels = des$xlevels, contrasts = des$contrasts,
       names = colnames(Z), gp = des$gp)
}

# The design of `noise` on the rows of `data`: trend_build()'s with the
# intercept dropped (lambda is the model's level); for a gp() term
# (R/noise-gp.R) the design of its variables, and `gp` its kernel's name.
noise_build <- function(noise, data, call = NULL) {
  gp <- noise_gp_term(noise, call)
  des <- trend_build(if (is.null(gp)) noise else gp$formula, data, call, "noise")
  keep <- colnames(des$F) != "(Intercept)"
  des$F <- des$F[, keep, drop = FALSE]
  if (!is.null(gp)) des$gp <- list(kernel = gp$kernel, prior = gp$prior)
  des
}

# The relative noise variances exp(z^T gamma) at the rows of a design (in
# the data's units)
noise_relative <- function(nz, Zraw) {
  exp(drop(noise_standardise(nz, Zraw) %*% nz$coef))
}

# A noise design in the data's units, centred and scaled as the model's
noise_standardise <- function(nz, Zraw) {
  sweep(sweep(Zraw, 2L, nz$center), 2L, nz$scale, "/")
}

# The design of the fit's noise model at new data (as trend_design_new())
noise_design_new <- function(object, newdata, x) {
  nz <- object$noise
  design_new(nz, object, newdata, x, "noise")[, nz$names, drop = FALSE]
}

# Each point's noise variance relative to lambda s^2 at the prediction
# points: the training points' 1 / w (Znew NULL), else the model at Znew
# (the raw design); under a latent GP, its log-normal mean at either
noise_at <- function(object, Znew) {
  nz <- object$noise
  if (is.null(nz)) return(1)
  if (!is.null(nz$gp)) {
    # the latent's log-normal mean, at the training points too
    Zs <- if (is.null(Znew)) nz$Z else noise_standardise(nz, Znew)
    return(noise_gp_relative(nz$gp, Zs))
  }
  if (is.null(Znew)) 1 / fit_obs_weights(object) else noise_relative(nz, Znew)
}

# The fit's noise fields: the standardisation, the coefficients gamma (of
# the standardised columns), what predict() builds the design from, and the
# standardised training design Z (vcov()'s dA / dgamma); under a latent GP
# no coefficients but `gp` (noise_gp_tune()'s noise_gp)
noise_fit_fields <- function(nz, gamma, gp = NULL) {
  list(coef = if (is.null(gp)) stats::setNames(as.numeric(gamma), nz$names),
       center = nz$center, scale = nz$scale, names = nz$names, terms = nz$terms,
       xlevels = nz$xlevels, contrasts = nz$contrasts, Z = unname(nz$Z), gp = gp)
}
