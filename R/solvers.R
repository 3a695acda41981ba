# Solver specifications -----------------------------------------------------

#' Solver specifications
#'
#' Small constructors that describe how [krr()] solves the linear system
#' \eqn{(K + \lambda I) w = y}. They validate and store their arguments;
#' arguments left `NULL` take the solver's default, and values that depend
#' on the data (the default block size, the rank cap, EigenPro's batch and
#' step) are resolved when the fit starts and stored in the fitted object
#' (`fit$solver`).
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
#'   Nesterov-accelerated form NSAP. Memory \eqn{O(n + b^2)}. A vector
#'   `lambda` is solved at once (one block sample and one kernel product
#'   for every \eqn{\lambda}): each block's \eqn{K_{BB} + \lambda I} is
#'   factored per \eqn{\lambda}, or, from six \eqn{\lambda}s on,
#'   \eqn{K_{BB}} is reduced once to tridiagonal form \eqn{Q T Q^T} (about
#'   five factorisations' work) and every \eqn{\lambda} costs \eqn{O(b)}
#'   more per column. On the CPU with two or more threads the block's
#'   factorisation runs on one thread while the others compute the block's
#'   kernel rows.
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
#' * `joker()`: Joker (Zhang et al.), dual block coordinate descent with a
#'   trust region, for the non-squared losses of [kernel_machine()] (Huber,
#'   SVR, hinge, squared hinge, logistic) and their default solver: each
#'   iteration takes one block of a fixed random partition into blocks of
#'   `block_size` dual variables (`NULL`: \eqn{\min(n, 512)}, faster to
#'   a useful answer in our benchmarks than the paper's 2048, which
#'   `joker(block_size = 2048)` reproduces) and minimises the dual over it, inside the loss's
#'   box, by a trust-region method whose subproblems are solved by
#'   `cg_iters` conjugate-gradient steps. The options are checked against
#'   the compiled table when the package is built with Joker.
#' * `dcd()`: greedy dual coordinate descent on the kernel matrix formed
#'   once (Steinwart, Hush and Scovel's SMO without offset; Hsieh et al.'s
#'   dual coordinate descent, kernelised), every loss of [kernel_machine()]:
#'   each step solves the dual exactly in the one variable whose step lowers
#'   it most (logistic loss: by Newton's method) and updates the kernel
#'   products with one column of the kernel matrix, \eqn{O(n)} work; when
#'   that slows down (a large \eqn{C}), a damped Newton step on the
#'   variables off their bounds (logistic loss: the points near the decision
#'   boundary), from a Cholesky factor of their block of the kernel matrix
#'   (conjugate-gradient steps when the factor would cost more than the
#'   coordinate steps since the last such step), with a search along its
#'   projection on the box (a projected Newton step). Memory \eqn{n^2}
#'   numbers of the fit's precision; the default for the losses other than
#'   the squared while that fits (see [kernel_machine()]).
#' * `cholesky()`: the exact direct solve by a Cholesky factorisation of
#'   \eqn{K + \lambda I}: \eqn{O(n^2)} memory and \eqn{O(n^3)} time, for
#'   \eqn{n} up to a few tens of thousands. Useful as a reference.
#' * [bcd()]: Tu et al.'s block coordinate descent for the Nyström
#'   (inducing-point) problem or ridge regression on random features; an
#'   approximation of KRR solved in feature space; documented on its own
#'   page.
#' * [svrg()]: (sketched preconditioned) SVRG for ridge regression on
#'   explicit features (random Fourier features or the columns of `x`), an
#'   approximation of KRR solved in feature space; documented on its own
#'   page.
#'
#' @param block_size Block size \eqn{b}; must not exceed the number of
#'   training points. `NULL` (default): for `askotch()` and `skotch()` chosen
#'   by cost, the largest block (at least \eqn{\min(n, 256)}) whose rank-\eqn{r_{max}}
#'   Nyström preconditioner, \eqn{r_{max} = \max(100, b/3)} capped at 2000,
#'   costs no more flops than the block's \eqn{b \times n} kernel rows, so
#'   that the kernel product stays the larger part of every iteration (in
#'   double precision about 1000 at \eqn{n = 2 \cdot 10^4} with 10 inputs;
#'   2896, the largest block whose kernel matrix is kept, at \eqn{n = 10^4}
#'   with 784 and at \eqn{n = 2 \cdot 10^5} to \eqn{5 \cdot 10^5} with 10;
#'   11 823 at \eqn{n = 10^6} with 10, the block kernel matrix recomputed
#'   when used); for `sap()` and
#'   `askotch(variant = "v1")` \eqn{\min(n, \max(256, n/100))}.
#'   `block_size = "paper"` (`askotch()`, `skotch()`) takes the journal's
#'   settings, \eqn{b = \lceil n/100 \rceil} and rank 100 (capped at
#'   \eqn{b}), to reproduce the papers' experiments.
#' @param rank Nyström rank \eqn{r} (for `eigenpro()`: the number of
#'   corrected eigendirections). `NULL` (default): for `askotch()` and
#'   `skotch()` chosen by the spectrum: the number of eigenvalues above
#'   \eqn{\lambda} of the rank-\eqn{r_{max}} Nyström approximation of one
#'   sampled block kernel matrix, at least 50 and at most \eqn{r_{max}}
#'   (see `block_size`), so that the damped preconditioner leaves the block a
#'   condition number of about 2 (the fast regime of the paper's analysis)
#'   and fast-decaying spectra do not pay for columns they do not need; it
#'   is chosen again at every new \eqn{\lambda} and stored in the fitted
#'   object. For the other solvers `NULL` uses 100 capped at the
#'   block size (for `pcg()`: the number of points, and for
#'   `pcg("greedy_cholesky")` a rank chosen by cost,
#'   \eqn{\lceil\sqrt{3 n (2p + 44 + 2.5 (m - 1)) / 3.4}\rceil} for \eqn{m}
#'   right-hand sides (the factor's work about three iterations' worth)
#'   capped at 4096 and at half the
#'   memory budget, where the factor stops early once the trace of the
#'   residual \eqn{K - F F^\top} is below \eqn{\lambda}; for `askotch(variant =
#'   "v1")`: the smallest block of the partition; for `eigenpro()`: one less
#'   than `subsample`; for `eigenpro(version = 3)`: 100 capped at a twelfth
#'   of `subsample`, because with more corrected directions than that the
#'   inexact projection made its iterates settle far from the solution (relative
#'   residual after 20 passes at n = 1e3 / 3e3 / 1e4: 0.91 / 0.63 / 0.11 with
#'   rank 100, 0.073 / 0.057 / 0.044 with subsample / 12); a given rank
#'   must be smaller than `subsample`.
#' @param rho Damping of the Nyström preconditioner: `"damped"` (the default
#'   when `NULL`: \eqn{\lambda} plus the smallest kept Nyström eigenvalue),
#'   `"regularization"` (\eqn{\rho = \lambda}) or a positive number.
#' @param accelerated Use Nesterov acceleration (ASkotch, NSAP) or not
#'   (Skotch, SAP).
#' @param sampling Block sampling scheme: `"uniform"` (default; \eqn{b}
#'   distinct points uniformly) or `"rls"` (\eqn{b} distinct points with
#'   probabilities proportional to approximate ridge leverage scores).
#' @param mu,nu Acceleration parameters; `NULL` uses \eqn{\mu = \lambda} and
#'   \eqn{\nu = n / b} (for `variant = "v1"` see above).
#' @param restart Momentum restart of the accelerated methods (ASkotch, NSAP):
#'   `"auto"` (the default when `NULL`) restarts the momentum whenever, on the
#'   sampled block, it points uphill by more than a tenth of the block step's
#'   descent (the gradient restart of O'Donoghue and Candès, 2015, adapted to
#'   random blocks; deterministic for a given `seed`). With the paper's
#'   \eqn{\mu = \lambda} the momentum is mistuned when \eqn{\lambda} is
#'   small, and without restart the accelerated methods can be much slower
#'   than Skotch / SAP, or not converge; with restart they converged in every
#'   case of the study (`inst/bench/bench_restart.R` in the package sources),
#'   within 1.15 times the plain methods' passes where those were faster,
#'   and kept the speed-up where acceleration helps. With \eqn{\lambda \ge
#'   n/b} and the default `mu` and `nu` the accelerated methods take the
#'   plain step (the momentum, clamped there, only slowed them: 1.5 to 1.6
#'   times the passes), reported as `fit$solver$momentum = FALSE`. `"none"`
#'   is the paper's
#'   iteration unchanged. The fit reports the rule and the number of restarts
#'   in `fit$solver` (`restart`, `restarts`). Not used by `accelerated =
#'   FALSE` or `variant = "v1"`.
#' @param power_iters Number of power iterations for the step size (`NULL`:
#'   10).
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
#' @return A list of class `c("askotch_solver_<name>", ..., "askotch_solver")`.
#'   [solver_info()] lists every solver's options with their defaults and
#'   ranges, as the compiled code declares them.
#' @seealso [krr()]
#' @examples
#' askotch()
#' askotch(block_size = 500, rank = 50, rho = "regularization")
#' askotch(block_size = "paper") # the journal's b = n/100, r = 100
#' askotch(rank = 20, power_iters = 5)
#' askotch(sampling = "rls", rls_subsample = 1000)
#' askotch(variant = "v1", block_size = 500)
#' skotch(rank = 20)
#' sap(block_size = 200)
#' askotch(restart = "none") # the paper's iteration, without restart
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



#' Solvers and their options
#'
#' Lists the solvers compiled into the package with their options: the
#' option tables are declared once, in the C code of each solver, and this
#' is how R reads them (the solver constructors such as [askotch()] map their
#' arguments onto these options).
#'
#' @param solver `NULL` for a summary of all solvers, or the name of one
#'   compiled solver (`"askotch"`, `"askotch_v1"`, `"pcg"`, `"falkon"`,
#'   `"eigenpro"`, `"eigenpro3"`, `"cholesky"`, `"joker"`, `"dcd"`,
#'   `"bcd_nystrom"`, `"bcd_features"`, `"svrg"`).
#' @return For `NULL`, a data frame with one row per solver (`name`,
#'   `title`, `losses`); for a solver name, a data frame with one row per
#'   option: `option`, `type`, `default`, `range` and `doc`. A default of 0
#'   usually means "chosen from the data" (the doc says how).
#' @examples
#' solver_info()
#' solver_info("askotch")
#' @export
solver_info <- function(solver = NULL) {
  info <- askotch_info()$solvers
  if (is.null(solver)) {
    return(data.frame(
      name = names(info),
      title = vapply(info, function(s) s$title, ""),
      losses = vapply(info, function(s) paste(s$losses, collapse = ", "), ""),
      row.names = NULL, stringsAsFactors = FALSE))
  }
  if (!is.character(solver) || length(solver) != 1L || !solver %in% names(info)) {
    abort_askotch(sprintf("`solver` must be one of %s, not %s.",
                          paste0("\"", names(info), "\"", collapse = ", "),
                          fmt_value(solver)), "input")
  }
  o <- info[[solver]]$options
  default <- ifelse(o$type %in% c("choice", "rho"),
                    vapply(seq_along(o$name), function(i)
                      strsplit(o$choices[i], "|", fixed = TRUE)[[1L]][o$default[i] + 1L],
                      ""),
                    vapply(o$default, format, ""))
  default[o$type == "flag"] <- ifelse(o$default[o$type == "flag"] != 0, "TRUE", "FALSE")
  default[o$type == "indices"] <- "(none)"
  range <- ifelse(o$type %in% c("choice", "rho"),
                  gsub("|", ", ", o$choices, fixed = TRUE),
                  ifelse(o$type %in% c("int", "real"),
                         sprintf("%s%s, %s]", ifelse(o$lo_open, "(", "["),
                                 format(o$lo), format(o$hi)), ""))
  range[o$type == "rho"] <- paste(range[o$type == "rho"], "or a positive number")
  data.frame(option = o$name, type = o$type, default = default, range = range,
             doc = o$doc, row.names = NULL, stringsAsFactors = FALSE)
}

# TRUE when a solver of that name is compiled in
solver_compiled <- function(name) name %in% names(askotch_info()$solvers)

# the default of a compiled solver's option (number, logical or choice name)
option_default <- function(solver, option) {
  o <- askotch_info()$solvers[[solver]]$options
  i <- match(option, o$name)
  if (o$type[i] %in% c("choice", "rho")) {
    return(strsplit(o$choices[i], "|", fixed = TRUE)[[1L]][o$default[i] + 1L])
  }
  if (o$type[i] == "flag") return(o$default[i] != 0)
  o$default[i]
}

# Solver specifications by class ---------------------------------------------
#
# Each solver family is one file (solver-<family>.R) with its constructor(s)
# and three methods:
#   solver_c(spec)                 -> list(name = <compiled solver>, options = <named list>)
#   solver_resolved(spec, opts, x) -> spec with the values the fit used
#                                     (opts: resolved options, x: the solver's diagnostics)
#   format(spec)                   -> one line
# and spec_<name>() functions that build the spec a bare solver name stands for.

new_solver_spec <- function(name, fields, family = NULL) {
  structure(c(list(name = name), fields),
            class = unique(c(paste0("askotch_solver_", c(name, family)),
                             "askotch_solver")))
}

solver_c <- function(spec) UseMethod("solver_c")

solver_resolved <- function(spec, options, extras) UseMethod("solver_resolved")

#' @export
solver_resolved.askotch_solver <- function(spec, options, extras) {
  if (!is.null(options$block_size)) spec$block_size <- options$block_size
  # rank 0: no preconditioner (pcg("none"), exact blocks); stays unset
  if (!is.null(options$rank) && options$rank > 0) spec$rank <- as.integer(options$rank)
  spec
}

# Specs saved by askotch 0.1.0 before the solver families had classes of
# their own: give them their family class (nothing else changed in them).
upgrade_spec <- function(spec) {
  fam <- c(askotch = "askotch", skotch = "askotch", askotch_v1 = "askotch",
           nsap = "sap", sap = "sap")[spec$name]
  if (!is.na(fam) && !inherits(spec, paste0("askotch_solver_", fam))) {
    class(spec) <- unique(c(class(spec)[1L], paste0("askotch_solver_", fam),
                            "askotch_solver"))
    if (fam == "askotch" && is.null(spec$variant)) spec$variant <- "journal"
  }
  spec
}

#' @export
solver_c.askotch_solver <- function(spec) {
  up <- upgrade_spec(spec)
  if (identical(class(up), class(spec))) {
    stop("internal: no compiled solver for the spec \"", spec$name, "\"")
  }
  solver_c(up)
}

#' @export
format.askotch_solver <- function(x, ...) {
  up <- upgrade_spec(x)
  if (identical(class(up), class(x))) return(x$name)
  format(up, ...)
}

# drop NULL entries of an options list
compact <- function(x) x[!vapply(x, is.null, TRUE)]

# Check a spec's options in the compiled code (ranges and the rules that hold
# for every data size): classed input errors naming the argument.
check_spec <- function(spec) {
  sc <- solver_c(spec)
  native_check_options(sc$name, sc$options)
  spec
}

# lower-case a choice argument (NULL stays NULL)
lower_choice <- function(x) if (is.character(x) && length(x) == 1L) tolower(x) else x

#' @export
print.askotch_solver <- function(x, ...) {
  cat("<askotch solver> ", format(x), "\n", sep = "")
  invisible(x)
}

# an option for display: "auto" when NULL
auto <- function(v, digits = 4) {
  if (is.null(v)) "auto" else if (is.numeric(v)) format(signif(v, digits)) else format(v)
}

as_solver <- function(solver, call = NULL) {
  if (inherits(solver, "askotch_solver")) return(valid_spec(solver, call))
  ns <- environment(as_solver)
  if (is.function(solver)) {
    # only the package's own constructors may be passed uncalled: the
    # solver names of the spec_<name>() functions that are constructors
    ctors <- sub("^spec_", "", ls(ns, pattern = "^spec_", all.names = TRUE))
    ctors <- ctors[vapply(ctors, exists, TRUE, envir = ns, mode = "function",
                          inherits = FALSE)]
    hit <- Filter(function(f) identical(solver, get(f, envir = ns)), ctors)
    if (length(hit) == 0L) {
      abort_askotch(paste(
        "`solver` must be a solver specification such as askotch(), or one",
        sprintf("of the constructors %s;", paste(ctors, collapse = ", ")),
        "not another function."), "input", call)
    }
    return(get(hit[[1L]], envir = ns)())
  }
  if (is.character(solver) && length(solver) == 1L && !is.na(solver)) {
    f <- get0(paste0("spec_", tolower(solver)), envir = ns, mode = "function",
              inherits = FALSE)
    if (!is.null(f)) return(f())
    known <- sort(sub("^spec_", "", ls(ns, pattern = "^spec_", all.names = TRUE)))
    abort_askotch(sprintf(paste(
      "`solver` must be one of %s or a solver specification such as",
      "askotch(), not \"%s\"."), paste0("\"", known, "\"", collapse = ", "),
      solver), "input", call)
  }
  abort_askotch(sprintf(paste(
    "`solver` must be a solver specification such as askotch(), skotch() or",
    "cholesky(), not %s."), fmt_value(solver)), "input", call)
}

# An object of class "askotch_solver" made by hand (not by a constructor)
# must still map onto a compiled solver with valid options.
valid_spec <- function(solver, call = NULL) {
  ok <- tryCatch({
    sc <- solver_c(solver)
    is.list(sc) && is.character(sc$name) && length(sc$name) == 1L &&
      sc$name %in% names(askotch_info()$solvers) && is.list(sc$options)
  }, error = function(e) FALSE)
  if (!isTRUE(ok)) {
    abort_askotch(sprintf(paste(
      "`solver` is not a valid solver specification (class %s, name %s):",
      "make one with askotch(), pcg(), falkon(), eigenpro(), cholesky(),",
      "sap(), skotch() or joker()."),
      paste0("\"", class(solver), "\"", collapse = "/"),
      fmt_value(solver$name)), "input", call)
  }
  tryCatch(check_spec(solver), askotch_error = function(e) {
    e$call <- call
    stop(e)
  }, error = function(e) abort_askotch(sprintf(
    "`solver` has invalid options: %s", conditionMessage(e)), "input", call))
}

is_svrg <- function(spec) inherits(spec, "askotch_solver_svrg")

# What a spec brings to a fit's settings (methods in the solver files):
# spec_features() the features code of the operator for n points (0: the
# exact kernel; M > 0 random features; -1 the linear operator, see
# set_features()); solver_max_iter() a bound on the iterations the spec
# sets itself (Inf: none, max_passes bounds the fit); check_solver_settings()
# refuses the settings its fits cannot take (classed input errors naming the
# argument).
spec_features <- function(spec, n) UseMethod("spec_features")
#' @export
spec_features.default <- function(spec, n) 0
solver_max_iter <- function(spec) UseMethod("solver_max_iter")
#' @export
solver_max_iter.default <- function(spec) Inf
check_solver_settings <- function(spec, lspec, kern, precision, device,
                                  validation, call = NULL) {
  UseMethod("check_solver_settings")
}
#' @export
check_solver_settings.default <- function(spec, lspec, kern, precision, device,
                                          validation, call = NULL) {
  invisible(TRUE)
}

# The choices of a compiled solver's choice option (its option table's
# "a|b|c"), so that R checks an argument against the rule C applies.
option_choices <- function(solver, option) {
  o <- askotch_info()$solvers[[solver]]$options
  ch <- o$choices[match(option, o$name)]
  if (is.na(ch)) stop("internal: ", solver, " has no choice option ", option)
  strsplit(ch, "|", fixed = TRUE)[[1L]]
}
