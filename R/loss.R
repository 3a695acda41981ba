# Losses ----------------------------------------------------------------------
#
# A loss for R: its name in the compiled loss table (src/core/loss), how it
# prepares the targets, and what its stopping criterion is called. The
# squared loss is the only one today (kernel ridge regression); a new loss is
# its own constructor and methods here next to its C file.

loss_squared <- function() {
  structure(list(name = "squared", criterion = "relative residual"),
            class = c("askotch_loss_squared", "askotch_loss"))
}

# list(Yc = the targets the solver sees, y_center = the constant added back
# to predictions)
loss_targets <- function(loss, tgt) UseMethod("loss_targets")

# The squared loss centres regression targets (their mean is the model's
# constant); classification targets (+1/-1) are not centred.
#' @export
loss_targets.askotch_loss_squared <- function(loss, tgt) {
  Y <- tgt$Y
  y_center <- if (tgt$task %in% c("regression", "multioutput"))
    colMeans(Y) else rep(0, ncol(Y))
  Yc <- sweep(Y, 2L, y_center, "-", check.margin = FALSE)
  dimnames(Yc) <- NULL
  list(Yc = Yc, y_center = unname(y_center))
}

# the loss of a fit (fits made before losses were objects hold none)
fit_loss <- function(object) {
  if (inherits(object$loss, "askotch_loss")) object$loss else loss_squared()
}
