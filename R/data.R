# Input preparation ---------------------------------------------------------------

# Coerce x (matrix, data frame of numeric columns, numeric vector) to a double
# matrix and check it. `arg` names the argument in messages.
as_feature_matrix <- function(x, arg = "x", call = NULL) {
  if (is.data.frame(x)) {
    ok <- vapply(x, function(col) is.numeric(col) || is.logical(col), TRUE)
    if (!all(ok)) {
      abort_askotch(sprintf(paste(
        "`%s` must contain only numeric columns; column(s) %s are not.",
        "Use the formula interface krr(y ~ ., data) to expand factors."),
        arg, paste0("`", names(x)[!ok], "`", collapse = ", ")), "input", call)
    }
    x <- as.matrix(x)
  }
  if (is.vector(x) && (is.numeric(x) || is.logical(x)) && is.atomic(x)) {
    x <- matrix(x, ncol = 1L)
  }
  if (!is.matrix(x) || !(is.numeric(x) || is.logical(x))) {
    abort_askotch(sprintf(
      "`%s` must be a numeric matrix or data frame, not %s.", arg,
      if (is.matrix(x)) paste("a", typeof(x), "matrix") else fmt_value(x)),
      "input", call)
  }
  if (ncol(x) < 1L) {
    abort_askotch(sprintf("`%s` must have at least one column.", arg),
                  "input", call)
  }
  storage.mode(x) <- "double"
  bad <- !is.finite(x)
  if (any(bad)) {
    first <- which(bad, arr.ind = TRUE)[1L, ]
    abort_askotch(sprintf(paste(
      "`%s` must not contain NA, NaN or infinite values; found %d, the first",
      "at row %d, column %d (%s)."), arg, sum(bad), first[[1L]], first[[2L]],
      fmt_value(x[first[[1L]], first[[2L]]])), "input", call)
  }
  x
}

# Targets: returns list(Y = n x m double matrix of targets (+-1 coded for
# classification), task, levels, names).
prepare_targets <- function(y, n, call = NULL) {
  if (is.data.frame(y)) {
    if (ncol(y) == 1L) y <- y[[1L]] else y <- as.matrix(y)
  }
  if (is.character(y)) check_numeric_text(y, call)
  if (is.character(y) || is.logical(y)) y <- factor(y)
  if (is.null(y)) {
    abort_askotch("`y` is missing.", "input", call)
  }
  if (is.factor(y)) {
    if (length(y) != n) {
      abort_askotch(sprintf(
        "`y` must have one value per row of `x` (%d), not %d.", n, length(y)),
        "input", call)
    }
    if (anyNA(y)) {
      abort_askotch(sprintf(
        "`y` must not contain missing values; found %d, the first at %d.",
        sum(is.na(y)), which(is.na(y))[1L]), "input", call)
    }
    y <- droplevels(y)
    lev <- levels(y)
    k <- length(lev)
    if (k < 2L) {
      abort_askotch(sprintf(
        "`y` is a factor with %d level; classification needs at least 2.", k),
        "input", call)
    }
    if (k == 2L) {
      Y <- matrix(ifelse(as.integer(y) == 2L, 1, -1), ncol = 1L)
      return(list(Y = Y, task = "binary", levels = lev, names = NULL))
    }
    Y <- matrix(-1, n, k, dimnames = list(NULL, lev))
    Y[cbind(seq_len(n), as.integer(y))] <- 1
    return(list(Y = Y, task = "multiclass", levels = lev, names = lev))
  }
  if (is.numeric(y) && !is.matrix(y) && is.null(dim(y))) {
    y <- as.vector(unclass(y))  # drop attributes such as "ts" or names
  } else if (is.numeric(y) && is.array(y) && length(dim(y)) == 1L) {
    y <- as.vector(y)
  }
  if (!is.numeric(y) || !(is.vector(y) || is.matrix(y))) {
    abort_askotch(sprintf(paste(
      "`y` must be a numeric vector or matrix (regression) or a factor",
      "(classification), not %s."), fmt_value(y)), "input", call)
  }
  if (is.matrix(y) && ncol(y) > 1L) {
    task <- "multioutput"
    nm <- colnames(y)
    if (is.null(nm)) nm <- paste0("y", seq_len(ncol(y)))
  } else {
    task <- "regression"
    nm <- NULL
  }
  Y <- matrix(as.double(y), ncol = if (is.matrix(y)) ncol(y) else 1L)
  if (nrow(Y) != n) {
    abort_askotch(sprintf(
      "`y` must have one value (row) per row of `x` (%d), not %d.", n,
      nrow(Y)), "input", call)
  }
  bad <- !is.finite(Y)
  if (any(bad)) {
    abort_askotch(sprintf(paste(
      "`y` must not contain NA, NaN or infinite values; found %d, the first",
      "at row %d."), sum(bad), which(bad, arr.ind = TRUE)[1L, 1L]),
      "input", call)
  }
  if (ncol(Y) < 1L) abort_askotch("`y` has no columns.", "input", call)
  colnames(Y) <- nm
  list(Y = Y, task = task, levels = NULL, names = nm)
}

# A character response whose values all read as numbers (numbers stored as
# text) is ambiguous: regression or classes named by numbers?  Ask.
check_numeric_text <- function(y, call = NULL) {
  v <- unique(trimws(y[!is.na(y)]))
  if (length(v) == 0L) return(invisible(y))
  num <- suppressWarnings(as.numeric(v))
  if (all(!is.na(num))) {
    abort_askotch(sprintf(paste(
      "`y` is character but all its values look numeric (%s%s): convert it",
      "with as.numeric(y) for regression, or with factor(y) for",
      "classification with these %d classes."),
      paste0("\"", utils::head(v, 3L), "\"", collapse = ", "),
      if (length(v) > 3L) ", ..." else "", length(v)), "input", call)
  }
  invisible(y)
}

# Column centring / scaling computed on training data. Constant columns (sd 0)
# are centred only.
compute_scaling <- function(x, standardize) {
  p <- ncol(x)
  if (!standardize) return(list(center = rep(0, p), scale = rep(1, p)))
  center <- colMeans(x)
  scale <- if (nrow(x) > 1L) sqrt(colSums((x - rep(center, each = nrow(x)))^2) /
                                     (nrow(x) - 1L)) else rep(1, p)
  scale[!is.finite(scale) | scale <= 0 |
          scale <= 1e-12 * pmax(1, abs(center))] <- 1
  list(center = unname(center), scale = unname(scale))
}

# (one pass each for the centring and the scaling: twice as fast as sweep()
# at n = 2e4, p = 784, and the same numbers)
apply_scaling <- function(x, center, scale) {
  n <- nrow(x)
  (x - rep(center, each = n)) / rep(scale, each = n)
}
