# Kernel algebra: kernel components and their sums and products ---------------
#
# A kernel object of the list (kernel_rbf() ...) used as it is keeps the
# listed-kernel path. Every other kernel is a composite: a sum of product
# terms, each term an amplitude times kernel components, each component a
# kernel of one family on its own columns (`dims`) with its own
# hyperparameters. The compiled code evaluates composites
# (src/core/data/kcomp.c, the formulas in src/core/kcomp_math.h); R only
# builds them and writes them as numbers for the compiled code
# (composite_spec()).

# What the compiled code declares of composites: code, families' codes and
# learnable hyperparameter counts, limits (ffi_info()$composite).
composite_info <- function() askotch_info()$composite

# The hyperparameters of each family that can be "ml", in the order of the
# compiled code's derivative index j (kcomp_math.h).
family_params <- list(listed = "bandwidth", matern = "bandwidth",
                      periodic = c("bandwidth", "period"), linear = character(),
                      polynomial = c("scale", "offset"))

# A number > 0 or "ml" (a hyperparameter of a component, or an amplitude).
check_hyper <- function(x, what, call = NULL, zero_ok = FALSE) {
  if (identical(x, "ml")) return(x)
  ok <- is.numeric(x) && length(x) == 1L && is.finite(x) && (x > 0 || (zero_ok && x == 0))
  if (!ok) {
    abort_askotch(sprintf("`%s` must be a %s number or \"ml\", not %s.", what,
                          if (zero_ok) "non-negative" else "positive", fmt_value(x)),
                  "input", call)
  }
  as.numeric(x)
}

# `dims`: NULL (all columns), or 1 to max_dims distinct column numbers or names.
check_dims <- function(dims, call = NULL) {
  if (is.null(dims)) return(NULL)
  mx <- composite_info()$max_dims
  ok <- length(dims) >= 1L && length(dims) <= mx && !anyNA(dims) && !anyDuplicated(dims) &&
    (is.character(dims) || (is.numeric(dims) && all(dims >= 1 & dims == round(dims))))
  if (!ok) {
    abort_askotch(sprintf(paste(
      "`dims` must be 1 to %d distinct column numbers or names of `x`, not %s."),
      mx, fmt_value(dims)), "input", call)
  }
  if (is.numeric(dims)) as.integer(dims) else dims
}

# Adds the component fields that differ from a plain listed kernel's: the
# family (for a kernel outside the list), dims, amplitude, distance.
component_fields <- function(k, dims, amplitude, distance = "euclidean", call = NULL) {
  k$dims <- check_dims(dims, call)
  amplitude <- check_hyper(amplitude, "amplitude", call)
  if (!identical(amplitude, 1)) k$amplitude <- amplitude
  distance <- check_choice(distance, c("euclidean", "great_circle"), "distance", call)
  if (distance == "great_circle") {
    if (identical(k$metric, "L1")) {
      abort_askotch("The Laplace kernel has no great-circle form: use `distance = \"euclidean\"`.",
                    "input", call)
    }
    if (length(k$dims) != 2L) {
      abort_askotch(paste("A great-circle distance needs `dims` naming two columns:",
                          "longitude and latitude, in degrees."), "input", call)
    }
    k$distance <- distance
  }
  k
}

# A component of a family outside the kernel list (Matern of any
# smoothness, periodic, linear, polynomial).
new_component <- function(name, bandwidth = NULL, par = list()) {
  structure(c(list(name = name, family = name, bandwidth = bandwidth), par),
            class = c(paste0("askotch_kernel_", name), "askotch_kernel"))
}

# Whether a kernel object takes the composite path: a sum or product, a
# family outside the list, or a listed kernel with dims, an amplitude or a
# great-circle distance.
is_composite_kernel <- function(k) {
  inherits(k, "askotch_kernel_composite") ||
    (inherits(k, "askotch_kernel") &&
       (!is.null(k$family) || !is.null(k$dims) || !is.null(k$amplitude) ||
          !is.null(k$distance)))
}

# The product terms of a kernel: list(amplitude, components).
kernel_terms <- function(k) {
  if (inherits(k, "askotch_kernel_composite")) return(k$terms)
  amp <- k$amplitude %||% 1
  k$amplitude <- NULL
  list(list(amplitude = amp, components = list(k)))
}

amp_product <- function(a, b) if (identical(a, "ml") || identical(b, "ml")) "ml" else a * b

new_composite <- function(terms, call = NULL) {
  nc <- sum(vapply(terms, function(t) length(t$components), 1L))
  mx <- composite_info()$max_components
  if (nc > mx) {
    abort_askotch(sprintf(paste(
      "A composite kernel has at most %d components (after expanding products",
      "of sums); this one has %d."), mx, nc), "input", call)
  }
  composite_finalise(structure(list(name = "composite", terms = terms),
                               class = c("askotch_kernel_composite", "askotch_kernel")))
}

#' Kernel algebra
#'
#' Kernels combine with `+` and `*` into composite kernels, as Gaussian-process
#' covariance functions do (Rasmussen and Williams 2006, sec. 4.2.4): a sum
#' models a response as the sum of independent processes (a smooth trend plus
#' a seasonal component), a product a process whose correlations are the
#' product of its factors' (a seasonal pattern that drifts slowly:
#' `kernel_periodic(...) * kernel_rbf(...)`; space times time). A number
#' times a kernel scales it. Each kernel reads the columns of `x` named by its
#' `dims` argument (all columns by default) and has its own hyperparameters;
#' any of them, and a term's amplitude, may be `"ml"`: estimated by maximum
#' likelihood in [krr()].
#'
#' Products of sums are expanded into sums of products; a composite has at
#' most 8 kernel components in all.
#'
#' Hyperparameters given as `"ml"` are estimated with \eqn{\lambda} by exact
#' maximum likelihood (L-BFGS-B with the analytic gradient, the signal
#' variance profiled) on at most 1000 rows (a random subsample above; option
#' `askotch.composite_ml_points`), with `mean =` by maximum or restricted
#' likelihood and with a `noise =` model's coefficients; bandwidths start
#' from the median distance in their columns, the others from 1. If every
#' term's amplitude is `"ml"` and \eqn{\lambda} is estimated, the first is
#' held at 1 (the signal variance and \eqn{\lambda} carry the overall
#' scales). The estimates are
#' in `fit$tuning$composite` and [tidy()][tidy.krr]; an estimate on the
#' edge of its search range warns. [vcov()][vcov.krr], Wald
#' [confint()][confint.krr] and `tidy(conf.int = TRUE)` give their
#' uncertainty from the observed information (exact, up to 2000 points;
#' without `mean` or `noise`). With `lambda = "gcv"`, `"loo"`, `"cv"` or
#' a vector of values, the hyperparameters are still estimated by maximum
#' likelihood (with \eqn{\lambda}), and \eqn{\lambda} is then chosen by
#' that criterion: GCV and LOO on the same rows, K-fold cross-validation
#' (option `askotch.cv_folds`) on all of them. The GP classifier
#' ([kernel_machine()] with `posterior = "laplace"` or `"ep"`) estimates
#' the `"ml"` hyperparameters and \eqn{\lambda} by its approximate marginal
#' likelihood instead, on at most 1000 rows (option
#' `askotch.laplace_tune_max_n`), where `vcov()` and `confint()` are not
#' available. The other losses need the hyperparameters given. A fit with a
#' composite kernel uses the
#' data as given (`standardize = "auto"` means no scaling), so that
#' periods, length scales, `dims` and great-circle distances keep the units
#' of `x`. The composite is evaluated by the compiled code on every device
#' and solver that uses the exact kernel (not distributed). A composite
#' of stationary components (all but the linear, polynomial and
#' great-circle ones; a periodic kernel on one column) also has random
#' Fourier features: a frequency is a term drawn with probability
#' proportional to its amplitude and the sum of independent draws of its
#' components' spectral densities (a periodic kernel's is discrete, at
#' whole multiples of \eqn{2\pi / P}). So `features =` fits and the
#' pathwise posterior draws of [simulate()][simulate.krr] and
#' `predict(se.fit = TRUE)` above the exact range work with it.
#'
#' @param e1,e2 Kernel objects (a number for `*` scales a kernel).
#' @return A kernel object of class `"askotch_kernel_composite"`.
#' @examples
#' k <- kernel_rbf(bandwidth = 50, dims = 1) +
#'   kernel_periodic(period = 1, dims = 1) * kernel_rbf(bandwidth = 20, dims = 1)
#' k
#' 0.5 * kernel_linear()
#' @name kernel_algebra
#' @export
Ops.askotch_kernel <- function(e1, e2) {
  op <- .Generic
  if (!op %in% c("+", "*") || missing(e2)) {
    abort_askotch(sprintf("Kernels combine with `+` and `*` only, not `%s`.", op), "input")
  }
  if (op == "*" && is.numeric(e1)) return(scale_kernel(e2, e1))
  if (op == "*" && is.numeric(e2)) return(scale_kernel(e1, e2))
  if (!inherits(e1, "askotch_kernel") || !inherits(e2, "askotch_kernel")) {
    abort_askotch("Kernels combine with other kernels (or a number times a kernel).", "input")
  }
  t1 <- kernel_terms(e1)
  t2 <- kernel_terms(e2)
  if (op == "+") return(new_composite(c(t1, t2)))
  new_composite(unlist(lapply(t1, function(a) lapply(t2, function(b) {
    list(amplitude = amp_product(a$amplitude, b$amplitude),
         components = c(a$components, b$components))
  })), recursive = FALSE))
}

scale_kernel <- function(k, a) {
  a <- check_hyper(a, "amplitude")
  new_composite(lapply(kernel_terms(k), function(t) {
    t$amplitude <- amp_product(t$amplitude, a)
    t
  }))
}

#' @export
format.askotch_kernel_composite <- function(x, ...) {
  terms <- vapply(x$terms, function(t) {
    comps <- vapply(t$components, component_text, "")
    amp <- if (identical(t$amplitude, 1)) "" else
      paste0(if (is.character(t$amplitude)) "ml" else format(signif(t$amplitude, 4)), " * ")
    paste0(amp, paste(comps, collapse = " * "))
  }, "")
  paste(terms, collapse = " + ")
}

#' @export
print.askotch_kernel_composite <- function(x, ...) {
  cat("<askotch composite kernel>\n  ", format(x), "\n", sep = "")
  invisible(x)
}

# one component as text: name(hyperparameters; dims)
component_text <- function(k) {
  fam <- k$family %||% "listed"
  nm <- if (fam == "listed") k$name else fam
  val <- function(v) if (is.character(v)) v else format(signif(v, 4))
  pars <- c(if (fam %in% c("listed", "matern", "periodic")) paste0("bw = ", val(k$bandwidth)),
            if (fam == "matern") paste0("nu = ", val(k$nu)),
            if (fam == "periodic") paste0("period = ", val(k$period)),
            if (fam == "polynomial") c(paste0("degree = ", k$degree),
                                       paste0("scale = ", val(k$scale)),
                                       paste0("offset = ", val(k$offset))),
            if (!is.null(k$dims)) paste0("dims = ", paste(k$dim_names %||% k$dims, collapse = ",")),
            if (identical(k$distance, "great_circle")) "great-circle km")
  sprintf("%s(%s)", nm, paste(pars, collapse = ", "))
}

# The composite form of any kernel object (a listed kernel with dims and the
# like becomes a one-term composite).
as_composite <- function(k) {
  if (inherits(k, "askotch_kernel_composite")) k else new_composite(kernel_terms(k))
}

# Every hyperparameter of a composite as a named vector (tidy()): the
# terms' amplitudes "term[t]:amplitude" and the components' values
# "<name>[c]:<what>", c numbering the components across terms.
composite_terms <- function(k) {
  out <- c()
  c0 <- 0L
  for (t in seq_along(k$terms)) {
    out[sprintf("term[%d]:amplitude", t)] <- as.numeric(k$terms[[t]]$amplitude)
    for (cmp in k$terms[[t]]$components) {
      c0 <- c0 + 1L
      f <- cmp$family %||% "listed"
      what <- c(if (f %in% c("listed", "matern", "periodic")) "bandwidth",
                switch(f, matern = "nu", periodic = "period",
                       polynomial = c("degree", "scale", "offset")))
      for (w in what) {
        out[sprintf("%s[%d]:%s", if (f == "listed") cmp$name else f, c0, w)] <-
          as.numeric(cmp[[w]])
      }
    }
  }
  out
}

# The composite as numbers for the compiled code (src/glue/r_kernel.c,
# kernel_spec): nterm, ncomp, amplitudes, then per component term, family,
# base, metric, bandwidth, par[3], nd, dims (0-based). Every hyperparameter
# must be resolved to a number.
composite_spec <- function(k) {
  fam <- composite_info()$families
  comps <- unlist(lapply(seq_along(k$terms), function(t) {
    lapply(k$terms[[t]]$components, function(cmp) component_numbers(cmp, t, fam))
  }), recursive = FALSE)
  amps <- vapply(k$terms, function(t) as_number(t$amplitude), 0)
  c(length(k$terms), length(comps), amps, unlist(comps))
}

as_number <- function(v) {
  if (!is.numeric(v) || length(v) != 1L) stop("internal: unresolved kernel hyperparameter")
  v
}

component_numbers <- function(cmp, t, fam) {
  f <- cmp$family %||% "listed"
  base <- if (f == "listed") native_code("kernel", cmp$name) else 0L
  par <- switch(f, matern = c(cmp$nu, 0, 0), periodic = c(cmp$period, 0, 0),
                polynomial = c(cmp$degree, as_number(cmp$scale), as_number(cmp$offset)),
                c(0, 0, 0))
  bw <- if (f %in% c("listed", "matern", "periodic")) as_number(cmp$bandwidth) else 1
  dims <- cmp$dims
  if (!is.null(dims) && !is.numeric(dims)) stop("internal: unresolved kernel dims")
  c(t - 1, fam[[f]], base, as.numeric(identical(cmp$distance, "great_circle")), bw, par,
    length(dims), dims - 1)
}

# The composite with the numbers the compiled code reads (`code`, `spec`;
# R/native.R's kernel_args()) once every hyperparameter and dims is
# resolved to numbers (composite_resolve()); spec NULL before.
composite_finalise <- function(k) {
  k$code <- composite_info()$code
  k$spec <- tryCatch(composite_spec(k), error = function(e) NULL)
  k
}
