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
#' responses) from a kept solver state. Kernels: [kernels], combined by
#' `+` and `*` ([kernel_algebra]); solvers:
#' [askotch()] and the others of [solvers], with their options listed by
#' [solver_info()]; resources: [askotch_threads()], [askotch_devices()]. See
#' `vignette("getting-started", package = "askotch")`.
#'
#' @section Options:
#' * `askotch.exact_max_n` (default 50000): largest n for which [krr()]
#'   computes exact residuals (one extra kernel pass each) to confirm
#'   convergence and report the final residual. The duality gap of
#'   [kernel_machine()]'s other losses is always computed exactly.
#' * `askotch.tune_exact_max_n` (default 2000): largest n for which the
#'   likelihood, [vcov.krr()] and [logLik.krr()] are exact; above, the
#'   hyperparameters are estimated on a subsample of that size and the
#'   likelihood is the stochastic estimate of [krr_loglik()].
#' * `askotch.ml_method` (`"subsample"`, the default, or `"stochastic"`):
#'   with `"stochastic"`, estimates above that size are refined on all
#'   points (see [krr()], *Choosing lambda and the bandwidth*);
#'   `askotch.ml_stochastic_maxit` (20) and `askotch.ml_stochastic_rank`
#'   (500) bound its iterations and set its preconditioner's rank.
#' * `askotch.vcov_probes` (default 200): probes of the stochastic
#'   likelihood behind [vcov.krr()] above the exact size.
#' * `askotch.composite_ml_points` (default 1000): the rows on which the
#'   hyperparameters of a composite kernel ([kernel_algebra]) are estimated.
#' * `lambda = "cv"` ([krr()], [kernel_machine()]): `askotch.cv_folds`
#'   (default 5) folds; for the losses other than the squared, the folds'
#'   relative duality gap `askotch.cv_gap_tol` (1e-3) and
#'   `askotch.cv_patience` (2): the path ends once that many values in a row
#'   have a CV error more than a standard error above the least (`Inf`: the
#'   whole path).
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
