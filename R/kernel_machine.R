# kernel_machine(): kernel machines with any loss of the compiled table -------

#' Fit a kernel machine: Huber, SVR, SVM, squared hinge, logistic
#'
#' Fits
#' \deqn{\min_\theta \frac12 \|\theta\|^2 + \frac1\lambda \sum_{i=1}^n
#'   \ell(y_i, F_i), \qquad F(x) = \sum_i \alpha_i k(x, x_i),}{
#'   min 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, F_i),  F(x) = sum_i
#'   alpha_i k(x, x_i),}
#' for a loss \eqn{\ell} given by a [loss object][losses], through its dual
#' in \eqn{\alpha}, by default by dual coordinate descent on the kernel
#' matrix ([dcd()]) while it fits in memory and by Joker ([joker()])
#' above; the
#' support vector machine's cost is \eqn{C = 1/\lambda}. It shares
#' [krr()]'s arguments (kernels, bandwidth, precision, device, stopping
#' rules, validation, progress) and its errors; with `loss =
#' loss_squared()` it *is* [krr()] (the same solve, the same weights).
#'
#' @section Tasks:
#' * Regression losses (`loss_squared()`, `loss_huber()`, `loss_svr()`): a
#'   numeric response (a matrix: several outputs solved jointly). Without
#'   an intercept the targets are centred (their mean is added back to
#'   predictions), as in [krr()]: for Huber and SVR this takes out the level
#'   that the penalised function would otherwise have to fit (the median
#'   would be more robust for Huber; the mean keeps `loss_squared()` equal
#'   to [krr()]). With `intercept = TRUE` the targets are not centred.
#' * Classification losses (`loss_hinge()`, `loss_squared_hinge()`,
#'   `loss_logistic()`): a factor (or logical or character vector, or a
#'   numeric vector of -1 and +1). Two classes: one column of targets, -1
#'   for the first level and +1 for the second. More than two: one-vs-rest,
#'   one \eqn{\pm 1} column per class, all columns solved jointly; the
#'   predicted class has the largest decision value. Classification targets
#'   are never centred.
#'
#' @section Intercept:
#' `intercept = TRUE` adds a *penalised* constant \eqn{b} to the model,
#' \eqn{F(x) = \sum_i \alpha_i k(x, x_i) + b}, by fitting with the kernel
#' \eqn{k(x, x') + c} (`c = 1`, or `intercept = c` for another positive
#' constant); then \eqn{b = c \sum_i \alpha_i} and the penalty includes
#' \eqn{b^2 / (2c)}. This is the bound-constraint formulation of kernlab's
#' `ksvm(type = "C-bsvc")` and `"eps-bsvr"` (Mangasarian and Musicant),
#' *not* LIBSVM's unpenalised bias with the equality constraint
#' \eqn{\sum_i \alpha_i = 0} (`e1071::svm()`, `kernlab::ksvm(type =
#' "C-svc")`): the two give close but not identical fits.
#'
#' @section GP classification:
#' The logistic fit is the posterior mode of a Gaussian-process classifier
#' whose latent function has the prior \eqn{GP(0, k / \lambda)}. With
#' `posterior = "laplace"` the fit carries the Laplace approximation around
#' that mode (Rasmussen and Williams 2006, sec. 3.4): `predict(type =
#' "prob")` averages the class probability over the latent posterior (at any
#' \eqn{n}: the latent variance is that of a weighted GP regression, computed
#' exactly up to 10 000 points, above by the Nyström bracket's lower end),
#' `predict(type = "decision", se.fit = TRUE)` gives the latent standard
#' deviation, and [logLik()][logLik.kernel_machine] the approximate marginal
#' likelihood, by which `lambda` (default, or `"ml"`) and the bandwidth
#' (default `"ml"`; the kernel `"auto"` is the Gaussian) are chosen on a
#' subsample of at most 1000 points (option `askotch.laplace_tune_max_n`;
#' Newton's method for the mode at each evaluation). A composite kernel's
#' ([kernel_algebra]) hyperparameters given as `"ml"` are estimated with
#' \eqn{\lambda} by the same marginal likelihood (their estimates in
#' `fit$tuning$composite`); the others are taken as given. More than two classes:
#' one binary classifier per class (one-vs-rest) sharing \eqn{\lambda} and
#' the kernel, their probabilities normalised to sum to one.
#'
#' `posterior = "ep"` replaces the Laplace approximation by expectation
#' propagation (Minka 2001; Rasmussen and Williams 2006, sec. 3.6), which
#' matches the moments of each point's likelihood term instead of expanding
#' around the mode. The Laplace approximation's Gaussian sits at the mode,
#' nearer zero than the posterior mean, so its probabilities are too close to
#' 1/2; EP's are better calibrated (Kuss and Rasmussen 2005; Nickisch and
#' Rasmussen 2008), at the cost of ten to twenty-five sweeps of
#' \eqn{O(n^3)} dense linear algebra (all sites updated together, damped
#' when the updates oscillate, started from the Laplace approximation) after
#' the fit: up to 5000 points (option `askotch.ep_max_n`). `lambda` and the
#' bandwidth (or a composite kernel's `"ml"` hyperparameters) unless given
#' maximise EP's own approximation of the marginal
#' likelihood, which is more accurate than the Laplace approximation's
#' (Kuss and Rasmussen 2005), on the same subsample, from the Laplace
#' search's optimum (L-BFGS-B with the exact gradient at EP's fixed point,
#' Rasmussen and Williams 2006, eq. 5.27), times a penalised-complexity
#' prior on the latent scale \eqn{s_f = \lambda^{-1/2}} (for a composite,
#' on each term's \eqn{\sqrt{a_t / \lambda}}, \eqn{a_t} its amplitude: the
#' term's latent sd when its components have unit variance):
#' exponential with \eqn{P(s_f > 30) = 0.05} (Simpson et al. 2017; option
#' `askotch.ep_sd_prior` for 30). Without it, on data the kernel separates
#' the marginal likelihood keeps growing (towards its supremum) as
#' \eqn{\lambda \to 0}, and the search ends at its bound.
#' Each step of that search is an EP run on the subsample, started from the
#' previous step's sites; a step where EP does not converge counts as
#' failed, and if every step fails (or the time limit has passed before
#' the search) the Laplace search's values are kept, as
#' `fit$tuning$optim$message` says. Option `askotch.ep_tune = FALSE`
#' keeps the Laplace search's values.
#' `logLik()` is EP's approximation of the marginal likelihood (`NA` in the
#' rare case that a point's cavity distribution at the fixed point is not a
#' proper Gaussian, where it is not defined). The decision
#' values and classes of `predict()` are EP's posterior mean, while the fit's
#' weights (and `fitted()`, `summary()`'s objective) remain the posterior
#' mode's. The sweeps stop when no site changes by more than 1e-4
#' (relative; option `askotch.ep_tol`), at most 200 (option
#' `askotch.ep_max_sweeps`; a classed warning when reached).
#' @section Random features:
#' `features = M` replaces the kernel by \eqn{M} random Fourier features
#' \eqn{z(x)} (\eqn{K \approx Z Z^T}) drawn from `seed`: an inexact but
#' cheaper fit whose model is \eqn{\theta = Z^T \alpha} (\eqn{M \times m}),
#' kept in the fit instead of the training points (predictions \eqn{z(x)^T
#' \theta}); the fit is \eqn{O(M)} in size, not \eqn{O(n)}, so `fitted()`
#' and [refit()] are not available. As \eqn{M} grows the fit converges to
#' the exact one (at rate \eqn{O(1/\sqrt M)}). Every listed kernel has
#' random features, and so has a composite kernel ([kernel_algebra]) of
#' stationary components (the listed kernels, the Matérn of any
#' smoothness, the periodic kernel on one column); linear, polynomial and
#' great-circle components have none. Memory beyond the data and
#' the \eqn{n \times m} weights: the \eqn{M \times p} frequencies,
#' \eqn{\theta}, and for a block of \eqn{b} points its \eqn{b \times M}
#' features and \eqn{b \times b} kernel block, \eqn{O(Mp + bM + b^2)};
#' a block costs \eqn{O(bMp + b^2 M)} (default \eqn{b = 512}).
#'
#' @section Stopping and trace:
#' As in [krr()], with the loss's criterion: the relative residual for the
#' squared loss, the relative duality gap \eqn{(P - D) / \max(|P|, |D|)}
#' otherwise, where \eqn{P} is the primal objective above and \eqn{D} the
#' dual objective (\eqn{D \le P}, equal at the solution). The gap is
#' computed exactly (one kernel pass) when the solver's running estimate
#' falls below `tol` (at most once per pass), at passes 1, 2, 4, 8, ...
#' (the estimate is a projected-gradient norm, not on the gap's scale) and
#' at the end, for every \eqn{n} (option `askotch.exact_max_n` applies to
#' the squared loss only); the fit stops only on the exact gap. The trace
#' records `primal`, `dual` and `gap` at each exact check; `plot()` shows
#' them. The default `tol` on the gap is `1e-6` (double) or `1e-4`
#' (single); for the squared loss it is [krr()]'s.
#'
#' @inheritParams krr
#' @param loss A [loss object][losses] such as `loss_huber(delta = 1)`, a
#'   loss constructor, or a loss name (`"squared"`, `"huber"`, `"svr"`,
#'   `"hinge"`, `"squared_hinge"`, `"logistic"`, with default parameters).
#' @param lambda Regularisation \eqn{\lambda > 0} (\eqn{C = 1/\lambda}).
#'   Default: for the squared loss chosen by maximum likelihood as in
#'   [krr()] (which also takes `"ml"`, `"gcv"`, `"loo"`, `"cv"`, a path and
#'   `"paper"` for \eqn{10^{-6} n}); `1` (LIBSVM's and kernlab's default
#'   \eqn{C = 1}) for the others. For every loss `"cv"` chooses
#'   \eqn{\lambda} by 5-fold cross-validation (option `askotch.cv_folds`)
#'   and a vector of values is a path to choose from the same way: for the
#'   losses other than the squared, the held-out share of misclassified
#'   points (classification) or mean squared error (regression), the path
#'   solved from the largest \eqn{\lambda} down, warm-started,
#'   each fold's fit to a relative duality gap of at most `tol` or
#'   \eqn{10^{-3}} (option `askotch.cv_gap_tol`), whichever is larger (the
#'   held-out errors then differ from those of fully converged fits by far
#'   less than their own sampling error; the final fit uses `tol`). With
#'   [dcd()] the folds are the columns of one solve on one kernel matrix,
#'   each holding its own points out, and the path ends early: once each of
#'   the last two values (option `askotch.cv_patience`; `Inf` for the whole
#'   path) has a CV error above the least so far by more than that error's
#'   standard error, the remaining smaller \eqn{\lambda} (the slowest
#'   fits, further up the far side of the CV curve) are not solved and are
#'   `NA` in the table. `"cv"`'s path is \eqn{C = 1/\lambda}
#'   from 0.1 to 1000 (nine values). The table is `fit$tuning$path`. The
#'   GP classifiers (`posterior`) take a number, `"paper"`, or `NULL` /
#'   `"ml"` (their marginal likelihood), not `"cv"` or a path.
#' @param solver A solver specification or name; `NULL` (default) or
#'   `"auto"` choose as [krr()] does for the squared loss ([cholesky()] up to
#'   5000 points, then PCG, then ASkotch); for the other losses [dcd()] up
#'   to \eqn{2 \cdot 10^4} points (option `askotch.auto_dual_max_n`) when
#'   its \eqn{n \times n} kernel matrix fits the memory budget, else
#'   [joker()].
#'   The solver must support the loss ([solver_info()] lists them).
#' @param tol Tolerance on the loss's criterion; see *Stopping and trace*.
#'   With `loss_squared()` also the automatic rules of [krr()] by name
#'   (`"uniform"`, `"average"`).
#' @param features `NULL` (the exact kernel) or a number \eqn{M} of random
#'   Fourier features (inexact mode).
#' @param intercept `FALSE`, `TRUE` (a penalised intercept with `c = 1`) or
#'   a positive constant `c`; see *Intercept*.
#' @param posterior (by name only) `"none"` (default), `"laplace"` or
#'   `"ep"`: with `loss = loss_logistic()`, read the fit as the posterior mode
#'   of a Gaussian-process classifier and add its Laplace approximation, or
#'   its expectation-propagation approximation; see *GP classification*.
#' @param probability (by name only) `TRUE`: class probabilities for any
#'   classification loss by Platt scaling, as LIBSVM's `-b 1`: the fit's
#'   decision values are mapped by \eqn{1 / (1 + e^{A f + B})}, with
#'   \eqn{A, B} fitted by maximum likelihood (Platt's smoothed targets,
#'   Newton's method as in Lin, Lin and Weng 2007) to out-of-fold decision
#'   values of 5-fold cross-validation with the same kernel, \eqn{\lambda},
#'   loss and solver, one sigmoid per one-vs-rest column (so the fit costs
#'   about six fits). `predict(type = "prob")` then returns them;
#'   `fit$platt` holds \eqn{A, B}.
#' @param ... For `kernel_machine.formula()`, arguments passed to
#'   `kernel_machine.default()`. Unknown arguments are an error.
#' @return An object of class `c("kernel_machine", "krr")` with the
#'   components of a [krr()] fit (`weights` are the dual variables
#'   \eqn{\alpha}, or \eqn{\theta} with `features`) and `loss`, `intercept`
#'   (the constant \eqn{c}, 0 for none), `bias` (\eqn{b = c \sum_i
#'   \alpha_i} per column), `features` (\eqn{M}, 0 for none), `primal`,
#'   `dual`, `gap` (at the last check) and `support` (support-vector counts,
#'   for the losses that have them). Methods: [predict()][predict.kernel_machine],
#'   `print()`, [summary()][summary.kernel_machine], [plot()][plot.kernel_machine],
#'   `coef()`, `fitted()`, `residuals()`, [refit()].
#' @seealso [losses], [joker()], [krr()]
#' @references Kuss, M. and Rasmussen, C. E. (2005). Assessing approximate
#'   inference for binary Gaussian process classification. *Journal of
#'   Machine Learning Research* 6, 1679-1704.
#'
#'   Lin, H.-T., Lin, C.-J. and Weng, R. C. (2007). A note on
#'   Platt's probabilistic outputs for support vector machines. *Machine
#'   Learning* 68, 267-276.
#'
#'   Minka, T. P. (2001). Expectation propagation for approximate Bayesian
#'   inference. In *Proceedings of UAI 2001*, 362-369.
#'
#'   Nickisch, H. and Rasmussen, C. E. (2008). Approximations for binary
#'   Gaussian process classification. *Journal of Machine Learning Research*
#'   9, 2035-2078.
#'
#'   Platt, J. C. (1999). Probabilistic outputs for support vector machines
#'   and comparisons to regularized likelihood methods. In *Advances in Large
#'   Margin Classifiers*, MIT Press.
#'
#'   Rasmussen, C. E. and Williams, C. K. I. (2006). *Gaussian Processes for
#'   Machine Learning*. MIT Press.
#' @examples
#' set.seed(1)
#' x <- matrix(runif(400), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(200, sd = 0.1)
#' # the squared loss is krr()
#' fit <- kernel_machine(x, y, loss = loss_squared(), lambda = 2,
#'                       solver = cholesky(), threads = 1)
#' fit
#' # Huber regression, robust to outliers
#' y[1:10] <- y[1:10] + 5
#' fit_h <- kernel_machine(x, y, loss = loss_huber(delta = 0.5),
#'                         lambda = 0.5, threads = 1)
#' summary(fit_h)
#' # a support vector machine (C = 1 / lambda = 10)
#' cls <- factor(ifelse(x[, 1] + x[, 2] > 1, "a", "b"))
#' svm <- kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.1,
#'                       threads = 1)
#' table(predict(svm, x), cls)
#' plot(svm)
#' # with Platt-scaled class probabilities (5-fold cross-validation)
#' svm_p <- kernel_machine(x, cls, loss = loss_hinge(), lambda = 0.1,
#'                         probability = TRUE, threads = 1)
#' head(predict(svm_p, x, type = "prob"))
#' @export
kernel_machine <- function(x, ...) UseMethod("kernel_machine")

#' @rdname kernel_machine
#' @export
kernel_machine.default <- function(x, y, loss = loss_squared(), kernel = "auto",
                                   bandwidth = "ml", lambda = NULL,
                                   solver = NULL, precision = "double",
                                   device = "auto", max_passes = 100,
                                   tol = NULL, time_limit = Inf,
                                   validation = NULL, standardize = "auto",
                                   seed = NULL, progress = interactive(),
                                   threads = NULL, mem_limit = NULL,
                                   keep_state = FALSE, features = NULL,
                                   intercept = FALSE, weights = NULL, ...,
                                   posterior = "none", probability = FALSE) {
  ecall <- krr_call(sys.call())
  check_no_dots(list(...), "kernel_machine", ecall)
  if (missing(y)) abort_askotch("`y` is missing.", "input", ecall)
  loss <- as_loss(loss, ecall)
  posterior <- check_posterior(posterior, loss, intercept, features, weights, ecall)
  check_flag(probability, "probability", ecall)
  args <- fit_args(environment(), bandwidth_given = !missing(bandwidth))
  fit <- fit_model(x, y, loss, args, machine = TRUE,
                   call = tryCatch(match.call(kernel_machine.default, ecall),
                                   error = function(e) ecall),
                   ecall = ecall)
  if (probability) fit <- platt_calibrate(fit, ecall)
  fit
}

#' @rdname kernel_machine
#' @param formula A model formula `response ~ predictors` (see [krr()]).
#' @param data A data frame for the formula method.
#' @param subset,na.action,offset As for [krr()]'s formula method.
#' @export
kernel_machine.formula <- function(formula, data = NULL, subset, weights,
                                   na.action, offset, validation = NULL,
                                   ...) {
  formula_fit(match.call(expand.dots = FALSE, envir = parent.frame()),
              parent.frame(), validation,
              kernel_machine.default, krr_call(sys.call()),
              match.call(expand.dots = TRUE, envir = parent.frame()), ...)
}

# Argument checks and defaults ----------------------------------------------

# posterior = "laplace" or "ep" needs the logistic loss on the exact kernel,
# without an intercept or observation weights (R/laplace.R, R/ep.R)
check_posterior <- function(posterior, loss, intercept, features, weights, call) {
  posterior <- check_choice(posterior, c("none", "laplace", "ep"), "posterior", call)
  if (posterior != "none" &&
      (loss$name != "logistic" || !isFALSE(intercept) || !is.null(features) ||
       !is.null(weights))) {
    abort_askotch(sprintf(paste(
      "posterior = \"%s\" needs loss = loss_logistic() on the exact kernel,",
      "without `intercept`, `features` or `weights`."), posterior), "input", call)
  }
  posterior
}

# TRUE for a GP classifier's posterior (R/laplace.R, R/ep.R)
is_gp_classifier <- function(posterior) isTRUE(posterior %in% c("laplace", "ep"))

# The kernel_machine fields ---------------------------------------------------

# Methods ---------------------------------------------------------------------

#' Predict from a kernel machine
#'
#' @param object A `"kernel_machine"` fit.
#' @param newdata New points as for [predict.krr()]; `NULL`: the training
#'   points (not for a random-features fit, which does not keep them).
#' @param type `"response"` (numeric predictions for regression, the class
#'   for classification), `"class"`, `"decision"` (the decision values
#'   \eqn{F(x)}, including the bias and, for regression, the target mean)
#'   or `"prob"` (the logistic loss, or a fit with `probability = TRUE`).
#' @param device As for [predict.krr()].
#' @param se.fit For a `posterior = "laplace"` or `"ep"` fit and `type =
#'   "decision"`: also return the latent function's posterior standard
#'   deviation.
#' @param ... Unused; any argument given here is an error naming it.
#' @return As [predict.krr()]; for `type = "prob"` the probability of the
#'   second level: \eqn{1 / (1 + e^{A F + B})} for a fit with `probability =
#'   TRUE` (Platt scaling), else \eqn{1 / (1 + e^{-F})} (binary), or a matrix with one
#'   column per class (one-vs-rest). For a `posterior = "laplace"` or `"ep"`
#'   fit the probability is averaged over the latent posterior \eqn{N(\mu, v)},
#'   \eqn{\int \sigma(f) N(f; \mu, v) df} by numerical integration (exact to
#'   rounding; Rasmussen and Williams 2006, eq. 3.25);
#'   with `se.fit = TRUE` a list of `fit` (the latent mean \eqn{\mu}, the
#'   decision values) and `se.fit` (\eqn{\sqrt v}). *Note*: with more than two classes the
#'   \eqn{K} one-vs-rest logistic models are fitted independently, so their
#'   probabilities \eqn{1 / (1 + e^{-F_k})} need not sum to one; they are
#'   normalised over the classes (divided by their sum), a heuristic, not
#'   the probabilities of a multinomial model.
#' @examples
#' fit <- kernel_machine(Species ~ ., data = iris, loss = loss_logistic(),
#'                       lambda = 0.1, threads = 1)
#' head(predict(fit, iris, type = "prob"))
#' table(predict(fit, iris), iris$Species)
#' # a GP classifier: probabilities averaged over the latent posterior
#' gpc <- kernel_machine(Species ~ ., data = iris[51:150, ], loss = loss_logistic(),
#'                       posterior = "laplace", threads = 1)
#' head(predict(gpc, iris[51:150, ], type = "prob"))
#' str(predict(gpc, iris[51:53, ], type = "decision", se.fit = TRUE))
#' # expectation propagation: probabilities further from 1/2 where the data
#' # are clear
#' gpc_ep <- kernel_machine(Species ~ ., data = iris[51:150, ], loss = loss_logistic(),
#'                          posterior = "ep", threads = 1)
#' head(predict(gpc_ep, iris[51:150, ], type = "prob"))
#' @export
predict.kernel_machine <- function(object, newdata = NULL,
                                   type = c("response", "class", "decision",
                                            "prob"),
                                   device = NULL, se.fit = FALSE, ...) {
  validate_krr(object, sys.call(), "object")
  local_blas_threads(gp_threads(object))
  check_no_dots(list(...), "predict", sys.call())
  check_flag(se.fit, "se.fit", sys.call())
  gpc <- is_gp_classifier(object$posterior)
  if (se.fit && (!gpc || !identical(type[1L], "decision"))) {
    abort_askotch(paste(
      "`se.fit` needs a posterior = \"laplace\" or \"ep\" fit and type = \"decision\"."),
      "input", sys.call())
  }
  if (!is.character(type) || length(type) < 1L) {
    abort_askotch(paste("`type` must be \"response\", \"class\",",
                        "\"decision\" or \"prob\"."), "input")
  }
  if (length(type) > 1L) type <- type[1L]
  type <- check_choice(type, c("response", "class", "decision", "prob"), "type")
  if (is.null(newdata) && fit_features(object) > 0) {
    abort_askotch(paste(
      "`newdata` is needed: a random-features fit does not keep its",
      "training points."), "input")
  }
  if (gpc && (type == "prob" || se.fit)) return(laplace_predict(object, newdata, se.fit))
  # EP's decision values and classes: its posterior mean
  if (identical(object$posterior, "ep")) object <- ep_as_mean(object)
  if (type != "prob") {
    return(predict.krr(object, newdata, type = type, device = device))
  }
  s <- predict.krr(object, newdata, type = "decision", device = device)
  if (!is.null(object$platt)) return(platt_prob(object, s))
  if (fit_loss(object)$name != "logistic") {
    abort_askotch(sprintf(paste(
      "`type = \"prob\"` needs a fit with the logistic loss or `probability = TRUE`",
      "(the %s loss has no probabilities of its own); use type = \"decision\" for",
      "the decision values."), fit_loss(object)$name), "input")
  }
  p <- stats::plogis(s)
  if (is.matrix(p)) p <- p / rowSums(p)
  p
}

#' @export
print.kernel_machine <- function(x, ...) {
  validate_krr(x, sys.call(), "x")
  cat("Kernel machine (askotch)\n")
  cat(sprintf("  %s, n = %d, p = %d%s\n", task_label(x), x$n, x$p,
              if (x$task == "multioutput") sprintf(", %d outputs", x$m) else ""))
  tn <- x$tuning
  rule <- if (!is.null(tn$lambda_rule) && tn$lambda_rule != "fixed") {
    paste0("; ", lambda_rule_label(tn))
  }
  cat("  loss: ", format(fit_loss(x)), ", lambda = ", format(signif(x$lambda, 4)),
      " (C = ", format(signif(1 / x$lambda, 4)), rule, ")\n", sep = "")
  cat("  ", format(x$kernel), model_text(x), "\n", sep = "")
  cat("  solver: ", format(x$solver), ", ", x$precision, " precision on ",
      x$device, "\n", sep = "")
  cat(sprintf("  %s after %d iterations (%.3g passes, %.3g s); %s\n",
              if (x$converged) "converged" else "not converged",
              x$iterations, x$passes, x$seconds, km_crit_text(x)))
  if (!is.null(x$support)) {
    cat(sprintf("  %d support vectors\n", x$support$any))
  }
  invisible(x)
}

model_text <- function(x) {
  paste0(if (fit_features(x) > 0) sprintf(", %d random features",
                                          as.integer(x$features)) else "",
         if (fit_intercept(x) > 0) sprintf(", penalised intercept (c = %s)",
                                           format(x$intercept)) else "")
}

km_crit_text <- function(x) {
  if (fit_loss(x)$name == "squared") return(resid_text(x))
  if (!is.na(x$resid_exact)) {
    sprintf("relative duality gap %.3g", x$resid_exact)
  } else {
    sprintf("estimated relative duality gap %.3g", x$resid_est)
  }
}

#' Summarise a kernel machine
#'
#' @param object A `"kernel_machine"` fit.
#' @param ... Unused.
#' @return An object of class `c("summary.kernel_machine", "summary.krr")`:
#'   the fields of [summary.krr()] and `loss`, `primal`, `dual`, `gap` (at
#'   the last check), `intercept`, `bias`, `features` and, for the losses
#'   with support vectors (hinge, squared hinge, SVR, Huber), `support`: per
#'   output column the number of support vectors (\eqn{\alpha_i \ne 0}) and
#'   of those at the bound of the dual box (\eqn{|\alpha_i| = 1/\lambda}
#'   for hinge and SVR, \eqn{\delta/\lambda} for Huber, where the residual
#'   is in the linear part of the loss), and `any` (points that are a
#'   support vector of some column).
#' @examples
#' fit <- kernel_machine(mpg ~ ., data = mtcars, lambda = 1, threads = 1)
#' summary(fit)
#' @export
summary.kernel_machine <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  s <- summary.krr(object)
  s$title <- "Kernel machine (askotch)"
  if (fit_loss(object)$name != "squared") s$crit_name <- "Duality gap"
  s$loss <- format(fit_loss(object))
  s$primal <- object$primal
  s$dual <- object$dual
  s$gap <- object$gap
  s$intercept <- fit_intercept(object)
  s$bias <- object$bias
  s$features <- fit_features(object)
  s$support <- object$support
  sv <- object$support
  extra <- c("Loss" = s$loss)
  if (s$features > 0) extra <- c(extra, "Random features" = format(s$features))
  if (s$intercept > 0) {
    extra <- c(extra, "Intercept" = sprintf(
      "penalised, c = %s; bias %s", format(s$intercept),
      paste(format(signif(s$bias, 4)), collapse = ", ")))
  }
  if (length(s$primal) == 1L && !is.na(s$primal)) {
    extra <- c(extra, "Objective" = sprintf(
      "primal %s, dual %s, relative gap %s", format(signif(s$primal, 7)),
      format(signif(s$dual, 7)), format(signif(s$gap, 3))))
  }
  if (!is.null(sv)) {
    extra <- c(extra, "Support vectors" = sprintf(
      "%d of %d%s", sv$any, object$n,
      if (is.finite(sv$bound)) sprintf(" (at the bound %s: %s)",
                                      format(signif(sv$bound, 4)),
                                      paste(sv$at_bound, collapse = ", ")) else ""))
  }
  if (identical(object$posterior, "laplace")) {
    # log q costs a Cholesky (n <= 2000) or tens of kernel passes: up to
    # option askotch.gp_summary_max_n, as the GP statistics of krr()
    ll <- if (object$n <= getOption("askotch.gp_summary_max_n", 5000)) {
      sprintf("; log marginal likelihood %s", format(signif(laplace_loglik(object)$loglik, 6)))
    } else ""
    extra <- c(extra, "Posterior" = paste0("Laplace approximation (GP classifier)", ll))
  }
  if (identical(object$posterior, "ep")) {
    extra <- c(extra, "Posterior" = sprintf(paste(
      "expectation propagation (GP classifier), %s sweeps; log marginal likelihood %s"),
      paste(object$ep$sweeps, collapse = ", "), format(signif(sum(object$ep$logz), 6))))
  }
  if (!is.null(object$platt)) {
    extra <- c(extra, "Probabilities" = sprintf(
      "Platt scaling on %d-fold out-of-fold decision values (A = %s, B = %s)",
      object$platt$folds, paste(format(signif(object$platt$A, 4)), collapse = ", "),
      paste(format(signif(object$platt$B, 4)), collapse = ", ")))
  }
  s$extra <- extra
  if (!is.null(s$hyper)) {
    s$hyper_by <- if (identical(object$tuning$search, "ep")) {
      "EP marginal likelihood with the scale prior"
    } else "Laplace approximate marginal likelihood"
  }
  class(s) <- c("summary.kernel_machine", "summary.krr")
  s
}

#' Convergence plots for a kernel machine
#'
#' Plots the loss's criterion (the relative duality gap; the relative
#' residual for the squared loss) against passes and seconds, the running
#' estimate as a line and the exact values at checks as points, and the
#' primal and dual objectives at the checks.
#'
#' @param x A `"kernel_machine"` fit.
#' @param which `"trace"`, the only panel set of a kernel machine (the
#'   model diagnostics of [plot.krr()] are for Gaussian-process regressions).
#' @param ... Passed to [graphics::plot()].
#' @return `x`, invisibly.
#' @examples
#' fit <- kernel_machine(mpg ~ ., data = mtcars, lambda = 1, threads = 1,
#'                       solver = askotch(block_size = 8))
#' plot(fit)
#' @export
plot.kernel_machine <- function(x, which = "trace", ...) {
  validate_krr(x, sys.call(), "x")
  if (!identical(which, "trace")) {
    abort_askotch(paste("`which` must be \"trace\" for a kernel machine: its plots",
                        "are the solver's convergence."), "input", sys.call())
  }
  tr <- x$trace
  old <- graphics::par(mfrow = c(1L, 3L))
  on.exit(graphics::par(old))
  crit <- fit_loss(x)$criterion
  plot_criterion(x, tr$passes, "passes", crit, ...)
  graphics::title(sprintf("%s loss, %s", fit_loss(x)$name, x$solver$name))
  plot_criterion(x, tr$seconds, "seconds", crit, ...)
  ok <- !is.na(tr$primal) & !is.na(tr$dual)
  if (any(ok)) {
    graphics::matplot(tr$passes[ok], cbind(tr$primal[ok], tr$dual[ok]),
                      type = "o", pch = c(20, 1), lty = 1,
                      col = c("black", "red"), xlab = "passes",
                      ylab = "objective", ...)
    graphics::legend("right", c("primal", "dual"), pch = c(20, 1),
                     col = c("black", "red"), bty = "n", cex = 0.8)
  } else {
    graphics::plot.new()
    graphics::title("no objective values recorded")
  }
  invisible(x)
}

#' @export
fitted.kernel_machine <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  if (fit_features(object) > 0) {
    abort_askotch(paste(
      "A random-features fit does not keep its training points: use",
      "predict(fit, x) with the training x."), "input")
  }
  NextMethod()
}

#' @export
residuals.kernel_machine <- function(object, ...) {
  validate_krr(object, sys.call(), "object")
  if (fit_features(object) > 0) fitted.kernel_machine(object)
  NextMethod()
}
