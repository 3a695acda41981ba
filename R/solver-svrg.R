# SVRG and sketched preconditioned SVRG on explicit features -- the
# compiled routine of src/core/solvers/svrg.c (called directly, not through
# the iterative solver skeleton: it solves a problem in feature space) ------

#' Sketched preconditioned SVRG on explicit features
#'
#' A solver specification for [krr()] that solves ridge regression on an
#' explicit feature map \eqn{\phi(x) \in R^d} instead of the full kernel
#' system: \eqn{(\Phi^T \Phi + \lambda I) w = \Phi^T y}, with the package's
#' (absolute) \eqn{\lambda}, and predicts \eqn{\phi(x)^T w}. The method is
#' the sketched preconditioned SVRG of Gonen, Orabona and Shalev-Shwartz
#' (2016, Algorithm 3), or with `precondition = FALSE` plain SVRG (Johnson
#' and Zhang, 2013; Xiao and Zhang, 2014), the paper's baseline.
#'
#' **Features.** `features = "random"` (default): `p` random Fourier
#' features of the kernel of [krr()] (`"rbf"`, `"laplace"` or a Matérn
#' kernel, with its bandwidth; the same features as
#' `kernel_machine(features = p)`), so the fit approximates kernel ridge
#' regression. `features = "linear"`: \eqn{\phi(x)} is the standardised
#' `x` itself (linear ridge regression; the `kernel` argument of [krr()] is
#' then not used): `krr(x, y, solver = svrg(features = "linear"))`.
#' `features = "nystrom"`: Nyström features of `p` centres drawn uniformly
#' from the training rows (from `seed`), \eqn{\phi(x) = R^{-T} k(X_I, x)}
#' with \eqn{K_{II} = R^T R}; ridge regression in them is the inducing-point
#' problem \eqn{(K_{nI}^T K_{nI} + \lambda K_{II}) a = K_{nI}^T y} that
#' [falkon()] and `bcd("nystrom")` solve, and the fit predicts with the
#' centres, \eqn{k(x, X_I) a}, \eqn{a = R^{-1} w}. The \eqn{n 	imes p}
#' kernel matrix to the centres is formed once (in R's memory).
#'
#' **Convention.** The paper minimises the averaged objective
#' \eqn{\frac1n \sum_i \frac12 (w^T\phi(x_i) - y_i)^2 + \frac{\lambda_G}{2}
#' \|w\|^2}, whose minimiser is the package's solution for
#' \eqn{\lambda = n \lambda_G}: the paper's \eqn{\lambda_G = 10^{-8}} on
#' normalised data is `lambda = n * 1e-8` here.
#'
#' **Method.** A rank-`rank` sketch of \eqn{C = \Phi^T\Phi / n} by
#' randomized block Lanczos (the paper's Algorithm 2 with
#' \eqn{\epsilon = 1/2}: \eqn{\lceil \log(d) / \sqrt{\epsilon} \rceil}
#' Krylov blocks unless `lanczos_iters` says otherwise) gives the
#' preconditioner of eq. (8),
#' \eqn{P = U(\Sigma^2 + \lambda_G)U^T + (\sigma_k^2 + \lambda_G)(I - UU^T)},
#' applied implicitly in \eqn{O(dk)} (never a \eqn{d \times d} matrix).
#' The regulariser is split into \eqn{d} terms (Section 5.1), so SVRG
#' samples \eqn{N = n + d} terms, with probabilities proportional to their
#' smoothness constants (`sampling = "smoothness"`, default) or uniformly;
#' the variance-reduced gradient divides by \eqn{N q_i} (unbiased). Steps
#' are \eqn{\eta = } `step` \eqn{/ \hat\beta}, \eqn{\hat\beta} the average
#' smoothness; each epoch computes the full gradient once and takes
#' `epoch_length` stochastic steps (each \eqn{O(d m)} for \eqn{m} outputs,
#' \eqn{O(d k)} for a regulariser term); an epoch starts from the last
#' iterate (Johnson and Zhang's option I). The fit stops when
#' \eqn{\|\Phi^T(\Phi w - y) + \lambda w\| \le} `tol`
#' \eqn{\|\Phi^T y\|} (worst output; `tol` of [krr()], \eqn{10^{-6}} when
#' automatic) or after `epochs` epochs (`max_passes` of [krr()] does not
#' apply). Memory: the \eqn{n \times d} feature matrix, and with the
#' preconditioner its preconditioned copy \eqn{P^{-1/2}\phi(x_i)} (the
#' paper's preprocessing, which makes a step \eqn{O(d)} as in plain SVRG).
#'
#' An svrg() fit needs a numeric `lambda` and a fixed or median bandwidth,
#' runs in double precision on the CPU, and does not take observation
#' `weights` or a `validation` set; [refit()] does not apply to it.
#' The trace (`fit$trace`) has one row per epoch with the objective and
#' the criterion.
#'
#' @param rank Sketch rank \eqn{k} (the paper: 30), capped at \eqn{d}.
#' @param epochs Most epochs (`NULL`: 60, the paper's horizon).
#' @param epoch_length Stochastic steps per epoch (`NULL`: \eqn{2N},
#'   \eqn{N = n + d}; the paper takes it proportional to \eqn{n}).
#' @param step Step in units of \eqn{1 / \hat\beta} (`NULL`: 0.1, the value
#'   of the paper's Theorem 2; the paper's experiments tune it).
#' @param precondition Use the sketched preconditioner (`TRUE`) or run
#'   plain SVRG (`FALSE`).
#' @param features `"random"`, `"linear"` or `"nystrom"` (see Features).
#' @param p Number of random features or Nyström centres (`NULL`:
#'   \eqn{\min(n, 1000)}).
#' @param sampling `"smoothness"` (`NULL`) or `"uniform"`.
#' @param lanczos_iters Krylov blocks after the first (`NULL`: from
#'   \eqn{\epsilon = 1/2}, see Method).
#' @return A solver specification of class `"askotch_solver_svrg"`.
#' @references Gonen, A., Orabona, F. and Shalev-Shwartz, S. (2016). Solving
#'   ridge regression using sketched preconditioned SVRG. ICML.
#' @seealso [krr()], [solvers]
#' @examples
#' set.seed(1)
#' x <- matrix(rnorm(400 * 5), ncol = 5)
#' y <- drop(x %*% c(1, -1, 0.5, 0, 2)) + rnorm(400, sd = 0.1)
#' fit <- krr(x, y, lambda = 1, solver = svrg(features = "linear", rank = 3),
#'            seed = 1, threads = 1)
#' coef(fit)
#' fit$epochs
#' # random Fourier features of the RBF kernel
#' fit2 <- krr(x, sin(x[, 1]), lambda = 1e-2, solver = svrg(p = 100),
#'             seed = 1, threads = 1)
#' predict(fit2, x[1:3, ])
#' @export
svrg <- function(rank = 30, epochs = NULL, epoch_length = NULL, step = NULL,
                 precondition = TRUE, features = c("random", "linear", "nystrom"),
                 p = NULL, sampling = NULL, lanczos_iters = NULL) {
  call <- sys.call()
  int_opt <- function(v, nm, null_ok = TRUE) {
    if (is.null(v) && null_ok) return(NULL)
    if (!is.numeric(v) || length(v) != 1L || is.na(v) || v < 1 || v >= 2^31 ||
        v != round(v)) {
      abort_askotch(sprintf("`%s` must be %sa whole number >= 1, not %s.", nm,
                            if (null_ok) "NULL or " else "", fmt_value(v)),
                    "input", call)
    }
    as.numeric(v)
  }
  rank <- int_opt(rank, "rank", null_ok = FALSE)
  epochs <- int_opt(epochs, "epochs")
  epoch_length <- int_opt(epoch_length, "epoch_length")
  p <- int_opt(p, "p")
  lanczos_iters <- int_opt(lanczos_iters, "lanczos_iters")
  if (!is.null(step) && (!is.numeric(step) || length(step) != 1L ||
                         is.na(step) || !(step > 0) || !is.finite(step))) {
    abort_askotch(sprintf("`step` must be NULL or a positive number, not %s.",
                          fmt_value(step)), "input", call)
  }
  check_flag(precondition, "precondition", call)
  features <- check_choice(lower_choice(features[1L]), c("random", "linear", "nystrom"),
                           "features", call)
  if (features == "linear" && !is.null(p)) {
    abort_askotch("`p` is the number of random or Nystrom features: not used with `features = \"linear\"`.",
                  "input", call)
  }
  if (!is.null(sampling)) {
    sampling <- check_choice(lower_choice(sampling), c("smoothness", "uniform"),
                             "sampling", call)
  }
  new_solver_spec("svrg", list(rank = rank, epochs = epochs,
                               epoch_length = epoch_length, step = step,
                               precondition = precondition,
                               features = features, p = p,
                               sampling = sampling,
                               lanczos_iters = lanczos_iters))
}

spec_svrg <- function() svrg()

#' @export
solver_c.askotch_solver_svrg <- function(spec) list(name = "svrg", options = list())

#' @export
solver_resolved.askotch_solver_svrg <- function(spec, options, extras) {
  for (nm in names(options)) spec[[nm]] <- options[[nm]]
  spec
}

#' @export
format.askotch_solver_svrg <- function(x, ...) {
  sprintf("%s (%s features, d = %s%s)",
          if (isTRUE(x$precondition)) "sketched preconditioned SVRG" else "SVRG",
          x$features, auto(x$d %||% x$p),
          if (isTRUE(x$precondition)) paste0(", rank ", auto(x$rank)) else "")
}

# The fit: options resolved, features built and solved in C, the results in
# the shape of fit_solver()'s.
fit_svrg <- function(xs, Yc, set) {
  sp <- set$solver
  n <- nrow(xs)
  linear <- sp$features == "linear"
  d <- if (linear) ncol(xs) else min(sp$p %||% 1000, n)
  nys <- if (sp$features == "nystrom") nystrom_features(xs, d, set)
  N <- n + d
  opts <- list(rank = min(sp$rank, d), epochs = sp$epochs %||% 60,
               epoch_length = sp$epoch_length %||% (2 * N),
               step = sp$step %||% 0.1, sampling = sp$sampling %||% "smoothness",
               tol = if (isTRUE(set$tol_auto)) 1e-6 else set$rule$tol)
  t0 <- now()
  r <- native_svrg(if (is.null(nys)) xs else nys$phi, Yc, set$lambda,
                   if (linear || !is.null(nys)) 0 else d, set$kernel,
                   c(opts$rank, sp$lanczos_iters %||% 0, opts$epochs,
                     opts$epoch_length, opts$step, sp$precondition,
                     opts$sampling == "smoothness", opts$tol, set$seed),
                   set$threads)
  secs <- now() - t0
  e <- r$epochs
  crit <- r$gradient[e + 1L]
  reason <- if (crit <= opts$tol) "tol" else "epochs"
  # one epoch: a full gradient (one pass) and epoch_length steps (each
  # touches one of the N terms)
  passes <- e * (1 + opts$epoch_length / N)
  resolved <- c(opts[c("rank", "epochs", "epoch_length", "step", "sampling")],
                list(d = d, p = if (linear) NULL else d,
                     lanczos_iters = if (sp$precondition) r$lanczos_iters else NULL,
                     eta = r$eta, beta_hat = r$beta_hat,
                     sigma2 = if (sp$precondition) r$sigma2 else NULL))
  if (!sp$precondition) resolved$rank <- NULL
  # Nystrom features: the centre coefficients a = R^{-1} w, phi(x)^T w = k(x, X_I) a
  list(weights = if (is.null(nys)) r$weights else backsolve(nys$R, r$weights),
       trace = data.frame(epoch = 0:e, passes = (0:e) * (1 + opts$epoch_length / N),
                          seconds = r$seconds[seq_len(e + 1L)],
                          objective = r$objective[seq_len(e + 1L)],
                          resid_est = r$gradient[seq_len(e + 1L)],
                          resid_exact = r$gradient[seq_len(e + 1L)]),
       reason = reason, iterations = e, passes = passes, seconds = secs,
       resid_est = crit, resid_exact = crit, resid_floor = NA_real_,
       centers = if (is.null(nys)) integer(0) else nys$centers, options = resolved,
       extras = list(), features = if (linear || !is.null(nys)) NULL else d, tol = opts$tol)
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
      abort_askotch("`solver`: the Nystrom features' K_II is not positive definite; use fewer centres (`p`).",
                    "numeric")
    }
  }
  list(phi = t(backsolve(R, t(Knm), transpose = TRUE)), R = R, centers = centers)
}

# the fields of an svrg fit beyond new_krr()'s: the feature count (random
# features predict through it, as kernel_machine(features = p) fits do), the
# epochs and the stopping tolerance used
svrg_fields <- function(fit, res) {
  fit$features <- res$features
  fit$epochs <- res$iterations
  fit$tol <- res$tol
  fit
}

# a linear-ridge fit of svrg(features = "linear"): predictions x^T w
is_linear_fit <- function(object) {
  is_svrg(object$solver) && identical(object$solver$features, "linear")
}

# What an svrg() fit cannot do, refused when the settings are made (the
# iterative solvers' options that do not apply to it).
check_svrg_settings <- function(lspec, kern, precision, device, validation,
                                call = NULL) {
  refuse <- function(what) {
    abort_askotch(sprintf("`solver`: svrg() %s.", what), "input", call)
  }
  if (lspec$rule != "fixed") {
    refuse("needs a numeric `lambda` (the automatic choices use the exact kernel)")
  }
  if (kern$bandwidth_rule %in% c("ml", "ard")) {
    refuse(sprintf("cannot tune the bandwidth (`bandwidth = \"%s\"`)",
                   kern$bandwidth_rule))
  }
  if (precision != "double") refuse("works in double precision: use `precision = \"double\"`")
  if (device == "cuda") refuse("runs on the CPU: use `device = \"cpu\"` or \"auto\"")
  if (!is.null(validation)) refuse("does not track a `validation` set")
  invisible(TRUE)
}
