# krr(): fitting ------------------------------------------------------------------

#' Fit kernel ridge regression
#'
#' Solves the kernel ridge regression system \eqn{(K + \lambda I) w = y} for the
#' weights \eqn{w}, where \eqn{K} is the kernel matrix of the (standardised)
#' training points: exactly (Cholesky) for small \eqn{n}, and above with the
#' ASkotch solver, which never forms \eqn{K} and needs only \eqn{O(n)}
#' memory. Predictions at new points \eqn{x} are \eqn{\sum_i w_i k(x, x_i)}
#' (plus the mean of the training targets for regression): the posterior mean
#' of a Gaussian process with covariance \eqn{s^2 k} and noise variance
#' \eqn{s^2 \lambda}, i.e. \eqn{\lambda} is the noise-to-signal variance
#' ratio (multiplying \eqn{y} by a constant changes neither it nor the fit).
#' By default \eqn{\lambda} is chosen by maximum marginal likelihood.
#'
#' @section Tasks:
#' * numeric vector `y`: regression. Targets are centred; the mean is added
#'   back by [predict()][predict.krr].
#' * numeric matrix `y`: multi-output regression, each column centred, all
#'   columns solved jointly (one right-hand side each).
#' * factor with 2 levels: binary classification with targets -1 (first level)
#'   and +1 (second level); the predicted class is the sign of the score.
#' * factor with more than 2 levels: one-vs-all classification, one column of
#'   +1/-1 targets per level, solved jointly; the predicted class has the
#'   largest score.
#' * character or logical `y` is treated as `factor(y)` (levels sorted).
#'   Unused factor levels are dropped.
#'
#' @section Preprocessing:
#' With `standardize = TRUE` each column of `x` is centred by its training mean
#' and divided by its training standard deviation ([sd()]); constant columns
#' (values equal up to rounding relative to their magnitude: a column scaled
#' by 1e-13 is not constant) are only centred. The computation is safe for
#' data of any magnitude (`x * 1e200` gives the same fit as `x`). The same
#' transformation is applied to new data in [predict()][predict.krr]. The
#' bandwidth is chosen *after* standardisation. With `standardize = "joint"`
#' the columns are centred and divided by one common scale, which keeps the
#' geometry of spatial coordinates (an isotropic kernel stays isotropic).
#'
#' Before the solve, settings the working precision cannot represent are
#' refused with an error of class `askotch_error_input` that suggests a
#' remedy: `lambda`, the kernel's rate (e.g. \eqn{1/(2\sigma^2)}) or the
#' squared distances between rows outside the precision's normal range
#' (e.g. `bandwidth = 1e-300`, `1e-40` in single precision, unstandardised
#' `x * 1e25` in single precision), and kernels that are numerically the
#' identity or all ones for the data and bandwidth (judged on up to 2000
#' sampled pairs of distinct rows).
#'
#' Standardisation fixes an implicit length scale per column (its
#' standard deviation): with an isotropic kernel every column varies on the
#' same scale after it. `bandwidth = "ard"` estimates one length scale
#' \eqn{\ell_j} per (standardised) column instead.
#'
#' @section Choosing lambda and the bandwidth:
#' \eqn{\lambda} is the ratio of the noise variance to the signal variance
#' \eqn{s^2} of the Gaussian-process model \eqn{y - \bar y \sim N(0, s^2 (K
#' + \lambda I))} (see [logLik.krr()]); \eqn{s^2} is estimated by maximum
#' likelihood and reported by [summary()][summary.krr].
#' * `lambda = NULL` (default, squared loss): maximum marginal likelihood,
#'   on all points for \eqn{n \le} 2000 (option `askotch.tune_exact_max_n`)
#'   and above on a random subsample of 2000 points (option
#'   `askotch.tune_subsample`): as a noise-to-signal ratio, \eqn{\lambda}
#'   does not depend on \eqn{n}, so the subsample's estimate transfers.
#'   With `options(askotch.ml_method = "stochastic")` the subsample's
#'   estimate (of \eqn{\lambda}, and of the bandwidth or length scales
#'   with `bandwidth = "ml"` / `"ard"`) is then refined on all points by
#'   L-BFGS-B on the stochastic likelihood of [krr_loglik()] with the
#'   probes fixed (tens of kernel passes per evaluation, at most 20
#'   iterations, stopping once steps fall within the estimate's error:
#'   about a minute at \eqn{n = 5000} on two cores, growing as
#'   \eqn{n^2}). For
#'   a fixed bandwidth one symmetric eigendecomposition \eqn{K = Q L Q^T}
#'   gives the likelihood, GCV and LOO for every \eqn{\lambda} in
#'   \eqn{O(n)} (\eqn{O(n^2)} for LOO), so this costs about one
#'   eigendecomposition more than the solve. For classification the +1/-1
#'   targets (one column per class for more than two classes) are treated as
#'   regression targets sharing \eqn{\lambda}.
#' * `"ml"`: the same, named. `"gcv"`: generalised cross-validation,
#'   `"loo"`: exact leave-one-out error (both on the same subsample above
#'   2000 points). Both are minimised globally over \eqn{[10^{-8},
#'   10^4]} and, on small samples or data with near-duplicate points, can
#'   pick a nearly interpolating \eqn{\lambda} (GCV's known failure, Wahba
#'   1990, ch. 4); maximum likelihood is the default because it is more
#'   stable. With `precision = "single"` a \eqn{\lambda} chosen by these
#'   rules is at least \eqn{10^{-5}}.
#' * `"cv"`: `K`-fold cross-validation (5 folds, option `askotch.cv_folds`)
#'   over the path `10^seq(-6, 1, by = 0.5)`; a numeric vector of several
#'   values: 5-fold CV over that path. Folds of at most 2000 points are
#'   solved exactly (one eigendecomposition per fold serves every
#'   \eqn{\lambda}); larger ones by the fit's solver along the path from
#'   the largest \eqn{\lambda}, each solve warm-started from the previous
#'   one with the solver's \eqn{\lambda}-free setup kept (as [refit()]).
#' * `"paper"`: \eqn{10^{-6} n}, the setting of the ASkotch paper's large
#'   benchmarks (nearly interpolating; not a good choice for noisy data).
#' * A number: that \eqn{\lambda}.
#'
#' `bandwidth = "ml"` maximises the likelihood over the bandwidth (and
#' \eqn{\lambda} with the rules `NULL` / `"ml"`; for the others the
#' bandwidth is chosen first, jointly with the ML \eqn{\lambda}) by
#' L-BFGS-B on the log scale with the exact gradient, from the median
#' heuristic; `"ard"` maximises over one length scale per column (the
#' kernel then sees \eqn{x_j / \ell_j} with bandwidth 1; `fit$length_scales`
#' holds them and [predict()][predict.krr] applies them). Both work on the
#' same subsample above 2000 points and cost \eqn{O(n^3)} per likelihood
#' evaluation on it. The choice is recorded in `fit$tuning`: the rule, the
#' points used, the likelihood search (`optim`: its maximum, evaluations
#' and message) and, where \eqn{\lambda} was chosen on the kernel
#' matrix's eigendecomposition (a given bandwidth, up to 2000 tuning
#' points) or by cross-validation, a table `path` of \eqn{\lambda}, log
#' likelihood, signal variance, effective degrees of freedom, residual sum
#' of squares, GCV, LOO and CV errors (not with a noise model, whose
#' criteria differ; after a search over the bandwidth, where it would take
#' an eigendecomposition of its own, [krr_loglik()] evaluates the
#' likelihood at any \eqn{\lambda}).
#'
#' @section Choosing the kernel and the scaling:
#' With every default (`kernel = "auto"`, `bandwidth = "ml"`, `standardize
#' = "auto"`) the model itself is chosen by maximum marginal likelihood, as
#' a spatial statistician compares covariance models: on a random
#' subsample of at most 500 of the tuning points (option
#' `askotch.select_subsample`), first the input scaling (each column by its
#' standard deviation, or all by one scale) with the Matérn 3/2 kernel, then
#' the Matérn 1/2 and 5/2 and Gaussian kernels at the chosen scaling, each
#' with its own maximum-likelihood bandwidth and \eqn{\lambda}. The three
#' candidates of the largest likelihoods (option
#' `askotch.select_finalists`) are then estimated on all tuning points
#' (below), and the largest likelihood there wins. Every candidate
#' has the same number of hyperparameters, so this is also the choice by
#' AIC or BIC. `fit$tuning$models` lists the candidates with their
#' likelihoods (`loglik` on the subsample, `loglik_all` on all tuning
#' points). The scaling is chosen only when the columns differ in
#' spread, the bandwidth is isotropic and `standardize = "auto"`; the
#' kernel only with `kernel = "auto"`.
#'
#' This default was chosen by held-out error, predictive density and
#' interval coverage on real data sets (spatial, environmental and
#' engineering; `system.file("bench", "RESULTS.md", package = "askotch")`),
#' where it beat the median-heuristic Gaussian kernel on four of six sets,
#' and `fields::spatialProcess()` on North American rainfall. It costs
#' likelihood evaluations of \eqn{O(m^3)} each (\eqn{m \le} 2000 tuning
#' points) before the solve: on two cores about 1 s at \eqn{n = 500} and
#' 6-10 s from \eqn{n \approx 1500} on. The papers' setting is one argument
#' away: `bandwidth = "median"` (with `kernel = "auto"`, the Gaussian
#' kernel and the median heuristic). Classification (whose +1/-1 targets the
#' Gaussian likelihood does not model; on Fashion-MNIST the likelihood's
#' choice gave the median heuristic's accuracy with a nearly interpolating
#' \eqn{\lambda}), distributed fits, fits with observation weights,
#' [svrg()] and [kernel_machine()]'s losses other than the squared use the
#' Gaussian kernel with the median bandwidth by default.
#'
#' @section Mean functions (universal kriging):
#' `mean = ~ z1 + z2` gives the Gaussian process a trend: each output is
#' \eqn{y = F\beta + f + e}, \eqn{F} the design of the one-sided formula
#' ([model.matrix()]: an intercept unless `- 1`, factors as contrasts,
#' `poly()` and the like allowed), over `x`'s columns by name (the matrix
#' method) or over `data`'s columns (the formula method: also variables that
#' are not predictors; `subset` and `na.action` apply to them). `~ 1` (or
#' `NULL`, the default) is the constant mean, estimated by the targets'
#' mean. With \eqn{A = K + \lambda W^{-1}} the coefficients are the
#' generalised least-squares estimate \eqn{\hat\beta = (F^T A^{-1} F)^{-1}
#' F^T A^{-1} y}, with covariance \eqn{\hat s^2 (F^T A^{-1} F)^{-1}}, and
#' the kernel weights solve \eqn{A w = y - F\hat\beta}: the fit's solver
#' solves \eqn{A^{-1} F} with the targets as \eqn{q} more right-hand sides,
#' at any \eqn{n}. [predict()][predict.krr] adds \eqn{f(x)^T\hat\beta} and
#' its standard errors the universal-kriging term \eqn{\hat s^2 u^T (F^T
#' A^{-1} F)^{-1} u}, \eqn{u = f(x) - F^T A^{-1} k_x}, the uncertainty of
#' the estimated trend (Cressie 1993, sec. 3.4). [summary()][summary.krr],
#' [tidy()][tidy.krr] and [coef()][coef.krr] give the coefficient table;
#' \eqn{\lambda} and the kernel's scale are chosen by the likelihood with
#' \eqn{\beta} profiled out (`likelihood = "ml"`), or by the restricted
#' likelihood of the \eqn{n - q} error contrasts, which accounts for the
#' degrees of freedom the trend uses (`likelihood = "reml"`; Harville 1974;
#' Rasmussen and Williams 2006, eq. 2.45; with `~ 1` or no `mean` the
#' constant is then estimated by GLS too), on all points up to 2000 and on
#' the subsample above, as without a trend; GCV and LOO also account for the
#' trend. Not with classification, cross-validated \eqn{\lambda}, a
#' `validation` set, inducing-point or random-feature solvers, [refit()],
#' [vcov()][vcov.krr] / [confint()][confint.krr] of the hyperparameters, or
#' distributed fits (classed errors say so).
#'
#' @section Heteroscedastic noise:
#' `noise = ~ z1 + z2` models the noise variance of point \eqn{i} as
#' \eqn{\hat s^2 \lambda \exp(z_i^T\gamma)}, log-linear in the design of the
#' one-sided formula (its columns centred and scaled, so that \eqn{\lambda}
#' is the noise ratio at the covariates' means; `splines::ns(t, df = 3)` or
#' `poly(t, 2)` give a smooth log variance), its variables found as for
#' `mean`. \eqn{\gamma} is estimated with \eqn{\lambda}, the kernel's
#' scale (kept when given) and the mean function (a GLS constant at least)
#' by maximum (or restricted) likelihood with the exact gradient, on the
#' tuning points. The fit is then the weighted fit with observation weights
#' \eqn{\exp(-z_i^T\hat\gamma)} (see *Observation weights*; [weights()][weights.krr] returns
#' them), and [predict()][predict.krr]'s prediction intervals and
#' `residual.scale` use each new point's own noise variance.
#' [summary()][summary.krr] and [tidy()][tidy.krr] report the log noise
#' variance's coefficients in the data's units. `lambda` must be chosen by
#' maximum likelihood or given; not with `weights`.
#'
#' `noise = ~ gp(z1, z2)` (the formula's only term) makes the log noise
#' variance a smooth of the covariates instead: \eqn{\hat s^2 \lambda
#' \exp(h(z_i))} with \eqn{h} a Gaussian process of mean 0, standard
#' deviation `sd` and a length scale, on the covariates centred and scaled
#' (Matérn 3/2; `gp(z, kernel = "rbf")`, `"matern12"` or `"matern52"` for
#' another), the second smooth of a location-scale model (as mgcv's
#' `gaulss` family or brms' `sigma ~ gp()`). Given the hyperparameters, the
#' latent values at the training points are their posterior mode (Newton
#' steps with the likelihood's exact Hessian); the hyperparameters (the
#' process's sd and length scale, \eqn{\lambda} and the kernel's scale)
#' maximise the Laplace approximation of the marginal likelihood (at the
#' mode, with the likelihood's exact Hessian; Rasmussen and Williams 2006,
#' sec. 3.4) times a penalised-complexity prior on the process's length
#' scale and sd (Simpson et al. 2017; Fuglstad et al. 2019), which shrinks
#' towards constant noise: by default P(length scale < 0.5) = 0.05, in units
#' of the covariates' sd, and P(sd > 1) = 0.05; `gp(z, prior = c(range = ,
#' sd = ))` sets the two scales, `gp(z, prior = FALSE)` drops the prior. The
#' search is Nelder–Mead from the constant-noise estimates; the kernel is
#' chosen under constant noise. Each step is \eqn{O(m^3)} on at most \eqn{m}
#' = 300 of the tuning rows (option `askotch.noise_gp_max_n`; every point
#' then gets the latent's posterior mean), and the search takes a few
#' hundred of them. New points' noise variance is the log-normal mean of the latent's
#' Laplace posterior, so intervals widen where the noise level is
#' uncertain. [logLik()][logLik.krr] is the Laplace approximation (when all
#' rows were used); [summary()][summary.krr] and [tidy()][tidy.krr] report
#' the log noise variance where the latent is 0, the process's sd and its
#' length scale in each covariate's units; [vcov()][vcov.krr] is not
#' available. One response, a listed kernel and one bandwidth (not
#' `"ard"`).
#'
#' @section Observation weights:
#' `weights = w` makes the noise variance of point \eqn{i} equal to
#' \eqn{\lambda / w_i} (a Gaussian process with heteroscedastic noise; the
#' weighted least-squares criterion \eqn{\sum_i w_i (y_i - f(x_i))^2 +
#' \lambda \|f\|^2}): the weights solve \eqn{(K + \lambda W^{-1}) \alpha =
#' y}, \eqn{W = \mathrm{diag}(w)}. They are a noise model, not frequency
#' weights; for Gaussian noise the two agree in the *predictions* (k
#' observations of variance \eqn{\lambda} at one point carry the
#' information of their mean with variance \eqn{\lambda / k}), but not in
#' the coefficients (one per distinct row), nor in the preprocessing
#' (standardisation and the median bandwidth see each row once).
#' Regression targets are centred by their weighted mean. The solvers work on the equivalent symmetric system \eqn{(D K D +
#' \lambda I) v = D y}, \eqn{\alpha = D v}, \eqn{D = W^{1/2}}, so every
#' solver applies unchanged (the reported residual is that of this scaled
#' system); for [falkon()] the fit is weighted Nyström KRR,
#' \eqn{(K_{nm}^T W K_{nm} + \lambda K_{mm}) a = K_{nm}^T W y}
#' (`eigenpro(version = 3)` refuses weights).
#' Points of weight 0 are dropped before fitting (their indices are kept in
#' `fit$zero_weight`). Weights are available for the squared loss only;
#' [weights()][weights.krr] returns them.
#'
#' @section Stopping:
#' The solver runs in slices of about half a second. After each slice the
#' trace records the solver's running residual estimate. The fit stops when
#' * the relative residual \eqn{\|(K + \lambda I) w - y\| / \|y\|} is at
#'   most `tol` (reason `"tol"`): once the running estimate is below `tol`, the
#'   exact residual (one extra pass over the kernel) is computed, at most once
#'   per pass, and must be below `tol` too. With several outputs (multi-output
#'   regression, one-vs-rest classification) the exact residual is that of
#'   the worst column, \eqn{\max_j \|r_j\| / \|y_j\|}, so that `tol` bounds
#'   every output's error; the running estimate is the Frobenius one,
#'   \eqn{\|R\|_F / \|Y\|_F}. For more than 50 000 training
#'   points (option `askotch.exact_max_n`) the exact check is skipped and the
#'   estimate alone decides;
#' * `max_passes` passes over the data are done (reason `"max_passes"`; one
#'   pass is \eqn{n / b} iterations with block size \eqn{b});
#' * `time_limit` seconds have elapsed (reason `"time_limit"`; the
#'   iterations stop early enough for the final exact residual check, one
#'   kernel pass, to fit in the limit, or that check is skipped when it would
#'   take more than half of it); or
#' * a direct solver ([cholesky()]) has finished (reason `"exact"`); or
#' * [svrg()] has run its `epochs` epochs (reason `"max_iter"`; one epoch
#'   is one iteration of its compiled solver); or
#' * the residual has reached the rounding floor of the precision (reason
#'   `"precision"`; full-kernel iterative solvers and [falkon()] in single
#'   precision, unweighted squared loss, `tol > 0`): a solver computing with a kernel matrix \eqn{\tilde K}
#'   whose entries carry rounding errors reaches a true relative residual of
#'   about \eqn{\|(\tilde K - K) w\| / \|y\|} and no lower. In single
#'   precision this is often above \eqn{10^{-5}}; it is measured (the
#'   single- against the double-precision product, two kernel passes) when
#'   the running estimate has not improved by 10\% over the last
#'   max(3, passes / 10) passes (checked once a pass), and the fit stops when the
#'   exact residual is within twice that floor (in double precision the
#'   model \eqn{2^{-53} (\|K\|_F / \sqrt{n} + \lambda) \|w\|} stands
#'   in for the measurement). The floor is stored in `resid_floor`.
#'
#' For the inducing-point solvers ([falkon()] and `eigenpro(version = 3)`)
#' the residual is that of the (smaller) inducing-point normal equations
#' \eqn{(K_{nm}^T K_{nm} + \lambda K_{mm}) a = K_{nm}^T y}, and `x`,
#' `weights` refer to the centres; Falkon's rounding floor in single precision
#' is that of its two kernel products, \eqn{\|\tilde K_{nm}^T \tilde K_{nm} a -
#' K_{nm}^T K_{nm} a\| / \|K_{nm}^T y\|}, measured the same way.
#'
#' The exact final relative residual is computed (and stored) whenever
#' \eqn{n \le} 50 000. `converged` is `TRUE` for reasons `"tol"` and
#' `"exact"`, and for `"precision"` when `tol` was the automatic one. A fit
#' that stops for another reason with `tol > 0` signals a
#' warning of class `askotch_warning_convergence` (`tol = 0` asks for a fixed
#' budget and does not warn).
#'
#' **What the residual guarantees.** With \eqn{r = y - (K + \lambda I) w} and
#' \eqn{f^*} the exact solution, the fitted function satisfies
#' \deqn{|f(x) - f^*(x)| \le \|r\| / (2 \sqrt{\lambda})}{|f(x) - f*(x)| <= ||r|| / (2 sqrt(lambda))}
#' at every point \eqn{x} (all the package's kernels have \eqn{k(x, x) = 1};
#' the error \eqn{f - f^*} has squared RKHS norm
#' \eqn{r^T (K + \lambda I)^{-1} K (K + \lambda I)^{-1} r \le \|r\|^2 / (4\lambda)}).
#' The default `tol` makes this bound 0.001 standard deviations of the
#' response (of each output column): \eqn{tol = 2 \sqrt{\lambda}\, 0.001\,
#' sd(y) / \|y - \bar y\|}{tol = 2 sqrt(lambda) 0.001 sd(y) / ||y - mean(y)||}
#' (with several outputs the smallest of the columns' values),
#' kept within \eqn{[10^{-12}, 10^{-3}]} in double precision and at least
#' \eqn{10^{-5}} in single precision (whose rounding errors prevent smaller
#' residuals). More passes would not change the predictions materially:
#' the statistical error of the fit is far larger. [summary()][summary.krr]
#' prints the bound the final residual gives (line "Accuracy"). It applies to
#' the full-kernel solvers; for the inducing-point solvers and random
#' features the residual is that of another system and the default `tol`
#' only sets its scale. Interrupting (Ctrl-C / Esc) frees all memory held
#' by the solver.
#'
#' **A cheaper rule: `tol = "average"`.** At the training points the
#' error is \eqn{f(X) - f^*(X) = K (K + \lambda I)^{-1} r}, and the
#' eigenvalues of \eqn{K (K + \lambda I)^{-1}} are below 1, so
#' \deqn{\sqrt{\frac{1}{n} \sum_i (f(x_i) - f^*(x_i))^2} \le \|r\| / \sqrt{n}}{
#' rms_i |f(x_i) - f*(x_i)| <= ||r|| / sqrt(n)}
#' whatever \eqn{\lambda}. `tol = "average"` stops when this is 0.001
#' standard deviations of the response: \eqn{tol = 0.001 \sqrt{n}\,
#' sd(y) / \|y - \bar y\|}{tol = 0.001 sqrt(n) sd(y) / ||y - mean(y)||},
#' which is 0.001 for centred targets (kept within the same range as the
#' default's). The default's \eqn{tol} is smaller by the factor
#' \eqn{2 \sqrt{\lambda / n}}, which is small at large \eqn{n}, so this
#' rule stops after fewer passes. What it guarantees is weaker: the
#' fitted values, not the function at every point. For new points drawn
#' like the training points the same root mean square is its sample
#' estimate (an approximation, not a bound), and at a single new point only
#' the default's bound holds (summary() prints both, lines "Accuracy" and
#' "Accuracy (fitted)"; for a weighted fit the second is the weighted root
#' mean square). The default stays the rule that bounds the error at every
#' point; the two are compared on held-out data in the package's benchmark
#' results (`system.file("bench", "RESULTS.md", package = "askotch")`,
#' "Stopping").
#'
#' @param x A numeric matrix or data frame of numeric columns (n rows), or a
#'   formula for `krr.formula()`.
#' @param y Response: numeric vector or matrix, factor, character or logical
#'   vector; see *Tasks*.
#' @param kernel `"auto"` (default), a kernel name (`"rbf"`, `"laplace"`,
#'   `"matern12"`, `"matern32"`, `"matern52"`) or a kernel object such as
#'   [kernel_rbf()]. `"auto"` chooses among Matérn 3/2, 1/2, 5/2 and the
#'   Gaussian kernel by maximum likelihood when the bandwidth is `"ml"` or
#'   `"ard"`, and is the Gaussian kernel otherwise; see *Choosing the
#'   kernel and the scaling*.
#' @param bandwidth `"ml"` (default: maximum likelihood), `"ard"` (a
#'   maximum-likelihood length scale per column), `"median"` (the median
#'   heuristic, see [kernels]) or a positive number; see *Choosing lambda
#'   and the bandwidth*. When given explicitly it overrides the bandwidth
#'   stored in a kernel object. For classification, with observation
#'   `weights`, with [svrg()] and for [kernel_machine()]'s losses other than
#'   the squared, the default is `"median"` (and `kernel = "auto"` the
#'   Gaussian kernel).
#' @param lambda Ridge parameter \eqn{\lambda > 0} of \eqn{(K + \lambda I) w =
#'   y} (absolute, not divided by n): the noise-to-signal variance ratio.
#'   `NULL` (default): maximum likelihood; or `"ml"`, `"gcv"`, `"loo"`,
#'   `"cv"`, a vector of values to choose from by cross-validation, or
#'   `"paper"` (\eqn{10^{-6} n}); see *Choosing lambda and the bandwidth*.
#' @param solver `"auto"` (default): [cholesky()] for \eqn{n \le} 5000
#'   (option `askotch.auto_exact_max_n`) when the \eqn{n \times n} factor
#'   fits in `mem_limit`; `pcg("greedy_cholesky")` (its rank chosen by cost
#'   and by \eqn{\lambda}, within half the memory budget) for \eqn{n \le}
#'   200 000 (option `askotch.auto_pcg_max_n`), and up to 500 000 (1 000 000
#'   on a GPU) when the memory budget allows it a rank of at least 1000
#'   (option `askotch.auto_pcg_large`; at \eqn{n = 4 \times 10^5} on two CPU
#'   cores PCG reached the converged test error sooner than ASkotch at ranks
#'   1649 and 1000, tied with it at rank 750 and lost to it at rank 550; at
#'   \eqn{5 \times 10^5} it won at rank 1328; on one GPU at rank 4096 it was
#'   4 times sooner at \eqn{n = 10^6}); else
#'   [askotch()], whose memory is linear in \eqn{n}. Or a solver specification:
#'   [askotch()], [skotch()], [sap()], [pcg()], [falkon()], [cholesky()], or
#'   one of their names.
#' @param precision `"double"` or `"single"` floating point arithmetic in the
#'   solver and predictions.
#' @param device `"auto"` (CUDA when a device is available and n >= 50 000,
#'   else CPU), `"cpu"` or `"cuda"`.
#' @param max_passes Maximum number of passes over the data.
#' @param tol Tolerance on the relative residual, or an automatic rule by
#'   name. The default (`NULL`, the same as `"uniform"`) is small enough
#'   that the fitted function is within 0.001 standard deviations of the
#'   response of the exact solution at every point; `"average"` is the
#'   cheaper rule that the fitted values at the training points are within
#'   0.001 standard deviations of the exact ones in root mean square (see
#'   Stopping). Use `0` to run until `max_passes` or `time_limit`.
#' @param time_limit Maximum time in seconds (`Inf` for none) of the
#'   hyperparameter search and the solve together, including the solver's
#'   setup and the final exact residual check. The search stops at its best
#'   point so far once it has used half of it (after the likelihood
#'   evaluation under way; `fit$tuning$optim$message` is then
#'   `"time_limit"`) and the solve gets the rest (at least a tenth). With
#'   `lambda = "cv"` or a path, the folds share half of it; when a fold
#'   cannot set up in its share, \eqn{\lambda} is chosen from the folds done
#'   (a warning of class `askotch_warning_time_limit` says how many). A
#'   setup that cannot finish within it (preconditioner, factorisation)
#'   stops with an error of class `askotch_error_time_limit`; Ctrl-C and
#'   [setTimeLimit()] are honoured within about a second in every phase.
#' @param validation Optional `list(x = , y = )` of held-out data (for the
#'   formula method also a data frame with the response); the trace then
#'   records the validation RMSE (regression) or accuracy (classification),
#'   at most once per pass and at the end.
#' @param standardize Centre and scale the columns of `x`: `"auto"`
#'   (default: one of the next two, chosen by likelihood with the kernel),
#'   `TRUE` (each column by its own standard deviation), `"joint"` (every
#'   column by one scale, the root mean square of their standard
#'   deviations, so that coordinates such as longitude and latitude stay
#'   isotropic) or `FALSE`.
#' @param seed Seed for the solver's random numbers and the bandwidth
#'   subsample; `NULL` draws one from R's random number generator, so
#'   [set.seed()] makes fits reproducible (for a fixed number of threads).
#' @param progress Show a progress bar (after 2 seconds)?
#' @param threads Number of CPU threads, for the compiled code and for R's
#'   own matrix algebra inside the fit; `NULL` uses [askotch_threads()].
#' @param mem_limit Bytes the solver may allocate beyond the data; `NULL` uses
#'   the available memory. A fit that cannot fit signals an error of class
#'   `askotch_error_memory` suggesting a smaller block size.
#' @param keep_state Keep the solver's state (its preconditioners,
#'   factorisations and work space) in the fit, as `fit$state`, so that
#'   [refit()] can solve again with new responses, a new `lambda` or from a
#'   warm start without redoing the setup. The state is memory outside R's
#'   heap, freed when the fit is garbage-collected; it is never saved with
#'   the fit (after [readRDS()] it is rebuilt when needed).
#' @param weights Optional observation weights: one non-negative finite
#'   number per row of `x`, the inverse relative noise variance of the point
#'   (see *Observation weights*); rows of weight 0 are dropped. For the
#'   formula method, evaluated like [lm()]'s (a column of `data` or an
#'   expression in it).
#' @param mean (by name only) A mean function (trend): `NULL` (default) or `~ 1` for a
#'   constant, or a one-sided formula over the columns of `x` (by name) or,
#'   for the formula method, of `data`; see *Mean functions*.
#' @param likelihood (by name only) How the hyperparameters' likelihood treats the mean
#'   function: `"ml"` (default; its coefficients profiled out) or `"reml"`
#'   (restricted maximum likelihood); also the divisor of the signal
#'   variance, \eqn{n} or \eqn{n - q}.
#' @param noise (by name only) A noise model: `NULL` (default: the same noise variance at
#'   every point), a one-sided formula over the columns of `x` (by name) or
#'   of `data` (a log-linear model), or `~ gp(z1, ...)` (a Gaussian process
#'   on the log noise variance); see *Heteroscedastic noise*.
#' @param distributed (by name only) `TRUE` in an SPMD program under MPI (`mpirun -np P
#'   Rscript fit.R`): every rank passes its own rows `x`, `y` (the same
#'   columns, at least one row each) and the same other arguments; the rows
#'   stay on their ranks and the fit is ASkotch / Skotch / SAP / NSAP
#'   (`solver = askotch(...)`) on the sharded kernel (Tu et al., 2016),
#'   Falkon (`solver = falkon(...)`; `centers` a count drawn from all rows,
#'   or row numbers of the rows of all ranks in rank order), or PCG with the
#'   Nystrom preconditioner or none (`solver = pcg("nystrom")`: each full
#'   product \eqn{K w} sends every rank's points and weights to the others
#'   in turn, \eqn{n (p + m)} numbers per iteration; the sketch's Gram
#'   matrices are summed over the ranks).
#'   Standardisation, the median bandwidth and the tolerance come from
#'   global statistics; `lambda` must be a number or `"paper"`. With
#'   `device = "cuda"` every rank computes on a GPU (the ranks of one
#'   machine take its GPUs in turn, sharing them when there are fewer);
#'   `"auto"` does so when every rank has one and \eqn{n \ge 50\,000}
#'   points in all. Returns a
#'   `"krr_distributed"` fit whose `predict()` sums the ranks' parts (for
#'   Falkon every rank holds the whole model: its centres' points and
#'   weights, and predicts alone) and whose `summary()` reduces over the
#'   ranks (both collective: every rank calls them); `fitted()`,
#'   `residuals()`, `logLik()` and the like need the gathered model: see
#'   [askotch_mpi_gather()] and [askotch_mpi_init()].
#' @param data A data frame for the formula method.
#' @param ... For `krr.formula()`, arguments passed to `krr.default()`.
#'   Unknown arguments are an error.
#' @return An object of class `"krr"`, a list holding only plain R data
#'   (it can be saved with [saveRDS()] and used in another session) with
#'   components including `weights` (n x m), `x` (standardised training
#'   points), `center`, `scale`, `y_center`, `kernel` (with the resolved
#'   bandwidth), `lambda`, `solver` (with the resolved block size and rank),
#'   `precision`, `device`, `trace` (data frame: `iteration`, `passes`,
#'   `seconds`, `resid_est`, `block_resid`, `resid_exact`, `validation`),
#'   `converged`, `reason`, `iterations`, `passes`, `seconds` (wall time of
#'   the solve, including residual checks and validation), `resid_est`,
#'   `resid_exact`, `task`, `levels`, `call`, `tuning` (how `lambda` and the
#'   bandwidth were chosen, `NULL` when both were given), `length_scales`
#'   (`bandwidth = "ard"`), and `state` when `keep_state = TRUE`.
#' @seealso [predict.krr()], [summary.krr()], [plot.krr()], [refit()],
#'   [askotch()], [kernels], `vignette("getting-started", package = "askotch")`.
#' @examples
#' set.seed(1)
#' x <- matrix(runif(400), ncol = 2)
#' y <- sin(4 * x[, 1]) + x[, 2]^2 + rnorm(200, sd = 0.1)
#' fit <- krr(x, y, threads = 1)  # lambda by maximum likelihood
#' fit
#' summary(fit)
#' predict(fit, x[1:5, ])
#'
#' # lambda by GCV, the bandwidth by maximum likelihood; a lambda path by CV
#' fit_gcv <- krr(x, y, lambda = "gcv", bandwidth = "ml", threads = 1)
#' fit_cv <- krr(x, y, lambda = c(0.001, 0.01, 0.1, 1), threads = 1)
#' fit_cv$tuning$path
#' # one length scale per column
#' krr(x, y, bandwidth = "ard", threads = 1)$length_scales
#'
#' # a linear trend in both inputs (universal kriging), REML
#' colnames(x) <- c("a", "b")
#' fit_uk <- krr(x, y, mean = ~ a + b, likelihood = "reml", threads = 1)
#' coef(fit_uk)
#'
#' # a noise level that is itself a smooth of time (heteroscedastic GP)
#' if (requireNamespace("MASS", quietly = TRUE)) {
#'   data(mcycle, package = "MASS")
#'   fit_het <- krr(accel ~ times, data = mcycle, noise = ~ gp(times), threads = 1)
#'   predict(fit_het, data.frame(times = c(10, 20, 40)), interval = "prediction")
#' }
#'
#' # formula interface, classification
#' fit2 <- krr(Species ~ ., data = iris, lambda = 1, threads = 1)
#' table(predict(fit2, iris), iris$Species)
#' @export
krr <- function(x, ...) UseMethod("krr")

#' @rdname krr
#' @export
krr.default <- function(x, y, kernel = "auto", bandwidth = "ml",
                        lambda = NULL, solver = "auto",
                        precision = "double", device = "auto",
                        max_passes = 100, tol = NULL, time_limit = Inf,
                        validation = NULL, standardize = "auto", seed = NULL,
                        progress = interactive(), threads = NULL,
                        mem_limit = NULL, keep_state = FALSE, weights = NULL,
                        ..., mean = NULL, likelihood = "ml", noise = NULL,
                        distributed = FALSE) {
  ecall <- krr_call(sys.call())
  check_no_dots(list(...), "krr", ecall)
  if (missing(y)) abort_askotch("`y` is missing.", "input", ecall)
  check_flag(distributed, "distributed", ecall)
  if (distributed && (!is.null(mean) || !is.null(noise) || !identical(likelihood, "ml"))) {
    abort_askotch(paste("A distributed fit has the constant mean and noise: leave `mean`,",
                        "`noise` and `likelihood` out."), "input", ecall)
  }
  args <- fit_args(environment(), bandwidth_given = !missing(bandwidth))
  call <- tryCatch(match.call(krr.default, ecall), error = function(e) ecall)
  if (distributed) return(fit_distributed(x, y, args, call, ecall))
  fit <- fit_model(x, y, loss_squared(), args, machine = FALSE, call = call, ecall = ecall)
  warn_hyper(fit, ecall)
  warn_noise_gp(fit, ecall)
  fit
}

#' @rdname krr
#' @param formula A model formula `response ~ predictors`; the model matrix is
#'   built without an intercept (factors are expanded to indicator columns).
#'   `offset(z)` terms are allowed (regression only). The fitted object does
#'   not keep the formula's environment: at prediction time variables come
#'   from `newdata` and functions from the search path.
#' @param subset An optional vector selecting the rows of `data` to use
#'   (evaluated in `data`, as for [lm()]).
#' @param na.action What to do with rows with missing values: a function
#'   such as [na.omit()] (drop them), [na.exclude()] (drop them, but pad
#'   `fitted()` and `residuals()` with `NA` at their positions, as [lm()]
#'   does) or [na.fail()] (an error). Default `getOption("na.action")`.
#' @param offset An optional known component of the response (regression):
#'   a numeric vector (one value per row, evaluated in `data`) subtracted from
#'   the response before fitting and added back by [predict()][predict.krr]
#'   (which evaluates it in `newdata`) and `fitted()`; `offset()` terms in
#'   the formula are treated the same way.
#' @export
krr.formula <- function(formula, data = NULL, subset, weights, na.action,
                        offset, validation = NULL, mean = NULL, noise = NULL, ...) {
  formula_fit(match.call(expand.dots = FALSE, envir = parent.frame()),
              parent.frame(), validation,
              krr.default, krr_call(sys.call()),
              match.call(expand.dots = TRUE, envir = parent.frame()), ...,
              mean = mean, noise = noise)
}

