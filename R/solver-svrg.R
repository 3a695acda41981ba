# SVRG and sketched preconditioned SVRG on explicit features: the spec of
# the compiled solver "svrg" (src/core/solvers/svrg.c), which runs on an
# operator with a finite feature map; its fit's own steps are in
# fit-svrg.R ------------------------------------------------------------

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
#' iterate (Johnson and Zhang's option I).
#'
#' **Stopping.** The fit stops by the rule of every solver of [krr()]: the
#' relative residual of the dual system, \eqn{\|(\Phi\Phi^T + \lambda I)
#' a - y\| / \|y\|} for the dual weights \eqn{a = (y - \Phi w) / \lambda},
#' at most `tol` (the automatic tolerance of [krr()] unless given), which
#' bounds the error of the fitted function as for any solver; it is
#' computed exactly at the end of every epoch. The paper's criterion
#' \eqn{\|\Phi^T(\Phi w - y) + \lambda w\| / \|\Phi^T y\|} (worst output)
#' is reported in the trace (`gradient`), not used to stop. The fit also
#' stops after `epochs` epochs (reason `"max_iter"`, with a warning);
#' `max_passes` of [krr()] does not apply. Memory: the \eqn{n \times d} feature matrix, and with the
#' preconditioner its preconditioned copy \eqn{P^{-1/2}\phi(x_i)} (the
#' paper's preprocessing, which makes a step \eqn{O(d)} as in plain SVRG).
#'
#' An svrg() fit needs a numeric `lambda` and a fixed or median bandwidth,
#' runs in double precision on the CPU, and does not take observation
#' `weights` or a `validation` set; [refit()] does not apply to it.
#' The trace (`fit$trace`) has one row per epoch (`epoch` 0: the start)
#' with the paper's objective and criterion (`objective`, `gradient`) and
#' the columns of every solver's trace; `fit$solver` holds the resolved
#' options, the feature count `d`, the sketch's eigenvalue estimates
#' `sigma2` of \eqn{\Phi^T\Phi / n}, \eqn{\hat\beta} (`beta_hat`) and the
#' step `eta`; `fit$epochs` the epochs run.
#'
#' @param rank Sketch rank \eqn{k} (`NULL`: 30, the paper's), capped at
#'   \eqn{d}.
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
#' fit2 <- krr(x, sin(x[, 1]), lambda = 0.1, solver = svrg(p = 100),
#'             seed = 1, threads = 1)
#' predict(fit2, x[1:3, ])
#' @export
svrg <- function(rank = NULL, epochs = NULL, epoch_length = NULL, step = NULL,
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
  rank <- int_opt(rank, "rank")
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
  check_spec(new_solver_spec("svrg", list(rank = rank, epochs = epochs,
                                          epoch_length = epoch_length, step = step,
                                          precondition = precondition,
                                          features = features, p = p,
                                          sampling = sampling,
                                          lanczos_iters = lanczos_iters)))
}

spec_svrg <- function() svrg()

#' @export
solver_c.askotch_solver_svrg <- function(spec) {
  list(name = "svrg", options = compact(list(
    rank = spec$rank, lanczos_iters = spec$lanczos_iters,
    epoch_length = spec$epoch_length, step = spec$step,
    precondition = spec$precondition, sampling = spec$sampling)))
}

# the features of the fit's operator: M random features (p, at most n:
# min(n, 1000) by default), else the linear operator on the points (x, or
# the Nystrom features fit-svrg.R makes)
#' @export
spec_features.askotch_solver_svrg <- function(spec, n) {
  if (spec$features != "random") return(-1)
  min(spec$p %||% 1000, n)
}

# the epochs: one an iteration of the compiled solver (60: the paper's horizon)
#' @export
solver_max_iter.askotch_solver_svrg <- function(spec) spec$epochs %||% 60

# the resolved options (from the compiled table), the feature count, the
# step's constants and the sketch's eigenvalues (extras$sigma2)
#' @export
solver_resolved.askotch_solver_svrg <- function(spec, options, extras) {
  pc <- isTRUE(options$precondition)
  spec$precondition <- pc
  spec$rank <- if (pc) extras[["rank"]] else NULL
  spec$lanczos_iters <- if (pc) as.integer(extras[["lanczos_iters"]]) else NULL
  spec$epochs <- solver_max_iter(spec)
  spec$epoch_length <- options$epoch_length
  spec$step <- options$step
  spec$sampling <- options$sampling
  spec$d <- extras[["features"]]
  spec$p <- if (spec$features == "linear") NULL else spec$d
  spec$beta_hat <- extras[["beta_hat"]]
  spec$eta <- extras[["eta"]]
  spec$sigma2 <- if (pc) extras[["sigma2"]] else NULL
  spec
}

#' @export
format.askotch_solver_svrg <- function(x, ...) {
  sprintf("%s (%s features, d = %s%s)",
          if (isTRUE(x$precondition)) "sketched preconditioned SVRG" else "SVRG",
          x$features, auto(x$d %||% x$p),
          if (isTRUE(x$precondition)) paste0(", rank ", auto(x$rank)) else "")
}

# What an svrg() fit cannot do, refused when the settings are made (the
# automatic lambda and bandwidth tuning use the exact kernel; the validation
# metric predicts through the exact kernel or random features only).
#' @export
check_solver_settings.askotch_solver_svrg <- function(spec, lspec, kern, precision,
                                                      device, validation,
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
  if (identical(device, "cuda")) refuse("runs on the CPU: use `device = \"cpu\"` or \"auto\"")
  if (!is.null(validation)) refuse("does not track a `validation` set")
  invisible(TRUE)
}
