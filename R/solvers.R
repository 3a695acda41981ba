# Solver specifications -----------------------------------------------------

#' Solver specifications
#'
#' Small constructors that describe how [krr()] solves the linear system
#' \eqn{(K + \lambda I) w = y}. They only validate and store their arguments;
#' values that depend on the data (the default block size, the rank cap) are
#' resolved by [krr()] and stored in the fitted object.
#'
#' * `askotch()` (the default): ASkotch, approximate sketch-and-project with
#'   Nyström-preconditioned random blocks and Nesterov acceleration (Rathore et
#'   al.). Each iteration samples `block_size` points, builds a rank-`rank`
#'   Nyström approximation of the block kernel matrix, estimates a step size
#'   by `power_iters` power iterations and updates the block of weights. It
#'   needs \eqn{O(n)} memory plus \eqn{O(b r)} work space and converges
#'   linearly; one *pass* is \eqn{n / b} iterations.
#'
#'   With `sampling = "rls"` the blocks are drawn (without replacement) with
#'   probabilities proportional to approximate ridge leverage scores
#'   \eqn{[K (K + \lambda I)^{-1}]_{ii}}, estimated once at the start from a
#'   uniform subsample of `rls_subsample` points (a one-level BLESS-style
#'   estimate; cost \eqn{O(n s)} kernel evaluations and an \eqn{s \times
#'   s} Cholesky factorisation). This helps when a few points are much more
#'   influential than the rest (clustered or heavy-tailed inputs); on evenly
#'   spread data it behaves like uniform sampling.
#'
#'   `variant = "v1"` is the first published ASkotch (arXiv v1): the points
#'   are split *once* into \eqn{\lceil n/b \rceil} fixed random blocks;
#'   each block's Nyström preconditioner and step size are computed once
#'   (at the first iteration: about one pass of setup) and cached when memory
#'   allows (\eqn{n r} numbers), blocks are sampled with probability
#'   \eqn{\propto L_b^{1/2}} and the iterates use NU_ACDM acceleration
#'   (Allen-Zhu et al.) instead of Nesterov's. `mu` is then NU_ACDM's strong
#'   convexity parameter (default \eqn{\lambda / \max_b (\hat\lambda_{1,b}
#'   + \rho_b)}, the constant in the preconditioned norm) and `nu` is not
#'   used. It cannot be combined with `sampling = "rls"` or `accelerated =
#'   FALSE`. Memory \eqn{O(n r)} with the cache.
#' * `skotch()`: the same without acceleration (`askotch(accelerated = FALSE)`).
#' * `sap()`: sketch-and-project with *exact* block solves
#'   \eqn{(K_{BB} + \lambda I)^{-1}} and unit steps (block Gauss-Seidel with
#'   random blocks, Tu et al.); `accelerated = TRUE` (default) is its
#'   Nesterov-accelerated form NSAP. Memory \eqn{O(n + b^2)}.
#' * `pcg()`: conjugate gradients on \eqn{(K + \lambda I) w = y} with a
#'   rank-`rank` Nyström or (randomly pivoted / greedy) partial Cholesky
#'   preconditioner. Each iteration is a full pass over the kernel
#'   (\eqn{O(n^2)} time, \eqn{O(n r)} memory).
#' * `falkon()`: Falkon (Rudi et al.), an inducing-point (Nyström) approximation
#'   of KRR on `centers` training points solved by preconditioned CG;
#'   predictions use only the centres. This approximates, rather than solves,
#'   the full KRR problem.
#' * `eigenpro()`: EigenPro 2.0 (Ma and Belkin), mini-batch stochastic
#'   gradient descent (Richardson iteration) on \eqn{(K + \lambda I) w = y},
#'   preconditioned by flattening the top `rank` eigendirections of the kernel
#'   estimated on a subsample of `subsample` points, with the automatic batch
#'   size and step size of EigenPro 2.0. Memory \eqn{O(n + s^2)} at setup
#'   and \eqn{O(n + s r)} afterwards. The EigenPro papers fit
#'   interpolation (\eqn{\lambda = 0}); here the user's \eqn{\lambda} is
#'   kept (it enters the gradient). The iteration converges to the KRR
#'   solution (the batch gradients vanish there), but linearly at a rate set
#'   by the preconditioned condition number, which is slow to high precision
#'   when \eqn{\lambda} is small: it reaches a useful *test* error quickly
#'   but seldom a relative residual of `1e-6` or below, so use it with a
#'   `time_limit` or `max_passes` rather than a tight `tol`.
#'
#'   `eigenpro(version = 3)`: EigenPro 3.0 (Abedsoltan et al.), the same
#'   stochastic gradient method for the *inducing-point* problem that
#'   [falkon()] solves (same centres for the same `seed`): projected,
#'   preconditioned SGD on the centre coefficients, the preconditioner
#'   estimated on `subsample` of the centres, the projection onto the span
#'   of the centres computed inexactly by two epochs of EigenPro 2.0 per
#'   step, the EigenPro 3.0 batch and step rules. Memory \eqn{O(n + m s)},
#'   no \eqn{m \times m} matrix (Falkon needs \eqn{O(m^2)}). With a constant
#'   step it does not converge to the inducing-point solution but settles
#'   in a neighbourhood of it (the batch gradients do not vanish there), and
#'   the inexact projection slows it down: it is a fast way to a useful
#'   *test* error with many centres, not a precise solver; stop it with
#'   `time_limit` or `max_passes` (a pass is an epoch over the data).
#' * `cholesky()`: the exact direct solve by a Cholesky factorisation of
#'   \eqn{K + \lambda I}: \eqn{O(n^2)} memory and \eqn{O(n^3)} time, for
#'   \eqn{n} up to a few tens of thousands. Useful as a reference.
#'
#' @param block_size Block size \eqn{b}; `NULL` (default) picks
#'   \eqn{\min(n, \max(256, n/100))}. Must not exceed the number of training
#'   points.
#' @param rank Nyström rank \eqn{r} (for `eigenpro()`: the number of
#'   corrected eigendirections). Default 100; when not given it is capped at
#'   the block size (for `pcg()`: the number of points; for `askotch(variant
#'   = "v1")`: the smallest block of the partition; for `eigenpro()`: one
#'   less than `subsample`), when given it must not exceed it.
#' @param rho Damping of the Nyström preconditioner: `"damped"` (default,
#'   \eqn{\lambda} plus the smallest kept Nyström eigenvalue),
#'   `"regularization"` (\eqn{\rho = \lambda}) or a positive number.
#' @param accelerated Use Nesterov acceleration (ASkotch, NSAP) or not
#'   (Skotch, SAP).
#' @param sampling Block sampling scheme: `"uniform"` (default; \eqn{b}
#'   distinct points uniformly) or `"rls"` (\eqn{b} distinct points with
#'   probabilities proportional to approximate ridge leverage scores).
#' @param mu,nu Acceleration parameters; `NULL` uses \eqn{\mu = \lambda} and
#'   \eqn{\nu = n / b} (for `variant = "v1"` see above).
#' @param power_iters Number of power iterations for the step size.
#' @param variant `"journal"` (default: the journal version of ASkotch, with
#'   fresh random blocks each iteration) or `"v1"` (the first published
#'   version: fixed partition, cached per-block preconditioners, NU_ACDM
#'   acceleration).
#' @param v1_beta With `variant = "v1"`: NU_ACDM's parameter \eqn{\beta \in
#'   [0, 1]}; blocks are sampled with probability \eqn{\propto
#'   L_b^{(1-\beta)/2}}. `NULL` uses 0 (sampling \eqn{\propto L_b^{1/2}}, the
#'   choice the paper recommends); 1 samples uniformly.
#' @param rls_subsample With `sampling = "rls"`: size \eqn{s} of the uniform
#'   subsample used to estimate the leverage scores; `NULL` uses
#'   \eqn{\min(n, 2000)}. Must not exceed the number of training points.
#' @param ... For `skotch()`: arguments passed to `askotch()` (except
#'   `accelerated`, and `variant` other than `"journal"`).
#' @return A list of class `c("askotch_solver_<name>", "askotch_solver")`.
#' @seealso [krr()]
#' @examples
#' askotch()
#' askotch(block_size = 500, rank = 50, rho = "regularization")
#' askotch(sampling = "rls", rls_subsample = 1000)
#' askotch(variant = "v1", block_size = 500)
#' skotch(rank = 20)
#' sap(block_size = 200)
#' pcg("rpcholesky", rank = 50)
#' falkon(centers = 500)
#' eigenpro(subsample = 2000, rank = 50)
#' eigenpro(version = 3, centers = 1000)
#' cholesky()
#'
#' # on a small problem every solver gives (about) the same predictions
#' set.seed(1)
#' x <- matrix(runif(600), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(300, sd = 0.1)
#' specs <- list(askotch(block_size = 100, rank = 20),
#'               askotch(sampling = "rls", block_size = 100, rank = 20),
#'               askotch(variant = "v1", block_size = 100, rank = 20),
#'               eigenpro(rank = 20))
#' fits <- lapply(specs, function(s)
#'   krr(x, y, lambda = 3, solver = s, max_passes = 50, seed = 1,
#'       threads = 1))
#' sapply(fits, function(f) f$resid_exact)
#' sapply(fits, function(f) predict(f, x[1, , drop = FALSE]))
#' @name solvers
NULL

check_rho <- function(rho) {
  if (is.character(rho)) {
    return(check_choice(rho, c("damped", "regularization"), "rho"))
  }
  if (!(is.numeric(rho) && length(rho) == 1L && !is.na(rho) &&
        is.finite(rho) && rho > 0)) {
    abort_askotch(sprintf(paste(
      "`rho` must be \"damped\", \"regularization\" or a positive number,",
      "not %s."), fmt_value(rho)), "input")
  }
  as.numeric(rho)
}

#' @rdname solvers
#' @export
askotch <- function(block_size = NULL, rank = 100, rho = "damped",
                    accelerated = TRUE, sampling = c("uniform", "rls"),
                    mu = NULL, nu = NULL, power_iters = 10,
                    variant = c("journal", "v1"), rls_subsample = NULL,
                    v1_beta = NULL) {
  rank_given <- !missing(rank)
  check_positive(block_size, "block_size", allow_null = TRUE, integerish = TRUE)
  check_positive(rank, "rank", integerish = TRUE)
  rho <- check_rho(rho)
  check_flag(accelerated, "accelerated")
  sampling <- if (missing(sampling)) "uniform" else
    check_choice(sampling, c("uniform", "rls"), "sampling")
  variant <- if (missing(variant)) "journal" else
    check_choice(variant, c("journal", "v1"), "variant")
  check_positive(rls_subsample, "rls_subsample", allow_null = TRUE,
                 integerish = TRUE)
  if (!is.null(rls_subsample) && sampling != "rls") {
    abort_askotch(paste(
      "`rls_subsample` is only used with `sampling = \"rls\"`; found",
      sprintf("`sampling = \"%s\"`.", sampling)), "input")
  }
  check_positive(mu, "mu", allow_null = TRUE)
  check_positive(nu, "nu", allow_null = TRUE)
  check_positive(power_iters, "power_iters", integerish = TRUE)
  if (power_iters > 1000) {
    abort_askotch(sprintf("`power_iters` must be at most 1000, not %s.",
                          fmt_value(power_iters)), "input")
  }
  if (variant == "v1") {
    if (sampling != "uniform") {
      abort_askotch(paste(
        "`variant = \"v1\"` samples the blocks of a fixed partition with",
        "probabilities set by their step sizes; it cannot be combined with",
        "`sampling = \"rls\"`."), "input")
    }
    if (!accelerated) {
      abort_askotch(paste(
        "`variant = \"v1\"` is always accelerated (NU_ACDM); it cannot be",
        "combined with `accelerated = FALSE` (skotch())."), "input")
    }
    if (!is.null(nu)) {
      abort_askotch(paste(
        "`nu` is not used by `variant = \"v1\"` (NU_ACDM derives its",
        "parameters from `mu` and the block step sizes); found",
        sprintf("`nu = %s`.", fmt_value(nu))), "input")
    }
  }
  if (!is.null(v1_beta)) {
    if (variant != "v1") {
      abort_askotch(paste(
        "`v1_beta` is NU_ACDM's parameter and only used with",
        "`variant = \"v1\"`."), "input")
    }
    if (!(is.numeric(v1_beta) && length(v1_beta) == 1L && !is.na(v1_beta) &&
          v1_beta >= 0 && v1_beta <= 1)) {
      abort_askotch(sprintf("`v1_beta` must be a number in [0, 1], not %s.",
                            fmt_value(v1_beta)), "input")
    }
  }
  name <- if (variant == "v1") "askotch_v1" else if (accelerated) "askotch"
    else "skotch"
  kind <- switch(name, askotch = 0L, skotch = 1L, askotch_v1 = 8L)
  structure(
    list(name = name, kind = kind,
         block_size = if (is.null(block_size)) NULL else as.numeric(block_size),
         rank = as.integer(rank), rank_given = rank_given, rho = rho,
         accelerated = accelerated, sampling = sampling, variant = variant,
         rls_subsample = if (is.null(rls_subsample)) NULL else
           as.numeric(rls_subsample),
         mu = mu, nu = nu, power_iters = as.integer(power_iters),
         v1_beta = if (is.null(v1_beta)) NULL else as.numeric(v1_beta)),
    class = c(paste0("askotch_solver_", name), "askotch_solver")
  )
}

#' @rdname solvers
#' @export
skotch <- function(...) {
  args <- list(...)
  if ("accelerated" %in% names(args)) {
    abort_askotch("`accelerated` cannot be set in skotch(); use askotch().",
                  "input")
  }
  if ("variant" %in% names(args) && !identical(args$variant, "journal")) {
    abort_askotch(paste(
      "`variant` cannot be set in skotch(): Skotch is the journal method",
      "without acceleration; use askotch(variant = \"v1\")."), "input")
  }
  spec <- askotch(..., accelerated = FALSE)
  if (!"rank" %in% names(args)) spec$rank_given <- FALSE
  spec
}

#' @rdname solvers
#' @export
sap <- function(block_size = NULL, accelerated = TRUE, mu = NULL, nu = NULL) {
  check_positive(block_size, "block_size", allow_null = TRUE, integerish = TRUE)
  check_flag(accelerated, "accelerated")
  check_positive(mu, "mu", allow_null = TRUE)
  check_positive(nu, "nu", allow_null = TRUE)
  name <- if (accelerated) "nsap" else "sap"
  structure(
    list(name = name, kind = if (accelerated) 4L else 3L,
         block_size = if (is.null(block_size)) NULL else as.numeric(block_size),
         accelerated = accelerated, mu = mu, nu = nu),
    class = c("askotch_solver_sap", "askotch_solver")
  )
}

#' @rdname solvers
#' @param preconditioner For `pcg()`: `"nystrom"` (randomized Nyström
#'   approximation of \eqn{K}), `"rpcholesky"` (randomly pivoted partial
#'   Cholesky), `"greedy_cholesky"` (greedy pivots) or `"none"`.
#' @export
pcg <- function(preconditioner = "nystrom", rank = 100, rho = "damped") {
  rank_given <- !missing(rank)
  preconditioner <- check_choice(
    preconditioner, c("nystrom", "rpcholesky", "greedy_cholesky", "none"),
    "preconditioner")
  check_positive(rank, "rank", integerish = TRUE)
  rho <- check_rho(rho)
  structure(
    list(name = "pcg", kind = 5L, preconditioner = preconditioner,
         precond = match(preconditioner, c("nystrom", "rpcholesky",
                                           "greedy_cholesky", "none")) - 1L,
         rank = as.integer(rank), rank_given = rank_given, rho = rho),
    class = c("askotch_solver_pcg", "askotch_solver")
  )
}

check_centers <- function(centers) {
  if (!is.null(centers)) {
    ok <- is.numeric(centers) && length(centers) >= 1L &&
      all(is.finite(centers)) && all(centers >= 1) &&
      all(centers == round(centers))
    if (!ok) {
      abort_askotch(sprintf(paste(
        "`centers` must be NULL, a number of centres or a vector of row",
        "indices (whole numbers >= 1), not %s."), fmt_value(centers)), "input")
    }
    if (length(centers) > 1L && anyDuplicated(centers)) {
      abort_askotch("`centers` must not contain duplicated row indices.",
                    "input")
    }
  }
  centers
}

#' @rdname solvers
#' @param centers For `falkon()` and `eigenpro(version = 3)`: `NULL` (default: \eqn{\min(n, 20000,
#'   \lceil\sqrt{n}\log n\rceil)} centres sampled uniformly), a number of
#'   centres, or a vector of (at least two) training row indices.
#' @export
falkon <- function(centers = NULL) {
  centers <- check_centers(centers)
  structure(list(name = "falkon", kind = 6L, centers = centers),
            class = c("askotch_solver_falkon", "askotch_solver"))
}

#' @rdname solvers
#' @export
cholesky <- function() {
  structure(list(name = "cholesky", kind = 2L),
            class = c("askotch_solver_cholesky", "askotch_solver"))
}

#' @rdname solvers
#' @param version For `eigenpro()`: `2` (EigenPro 2.0, full KRR) or `3`
#'   (EigenPro 3.0, inducing points on `centers`).
#' @param subsample For `eigenpro()`: number \eqn{s} of points whose kernel
#'   matrix gives the preconditioner's eigenvectors, drawn uniformly once
#'   from the training points (version 2) or from the centres (version 3);
#'   `NULL` uses \eqn{\min(n, 4000)} (version 3: at most the number of
#'   centres).
#' @param batch_size For `eigenpro()`: mini-batch size; `NULL` uses the
#'   EigenPro rule (the critical batch size, at most \eqn{\min(n, 4096)}).
#'   The size used is stored in the fitted object (`fit$solver$block_size`).
#' @param step For `eigenpro()`: step size; `NULL` uses the EigenPro 2.0 or
#'   3.0 rule for the batch size. The step used is stored in the fitted
#'   object (`fit$solver$step`).
#' @export
eigenpro <- function(version = 2, subsample = NULL, batch_size = NULL,
                     step = NULL, rank = 100, centers = NULL) {
  rank_given <- !missing(rank)
  if (!(is.numeric(version) && length(version) == 1L && !is.na(version) &&
        version %in% c(2, 3))) {
    abort_askotch(sprintf("`version` must be 2 or 3, not %s.",
                          fmt_value(version)), "input")
  }
  if (version == 2 && !is.null(centers)) {
    abort_askotch(paste(
      "`centers` is only used by `eigenpro(version = 3)` (inducing points);",
      "EigenPro 2.0 fits the full KRR problem."), "input")
  }
  centers <- check_centers(centers)
  check_positive(subsample, "subsample", allow_null = TRUE, integerish = TRUE)
  if (!is.null(subsample) && subsample < 2) {
    abort_askotch(sprintf("`subsample` must be at least 2, not %s.",
                          fmt_value(subsample)), "input")
  }
  check_positive(batch_size, "batch_size", allow_null = TRUE,
                 integerish = TRUE)
  check_positive(step, "step", allow_null = TRUE)
  check_positive(rank, "rank", integerish = TRUE)
  if (!is.null(subsample) && rank >= subsample) {
    if (rank_given) {
      abort_askotch(sprintf(
        "`rank` (%s) must be smaller than `subsample` (%s).",
        fmt_value(rank), fmt_value(subsample)), "input")
    }
    rank <- subsample - 1
  }
  structure(
    list(name = "eigenpro", kind = 7L, version = as.integer(version),
         subsample = if (is.null(subsample)) NULL else as.numeric(subsample),
         batch_size = if (is.null(batch_size)) NULL else
           as.numeric(batch_size),
         step = if (is.null(step)) NULL else as.numeric(step),
         rank = as.integer(rank), rank_given = rank_given,
         centers = centers),
    class = c("askotch_solver_eigenpro", "askotch_solver")
  )
}

#' @export
format.askotch_solver <- function(x, ...) {
  if (x$name == "cholesky") return("Cholesky (exact direct solve)")
  if (x$name %in% c("sap", "nsap")) {
    return(sprintf("%s (exact block solves, block size %s)",
                   toupper(x$name), if (is.null(x$block_size)) "auto" else
                     format(x$block_size)))
  }
  if (x$name == "pcg") {
    rho <- if (is.numeric(x$rho)) format(signif(x$rho, 4)) else x$rho
    return(sprintf("PCG (%s preconditioner%s)", x$preconditioner,
                   if (x$preconditioner == "none") "" else
                     sprintf(", rank %d, rho %s", x$rank, rho)))
  }
  if (x$name == "falkon") {
    nc <- if (is.null(x$centers)) "auto" else if (length(x$centers) == 1L)
      format(x$centers) else format(length(x$centers))
    return(sprintf("Falkon (%s centres)", nc))
  }
  if (x$name == "eigenpro") {
    auto <- function(v) if (is.null(v)) "auto" else format(signif(v, 4))
    v3 <- identical(x$version, 3L)
    nc <- if (is.null(x$centers)) "auto" else if (length(x$centers) == 1L)
      format(x$centers) else format(length(x$centers))
    return(sprintf(paste("EigenPro %s (preconditioned SGD%s, subsample %s,",
                         "rank %d, batch %s, step %s)"),
                   if (v3) "3.0" else "2.0",
                   if (v3) sprintf(" on %s centres", nc) else "",
                   auto(x$subsample), x$rank,
                   auto(if (is.null(x$batch_size)) x$block_size else
                     x$batch_size),
                   auto(x$step)))
  }
  rho <- if (is.numeric(x$rho)) format(signif(x$rho, 4)) else x$rho
  b <- if (is.null(x$block_size)) "auto" else format(x$block_size)
  if (identical(x$name, "askotch_v1")) {
    return(sprintf(paste0("ASkotch v1 (fixed partition, NU_ACDM; block size",
                          " %s, rank %d, rho %s%s)"), b, x$rank, rho,
                   if (is.null(x$mu)) "" else
                     sprintf(", mu %s", format(signif(x$mu, 4)))))
  }
  smp <- ""
  if (identical(x$sampling, "rls")) {
    smp <- sprintf(", RLS sampling (subsample %s)",
                   if (is.null(x$rls_subsample)) "auto" else
                     format(x$rls_subsample))
  }
  sprintf("%s (block size %s, rank %d, rho %s%s%s)",
          if (x$accelerated) "ASkotch" else "Skotch", b, x$rank, rho, smp,
          if (is.null(x$mu) && is.null(x$nu)) "" else
            sprintf(", mu %s, nu %s",
                    if (is.null(x$mu)) "lambda" else format(signif(x$mu, 4)),
                    if (is.null(x$nu)) "n/b" else format(signif(x$nu, 4))))
}

#' @export
print.askotch_solver <- function(x, ...) {
  cat("<askotch solver> ", format(x), "\n", sep = "")
  invisible(x)
}

as_solver <- function(solver, call = NULL) {
  if (inherits(solver, "askotch_solver")) return(solver)
  if (is.function(solver)) solver <- solver()
  if (inherits(solver, "askotch_solver")) return(solver)
  if (is.character(solver) && length(solver) == 1L && !is.na(solver)) {
    key <- tolower(solver)
    if (key == "askotch") return(askotch())
    if (key == "skotch") return(skotch())
    if (key == "cholesky") return(cholesky())
    if (key == "sap") return(sap(accelerated = FALSE))
    if (key == "nsap") return(sap())
    if (key == "pcg") return(pcg())
    if (key == "falkon") return(falkon())
    if (key == "eigenpro") return(eigenpro())
    if (key == "askotch_v1") return(askotch(variant = "v1"))
    abort_askotch(sprintf(paste(
      "`solver` must be one of \"askotch\", \"askotch_v1\", \"skotch\",",
      "\"sap\", \"nsap\", \"pcg\", \"falkon\", \"eigenpro\",",
      "\"cholesky\" or a",
      "solver specification such as askotch(), not \"%s\"."), solver),
      "input", call)
  }
  abort_askotch(sprintf(paste(
    "`solver` must be a solver specification such as askotch(), skotch() or",
    "cholesky(), not %s."), fmt_value(solver)), "input", call)
}

# Resolve data-dependent defaults once n (and lambda) are known.
resolve_solver <- function(solver, n, call = NULL) {
  if (solver$name == "cholesky") return(solver)
  if (solver$name == "pcg") {
    if (solver$rank > n) {
      if (isTRUE(solver$rank_given)) {
        abort_askotch(sprintf(
          "`rank` (%d) must not exceed the number of training points (%d).",
          solver$rank, n), "input", call)
      }
      solver$rank <- as.integer(n)
    }
    return(solver)
  }
  if (solver$name == "falkon") return(resolve_centers(solver, n, call))
  if (solver$name == "eigenpro") {
    v3 <- identical(solver$version, 3L)
    npool <- n
    if (v3) {
      solver <- resolve_centers(solver, n, call)
      cen <- solver$centers
      npool <- if (is.null(cen)) default_centers(n) else if (length(cen) == 1L)
        cen else length(cen)
    }
    s <- solver$subsample
    if (is.null(s)) {
      s <- min(npool, 4000)
    } else if (s > npool) {
      abort_askotch(sprintf(if (v3) paste(
        "`subsample` (%s) must not exceed the number of centres (%d):",
        "EigenPro 3.0 draws it from the centres.") else
        "`subsample` (%s) must not exceed the number of training points (%d).",
        format(s), as.integer(npool)), "input", call)
    }
    if (!is.null(solver$batch_size) && solver$batch_size > n) {
      abort_askotch(sprintf(paste(
        "`batch_size` (%s) must not exceed the number of training points",
        "(%d)."), format(solver$batch_size), n), "input", call)
    }
    if (s < 2) {
      abort_askotch(sprintf(paste(
        "EigenPro needs a subsample of at least 2 points; it has %s."),
        format(s)), "input", call)
    }
    if (solver$rank >= s) {
      if (isTRUE(solver$rank_given)) {
        abort_askotch(sprintf(paste(
          "`rank` (%d) must be smaller than the EigenPro subsample (%s",
          "points)."), solver$rank, format(s)), "input", call)
      }
      solver$rank <- as.integer(s - 1)
    }
    solver$subsample <- as.numeric(s)
    return(solver)
  }
  b <- solver$block_size
  if (is.null(b)) {
    b <- min(n, max(256, ceiling(n / 100)))
  } else if (b > n) {
    abort_askotch(sprintf(
      "`block_size` (%s) must not exceed the number of training points (%d).",
      format(b), n), "input", call)
  }
  # ASkotch v1 partitions [n] into ceiling(n / b) blocks once; the rank must
  # fit in the smallest of them.
  bmin <- b
  what <- "the block size"
  if (identical(solver$name, "askotch_v1")) {
    bmin <- floor(n / ceiling(n / b))
    what <- "the smallest block of the fixed partition"
  }
  if (!is.null(solver$rank) && solver$rank > bmin) {
    if (isTRUE(solver$rank_given)) {
      abort_askotch(sprintf(
        "`rank` (%d) must not exceed %s (%s).", solver$rank, what,
        format(bmin)), "input", call)
    }
    solver$rank <- as.integer(bmin)
  }
  if (identical(solver$sampling, "rls")) {
    s <- solver$rls_subsample
    if (is.null(s)) {
      s <- min(n, 2000)
    } else if (s > n) {
      abort_askotch(sprintf(paste(
        "`rls_subsample` (%s) must not exceed the number of training points",
        "(%d)."), format(s), n), "input", call)
    }
    solver$rls_subsample <- as.numeric(s)
  }
  solver$block_size <- as.numeric(b)
  solver
}

# Falkon's default number of centres (falkon.c, krr_centers_count)
default_centers <- function(n) {
  as.integer(min(n, 20000, max(1, ceiling(sqrt(n) * log(n)))))
}

resolve_centers <- function(solver, n, call) {
  cen <- solver$centers
  if (!is.null(cen) && (max(cen) > n || (length(cen) > 1L &&
                                          length(cen) > n))) {
    abort_askotch(sprintf(paste(
      "`centers` must be at most the number of training points (%d) and",
      "index rows 1..%d."), n, n), "input", call)
  }
  solver
}

solver_to_c <- function(solver, seed, mem_limit, threads) {
  rho_mode <- 0L
  rho_value <- 0
  if (!is.null(solver$rho)) {
    if (is.numeric(solver$rho)) {
      rho_mode <- 2L
      rho_value <- as.numeric(solver$rho)
    } else if (solver$rho == "regularization") {
      rho_mode <- 1L
    }
  }
  list(kind = as.integer(solver$kind),
       block_size = as.numeric(if (is.null(solver$block_size)) 0 else
         solver$block_size),
       rank = as.integer(if (is.null(solver$rank)) 0L else solver$rank),
       rho_mode = rho_mode,
       rho_value = rho_value,
       mu = as.numeric(if (is.null(solver$mu)) 0 else solver$mu),
       nu = as.numeric(if (is.null(solver$nu)) 0 else solver$nu),
       power_iters = as.integer(if (is.null(solver$power_iters)) 0L else
         solver$power_iters),
       seed = as.numeric(seed),
       block_mem_limit = 0,
       mem_limit = as.numeric(mem_limit),
       threads = as.integer(threads),
       precond = as.integer(if (is.null(solver$precond)) 0L else
         solver$precond),
       n_centers = as.numeric(if (length(solver$centers) == 1L)
         solver$centers else 0),
       centers = if (length(solver$centers) > 1L)
         as.numeric(solver$centers) else NULL,
       resid_every = 0L,
       sampling = if (identical(solver$sampling, "rls")) 1L else 0L,
       rls_subsample = as.numeric(if (is.null(solver$rls_subsample)) 0 else
         solver$rls_subsample),
       ep_version = as.integer(if (is.null(solver$version)) 0L else
         solver$version),
       ep_subsample = as.numeric(if (is.null(solver$subsample)) 0 else
         solver$subsample),
       ep_batch = as.numeric(if (is.null(solver$batch_size)) 0 else
         solver$batch_size),
       ep_step = as.numeric(if (is.null(solver$step)) 0 else solver$step),
       v1_beta = as.numeric(if (is.null(solver$v1_beta)) 0 else
         solver$v1_beta))
}
