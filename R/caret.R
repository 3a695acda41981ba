# A caret model definition ----------------------------------------------------

#' A caret model definition for kernel ridge regression
#'
#' Returns the list that [caret::train()] takes as `method` (a "custom
#' model"), so that caret tunes \eqn{\lambda} and the bandwidth by
#' resampling: `caret::train(x, y, method = caret_krr(), ...)`. Fits are
#' made with [kernel_machine()] (for the squared loss, [krr()]'s fit).
#'
#' The default grid (`tuneLength = len`) takes `len` values of
#' \eqn{\lambda} from \eqn{10^{-3}} to \eqn{10} (log spaced) and `len`
#' bandwidths from \eqn{\sqrt p / 2} to \eqn{2 \sqrt p} (log spaced; with
#' standardised columns the median distance between points is about
#' \eqn{\sqrt{2p}}); `search = "random"` draws `len` pairs from the same
#' ranges. Case weights (`weights =` in `train()`) are passed as
#' observation weights (squared loss only).
#'
#' For each bandwidth (and resample) one model is fitted, at the largest
#' \eqn{\lambda} of the grid, and the smaller ones are reached from it by
#' warm-started refits ([refit()], caret's "submodels"): a regularisation
#' path, as `lambda = "cv"` solves it, instead of a cold fit per grid point.
#'
#' Class probabilities (`classProbs = TRUE`): with `loss = "logistic"` those
#' of [predict.kernel_machine()]; for the other losses the decision values
#' \eqn{F} are mapped through the logistic function \eqn{1 / (1 + e^{-2F})}
#' (binary) or its normalised one-vs-all version, a monotone score for ROC
#' curves, *not* a calibrated probability.
#'
#' @param loss The loss passed to [kernel_machine()]: `"squared"` (kernel
#'   ridge regression / least-squares classification) or another loss name
#'   or object.
#' @param ... Further arguments to [kernel_machine()] for every fit (e.g.
#'   `solver = cholesky()`, `kernel = "matern52"`, `threads = 1`).
#' @return A list with elements `label`, `library`, `type`, `parameters`,
#'   `grid`, `fit`, `predict`, `prob`, `sort`, `levels` as
#'   [caret::train()] expects of a custom model.
#' @examples
#' if (requireNamespace("caret", quietly = TRUE)) {
#'   set.seed(1)
#'   tr <- caret::train(mpg ~ wt + hp, data = mtcars,
#'                      method = caret_krr(solver = cholesky(), threads = 1),
#'                      tuneGrid = expand.grid(lambda = c(0.1, 1),
#'                                             bandwidth = c(1, 2)),
#'                      trControl = caret::trainControl(method = "cv",
#'                                                      number = 3))
#'   tr$bestTune
#' }
#' @export
caret_krr <- function(loss = "squared", ...) {
  loss <- as_loss(loss)
  opts <- list(...)
  fixed <- c("x", "y", "lambda", "bandwidth", "weights", "progress")
  if (any(names(opts) %in% fixed)) {
    abort_askotch(sprintf(paste(
      "caret_krr(): %s are set by caret::train() and cannot be given in",
      "`...`."), paste0("`", intersect(names(opts), fixed), "`",
                        collapse = ", ")), "input", sys.call())
  }
  list(
    label = sprintf("Kernel machine (askotch, %s loss)", loss$name),
    library = "askotch",
    type = c("Regression", "Classification"),
    parameters = data.frame(parameter = c("lambda", "bandwidth"),
                            class = c("numeric", "numeric"),
                            label = c("Ridge parameter", "Bandwidth"),
                            stringsAsFactors = FALSE),
    grid = function(x, y, len = NULL, search = "grid") {
      len <- if (is.null(len)) 3L else len
      p <- NCOL(x)
      if (search == "grid") {
        expand.grid(lambda = 10^seq(-3, 1, length.out = len),
                    bandwidth = sqrt(p) * 2^seq(-1, 1, length.out = len))
      } else {
        data.frame(lambda = 10^stats::runif(len, -3, 1),
                   bandwidth = sqrt(p) * 2^stats::runif(len, -1, 1))
      }
    },
    loop = caret_loop,
    fit = function(x, y, wts, param, lev, last, classProbs, ...) {
      # a resample's fit keeps its solver state for the submodels' refits
      args <- c(list(x = as.matrix(x), y = y, loss = loss,
                     lambda = param$lambda, bandwidth = param$bandwidth,
                     weights = wts, progress = FALSE, keep_state = !last), opts)
      fit <- do.call(kernel_machine, args)
      if (!last) fit$caret_path <- new.env(parent = emptyenv())
      fit
    },
    predict = function(modelFit, newdata, preProc = NULL, submodels = NULL) {
      caret_path(modelFit, as.matrix(newdata), submodels, stats::predict)
    },
    prob = function(modelFit, newdata, preProc = NULL, submodels = NULL) {
      caret_path(modelFit, as.matrix(newdata), submodels, caret_prob)
    },
    sort = function(x) x[order(-x$lambda, x$bandwidth), ],
    levels = function(x) x$levels
  )
}

# Class probabilities for caret: the logistic loss's own, else a logistic
# map of the decision values (a score, not calibrated)
caret_prob <- function(fit, newdata) {
  lev <- fit$levels
  if (fit_loss(fit)$name == "logistic") {
    p <- stats::predict(fit, newdata, type = "prob")
  } else {
    p <- stats::plogis(2 * stats::predict(fit, newdata, type = "decision"))
    if (is.matrix(p)) p <- p / rowSums(p)
  }
  if (!is.matrix(p)) p <- cbind(1 - p, p)
  colnames(p) <- lev
  as.data.frame(p)
}

# caret's loop: for each bandwidth one fit at the grid's largest lambda
# (loop), the other lambdas its submodels, in decreasing order.
caret_loop <- function(grid) {
  by_bw <- split(grid, grid$bandwidth)
  loop <- do.call(rbind, lapply(by_bw, function(g) g[which.max(g$lambda), , drop = FALSE]))
  subs <- lapply(by_bw, function(g) {
    g <- g[order(-g$lambda), , drop = FALSE]
    g[-1L, "lambda", drop = FALSE]
  })
  rownames(loop) <- NULL
  list(loop = loop, submodels = unname(subs))
}

# The fit's predictions (`pred(fit, newdata)`), and with submodels a list:
# the fit's, then one per submodel's lambda, from refits warm-started along
# the path in decreasing lambda.  The refits are made once for a fit (kept
# in its environment `caret_path`, without their solver state, for the
# predictions and the probabilities alike); the fit's solver state is not
# needed after this call and is freed (not left to the garbage collector:
# dcd()'s holds the n x n kernel matrix).
caret_path <- function(fit, newdata, submodels, pred) {
  on.exit(if (state_alive(fit$state)) native_fit_free(fit$state), add = TRUE)
  if (is.null(submodels) || nrow(submodels) == 0L) {
    out <- pred(fit, newdata)
    return(if (is.null(submodels)) out else list(out))
  }
  fits <- caret_path_fits(fit, submodels$lambda)
  c(list(pred(fit, newdata)), lapply(fits, pred, newdata = newdata))
}

# The fits at `lambdas` (in their order) by the warm-started path from `fit`
caret_path_fits <- function(fit, lambdas) {
  env <- if (is.environment(fit$caret_path)) fit$caret_path else new.env(parent = emptyenv())
  key <- function(l) sprintf("%.17g", l)
  todo <- lambdas[!vapply(key(lambdas), exists, TRUE, envir = env, inherits = FALSE)]
  if (length(todo) > 0L) {
    cur <- fit
    # the refits share the fit's state, or the first refit's when it has none
    # (freed here; the fit's by caret_path())
    on.exit(if (state_alive(cur$state)) native_fit_free(cur$state), add = TRUE)
    for (l in sort(todo, decreasing = TRUE)) {
      cur <- refit(cur, lambda = l, keep_state = TRUE)
      kept <- cur
      kept$state <- NULL
      assign(key(l), kept, envir = env)
    }
  }
  mget(key(lambdas), envir = env)
}
