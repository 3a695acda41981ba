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
#' [krr()], and that combines with others by `+` and `*` ([kernel_algebra]).
#'
#' * `kernel_rbf()`: Gaussian, \eqn{\exp(-\|x - x'\|_2^2 / (2\sigma^2))}.
#' * `kernel_laplace()`: Laplace with the L1 distance,
#'   \eqn{\exp(-\|x - x'\|_1 / \sigma)}.
#' * `kernel_matern(nu)`: Matérn with smoothness \eqn{\nu > 0} and Euclidean
#'   distance \eqn{d}: \eqn{2^{1-\nu}/\Gamma(\nu)\, u^\nu K_\nu(u)},
#'   \eqn{u = \sqrt{2\nu}\, d / \sigma}, \eqn{K_\nu} the modified Bessel
#'   function of the second kind (Rasmussen and Williams 2006, eq. 4.14):
#'   \eqn{\exp(-d/\sigma)} for 1/2,
#'   \eqn{(1 + \sqrt3 d/\sigma)\exp(-\sqrt3 d/\sigma)} for 3/2 and
#'   \eqn{(1 + \sqrt5 d/\sigma + 5d^2/(3\sigma^2))\exp(-\sqrt5 d/\sigma)} for 5/2,
#'   which have fast closed forms; any other \eqn{\nu \le 20} is evaluated
#'   through \eqn{K_\nu} (tens of exponentials per entry) and is a composite
#'   kernel. `kernel_matern12()`, `kernel_matern32()` and `kernel_matern52()`
#'   are shortcuts.
#' * `kernel_periodic(period)`: \eqn{\exp(-2 \sin^2(\pi d / P) / \ell^2)} with
#'   period \eqn{P} and length scale \eqn{\ell} (`bandwidth`; MacKay 1998,
#'   Rasmussen and Williams eq. 4.31): exactly periodic. Times a Gaussian
#'   kernel it gives a seasonal pattern that changes slowly.
#' * `kernel_linear()`: \eqn{x^\top x'} (Bayesian linear regression on its
#'   columns, without an intercept; its scale is the amplitude).
#' * `kernel_polynomial(degree, scale, offset)`:
#'   \eqn{(c\, x^\top x' + o)^m}, as `kernlab::polydot()`.
#'
#' The bandwidth \eqn{\sigma} is a positive number, `"ml"` (chosen by
#' maximum marginal likelihood in [krr()]), `"ard"` (one length scale per
#' column by maximum marginal likelihood, see [krr()]) or `"median"`: the
#' median pairwise distance, in the kernel's own metric (L1 for Laplace, L2
#' otherwise), among at most 1000 randomly chosen (standardised) training
#' points. The subsample is drawn from `krr()`'s `seed`, so the resolved
#' bandwidth is reproducible; it is stored in the fitted object.
#'
#' `dims` restricts a kernel to some columns of `x` (numbers, or names of the
#' columns); `amplitude` multiplies it; `distance = "great_circle"` makes a
#' stationary kernel a function of the great-circle distance in kilometres
#' between two columns `dims = c(longitude, latitude)` in degrees (as
#' `fields::rdist.earth()`, on a sphere of the Earth's mean radius 6371 km).
#' On the sphere the exponential (Matérn 1/2) kernel is positive definite;
#' smoother ones can fail to be for data spread over a large part of the
#' globe (Gneiting 2013). A kernel with any of these, or
#' of the families periodic, linear, polynomial and Matérn outside
#' \{1/2, 3/2, 5/2\}, is a composite kernel ([kernel_algebra]): its
#' hyperparameters and amplitude can each be a number or `"ml"`, and a fit
#' with it uses `x` unscaled.
#'
#' @param bandwidth A positive number, `"median"`, `"ml"` or `"ard"` (the
#'   periodic kernel's length scale: a number or `"ml"`).
#' @param nu Matérn smoothness, a number in (0, 20] (1/2, 3/2 and 5/2 also as
#'   the strings `"1/2"`, `"3/2"`, `"5/2"`).
#' @param dims Columns of `x` the kernel reads (numbers or names; default
#'   all).
#' @param amplitude A positive number or `"ml"`: the kernel's multiplier.
#' @param distance `"euclidean"` (default) or `"great_circle"`.
#' @param period The period \eqn{P}, a positive number in the units of the
#'   columns.
#' @param degree,scale,offset The polynomial's degree (1 to 20), scale
#'   \eqn{c > 0} and offset \eqn{o \ge 0}; `scale` and `offset` may be
#'   `"ml"`.
#' @return An object of class `c("askotch_kernel_<name>", "askotch_kernel")`.
#' @references Gneiting, T. (2013). Strictly and non-strictly positive
#'   definite functions on spheres. *Bernoulli* 19, 1327-1349.
#'
#'   MacKay, D. J. C. (1998). Introduction to Gaussian processes. In
#'   *Neural Networks and Machine Learning*, Springer.
#'
#'   Rasmussen, C. E. and Williams, C. K. I. (2006). *Gaussian Processes
#'   for Machine Learning*. MIT Press, ch. 4.
#' @examples
#' kernel_rbf()
#' kernel_matern(nu = 5/2, bandwidth = 2)
#' kernel_matern(nu = 1, bandwidth = 2)
#' kernel_laplace(0.5)
#' kernel_periodic(period = 12, bandwidth = 1, dims = "month")
#' kernel_rbf(bandwidth = 500, dims = c("lon", "lat"), distance = "great_circle")
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

# a listed kernel, with the component fields when they are not the defaults
listed_kernel <- function(name, bandwidth, dims, amplitude, distance) {
  component_fields(new_kernel(name, bandwidth), dims, amplitude, distance)
}

#' @rdname kernels
#' @export
kernel_rbf <- function(bandwidth = "median", dims = NULL, amplitude = 1,
                       distance = "euclidean") {
  listed_kernel("rbf", bandwidth, dims, amplitude, distance)
}

#' @rdname kernels
#' @export
kernel_laplace <- function(bandwidth = "median", dims = NULL, amplitude = 1) {
  listed_kernel("laplace", bandwidth, dims, amplitude, "euclidean")
}

#' @rdname kernels
#' @export
kernel_matern <- function(nu = 1.5, bandwidth = "median", dims = NULL, amplitude = 1,
                          distance = "euclidean") {
  if (is.character(nu) && length(nu) == 1L && nu %in% c("1/2", "3/2", "5/2")) {
    nu <- c("1/2" = 0.5, "3/2" = 1.5, "5/2" = 2.5)[[nu]]
  }
  mx <- composite_info()$max_nu
  if (!is.numeric(nu) || length(nu) != 1L || !is.finite(nu) || nu <= 0 || nu > mx) {
    abort_askotch(sprintf("`nu` must be a number in (0, %g], not %s.", mx,
                          fmt_value(nu)), "input")
  }
  half <- c(matern12 = 0.5, matern32 = 1.5, matern52 = 2.5)
  key <- names(half)[abs(half - nu) <= 1e-12]
  if (length(key)) return(listed_kernel(key, bandwidth, dims, amplitude, distance))
  k <- component_fields(new_kernel("matern32", bandwidth), dims, amplitude, distance)
  k$name <- k$family <- "matern"
  k$code <- NULL
  k$nu <- as.numeric(nu)
  class(k) <- c("askotch_kernel_matern", "askotch_kernel")
  k
}

#' @rdname kernels
#' @export
kernel_matern12 <- function(bandwidth = "median", dims = NULL, amplitude = 1,
                            distance = "euclidean") {
  listed_kernel("matern12", bandwidth, dims, amplitude, distance)
}

#' @rdname kernels
#' @export
kernel_matern32 <- function(bandwidth = "median", dims = NULL, amplitude = 1,
                            distance = "euclidean") {
  listed_kernel("matern32", bandwidth, dims, amplitude, distance)
}

#' @rdname kernels
#' @export
kernel_matern52 <- function(bandwidth = "median", dims = NULL, amplitude = 1,
                            distance = "euclidean") {
  listed_kernel("matern52", bandwidth, dims, amplitude, distance)
}

#' @rdname kernels
#' @export
kernel_periodic <- function(period, bandwidth = 1, dims = NULL, amplitude = 1) {
  if (missing(period)) abort_askotch("`period` is missing: give the period.", "input")
  check_positive(period, "period")
  k <- new_component("periodic", check_hyper(bandwidth, "bandwidth"),
                     list(period = as.numeric(period), metric = "L2"))
  component_fields(k, dims, amplitude)
}

#' @rdname kernels
#' @export
kernel_linear <- function(dims = NULL, amplitude = 1) {
  component_fields(new_component("linear", NULL, list(metric = "L2")), dims, amplitude)
}

#' @rdname kernels
#' @export
kernel_polynomial <- function(degree = 2, scale = 1, offset = 1, dims = NULL, amplitude = 1) {
  if (!is.numeric(degree) || length(degree) != 1L || !is.finite(degree) ||
      degree != round(degree) || degree < 1 || degree > 20) {
    abort_askotch(sprintf("`degree` must be a whole number from 1 to 20, not %s.",
                          fmt_value(degree)), "input")
  }
  k <- new_component("polynomial", NULL,
                     list(degree = as.numeric(degree), scale = check_hyper(scale, "scale"),
                          offset = check_hyper(offset, "offset", zero_ok = TRUE),
                          metric = "L2"))
  component_fields(k, dims, amplitude)
}

#' @export
format.askotch_kernel <- function(x, ...) {
  if (is_composite_kernel(x)) return(format(as_composite(x)))
  row <- kernel_info(x$name)
  bw <- if (is.character(x$bandwidth)) {
    c(median = "median heuristic", ml = "maximum likelihood",
      ard = "maximum likelihood per column")[[x$bandwidth]]
  } else format(signif(x$bandwidth, 6))
  sprintf("%s kernel, bandwidth %s", row$label, bw)
}

#' @export
print.askotch_kernel <- function(x, ...) {
  if (is_composite_kernel(x)) return(print(as_composite(x)))
  row <- kernel_info(x$name)
  cat("<askotch kernel> ", format(x), "\n", sep = "")
  cat("  k(x, x') = ", row$formula, "\n", sep = "")
  invisible(x)
}

# Turn the `kernel` / `bandwidth` arguments of krr() into a kernel object.
# An explicitly supplied `bandwidth` overrides the one of a kernel object.
as_kernel <- function(kernel, bandwidth, bandwidth_given, call = NULL) {
  if (is_composite_kernel(kernel)) {
    if (bandwidth_given) {
      abort_askotch(paste("A composite kernel carries its own hyperparameters: set them in",
                          "its kernels, not with `bandwidth`."), "input", call)
    }
    return(as_composite(kernel))
  }
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
  # the median of the distances (of the positive ones when many rows are
  # duplicated), found by selection in C
  med <- native_median_distance(xi / u, metric == "L1") * u
  if (!(med > 0)) {
    abort_askotch(paste(
      "Cannot choose a \"median\" bandwidth: all sampled rows of `x` are",
      "identical. Supply a numeric `bandwidth`."), "input")
  }
  med
}

# The kernel matrix of standardised points (double precision).
kernel_mat <- function(x1, x2, kernel, threads = 0L) {
  native_kernel_matrix(x1, x2, kernel, threads = threads)
}
