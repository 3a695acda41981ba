# Kernels -------------------------------------------------------------------

# What the compiled kernel list (src/core/kernel_math.h) declares of the
# kernel `name`: a list of name, metric ("L1" or "L2": the distance the
# kernel is a function of), label and formula (for printing), rate_unit and
# rate_power (the rate a(s) = rate_unit / s^rate_power of a bandwidth s).
kernel_info <- function(name) {
  ks <- askotch_info()$kernels
  i <- match(name, ks$name)
  lapply(ks, `[[`, i)
}

# Other names accepted for compiled kernels (every compiled name is accepted
# as itself).
kernel_aliases <- c(gaussian = "rbf", laplacian = "laplace")

# The compiled kernels' names, quoted and comma-separated (messages).
kernel_names_text <- function() {
  paste0("\"", askotch_info()$kernels$name, "\"", collapse = ", ")
}

#' Kernel functions
#'
#' Constructors for the kernels askotch supports. Each returns a small object
#' of class `"askotch_kernel"` that can be passed as the `kernel` argument of
#' [krr()]. All kernels satisfy \eqn{k(x, x) = 1}.
#'
#' * `kernel_rbf()`: Gaussian, \eqn{\exp(-\|x - x'\|_2^2 / (2\sigma^2))}.
#' * `kernel_laplace()`: Laplace with the L1 distance,
#'   \eqn{\exp(-\|x - x'\|_1 / \sigma)}.
#' * `kernel_matern(nu)`: Matérn with smoothness `nu` in \{1/2, 3/2, 5/2\} and
#'   Euclidean distance \eqn{d}: \eqn{\exp(-d/\sigma)} for 1/2,
#'   \eqn{(1 + \sqrt3 d/\sigma)\exp(-\sqrt3 d/\sigma)} for 3/2 and
#'   \eqn{(1 + \sqrt5 d/\sigma + 5d^2/(3\sigma^2))\exp(-\sqrt5 d/\sigma)} for 5/2.
#'   `kernel_matern12()`, `kernel_matern32()` and `kernel_matern52()` are
#'   shortcuts.
#'
#' The bandwidth \eqn{\sigma} is a positive number, `"ml"` (chosen by
#' maximum marginal likelihood in [krr()]), `"ard"` (one length scale per
#' column by maximum marginal likelihood, see [krr()]) or `"median"`: the
#' median pairwise distance, in the kernel's own metric (L1 for Laplace, L2
#' otherwise), among at most 1000 randomly chosen (standardised) training
#' points. The subsample is drawn from `krr()`'s `seed`, so the resolved
#' bandwidth is reproducible; it is stored in the fitted object.
#'
#' @param bandwidth A positive number, `"median"`, `"ml"` or `"ard"`.
#' @param nu Matérn smoothness: `1/2`, `3/2` or `5/2` (also accepted as the
#'   strings `"1/2"`, `"3/2"`, `"5/2"`).
#' @return An object of class `c("askotch_kernel_<name>", "askotch_kernel")`.
#' @examples
#' kernel_rbf()
#' kernel_matern(nu = 5/2, bandwidth = 2)
#' kernel_laplace(0.5)
#' @name kernels
NULL

# "median": the median heuristic; "ml": maximum marginal likelihood;
# "ard": one maximum-likelihood length scale per column (see ?krr)
bandwidth_rules <- c("median", "ml", "ard")

new_kernel <- function(name, bandwidth, call = NULL) {
  if (is.character(bandwidth)) {
    if (length(bandwidth) != 1L || is.na(bandwidth) ||
        !tolower(bandwidth) %in% bandwidth_rules) {
      abort_askotch(sprintf(paste(
        "`bandwidth` must be a positive number, \"median\", \"ml\" or",
        "\"ard\", not %s."), fmt_value(bandwidth)), "input", call)
    }
    bandwidth <- tolower(bandwidth)
  } else {
    check_positive(bandwidth, "bandwidth", call = call)
    bandwidth <- as.numeric(bandwidth)
  }
  structure(list(name = name, code = kernel_code(name), metric = kernel_metric(name),
                 bandwidth = bandwidth),
            class = c(paste0("askotch_kernel_", name), "askotch_kernel"))
}

# the compiled code's number for a kernel name
kernel_code <- function(name) native_code("kernel", name)

# "L1" or "L2": the distance the compiled kernel is a function of
kernel_metric <- function(name) kernel_info(name)$metric

#' @rdname kernels
#' @export
kernel_rbf <- function(bandwidth = "median") new_kernel("rbf", bandwidth)

#' @rdname kernels
#' @export
kernel_laplace <- function(bandwidth = "median") new_kernel("laplace", bandwidth)

#' @rdname kernels
#' @export
kernel_matern <- function(nu = 3/2, bandwidth = "median") {
  key <- NA_character_
  if (is.character(nu) && length(nu) == 1L) {
    key <- c("1/2" = "matern12", "3/2" = "matern32", "5/2" = "matern52",
             "0.5" = "matern12", "1.5" = "matern32", "2.5" = "matern52")[nu]
  } else if (is.numeric(nu) && length(nu) == 1L && !is.na(nu)) {
    key <- if (isTRUE(all.equal(nu, 0.5))) "matern12" else
      if (isTRUE(all.equal(nu, 1.5))) "matern32" else
        if (isTRUE(all.equal(nu, 2.5))) "matern52" else NA_character_
  }
  if (is.na(key)) {
    abort_askotch(sprintf("`nu` must be 1/2, 3/2 or 5/2, not %s.",
                          fmt_value(nu)), "input")
  }
  new_kernel(unname(key), bandwidth)
}

#' @rdname kernels
#' @export
kernel_matern12 <- function(bandwidth = "median") new_kernel("matern12", bandwidth)

#' @rdname kernels
#' @export
kernel_matern32 <- function(bandwidth = "median") new_kernel("matern32", bandwidth)

#' @rdname kernels
#' @export
kernel_matern52 <- function(bandwidth = "median") new_kernel("matern52", bandwidth)

#' @export
format.askotch_kernel <- function(x, ...) {
  row <- kernel_info(x$name)
  bw <- if (is.character(x$bandwidth)) {
    c(median = "median heuristic", ml = "maximum likelihood",
      ard = "maximum likelihood per column")[[x$bandwidth]]
  } else format(signif(x$bandwidth, 6))
  sprintf("%s kernel, bandwidth %s", row$label, bw)
}

#' @export
print.askotch_kernel <- function(x, ...) {
  row <- kernel_info(x$name)
  cat("<askotch kernel> ", format(x), "\n", sep = "")
  cat("  k(x, x') = ", row$formula, "\n", sep = "")
  invisible(x)
}

# Turn the `kernel` / `bandwidth` arguments of krr() into a kernel object.
# An explicitly supplied `bandwidth` overrides the one of a kernel object.
as_kernel <- function(kernel, bandwidth, bandwidth_given, call = NULL) {
  if (inherits(kernel, "askotch_kernel")) {
    # a kernel object is rebuilt from its name and bandwidth, so that one not
    # made by a constructor is checked like one given by name
    nm <- kernel$name
    if (!is.character(nm) || length(nm) != 1L || !nm %in% askotch_info()$kernels$name) {
      abort_askotch(sprintf(paste(
        "`kernel` is a kernel object with no known kernel name (%s): make it",
        "with kernel_rbf() and the like."), fmt_value(nm)), "input", call)
    }
    k <- new_kernel(nm, if (bandwidth_given) bandwidth else kernel$bandwidth, call)
    extra <- setdiff(names(kernel), names(k))
    k[extra] <- unclass(kernel)[extra]
    return(k)
  }
  if (!is.character(kernel) || length(kernel) != 1L || is.na(kernel)) {
    abort_askotch(sprintf(paste(
      "`kernel` must be a kernel name (%s) or a kernel object such as",
      "kernel_rbf(), not %s."), kernel_names_text(), fmt_value(kernel)),
      "input", call)
  }
  nm <- askotch_info()$kernels$name
  key <- c(stats::setNames(nm, nm), kernel_aliases)[tolower(kernel)]
  if (is.na(key)) {
    abort_askotch(sprintf("`kernel` must be one of %s, not \"%s\".",
                          kernel_names_text(), kernel), "input", call)
  }
  new_kernel(unname(key), bandwidth, call)
}

# Median pairwise distance among at most `max_points` rows of x (already
# standardised), drawn with `seed` without touching the user's RNG stream.
median_bandwidth <- function(x, metric, seed, max_points = 1000L) {
  n <- nrow(x)
  idx <- if (n > max_points) {
    with_seed(seed, sort(sample.int(n, max_points)))
  } else {
    seq_len(n)
  }
  xi <- x[idx, , drop = FALSE]
  # distances of x / u, u a power of two near max |x| (exact), times u:
  # no overflow or underflow in the squares for data far from unit scale
  m <- max(abs(min_max(xi)))
  u <- if (m > 0) pow2_unit(m) else 1
  d <- stats::dist(xi / u,
                   method = if (metric == "L1") "manhattan" else "euclidean")
  med <- stats::median(d) * u
  if (med > 0) return(med)
  # Many duplicated rows: fall back to the median of the positive distances.
  d <- d[d > 0]
  if (length(d) == 0L) {
    abort_askotch(paste(
      "Cannot choose a \"median\" bandwidth: all sampled rows of `x` are",
      "identical. Supply a numeric `bandwidth`."), "input")
  }
  stats::median(d) * u
}

# The kernel matrix of standardised points (double precision).
kernel_mat <- function(x1, x2, kernel, threads = 0L) {
  native_kernel_matrix(x1, x2, kernel, threads = threads)
}
