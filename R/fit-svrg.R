# The fit of an svrg() spec: the compiled solver "svrg" through fit_solver()
# like every solver, with its own steps around it: Nystrom features made
# here and passed as the points of the linear operator, the trace of one
# row per epoch, the sketch's eigenvalues for the resolved spec.

# The solve: res of fit_solver(), its trace per epoch, `fields` (epochs),
# and for Nystrom features the centre coefficients a = R^{-1} w on the
# centres (phi(x)^T w = k(x, X_I) a: an inducing-point fit)
#' @export
solve_spec.askotch_solver_svrg <- function(spec, xs, Yc, set, tgt) {
  nys <- if (spec$features == "nystrom") {
    nystrom_features(xs, min(spec$p %||% 1000, nrow(xs)), set)
  }
  res <- fit_solver(if (is.null(nys)) xs else nys$phi, Yc, set, tgt)
  res$trace <- svrg_trace(res$trace, res$vectors)
  res$extras <- c(as.list(res$extras), res$vectors["sigma2"])
  res$fields <- list(epochs = res$iterations)
  if (!is.null(nys)) {
    res$weights <- backsolve(nys$R, res$theta)
    res$theta <- NULL
    res$centers <- nys$centers
  }
  res
}

# no divergence threshold on the dual residual (see diverge_level())
#' @export
diverge_level.askotch_solver_svrg <- function(spec) Inf

# One row per epoch from the compiled history (epoch 0: the start, w = 0):
# the paper's objective and criterion (`gradient`), beside the loop's
# columns at the epochs it recorded (NA elsewhere: the start)
svrg_trace <- function(tr, v) {
  e <- seq_along(v$objective) - 1L
  row <- tr[match(e, tr$iteration), , drop = FALSE]
  row$iteration <- e
  rownames(row) <- NULL
  cbind(data.frame(epoch = e, objective = v$objective, gradient = v$gradient), row)
}

# Nystrom features of d centres (uniform rows, from the fit's seed):
# phi(x) = R^{-T} k(X_I, x) with K_II + delta I = R^T R (delta = 0, or the
# smallest jitter from 1e-14 tr(K_II) up that makes the Cholesky succeed),
# so that phi(x)^T phi(x') = k(x, X_I) K_II^{-1} k(X_I, x'): ridge regression
# in these features is the inducing-point (Falkon) problem on the centres.
nystrom_features <- function(xs, d, set) {
  n <- nrow(xs)
  centers <- with_seed(set$seed + 20, sort(sample.int(n, d)))
  Knm <- kernel_mat(xs, xs[centers, , drop = FALSE], set$kernel, set$threads)
  Kmm <- Knm[centers, , drop = FALSE]
  R <- NULL
  jitter <- 0
  while (is.null(R)) {
    R <- tryCatch(chol(Kmm + jitter * diag(d)), error = function(e) NULL)
    jitter <- if (jitter == 0) 1e-14 * sum(diag(Kmm)) else jitter * 10
    if (is.null(R) && jitter > 1e-2 * sum(diag(Kmm))) {
      abort_askotch(paste("`solver`: the Nystrom features' K_II is not positive",
                          "definite; use fewer centres (`p`)."), "numeric")
    }
  }
  list(phi = t(backsolve(R, t(Knm), transpose = TRUE)), R = R, centers = centers)
}
