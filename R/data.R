# Input preparation ---------------------------------------------------------------

# Coerce x (matrix, data frame of numeric columns, numeric vector) to a double
# matrix and check it. `arg` names the argument in messages; na_ok lets NA
# and NaN through (missing values), never infinite ones.
as_feature_matrix <- function(x, arg = "x", call = NULL, na_ok = FALSE) {
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
  if (!is.double(x)) storage.mode(x) <- "double"
  # min_max() propagates NA / NaN / Inf without an n x p temporary
  if (length(x) > 0L && !all(is.finite(min_max(x)))) {
    bad <- !is.finite(x)
    if (na_ok) bad <- bad & !is.na(x)
    if (any(bad)) {
      first <- which(bad, arr.ind = TRUE)[1L, ]
      abort_askotch(sprintf(paste(
        "`%s` must not contain %s values; found %d, the first",
        "at row %d, column %d (%s)."), arg, if (na_ok) "infinite" else "NA, NaN or infinite",
        sum(bad), first[[1L]], first[[2L]],
        fmt_value(x[first[[1L]], first[[2L]]])), "input", call)
    }
  }
  x
}

# Targets: returns list(Y = n x m double matrix of targets (+-1 coded for
# classification), task, levels, names).
prepare_targets <- function(y, n, call = NULL) {
  if (is.data.frame(y)) {
    if (ncol(y) > 1L && !all(vapply(y, is.numeric, NA))) {
      abort_askotch(paste(
        "A data frame `y` with several columns is a multi-output regression",
        "and needs numeric columns; give one factor column for a classification."),
        "input", call)
    }
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

# c(min(x), max(x)): NA / NaN / Inf propagate; unlike range(), no copy of x
min_max <- function(x) c(min(x), max(x))

# Column centring / scaling computed on training data. Constant columns are
# centred only.
#
# Scale-robust: each column is divided by a power of two near its largest
# |value| (exact, so ordinary data give the same numbers as mean() and sd())
# before its mean and sum of squared deviations are formed, so x * 1e+-200
# neither overflows nor underflows. A column is constant when its values are
# equal up to rounding relative to their magnitude (max - min <= 4 eps
# max|x|): a column scaled by 1e-13, or with mean 1e13 and sd 1, is not.
# One column at a time: no copy of x.
compute_scaling <- function(x, standardize) {
  n <- nrow(x)
  p <- ncol(x)
  if (isFALSE(standardize)) return(list(center = rep(0, p), scale = rep(1, p)))
  center <- numeric(p)
  scale <- rep(1, p)
  varying <- logical(p)
  for (j in seq_len(p)) {
    xj <- x[, j]
    r <- min_max(xj)
    m <- max(abs(r))
    if (m == 0) next
    # var() forms the sum of squared deviations in C (no temporaries); the
    # column is divided by u only where the squares could leave the range
    u <- if (m > 2^400 || m < 2^-400) pow2_unit(m) else 1
    if (u != 1) xj <- xj / u
    center[j] <- mean(xj) * u
    if (n > 1L && r[2L] - r[1L] > 4 * .Machine$double.eps * m) {
      s <- sqrt(stats::var(xj)) * u
      if (is.finite(s) && s > 0) {
        scale[j] <- s
        varying[j] <- TRUE
      }
    }
  }
  joint_scaling(list(center = center, scale = scale, varying = varying), varying,
                standardize)
}

# standardize = "joint": one scale for every column, the root mean square
# of the non-constant columns' standard deviations, so that distances keep
# their directions (coordinates stay isotropic) at the per-column scaling's
# typical size
joint_scaling <- function(sc, varying, standardize) {
  if (!identical(standardize, "joint")) return(sc)
  s <- sc$scale[varying]
  # the root mean square relative to the largest, so that no square
  # overflows or underflows for data far from unit scale
  sc$scale[] <- if (any(varying)) max(s) * sqrt(mean((s / max(s))^2)) else 1
  sc
}

# Whether one scale for every column differs from the per-column scaling:
# at least two non-constant columns of different spread
joint_differs <- function(scaling) {
  s <- scaling$scale[scaling$varying]
  length(s) >= 2L && max(s) > min(s) * (1 + 1e-8)
}

# "auto", TRUE, FALSE or "joint" (an input error naming the argument
# otherwise)
check_standardize <- function(x, call = NULL) {
  if (identical(x, "auto") || identical(x, "joint") || isTRUE(x) || isFALSE(x)) {
    return(invisible(x))
  }
  abort_askotch(sprintf(
    "`standardize` must be \"auto\", TRUE, FALSE or \"joint\", not %s.",
    fmt_value(x)), "input", call)
}

# The power of two at or below m > 0 (dividing by it is exact).
pow2_unit <- function(m) 2^floor(log2(m))

# (x - center) / scale column by column, into one new matrix (the only copy
# of x). A column whose |values| or centre are huge is first divided by a
# power of two (exact), so that x - center cannot overflow.
apply_scaling <- function(x, center, scale) {
  out <- matrix(0, nrow(x), ncol(x), dimnames = dimnames(x))
  if (nrow(x) == 0L) return(out)
  for (j in seq_len(ncol(x))) {
    xj <- x[, j]
    if (center[j] == 0 && scale[j] == 1) {
      out[, j] <- xj
      next
    }
    m <- if (anyNA(xj)) max(abs(xj), abs(center[j]), na.rm = TRUE) else
      max(abs(min_max(xj)), abs(center[j]))
    if (m > 2^1000) {
      u <- pow2_unit(m)
      out[, j] <- (xj / u - center[j] / u) / (scale[j] / u)
    } else {
      out[, j] <- (xj - center[j]) / scale[j]
    }
  }
  out
}

scores_to_class <- function(s, levels) {
  s <- as.matrix(s)
  if (length(levels) == 2L) {
    idx <- ifelse(s[, 1L] > 0, 2L, 1L)
  } else {
    idx <- max.col(s, ties.method = "first")
  }
  factor(levels[idx], levels = levels)
}
