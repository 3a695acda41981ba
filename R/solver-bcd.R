# Block coordinate descent in feature space: bcd() -- the compiled solvers
# "bcd_nystrom" and "bcd_features" ---------------------------------------------

#' Block coordinate descent in feature space (Nyström or random features)
#'
#' A solver specification for [krr()] that fits an *approximation* of
#' kernel ridge regression in a \eqn{p}-dimensional feature space by block
#' coordinate descent, as Tu, Roelofs, Venkataraman and Recht (2016) do at
#' scale (their Algorithms 2 and 3): cheaper per pass than the full-kernel
#' solvers when \eqn{p \ll n}, with block Gram matrices that are computed
#' once and reused.
#'
#' **`features = "nystrom"`** (Algorithm 2): \eqn{p} centres (training rows
#' drawn uniformly, or given), the inducing-point problem
#' \deqn{(K_{nI}^T K_{nI} + \lambda K_{II} + \lambda\gamma I)\, a =
#' K_{nI}^T y,}
#' which for `gamma = 0` (the default) is exactly the problem [falkon()]
#' solves with the same centres (same `seed`: same centres), predicting
#' \eqn{f(x) = \sum_j k(x, x_{I_j}) a_j}. `gamma > 0` is the paper's
#' regularised variant (a different, better conditioned problem). The
#' centres are cut once into blocks of `block_size`; each epoch visits every
#' block once in random order and solves its block system exactly, keeping
#' the residual \eqn{R = K_{nI} a + \lambda S a} so that \eqn{K_{II}} is
#' never formed.
#'
#' **`features = "random"`** (Algorithm 3): \eqn{p} random Fourier
#' features \eqn{z(x)} of the kernel (`"rbf"`, `"laplace"` or a Matérn
#' kernel; the same features as `kernel_machine(features = p)` and
#' `svrg(features = "random")` for the same `seed`), the ridge problem
#' \eqn{(Z^T Z + \lambda I)\, w = Z^T y} solved by blocks of `block_size`
#' features, predicting \eqn{z(x)^T w}. The whole \eqn{n \times p}
#' feature matrix is kept after the first step when it fits (`cache`), the
#' paper's "cacheable" advantage: later epochs cost two \eqn{n \times b}
#' products per block and no kernel or feature evaluation.
#'
#' **Cost.** A block's Gram matrix (\eqn{n b^2}) and its Cholesky factor
#' (\eqn{b^3 / 3}) are computed at its first visit and the factor is kept
#' (\eqn{p b} numbers) until \eqn{\lambda} changes; each visit also costs
#' an \eqn{n \times b} kernel (or feature) block and two products with it.
#' With \eqn{b = p} (the default when \eqn{p \le 1024}) a single block makes
#' the fit a direct solve. For a \eqn{\lambda} path (a vector `lambda`,
#' solved at once) Nyström keeps one factor per \eqn{\lambda}; random
#' features keep instead each block's tridiagonal form
#' \eqn{Z_b^T Z_b = Q T Q^T} (Householder reflectors, once per block, about
#' five Cholesky factors' work; \eqn{p b} numbers whatever the number of
#' \eqn{\lambda}s), so that one visit solves for every \eqn{\lambda} with
#' two products with \eqn{Q} and a tridiagonal solve per \eqn{\lambda}.
#' `sap()` paths of six or more \eqn{\lambda}s use the same form for each
#' sampled block.
#'
#' **Convergence.** This is block Gauss-Seidel without acceleration or
#' preconditioning: it converges for every \eqn{\lambda > 0}, but at a rate
#' set by how strongly the blocks are coupled, which is slow when
#' \eqn{\lambda} is small or the kernel is wide. Tu et al. observe (and
#' their Table 2 predicts) that the Nyström system needs many more epochs
#' than random features of the same size; in our tests plain Nyström BCD
#' with several blocks needed thousands of epochs where [falkon()]
#' (preconditioned CG, same problem) needs tens of iterations. Prefer a
#' single block (`block_size = p`) or [falkon()] for the Nyström problem
#' when \eqn{p^2} numbers fit; use several blocks when they do not.
#'
#' **Convention.** The paper's objective \eqn{\frac1n\|K_I a - Y\|^2 +
#' \lambda_T \langle a, K_{II} a\rangle} is the package's with
#' \eqn{\lambda = n \lambda_T}.
#'
#' **Stopping.** The criterion is that of the problem solved: for Nyström
#' the relative residual of the normal equations above (as for
#' [falkon()]); for random features the relative residual of
#' \eqn{(Z Z^T + \lambda I)\alpha = y} for the dual weights \eqn{\alpha =
#' (y - Z w) / \lambda}. A pass counts \eqn{n^2} kernel evaluations (one
#' block is \eqn{b / n} of a pass).
#'
#' @param features `"nystrom"` (default) or `"random"`.
#' @param p For Nyström: `NULL` (\eqn{\min(n, 20000, \lceil\sqrt n \log
#'   n\rceil)} centres drawn uniformly, as [falkon()]), a number of centres,
#'   or a vector of (at least two) training row indices. For random
#'   features: the number of features (`NULL`: \eqn{\min(n, 1000)}).
#' @param block_size Coordinates (centres or features) per block; `NULL`:
#'   \eqn{\min(p, 1024)}, halved until the memory budget allows.
#' @param gamma Nyström only: the extra ridge \eqn{\lambda\gamma\|a\|^2}
#'   (Tu et al.'s \eqn{\gamma \ge 0}); 0 gives Falkon's problem.
#' @param cache Random features only: keep the \eqn{n \times p} feature
#'   matrix (`"yes"`), never (`"no"`), or when it fits (`NULL`: `"auto"`, up
#'   to half the memory budget and \eqn{\max(256} MiB, four times the
#'   data\eqn{)}).
#' @return A solver specification of class `"askotch_solver_bcd"`.
#' @references Tu, S., Roelofs, R., Venkataraman, S. and Recht, B. (2016).
#'   Large scale kernel learning using block coordinate descent.
#'   arXiv:1602.05310.
#' @seealso [krr()], [falkon()], [svrg()], [solvers]
#' @examples
#' set.seed(1)
#' x <- matrix(runif(1000), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(500, sd = 0.1)
#' # Nystrom BCD: the same problem as falkon() with the same centres
#' fit <- krr(x, y, lambda = 1, solver = bcd("nystrom", p = 100, block_size = 25),
#'            seed = 1, threads = 1, tol = 1e-8, max_passes = 500)
#' fit$converged
#' # random features, blocks of 50 of the 200 features
#' fit2 <- krr(x, y, lambda = 1, solver = bcd("random", p = 200, block_size = 50),
#'             seed = 1, threads = 1)
#' head(predict(fit2, x))
#' @export
bcd <- function(features = c("nystrom", "random"), p = NULL, block_size = NULL,
                gamma = 0, cache = NULL) {
  if (!is.character(features) || length(features) < 1L || anyNA(features)) {
    abort_askotch(sprintf("`features` must be \"nystrom\" or \"random\", not %s.",
                          fmt_value(features)), "input")
  }
  features <- check_choice(tolower(features[1L]), c("nystrom", "random"), "features")
  random <- features == "random"
  if (random) {
    if (!is.null(p)) check_positive(p, "p", integerish = TRUE)
    if (!is.null(p) && p >= 2^31) {
      abort_askotch(sprintf("`p` must be below 2^31, not %s.", fmt_value(p)), "input")
    }
    if (!identical(gamma, 0) && !identical(gamma, 0L)) {
      abort_askotch("`gamma` applies to `features = \"nystrom\"` only.", "input")
    }
    gamma <- NULL
  } else {
    p <- check_bcd_centers(p)
    if (!is.null(cache)) {
      abort_askotch("`cache` applies to `features = \"random\"` only.", "input")
    }
  }
  check_spec(new_solver_spec("bcd", list(
    features = features, p = p, block_size = block_size, gamma = gamma,
    cache = lower_choice(cache))))
}

spec_bcd <- function() bcd()

# `p` of bcd("nystrom"): a count or row indices (falkon()'s `centers`)
check_bcd_centers <- function(p) {
  tryCatch(check_centers(p), askotch_error = function(e) {
    abort_askotch(sub("`centers`", "`p`", conditionMessage(e), fixed = TRUE), "input")
  })
}

# random features of a bcd() spec for n points (0: bcd("nystrom"))
#' @export
spec_features.askotch_solver_bcd <- function(spec, n) {
  if (spec$features != "random") return(0)
  if (is.null(spec$p)) min(n, 1000) else as.numeric(spec$p)
}

#' @export
solver_c.askotch_solver_bcd <- function(spec) {
  if (spec$features == "random") {
    return(list(name = "bcd_features", options = compact(list(
      block_size = spec$block_size, cache = spec$cache))))
  }
  list(name = "bcd_nystrom", options = c(centers_options(spec$p), compact(list(
    block_size = spec$block_size, gamma = spec$gamma))))
}

#' @export
solver_resolved.askotch_solver_bcd <- function(spec, options, extras) {
  spec <- NextMethod()
  spec$block_size <- as.integer(extras[["block_size"]])
  spec$blocks <- as.integer(extras[["blocks"]])
  if (spec$features == "random") {
    spec$cache <- options$cache
    spec$cached <- isTRUE(extras[["cached"]] == 1)
  } else {
    if (length(spec$p) <= 1L) spec$p <- options$n_centers
  }
  spec
}

#' @export
format.askotch_solver_bcd <- function(x, ...) {
  if (x$features == "random") {
    sprintf("Random-feature BCD (%s features, block size %s)", auto(x$p),
            auto(x$block_size))
  } else {
    sprintf("Nystrom BCD (%s centres, block size %s%s)", format_centers(x$p),
            auto(x$block_size),
            if (!is.null(x$gamma) && x$gamma > 0) sprintf(", gamma %s", auto(x$gamma)) else "")
  }
}
