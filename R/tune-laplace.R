# Gaussian-process classification, before the solve: the search for lambda
# and the bandwidth by the Laplace approximation's marginal likelihood (with
# posterior = "ep" then by EP's, ep_search() in R/ep.R), and the posterior
# modes by Newton's method (the model, and what the fit offers afterwards,
# are described in the file laplace.R).

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
# with posterior = "ep" then by EP's log Z, ep_search(); a given lambda or
# bandwidth is kept), and the modes on all points as the solver's start (up
# to laplace_newton_max_n() points).
tune_laplace <- function(dat, set) {
  ls <- set$lambda_spec
  kern <- set$kernel
  fit_bw <- identical(kern$bandwidth_rule, "ml")
  fit_lam <- ls$rule %in% c("default", "ml")
  tuning <- NULL
  if (fit_bw || fit_lam) {
    rows <- subsample_rows(dat$n, laplace_tune_max_n(), set$seed)
    xs <- dat$xs[rows, , drop = FALSE]
    Ys <- dat$Yc[rows, , drop = FALSE]
    o <- laplace_search(xs, Ys, kern, if (fit_lam) NULL else ls$value, fit_bw)
    by_ep <- identical(set$posterior, "ep") && isTRUE(getOption("askotch.ep_tune", TRUE))
    if (by_ep) o <- ep_search(xs, Ys, kern, o, fit_bw, fit_lam, kern$bandwidth)
    kern$bandwidth <- o$bandwidth
    set$lambda <- o$lambda
    tuning <- list(lambda_rule = if (!fit_lam) "fixed" else if (by_ep) "ep" else "laplace",
                   bandwidth_rule = kern$bandwidth_rule, n_used = length(rows),
                   n_total = dat$n, optim = o$optim)
  }
  set$kernel <- kern
  if (dat$n <= laplace_newton_max_n()) set$start_weights <- laplace_modes(dat, set)
  list(dat = dat, set = set, tuning = tuning)
}

# The search both GP classifiers run: L-BFGS-B from th0 on the log
# bandwidth (fit_bw, within [sig0 / 100, 1000 sig0]) and log lambda
# (fit_lam, within [1e-6, 1e4]) at the points xs; `fixed` holds the
# bandwidth and lambda not searched. value(K, dK, lambda, th) returns the
# objective to minimise and its gradient in th, list(f, g), for the kernel
# matrix K and dK, the list of d(K / lambda) / dtheta_j, or NULL where it
# failed (then a value far above any other, which L-BFGS-B's line search
# backs away from); it is evaluated once per th (optim() asks for the value
# and the gradient separately). A composite kernel's matrix is formed once.
gpc_search <- function(xs, kern, fixed, fit_bw, fit_lam, th0, sig0, value) {
  composite <- is_composite_kernel(kern)
  tstat <- if (!composite) kernel_stat_matrix(xs, kern$metric)
  K0 <- if (composite) kernel_mat(xs, xs, kern)
  decode <- function(th) {
    c(bw = if (fit_bw) exp(th[1L]) else fixed[["bandwidth"]],
      lambda = if (fit_lam) exp(th[fit_bw + 1L]) else fixed[["lambda"]])
  }
  memo <- new.env(parent = emptyenv())
  eval_at <- function(th) {
    if (!identical(memo$th, th)) {
      h <- decode(th)
      k <- kern
      k$bandwidth <- h[["bw"]]
      K <- if (composite) K0 else native_kernel_eval(k, tstat)
      # d(K / lambda) / dlog bandwidth; d(K / lambda) / dlog lambda = -K / lambda
      dK <- c(if (fit_bw) list(native_kernel_eval(k, tstat, -1L) / h[["lambda"]]),
              if (fit_lam) list(-K / h[["lambda"]]))
      memo$val <- value(K, dK, h[["lambda"]], th) %||%
        list(f = .Machine$double.xmax / 4, g = numeric(length(th)))
      memo$th <- th
    }
    memo$val
  }
  lower <- c(if (fit_bw) log(sig0 / 100), if (fit_lam) log(1e-6))
  upper <- c(if (fit_bw) log(sig0 * 1000), if (fit_lam) log(1e4))
  opt <- stats::optim(pmin(pmax(th0, lower), upper), function(th) eval_at(th)$f,
                      function(th) eval_at(th)$g, method = "L-BFGS-B", lower = lower,
                      upper = upper, control = list(maxit = 100))
  h <- decode(opt$par)
  list(bandwidth = h[["bw"]], lambda = h[["lambda"]],
       optim = list(loglik = -opt$value, convergence = opt$convergence,
                    evaluations = unname(opt$counts[1L]), message = opt$message))
}

# The summed log q (laplace_grad()) maximised by gpc_search() from the
# rule's bandwidth and lambda = 1, each evaluation's modes started from the
# previous ones. A composite kernel's hyperparameters are given ("ml"
# needs the squared loss).
laplace_search <- function(xs, Y, kern, lambda, fit_bw) {
  modes <- matrix(0, nrow(Y), ncol(Y))
  value <- function(K, dK, lam, th) {
    val <- list(f = 0, g = numeric(length(th)))
    for (j in seq_len(ncol(Y))) {
      m <- tryCatch(laplace_mode(K, Y[, j], lam, modes[, j]), error = function(e) NULL)
      if (is.null(m)) return(NULL)
      modes[, j] <<- m$f
      gq <- laplace_grad(K / lam, m$f, Y[, j], dK)
      val$f <- val$f - gq$logq
      val$g <- val$g - gq$gradient
    }
    val
  }
  fit_lam <- is.null(lambda)
  sig0 <- kern$bandwidth
  gpc_search(xs, kern, c(bandwidth = sig0, lambda = lambda), fit_bw, fit_lam,
             c(if (fit_bw) log(sig0), if (fit_lam) 0), sig0, value)
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
