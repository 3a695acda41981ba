# Losses ----------------------------------------------------------------------
#
# A loss for R: its name in the compiled loss table (src/core/loss), its
# parameter (Huber delta, SVR epsilon), how it prepares the targets, and what
# its stopping criterion is called.  The package's convention (loss.h): the
# fit is  min_theta 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, F_i), solved
# through its dual over a box; predictions are K(x, X) alpha.

#' Loss functions for kernel machines
#'
#' Constructors for the losses of [kernel_machine()]. Each returns a small
#' object of class `c("askotch_loss_<name>", "askotch_loss")`, like a
#' [family][stats::family] object for a GLM. With the package's convention
#' a kernel machine solves
#' \deqn{\min_\theta \frac12 \|\theta\|^2 + \frac1\lambda \sum_{i=1}^n
#'   \ell(y_i, F_i), \qquad F_i = \langle \theta, \phi(x_i) \rangle,}{
#'   min 1/2 ||theta||^2 + (1/lambda) sum_i l(y_i, F_i),}
#' through its dual in \eqn{\alpha} (\eqn{\theta = \sum_i \alpha_i
#' \phi(x_i)}, predictions \eqn{F(x) = \sum_i \alpha_i k(x, x_i)}), so the
#' support vector machine's cost is \eqn{C = 1/\lambda}.
#'
#' * `loss_squared()`: \eqn{\ell = (y - F)^2 / 2}; exactly kernel ridge
#'   regression, \eqn{(K + \lambda I)\alpha = y} ([krr()]).
#' * `loss_huber(delta)`: \eqn{\ell = r^2/2} for \eqn{|r| \le \delta},
#'   \eqn{\delta |r| - \delta^2/2} otherwise (\eqn{r = y - F}); dual box
#'   \eqn{|\alpha_i| \le \delta / \lambda}.
#' * `loss_svr(epsilon)`: the \eqn{\epsilon}-insensitive loss \eqn{\max(0,
#'   |y - F| - \epsilon)} of support vector regression; dual box
#'   \eqn{|\alpha_i| \le 1/\lambda}.
#' * `loss_hinge()`: \eqn{\max(0, 1 - yF)}, the support vector machine;
#'   \eqn{0 \le y_i \alpha_i \le 1/\lambda}.
#' * `loss_squared_hinge()`: \eqn{\max(0, 1 - yF)^2 / 2}; \eqn{y_i
#'   \alpha_i \ge 0}.
#' * `loss_logistic()`: \eqn{\log(1 + e^{-yF})}, kernel logistic regression;
#'   [predict()][predict.kernel_machine] gives probabilities \eqn{1 / (1 +
#'   e^{-F})}.
#'
#' Regression losses (`squared`, `huber`, `svr`) take a numeric response;
#' the classification losses (`hinge`, `squared_hinge`, `logistic`) take a
#' factor (or a logical, character or numeric \eqn{\pm 1} response), coded
#' \eqn{-1} for the first level and \eqn{+1} for the second; with more than
#' two classes one \eqn{\pm 1} column per class (one-vs-rest), all columns
#' solved jointly. The squared loss also classifies (as [krr()] does).
#'
#' The stopping criterion is the relative residual of the linear system for
#' the squared loss and the relative duality gap \eqn{(P - D) / \max(|P|,
#' |D|)} for the others.
#'
#' @param delta Huber threshold \eqn{\delta > 0} (on the scale of the
#'   response, after centring).
#' @param epsilon Half-width \eqn{\epsilon \ge 0} of the insensitive tube.
#' @return An object of class `c("askotch_loss_<name>", "askotch_loss")`:
#'   a list with `name`, `param` (the loss parameter or `NULL`), `type`
#'   (`"regression"` or `"classification"`) and `criterion`.
#' @seealso [kernel_machine()]
#' @examples
#' loss_huber(delta = 0.5)
#' loss_svr(epsilon = 0.1)
#' loss_hinge()
#' loss_logistic()
#' @name losses
NULL

# A loss object; what the compiled loss table declares (whether it
# classifies, its criterion, its parameter's name and bound) is read from it.
new_loss <- function(name, param = NULL) {
  info <- askotch_info()$loss_info[[name]]
  if (is.null(info)) stop("internal: loss '", name, "' is not compiled in")
  pname <- if (is.na(info$param_name)) NULL else info$param_name
  if (!is.null(pname)) param <- check_loss_param(param, pname, info)
  structure(list(name = name, param = if (is.null(pname)) NULL else param, param_name = pname,
                 type = if (info$classification) "classification" else "regression",
                 criterion = info$criterion),
            class = c(paste0("askotch_loss_", name), "askotch_loss"))
}

# A loss parameter within the compiled table's bound (> lo or >= lo), finite.
check_loss_param <- function(v, name, info) {
  ok <- is.numeric(v) && length(v) == 1L && !is.na(v) && is.finite(v) &&
    (if (info$param_lo_open) v > info$param_lo else v >= info$param_lo)
  if (!ok) {
    abort_askotch(sprintf("`%s` must be a finite number %s %s, not %s.", name,
                          if (info$param_lo_open) ">" else ">=",
                          format(info$param_lo), fmt_value(v)), "input")
  }
  as.numeric(v)
}

#' @rdname losses
#' @export
loss_squared <- function() new_loss("squared")

#' @rdname losses
#' @export
loss_huber <- function(delta = 1) new_loss("huber", delta)

#' @rdname losses
#' @export
loss_svr <- function(epsilon = 0.1) new_loss("svr", epsilon)

#' @rdname losses
#' @export
loss_hinge <- function() new_loss("hinge")

#' @rdname losses
#' @export
loss_squared_hinge <- function() new_loss("squared_hinge")

#' @rdname losses
#' @export
loss_logistic <- function() new_loss("logistic")

loss_labels <- c(squared = "squared", huber = "Huber", svr = "epsilon-insensitive (SVR)",
                 hinge = "hinge (SVM)", squared_hinge = "squared hinge",
                 logistic = "logistic")

#' @export
format.askotch_loss <- function(x, ...) {
  lab <- loss_labels[[x$name]]
  if (is.null(x$param)) lab else
    sprintf("%s, %s = %s", lab, x$param_name, format(signif(x$param, 6)))
}

#' @export
print.askotch_loss <- function(x, ...) {
  cat("<askotch loss> ", format(x), "\n", sep = "")
  invisible(x)
}

# A `loss` argument: a loss object, a constructor, or a name.
as_loss <- function(loss, call = NULL) {
  if (is.function(loss)) loss <- tryCatch(loss(), error = function(e) loss)
  if (inherits(loss, "askotch_loss")) {
    # rebuilt from its name and parameter: one not made by a constructor is
    # checked like one given by name
    nm <- loss$name
    if (!is.character(nm) || length(nm) != 1L ||
        is.null(askotch_info()$loss_info[[nm]])) {
      abort_askotch(sprintf(paste(
        "`loss` is a loss object with no known loss name (%s): make it with",
        "loss_huber() and the like."), fmt_value(nm)), "input", call)
    }
    return(new_loss(nm, loss$param))
  }
  if (is.character(loss) && length(loss) == 1L && !is.na(loss)) {
    key <- gsub("[-. ]", "_", tolower(loss))
    f <- switch(key, squared = loss_squared, huber = loss_huber, svr = ,
                epsilon_insensitive = loss_svr, hinge = , svm = loss_hinge,
                squared_hinge = loss_squared_hinge, logistic = loss_logistic,
                NULL)
    if (!is.null(f)) return(f())
    abort_askotch(sprintf(paste(
      "`loss` must be one of \"squared\", \"huber\", \"svr\", \"hinge\",",
      "\"squared_hinge\", \"logistic\" or a loss object such as",
      "loss_huber(), not \"%s\"."), loss), "input", call)
  }
  abort_askotch(sprintf(paste(
    "`loss` must be a loss object such as loss_huber(delta = 1) or a loss",
    "name, not %s."), fmt_value(loss)), "input", call)
}

# The loss parameter sent to the compiled objective (0 when none).
loss_param <- function(loss) if (is.null(loss$param)) 0 else loss$param

# Check (and recode) the targets for a loss: classification losses need
# classes (a numeric response must be coded -1/+1), the Huber and SVR
# losses a numeric response.
loss_check_targets <- function(loss, tgt, call = NULL) {
  classif <- tgt$task %in% c("binary", "multiclass")
  if (loss$type == "classification" && !classif) {
    Y <- tgt$Y
    if (ncol(Y) == 1L && all(Y == 1 | Y == -1) && length(unique(Y[, 1L])) == 2L) {
      return(list(Y = Y, task = "binary", levels = c("-1", "1"), names = NULL))
    }
    if (ncol(Y) == 1L && all(Y == 1 | Y == -1)) {
      abort_askotch(sprintf(paste(
        "`y` has only one class (all %s) for the %s loss, which classifies:",
        "it needs both -1 and +1."), format(Y[1L, 1L]), loss$name), "input", call)
    }
    abort_askotch(sprintf(paste(
      "`y` must be a factor (or a logical, character or numeric -1/+1",
      "vector) for the %s loss, which classifies; found a numeric response",
      "with values other than -1 and +1."), loss$name), "input", call)
  }
  if (loss$type == "regression" && loss$name != "squared" && classif) {
    abort_askotch(sprintf(paste(
      "`y` must be numeric for the %s loss (regression); found classes",
      "(%s). Use loss_hinge(), loss_squared_hinge() or loss_logistic() to",
      "classify."), loss$name, paste(tgt$levels, collapse = ", ")),
      "input", call)
  }
  tgt
}

# list(Yc = the targets the solver sees, y_center = the constant added back
# to predictions).  `center = FALSE` (a fit with an intercept) leaves
# regression targets as they are.
loss_targets <- function(loss, tgt, center = TRUE, w = NULL) {
  UseMethod("loss_targets")
}

# Regression losses centre regression targets (their mean is the model's
# constant) unless the fit has an intercept; classification targets (+1/-1)
# are never centred.  With observation weights `w` the centre is the
# weighted mean sum(w y) / sum(w).
#' @export
loss_targets.askotch_loss <- function(loss, tgt, center = TRUE, w = NULL) {
  Y <- tgt$Y
  y_center <- if (center && tgt$task %in% c("regression", "multioutput")) {
    if (is.null(w)) colMeans(Y) else colSums(w * Y) / sum(w)
  } else rep(0, ncol(Y))
  Yc <- sweep(Y, 2L, y_center, "-", check.margin = FALSE)
  dimnames(Yc) <- NULL
  list(Yc = Yc, y_center = unname(y_center))
}

# the loss of a fit (fits made before losses were objects hold none)
fit_loss <- function(object) {
  if (inherits(object$loss, "askotch_loss")) object$loss else loss_squared()
}

# the intercept constant c of a fit (0: none; fits made before hold none)
fit_intercept <- function(object) {
  if (is.null(object$intercept)) 0 else object$intercept
}

# random features M of a fit (0: exact kernel)
fit_features <- function(object) if (is.null(object$features)) 0 else object$features
# a fit on the linear operator (features code -1: svrg("linear")): x^T w
is_linear_fit <- function(object) fit_features(object) < 0
