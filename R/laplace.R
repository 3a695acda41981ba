# Gaussian-process classification by the Laplace approximation ---------------
#
# kernel_machine(x, y, loss = loss_logistic(), posterior = "laplace"). The
# logistic fit minimises (lambda / 2) ||f||^2_H + sum_i log(1 + exp(-y_i f_i)):
# it is the posterior mode f^ of a GP classifier with latent prior
# f ~ GP(0, k / lambda) and the logistic likelihood (Rasmussen and Williams
# 2006, sec. 3.4, with K~ = K / lambda). Around the mode, with pi = sigma(f^)
# and W = diag(pi (1 - pi)), the Laplace approximation gives
#   latent variance at x: (1 / lambda) [k(x, x) - k_x^T (K + lambda W^{-1})^{-1} k_x]
#     (R&W eq. 3.24: the variance of a weighted GP regression with weights W
#     and signal variance 1 / lambda, which R/gp.R computes at any n),
#   class probability averaged over it (MacKay's probit approximation):
#     sigma(mu / sqrt(1 + pi v / 8)),
#   approximate log marginal likelihood (R&W eq. 3.32):
#     log q = -(lambda / 2) alpha^T f^ + sum_i log sigma(y_i f^_i)
#             - 1/2 log det(I + W^{1/2} K W^{1/2} / lambda),
#   alpha the fit's weights (f^ = K alpha).
# lambda and the bandwidth are chosen by maximising log q on a subsample
# of at most option askotch.laplace_tune_max_n points (default 1000) by
# L-BFGS-B with the exact gradient (R&W Algorithm 5.1): each evaluation
# finds the mode by Newton's method (R&W Algorithm 3.1, started from the
# previous mode) in base R linear algebra; the final fit then runs the
# package's logistic solver on all points, started from the Newton mode on
# all of them up to option askotch.laplace_newton_max_n points. One-vs-rest: one binary GP
# per class, sharing lambda and the kernel, log q summed over the classes.

laplace_tune_max_n <- function() getOption("askotch.laplace_tune_max_n", 1000)

# Up to this many points the mode on all of them is found by Newton's
# method too, and the logistic solver starts from it (it then only confirms
# the duality gap): at small lambda the dual method needs many passes.
laplace_newton_max_n <- function() getOption("askotch.laplace_newton_max_n", 5000)

# The posterior mode (Newton, R&W Algorithm 3.1) and log q of one +1/-1
# column y for the kernel matrix K and lambda, from the latent start f.
laplace_mode <- function(K, y, lambda, f = numeric(length(y)), tol = 1e-10,
                         maxit = 100L) {
  Kt <- K / lambda
  t01 <- (y + 1) / 2
  obj <- -Inf
  for (it in seq_len(maxit)) {
    pi <- stats::plogis(f)
    sw <- sqrt(pi * (1 - pi))
    L <- chol(diag(length(y)) + outer(sw, sw) * Kt)
    b <- pi * (1 - pi) * f + (t01 - pi)
    v <- backsolve(L, backsolve(L, sw * drop(Kt %*% b), transpose = TRUE))
    a <- b - sw * v
    f <- drop(Kt %*% a)
    new <- -sum(a * f) / 2 + sum(stats::plogis(y * f, log.p = TRUE))
    if (abs(new - obj) <= tol * (1 + abs(new))) break
    obj <- new
  }
  list(f = f, logq = new - sum(log(diag(L))), iterations = it)
}

# The weights alpha = grad log p(y | f^) / lambda (f^ = K alpha) of the
# modes of every column on all points, by Newton's method
laplace_modes <- function(dat, set) {
  K <- kernel_mat(dat$xs, dat$xs, set$kernel, set$threads)
  vapply(seq_len(ncol(dat$Yc)), function(j) {
    y <- dat$Yc[, j]
    f <- laplace_mode(K, y, set$lambda)$f
    ((y + 1) / 2 - stats::plogis(f)) / set$lambda
  }, numeric(dat$n))
}

# The hyperparameters by the summed log q on a subsample (laplace_search();
# a given lambda or bandwidth is kept), and the modes on all points as the
# solver's start (up to laplace_newton_max_n() points).
tune_laplace <- function(dat, set) {
  ls <- set$lambda_spec
  kern <- set$kernel
  fit_bw <- identical(kern$bandwidth_rule, "ml")
  fit_lam <- ls$rule %in% c("default", "ml")
  tuning <- NULL
  if (fit_bw || fit_lam) {
    rows <- subsample_rows(dat$n, laplace_tune_max_n(), set$seed)
    o <- laplace_search(dat$xs[rows, , drop = FALSE], dat$Yc[rows, , drop = FALSE], kern,
                        if (fit_lam) NULL else ls$value, fit_bw)
    kern$bandwidth <- o$bandwidth
    set$lambda <- o$lambda
    tuning <- list(lambda_rule = if (fit_lam) "laplace" else "fixed",
                   bandwidth_rule = kern$bandwidth_rule, n_used = length(rows),
                   n_total = dat$n, optim = o$optim)
  }
  set$kernel <- kern
  if (dat$n <= laplace_newton_max_n()) set$start_weights <- laplace_modes(dat, set)
  list(dat = dat, set = set, tuning = tuning)
}

# L-BFGS-B with the exact gradient (laplace_grad()) on the log bandwidth
# (fit_bw) and log lambda (lambda NULL) of the summed log q at the points
# xs, targets Y; each evaluation's modes start from the previous ones
laplace_search <- function(xs, Y, kern, lambda, fit_bw) {
  fit_lam <- is.null(lambda)
  tstat <- kernel_stat_matrix(xs, kern$metric)
  modes <- matrix(0, nrow(Y), ncol(Y))
  decode <- function(th) {
    c(bw = if (fit_bw) exp(th[1L]) else kern$bandwidth,
      lambda = if (fit_lam) exp(th[fit_bw + 1L]) else lambda)
  }
  memo <- new.env(parent = emptyenv())
  eval_at <- function(th) {
    if (identical(memo$th, th)) return(memo$val)
    h <- decode(th)
    k <- kern
    k$bandwidth <- h[["bw"]]
    Kt <- native_kernel_eval(k, tstat) / h[["lambda"]]
    # dKt / dlog bandwidth, dKt / dlog lambda = -Kt
    dK <- c(if (fit_bw) list(native_kernel_eval(k, tstat, -1L) / h[["lambda"]]),
            if (fit_lam) list(-Kt))
    val <- list(f = 0, g = numeric(length(th)))
    for (j in seq_len(ncol(Y))) {
      m <- tryCatch(laplace_mode(Kt * h[["lambda"]], Y[, j], h[["lambda"]], modes[, j]),
                    error = function(e) NULL)
      if (is.null(m)) {
        val <- list(f = .Machine$double.xmax / 4, g = numeric(length(th)))
        break
      }
      modes[, j] <<- m$f
      gq <- laplace_grad(Kt, m$f, Y[, j], dK)
      val$f <- val$f - gq$logq
      val$g <- val$g - gq$gradient
    }
    memo$th <- th
    memo$val <- val
    val
  }
  sig0 <- kern$bandwidth
  th0 <- c(if (fit_bw) log(sig0), if (fit_lam) 0)
  lower <- c(if (fit_bw) log(sig0 / 100), if (fit_lam) log(1e-6))
  upper <- c(if (fit_bw) log(sig0 * 1000), if (fit_lam) log(1e4))
  opt <- stats::optim(th0, function(th) eval_at(th)$f, function(th) eval_at(th)$g,
                      method = "L-BFGS-B", lower = lower, upper = upper,
                      control = list(maxit = 100))
  h <- decode(opt$par)
  list(bandwidth = h[["bw"]], lambda = h[["lambda"]],
       optim = list(loglik = -opt$value, convergence = opt$convergence,
                    evaluations = unname(opt$counts[1L]), message = opt$message))
}

# log q and its gradient in the hyperparameters of the prior covariance Kt
# at the mode f of the +1/-1 column y (R&W Algorithm 5.1: the explicit
# terms and the implicit one through the mode's dependence on them); dK the
# list of dKt / dtheta_j. For the logistic likelihood the third derivative
# of log p is -pi (1 - pi) (1 - 2 pi).
laplace_grad <- function(Kt, f, y, dK) {
  n <- length(y)
  pi <- stats::plogis(f)
  w <- pi * (1 - pi)
  sw <- sqrt(w)
  L <- chol(diag(n) + outer(sw, sw) * Kt)
  a <- (y + 1) / 2 - pi  # grad log p at the mode: f = Kt a
  logq <- -sum(a * f) / 2 + sum(stats::plogis(y * f, log.p = TRUE)) - sum(log(diag(L)))
  Rm <- outer(sw, sw) * chol2inv(L)                 # W^1/2 B^-1 W^1/2
  Cm <- backsolve(L, sw * Kt, transpose = TRUE)     # L^-T W^1/2 Kt
  # d log q / d f^_i = 1/2 [(Kt^-1 + W)^-1]_ii d3_i: only -1/2 log det B
  # depends on the mode there, through dW_ii / df_i = -d3_i
  s2 <- (diag(Kt) - colSums(Cm^2)) / 2 * (-w * (1 - 2 * pi))
  g <- vapply(dK, function(Cj) {
    s1 <- sum(a * drop(Cj %*% a)) / 2 - sum(Rm * Cj) / 2
    b <- drop(Cj %*% a)
    s3 <- b - drop(Kt %*% (Rm %*% b))
    s1 + sum(s2 * s3)
  }, 0)
  list(logq = logq, gradient = g)
}

# The weighted-GP view of column o of a Laplace fit: what R/gp.R's variance
# methods read (weights W, lambda, no mean term), as a regression fit
laplace_view <- function(object, o) {
  f <- fitted_scores(object)[, o]
  pi <- stats::plogis(f)
  v <- object
  class(v) <- "krr"
  v$loss <- loss_squared()
  v$task <- "regression"
  v$m <- 1L
  v$weights <- object$weights[, o, drop = FALSE]
  v$obs_weights <- pmax(pi * (1 - pi), .Machine$double.eps)
  v$gp_no_mean <- TRUE
  v$gp_id <- paste0(object$gp_id, ":laplace:", o)
  v
}

# The latent mean and variance at the standardised points xs (n_new x m each)
laplace_latent <- function(object, xs, call = NULL) {
  mu <- krr_scores(object, xs)
  # the exact variance, or the Nystrom bracket's lower end (the pathwise
  # method would solve with the logistic fit's solver)
  method <- if (object$n <= gp_exact_fallback_n()) "exact" else "nystrom"
  V <- vapply(seq_len(ncol(mu)), function(o) {
    gp_variance(laplace_view(object, o), xs, method, 100L, call)$var / object$lambda
  }, numeric(nrow(xs)))
  list(mean = mu, var = matrix(V, nrow(xs)))
}

# Class probabilities averaged over the latent (probit approximation);
# one-vs-rest columns normalised to sum to 1
laplace_prob <- function(lat) {
  p <- stats::plogis(lat$mean / sqrt(1 + pi * lat$var / 8))
  if (ncol(p) > 1L) p <- p / rowSums(p)
  p
}

# The Laplace approximation's log marginal likelihood of a fit, summed over
# its columns: exact up to tune_exact_max_n() points (one Cholesky per
# column), above from the stochastic log determinant of W^{1/2} K W^{1/2} +
# lambda I (krr_gp_slq, with its standard error).
laplace_loglik <- function(object) {
  Fh <- fitted_scores(object)
  Y <- object$y
  lam <- object$lambda
  n <- object$n
  total <- 0
  se2 <- 0
  for (o in seq_len(ncol(Y))) {
    w <- stats::plogis(Fh[, o]) * (1 - stats::plogis(Fh[, o]))
    sw <- sqrt(pmax(w, .Machine$double.eps))
    ld <- if (n <= tune_exact_max_n()) {
      K <- gp_kmat(object, gp_xs(object), gp_xs(object))
      K <- K * outer(sw, sw)
      diag(K) <- diag(K) + lam
      list(logdet = 2 * sum(log(diag(chol(K)))), se = 0)
    } else {
      st <- gp_loglik_stochastic(gp_xs(object), matrix(1, n, 1), object$kernel, lam,
                                 gradient = FALSE, seed = object$seed,
                                 threads = gp_threads(object), d = sw)
      list(logdet = st$logdet, se = st$logdet_se)
    }
    total <- total - lam / 2 * sum(object$weights[, o] * Fh[, o]) +
      sum(stats::plogis(Y[, o] * Fh[, o], log.p = TRUE)) - (ld$logdet - n * log(lam)) / 2
    se2 <- se2 + (ld$se / 2)^2
  }
  list(loglik = total, se = if (se2 > 0) sqrt(se2))
}

# predict() of a Laplace fit: the averaged probabilities, or the latent
# mean and standard deviation (se.fit), at newdata (NULL: the training
# points); rows with missing values give NA
laplace_predict <- function(object, newdata, se.fit) {
  if (is.null(newdata)) {
    xs <- gp_xs(object)
    ok <- NULL
    rn <- NULL
  } else {
    nf <- new_features(object, newdata, na_ok = TRUE)
    xs <- nf$xs
    ok <- nf$ok
    rn <- nf$rownames
  }
  rk <- if (is.null(ok) || is.null(rn)) rn else rn[ok]
  lat <- laplace_latent(object, xs)
  one <- ncol(lat$mean) == 1L
  shape <- function(M) {
    if (one) return(stats::setNames(M[, 1L], rk))
    dimnames(M) <- list(rk, object$levels)
    M
  }
  out <- if (se.fit) {
    list(fit = shape(lat$mean), se.fit = shape(sqrt(lat$var)))
  } else shape(laplace_prob(lat))
  na_expand(out, ok, rn)
}

#' Laplace approximation's log marginal likelihood of a GP classifier
#'
#' For a [kernel_machine()] fit with `loss = loss_logistic()` and
#' `posterior = "laplace"`: the approximate log marginal likelihood
#' \eqn{\log q(y \mid X) = -\frac12 \hat f^T \tilde K^{-1} \hat f + \sum_i
#' \log \sigma(y_i \hat f_i) - \frac12 \log\det(I + W^{1/2} \tilde K
#' W^{1/2})} (Rasmussen and Williams 2006, eq. 3.32), \eqn{\tilde K = K /
#' \lambda} the latent prior covariance and \eqn{\hat f} the fit's decision
#' values (its posterior mode), summed over the one-vs-rest classifiers:
#' exact up to 2000 points (option `askotch.tune_exact_max_n`), above with
#' a stochastic log determinant (its standard error the attribute `"se"`).
#' `lambda` and the bandwidth were chosen by maximising it (on a subsample
#' of at most 1000 points, option `askotch.laplace_tune_max_n`) unless given.
#'
#' @param object A `"kernel_machine"` fit with `posterior = "laplace"`.
#' @param ... Unused.
#' @return An object of class `"logLik"` with attributes `df` (\eqn{\lambda}
#'   and the bandwidth where estimated) and `nobs`.
#' @examples
#' set.seed(1)
#' x <- matrix(rnorm(200), ncol = 2)
#' y <- factor(x[, 1] + rnorm(100, sd = 0.5) > 0)
#' gpc <- kernel_machine(x, y, loss = loss_logistic(), posterior = "laplace",
#'                       threads = 1)
#' logLik(gpc)
#' @export
logLik.kernel_machine <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  check_no_dots(list(...), "logLik", sys.call())
  if (!identical(object$posterior, "laplace")) {
    abort_askotch(paste(
      "logLik() of a kernel machine needs posterior = \"laplace\" (the logistic",
      "loss's GP classifier); the squared loss's fits are krr() fits."), "input")
  }
  tn <- object$tuning
  df <- (!is.null(tn) && identical(tn$lambda_rule, "laplace")) +
    (!is.null(tn) && identical(tn$bandwidth_rule, "ml"))
  v <- laplace_loglik(object)
  structure(v$loglik, df = df, nobs = object$n, se = v$se, class = "logLik")
}
