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
#' * `cholesky()`: the exact direct solve by a Cholesky factorisation of
#'   \eqn{K + \lambda I}: \eqn{O(n^2)} memory and \eqn{O(n^3)} time, for
#'   \eqn{n} up to a few tens of thousands. Useful as a reference.
#'
#' @param block_size Block size \eqn{b}; `NULL` (default) picks
#'   \eqn{\min(n, \max(256, n/100))}. Must not exceed the number of training
#'   points.
#' @param rank Nyström rank \eqn{r}. Default 100; when not given it is capped at
#'   the block size (for `pcg()`: the number of points), when given it must
#'   not exceed it.
#' @param rho Damping of the Nyström preconditioner: `"damped"` (default,
#'   \eqn{\lambda} plus the smallest kept Nyström eigenvalue),
#'   `"regularization"` (\eqn{\rho = \lambda}) or a positive number.
#' @param accelerated Use Nesterov acceleration (ASkotch, NSAP) or not
#'   (Skotch, SAP).
#' @param sampling Block sampling scheme; only `"uniform"` (without
#'   replacement) is implemented.
#' @param mu,nu Acceleration parameters; `NULL` uses \eqn{\mu = \lambda} and
#'   \eqn{\nu = n / b}.
#' @param power_iters Number of power iterations for the step size.
#' @param ... For `skotch()`: arguments passed to `askotch()` (except
#'   `accelerated`).
#' @return A list of class `c("askotch_solver_<name>", "askotch_solver")`.
#' @seealso [krr()]
#' @examples
#' askotch()
#' askotch(block_size = 500, rank = 50, rho = "regularization")
#' skotch(rank = 20)
#' sap(block_size = 200)
#' pcg("rpcholesky", rank = 50)
#' falkon(centers = 500)
#' cholesky()
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
                    accelerated = TRUE, sampling = "uniform", mu = NULL,
                    nu = NULL, power_iters = 10) {
  rank_given <- !missing(rank)
  check_positive(block_size, "block_size", allow_null = TRUE, integerish = TRUE)
  check_positive(rank, "rank", integerish = TRUE)
  rho <- check_rho(rho)
  check_flag(accelerated, "accelerated")
  if (!identical(sampling, "uniform")) {
    abort_askotch(sprintf(
      "`sampling` must be \"uniform\" (the only scheme implemented), not %s.",
      fmt_value(sampling)), "input")
  }
  check_positive(mu, "mu", allow_null = TRUE)
  check_positive(nu, "nu", allow_null = TRUE)
  check_positive(power_iters, "power_iters", integerish = TRUE)
  if (power_iters > 1000) {
    abort_askotch(sprintf("`power_iters` must be at most 1000, not %s.",
                          fmt_value(power_iters)), "input")
  }
  name <- if (accelerated) "askotch" else "skotch"
  structure(
    list(name = name, kind = if (accelerated) 0L else 1L,
         block_size = if (is.null(block_size)) NULL else as.numeric(block_size),
         rank = as.integer(rank), rank_given = rank_given, rho = rho,
         accelerated = accelerated, sampling = sampling, mu = mu, nu = nu,
         power_iters = as.integer(power_iters)),
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

#' @rdname solvers
#' @param centers For `falkon()`: `NULL` (default: \eqn{\min(n, 20000,
#'   \lceil\sqrt{n}\log n\rceil)} centres sampled uniformly), a number of
#'   centres, or a vector of (at least two) training row indices.
#' @export
falkon <- function(centers = NULL) {
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
  structure(list(name = "falkon", kind = 6L, centers = centers),
            class = c("askotch_solver_falkon", "askotch_solver"))
}

#' @rdname solvers
#' @export
cholesky <- function() {
  structure(list(name = "cholesky", kind = 2L),
            class = c("askotch_solver_cholesky", "askotch_solver"))
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
  rho <- if (is.numeric(x$rho)) format(signif(x$rho, 4)) else x$rho
  b <- if (is.null(x$block_size)) "auto" else format(x$block_size)
  sprintf("%s (block size %s, rank %d, rho %s%s)",
          if (x$accelerated) "ASkotch" else "Skotch", b, x$rank, rho,
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
    abort_askotch(sprintf(paste(
      "`solver` must be one of \"askotch\", \"skotch\", \"sap\", \"nsap\",",
      "\"pcg\", \"falkon\", \"cholesky\" or a",
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
  if (solver$name == "falkon") {
    cen <- solver$centers
    if (!is.null(cen) && (max(cen) > n || (length(cen) > 1L &&
                                            length(cen) > n))) {
      abort_askotch(sprintf(paste(
        "`centers` must be at most the number of training points (%d) and",
        "index rows 1..%d."), n, n), "input", call)
    }
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
  if (!is.null(solver$rank) && solver$rank > b) {
    if (isTRUE(solver$rank_given)) {
      abort_askotch(sprintf(
        "`rank` (%d) must not exceed the block size (%s).", solver$rank,
        format(b)), "input", call)
    }
    solver$rank <- as.integer(b)
  }
  solver$block_size <- as.numeric(b)
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
       resid_every = 0L)
}
