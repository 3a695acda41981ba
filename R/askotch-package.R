#' askotch: Scalable Kernel Ridge Regression with ASkotch
#'
#' Fits kernel ridge regression (the posterior mean of a Gaussian process) on
#' thousands to millions of points without forming the kernel matrix, using
#' the ASkotch solver: approximate sketch-and-project with Nyström-
#' preconditioned random blocks and Nesterov acceleration. The numerical work
#' runs in a compiled C core (OpenBLAS, LAPACK, OpenMP) and, when built with
#' the CUDA toolkit, on NVIDIA GPUs, in single or double precision.
#'
#' Start with [krr()], then [predict()][predict.krr], [summary()][summary.krr]
#' and [plot()][plot.krr]; [refit()] solves again (a new `lambda`, new
#' responses) from a kept solver state. Kernels: [kernels]; solvers:
#' [askotch()] and the others of [solvers], with their options listed by
#' [solver_info()]; resources: [askotch_threads()], [askotch_devices()]. See
#' `vignette("getting-started", package = "askotch")`.
#'
#' @section Options:
#' * `askotch.exact_max_n` (default 50000): largest n for which [krr()]
#'   computes exact residuals (one extra kernel pass each) to confirm
#'   convergence and report the final residual. The duality gap of
#'   [kernel_machine()]'s other losses is always computed exactly.
#'
#' @references
#' Rathore, P., Frangella, Z., Yang, J., Dereziński, M. and Udell, M. (2025).
#' Have ASkotch: A Neat Solution for Large-scale Kernel Ridge Regression.
#' arXiv:2407.10070.
#' @docType package
#' @name askotch-package
#' @aliases askotch-package
#' @keywords internal
#' @useDynLib askotch, .registration = TRUE
NULL
