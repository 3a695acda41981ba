# Numbers the working precision can hold ------------------------------------
#
# Checks made before the solve, so that a fit the compiled code cannot
# represent fails with a classed error suggesting a remedy instead of giving
# constant predictions, NaN or an obscure message from deep inside a solver:
#   * lambda, the kernel's rate (a(sigma) of src/core/kernel_math.h, as the
#     compiled code forms it) and the squared distances between rows must
#     lie in the normal range of the precision;
#   * the kernel must not be numerically the identity (every k(x_i, x_j),
#     i != j, underflows to 0) or all ones (every one rounds to 1) for the
#     data and bandwidth, judged on a sample of pairs of distinct rows;
#   * the targets' squared norm must be finite.

# Normal range and unit roundoff of a working precision.
precision_limits <- function(precision) {
  if (identical(precision, "single")) {
    list(max = 3.4028234663852886e38, min = 1.1754943508222875e-38,
         eps = 2^-23)
  } else {
    list(max = .Machine$double.xmax, min = .Machine$double.xmin,
         eps = .Machine$double.eps)
  }
}

# The bandwidths whose rate lies in [lo, hi]: every compiled kernel's rate
# is a(s) = a(1) / s^m (kernel_info(); src/core/kernel_math.h).
rate_bandwidths <- function(name, lo, hi) {
  ki <- kernel_info(name)
  m <- ki$rate_power
  root <- function(v) if (m == 2L) sqrt(v) else v^(1 / m)
  c(root(ki$rate_unit / hi), root(ki$rate_unit / lo))
}

# `lambda` representable in the working precision.
check_lambda_numeric <- function(lambda, precision, call = NULL) {
  if (!is.numeric(lambda) || length(lambda) != 1L || is.na(lambda)) {
    return(invisible(lambda))  # chosen from the data later (checked then)
  }
  lim <- precision_limits(precision)
  if (lambda > lim$max || lambda < lim$min) {
    abort_askotch(sprintf(paste(
      "`lambda` (%s) cannot be represented in %s precision (normal range",
      "%s to %s)%s."), format(signif(lambda, 4)), precision,
      format(signif(lim$min, 3)), format(signif(lim$max, 3)),
      if (precision == "single") "; use precision = \"double\" or another lambda"
      else "; choose a lambda in that range"), "input", call)
  }
  invisible(lambda)
}

# The remedies that apply to a fit's settings
numeric_remedy <- function(precision, standardize, what) {
  r <- c(what,
         if (!isTRUE(standardize)) "standardize = TRUE",
         if (precision == "single") "precision = \"double\"")
  paste(r, collapse = ", or ")
}

# Everything above, for a fit's data `dat` (krr_data()) and settings `set`
# (settings_from_args()). Cheap: O(n p) for the magnitudes (min_max(), no copy) and
# at most 2000 sampled pairs of rows for the kernel values.
check_numerics <- function(dat, set, call = NULL) {
  precision <- set$precision
  lim <- precision_limits(precision)
  check_lambda_numeric(set$lambda, precision, call)
  kern <- set$kernel
  s <- kern$bandwidth
  median_rule <- identical(kern$bandwidth_rule, "median")
  std <- dat$standardize
  bw_text <- sprintf("%s (%s)", format(signif(s, 4)),
                     if (median_rule) "median heuristic" else "given")
  # the targets: their squared norm is formed in double precision
  ymax <- max(abs(min_max(dat$Yc)))
  if (ymax > lim$max || log(ymax) + 0.5 * log(length(dat$Yc)) >
      0.5 * log(.Machine$double.xmax)) {
    abort_askotch(sprintf(paste(
      "`y` has values up to %s: the squared norm of the targets overflows",
      "in %s precision. Rescale the response (e.g. y / %s) and scale the",
      "predictions back."), format(signif(ymax, 3)), precision,
      format(signif(ymax, 1))), "input", call)
  }
  # a composite kernel's components are evaluated in double from the data
  # as given (src/core/kcomp_math.h)
  if (is_composite_kernel(kern)) return(invisible(NULL))
  # the data: squared distances between rows (at most 4 max|x|^2 p) or L1
  # distances (2 max|x| p) must be finite in the working precision
  xs <- dat$xs
  M <- max(abs(min_max(xs)))
  l1 <- kern$metric == "L1"
  logT <- if (l1) log(2) + log(M) + log(ncol(xs)) else
    log(4) + 2 * log(M) + log(ncol(xs))
  if (M > 0 && logT > log(lim$max)) {
    abort_askotch(sprintf(paste(
      "`x` has values up to %s (after preprocessing): %s distances between",
      "rows overflow in %s precision. Use %s."), format(signif(M, 3)),
      if (l1) "L1" else "squared", precision,
      numeric_remedy(precision, std, "rescaled data")), "input", call)
  }
  if (!is.numeric(s) || !is.finite(s) || s <= 0) {
    abort_askotch(sprintf(paste(
      "The %s bandwidth is %s: it cannot be used in %s precision. Use %s."),
      if (median_rule) "median heuristic" else "given", format(s), precision,
      numeric_remedy(precision, std, "a positive finite `bandwidth`")),
      "input", call)
  }
  a <- native_kernel_rate(kern)
  if (!is.finite(a) || a > lim$max || a < lim$min || s > lim$max ||
      s < lim$min) {
    ok <- rate_bandwidths(kern$name, lim$min, lim$max)
    ok <- c(max(ok[1L], lim$min), min(ok[2L], lim$max))
    abort_askotch(sprintf(paste(
      "`bandwidth` %s cannot be represented in %s precision for the %s",
      "kernel (usable bandwidths: %s to %s). Use %s."), bw_text, precision,
      kern$name, format(signif(ok[1L], 3)), format(signif(ok[2L], 3)),
      numeric_remedy(precision, std, if (median_rule)
        "a numeric `bandwidth`" else "another `bandwidth` (e.g. \"median\")")),
      "input", call)
  }
  check_distance_underflow(M, logT, l1, lim, precision, std, call)
  k <- sampled_kernel_values(xs, kern, lim, set$seed)
  if (length(k) == 0L) return(invisible(TRUE))  # all sampled rows identical
  if (all(k < lim$min)) {
    abort_askotch(sprintf(paste(
      "The kernel is numerically the identity for this data and `bandwidth`",
      "%s: k(x_i, x_j) underflows to 0 in %s precision for every sampled",
      "pair of distinct rows, so predictions away from the training points",
      "would be constant. Use %s."), bw_text, precision,
      numeric_remedy(precision, std,
                     "a larger `bandwidth` (e.g. \"median\")")), "input", call)
  }
  if (all(1 - k <= lim$eps / 2)) {
    abort_askotch(sprintf(paste(
      "The kernel is numerically constant (all ones) for this data and",
      "`bandwidth` %s: k(x_i, x_j) rounds to 1 in %s precision for every",
      "sampled pair of distinct rows, so the fit could only be constant.",
      "Use %s."), bw_text, precision,
      numeric_remedy(precision, std,
                     "a smaller `bandwidth` (e.g. \"median\")")), "input", call)
  }
  invisible(TRUE)
}

# The largest squared distance (log bound logT, values up to M) must reach
# the normal range: else every squared distance underflows and the kernel
# matrix is all ones, whatever the bandwidth
check_distance_underflow <- function(M, logT, l1, lim, precision, std, call) {
  if (l1 || M == 0 || logT >= log(lim$min)) return(invisible(TRUE))
  abort_askotch(sprintf(paste(
    "`x` has values of at most %s (after preprocessing): squared distances",
    "between rows underflow in %s precision. Use %s."), format(signif(M, 3)),
    precision, numeric_remedy(precision, std, "rescaled data")), "input", call)
}

# Kernel values, as the working precision would give them, at up to 2000
# pairs of distinct rows (all pairs for n <= 64; drawn with `seed`, without
# touching the user's RNG stream). Distances below the precision's smallest
# normal number count as 0, as they would in the compiled code.
sampled_kernel_values <- function(xs, kern, lim, seed) {
  n <- nrow(xs)
  p <- ncol(xs)
  if (n <= 64L) {
    pr <- which(upper.tri(matrix(FALSE, n, n)), arr.ind = TRUE)
    i <- pr[, 1L]
    j <- pr[, 2L]
  } else {
    np <- max(100L, min(2000L, floor(2e7 / p)))
    ij <- with_seed(seed, cbind(sample.int(n, np, replace = TRUE),
                                sample.int(n, np, replace = TRUE)))
    i <- ij[, 1L]
    j <- ij[, 2L]
  }
  D <- xs[i, , drop = FALSE] - xs[j, , drop = FALSE]
  t <- if (kern$metric == "L1") rowSums(abs(D)) else rowSums(D * D)
  t <- t[t > 0]
  t[t < lim$min] <- 0
  native_kernel_eval(kern, t)
}
