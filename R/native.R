# The native boundary: the only file of R/ that calls .Call. Each wrapper
# hands its arguments to one registered C entry point (src/init.c) with the
# types that entry point checks. The codes of precision, device, kernel and
# reduction are not written here: they are read from the compiled tables
# (ffi_info(), declared once in src/glue/r_util.c, src/glue/r_kernel.c and
# src/glue/r_dist.c).

.askotch_env <- new.env(parent = emptyenv())

# What the compiled code declares, read once per session: the solvers with
# their options and capabilities, the losses, the kernels and the codes.
askotch_info <- function() {
  if (is.null(.askotch_env$info)) .askotch_env$info <- .Call(ffi_info)
  .askotch_env$info
}

# The compiled code of `name` in one of the code tables ("precision",
# "device", "reduce") or the kernel list ("kernel").
native_code <- function(table, name) {
  info <- askotch_info()
  code <- if (table == "kernel") match(name, info$kernels$name) - 1L else
    unname(info$codes[[table]][name])
  if (length(code) != 1L || is.na(code)) {
    stop("internal: ", table, " '", name, "' is not compiled in")
  }
  as.integer(code)
}

kernel_args <- function(kernel) {
  # a composite kernel (R/kernel-algebra.R) carries its numbers
  if (!is.null(kernel$spec)) return(list(kernel$code, kernel$spec))
  list(native_code("kernel", kernel$name), as.numeric(kernel$bandwidth))
}

# Kernels on host data -------------------------------------------------------

# K(x1, x2) v, matrix-free, in the given precision on the given device
native_kernel_apply <- function(x1, x2, v, kernel, precision = "double",
                                device = "cpu", threads = 0L) {
  k <- kernel_args(kernel)
  .Call(ffi_kernel_apply, x1, x2, v, k[[1L]], k[[2L]],
        native_code("precision", precision), native_code("device", device),
        as.integer(threads))
}

# K(x1, x2) formed, on the CPU
native_kernel_matrix <- function(x1, x2, kernel, precision = "double", threads = 0L) {
  k <- kernel_args(kernel)
  .Call(ffi_kernel_matrix, x1, x2, k[[1L]], k[[2L]],
        native_code("precision", precision), as.integer(threads))
}

# K(x1, x2) and its derivatives, formed on the CPU in double from the
# compiled kernel list: an n1 x n2 x length(deriv) array, slice c for the
# code deriv[c] (0: the kernel; -1: d/dlog bandwidth; j: d/dlog ell_j, the
# length scale of column j, the points already divided by their scales);
# deriv a two-column matrix: slice c the second derivative of row c's codes
native_kernel_deriv <- function(x1, x2, kernel, deriv) {
  k <- kernel_args(kernel)
  d <- if (is.matrix(deriv)) matrix(as.integer(deriv), ncol = ncol(deriv)) else
    as.integer(deriv)
  .Call(ffi_kernel_deriv, x1, x2, k[[1L]], k[[2L]], d)
}

# sum(w * dK_c) for each code deriv[c] (as above) of the points x against
# themselves, w = scale W + U U^T, without forming the derivative matrices
# or w: tr(w dK_c) for a symmetric n x n W; the pairs' statistics read from
# tstat (kernel_stat_matrix() of x) when given (a composite kernel: scale 1,
# no U, no tstat); on `threads` threads, the same bits on any number
native_kernel_deriv_dot <- function(x, kernel, deriv, W, scale = 1, U = NULL, threads = 1L,
                                    tstat = NULL) {
  k <- kernel_args(kernel)
  storage.mode(W) <- "double"
  if (!is.null(U)) storage.mode(U) <- "double"
  .Call(ffi_kernel_deriv_dot, x, k[[1L]], k[[2L]], as.integer(deriv), W, as.double(scale), U,
        tstat, as.integer(threads))
}

# K(x_i, x_i) for the rows of x (the prior variances; 1 for a listed kernel)
native_kernel_diag <- function(x, kernel) {
  k <- kernel_args(kernel)
  .Call(ffi_kernel_diag, x, k[[1L]], k[[2L]])
}

# The statistic of component `comp` (1-based) of a composite kernel between
# the rows of x1 and x2 (squared distance, L1 distance, dot product or
# squared great-circle km; src/core/kcomp_math.h)
native_kcomp_stat <- function(x1, x2, kernel, comp) {
  k <- kernel_args(kernel)
  .Call(ffi_kcomp_stat, x1, x2, k[[1L]], k[[2L]], as.integer(comp - 1L))
}

# The kernel's rate a of its bandwidth, as the compiled code forms it
native_kernel_rate <- function(kernel) {
  k <- kernel_args(kernel)
  .Call(ffi_kernel_rate, k[[1L]], k[[2L]])
}

# The median distance between the rows of x (Euclidean, or L1; of the
# positive distances when the median is 0): 0 when no two rows differ
native_median_distance <- function(x, l1) .Call(ffi_median_distance, x, isTRUE(l1))

# The kernel's values at the statistics t (squared Euclidean distances, or
# L1 distances for an L1 kernel), in double, t's dimensions kept; deriv = -1:
# the derivative in the log bandwidth
native_kernel_eval <- function(kernel, t, deriv = 0L) {
  k <- kernel_args(kernel)
  if (!is.double(t)) storage.mode(t) <- "double"
  .Call(ffi_kernel_eval, k[[1L]], k[[2L]], t, as.integer(deriv))
}

# The symmetric eigendecomposition as R's eigen() returns it (values
# decreasing, vectors), by the compiled, interruptible eigensolver
native_sym_eigen <- function(A, threads = 0L) {
  .Call(ffi_sym_eigen, A, as.integer(threads))
}

# The upper Cholesky factor of A (chol()'s), NULL where the factorisation
# breaks down (a pivot not positive, or a value not finite); a factor with
# pivots at rounding level is returned (gp_loglik_exact() checks them)
native_chol <- function(A, threads = 0L) .Call(ffi_chol, A, as.integer(threads))

# The Gaussian posterior of the prior covariance K and Gaussian sites with
# precisions tau and shifts nu (expectation propagation's step; without
# var, the Laplace approximation's Newton step): list(var, mean, alpha, L),
# L the upper Cholesky factor of I + S^1/2 K S^1/2
native_gp_sites <- function(K, tau, nu, var = TRUE, threads = 0L) {
  .Call(ffi_gp_sites, K, as.numeric(tau), as.numeric(nu), as.integer(var), as.integer(threads))
}

# Expectation propagation's tilted moments for the logistic likelihood:
# an n x 3 matrix of log Z, mean and variance of sigma(y f) N(f; m, v) / Z
native_ep_tilted <- function(y, m, v) {
  .Call(ffi_ep_tilted, as.numeric(y), as.numeric(m), as.numeric(v))
}

# The greedy partial Cholesky factor of K(x, x) (pivot weights pw or NULL)
native_pivoted_cholesky <- function(x, kernel, pw, rank, stop_trace, tiny,
                                    threads = 0L) {
  k <- kernel_args(kernel)
  .Call(ffi_pivoted_cholesky, x, k[[1L]], k[[2L]], pw, as.integer(rank),
        as.numeric(stop_trace), as.numeric(tiny), as.integer(threads))
}

# z(x)^T theta for the M random features of a kernel drawn from seed
native_features_apply <- function(x, theta, kernel, features, seed,
                                  precision = "double", threads = 0L,
                                  device = "cpu") {
  k <- kernel_args(kernel)
  .Call(ffi_features_apply, x, theta, k[[1L]], k[[2L]], as.numeric(features),
        as.numeric(seed), native_code("precision", precision),
        native_code("device", device), as.integer(threads))
}

# Solver states ------------------------------------------------------------

# A new compiled solver state (an external pointer with a finalizer).
native_fit_init <- function(x, y, kernel, lambda, precision, device, solver,
                            options, loss, loss_param, features, intercept,
                            obs_weights, threads) {
  k <- kernel_args(kernel)
  .Call(ffi_fit_init, x, y, k[[1L]], k[[2L]], lambda,
        native_code("precision", precision), native_code("device", device),
        solver, options, loss, loss_param, as.numeric(features),
        as.numeric(intercept), as.numeric(obs_weights), as.integer(threads))
}

# The bound of the dual box |alpha_i| <= bound of a loss at lambda (Inf:
# unbounded; NA: a loss without support vectors to count)
native_loss_bound <- function(loss, param, lambda) {
  .Call(ffi_loss_bound, loss, as.numeric(param), as.numeric(lambda))
}

native_check_options <- function(solver, options) {
  .Call(ffi_check_options, solver, options)
}

# What a compiled solver with these options can do: list(lambda_path)
native_options_caps <- function(solver, options) {
  .Call(ffi_options_caps, solver, options)
}

# The stop policy of the next solve on a state: the numbers of stop_numbers()
native_fit_stop <- function(state, rule) {
  .Call(ffi_fit_stop, state, as.numeric(rule))
}

# Up to `iters` iterations under the state's stop policy: list(diag, reason,
# exact, floor, objective)
native_fit_run <- function(state, iters) {
  .Call(ffi_fit_run, state, as.integer(iters))
}

native_fit_weights <- function(state) .Call(ffi_fit_weights, state)
native_fit_centers <- function(state) .Call(ffi_fit_centers, state)
native_fit_options <- function(state) .Call(ffi_fit_options, state)
native_fit_features_theta <- function(state) .Call(ffi_fit_features_theta, state)
# the solver's own result vectors (a named list; svrg: sigma2, objective, gradient)
native_fit_vectors <- function(state) .Call(ffi_fit_vectors, state)
native_fit_free <- function(state) .Call(ffi_fit_free, state)
native_fit_alive <- function(state) .Call(ffi_fit_alive, state)

native_fit_set_targets <- function(state, y) .Call(ffi_fit_set_targets, state, y)
native_fit_set_weights <- function(state, w) .Call(ffi_fit_set_weights, state, w)
native_fit_set_rows <- function(state, rows) .Call(ffi_fit_set_rows, state, rows)
native_fit_products <- function(state) .Call(ffi_fit_products, state)
native_fit_set_lambda <- function(state, lambda) {
  .Call(ffi_fit_set_lambda, state, as.numeric(lambda))
}

# Threads and devices --------------------------------------------------------

# The default thread count; n >= 1 sets it first (capped by the cores in C)
native_threads <- function(n = 0L) .Call(ffi_threads, as.integer(n))
# The BLAS's thread count (NA without thread control); n >= 1 sets it first
native_blas_threads <- function(n = 0L) .Call(ffi_blas_threads, as.integer(n))
# CUDA devices: name, memory, cc; attributes status ("ok", "not_built",
# "device") and why
native_devices <- function() .Call(ffi_devices)

# MPI ----------------------------------------------------------------------

native_mpi_built <- function() .Call(ffi_mpi_built)
native_mpi_init <- function() .Call(ffi_mpi_init)
native_mpi_finalize <- function() .Call(ffi_mpi_finalize)
native_mpi_use <- function(on) .Call(ffi_mpi_use, on)
native_mpi_bytes <- function() .Call(ffi_mpi_bytes)
native_mpi_allreduce <- function(x, op) {
  .Call(ffi_mpi_allreduce, as.numeric(x), native_code("reduce", op))
}
native_mpi_bcast <- function(raw, root) .Call(ffi_mpi_bcast, raw, as.integer(root))

# The stochastic Gaussian-process likelihood on all points (krr_gp_slq):
# nk = 0, 1 or ncol(x) kernel gradients (-1: none), pc a kept
# preconditioner list(U, s) or NULL, alpha a warm start or NULL
native_gp_slq <- function(x, Y, kernel, lambda, nk, probes, rank, maxit, tol,
                          seed, fd_step = 2e-5, pc = NULL, alpha = NULL,
                          device = "cpu", threads = 0L) {
  k <- kernel_args(kernel)
  .Call(ffi_gp_slq, x, Y, k[[1L]], k[[2L]], as.numeric(lambda), as.integer(nk),
        as.numeric(c(probes, rank, maxit, tol, seed, fd_step)), pc, alpha,
        native_code("device", device), as.integer(threads))
}
