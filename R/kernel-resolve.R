# Composite kernels in a fit: dims and "median" bandwidths resolved on the
# data, and the hyperparameters to estimate (R/tune-composite.R maximises
# the likelihood over them) -------------------------------------------------

# A composite with its dims as column numbers and its "median" bandwidths
# resolved on the points xs (columns named xnames).
composite_resolve <- function(k, xs, xnames, seed, call = NULL) {
  k$terms <- lapply(k$terms, function(t) {
    t$components <- lapply(t$components, resolve_dims, p = ncol(xs), xnames = xnames,
                           call = call)
    t
  })
  for (t in seq_along(k$terms)) for (c in seq_along(k$terms[[t]]$components)) {
    cmp <- k$terms[[t]]$components[[c]]
    if (identical(cmp$bandwidth, "ard")) {
      abort_askotch("`bandwidth = \"ard\"` is not available in a composite kernel.",
                    "input", call)
    }
    if (identical(cmp$bandwidth, "median")) {
      k$terms[[t]]$components[[c]]$bandwidth <- component_median(cmp, xs, seed, call)
    }
  }
  composite_finalise(k)
}

resolve_dims <- function(cmp, p, xnames, call) {
  d <- cmp$dims
  if (is.character(d)) {
    i <- match(d, xnames)
    if (anyNA(i)) {
      abort_askotch(sprintf("`dims` names columns that `x` does not have: %s.",
                            paste(d[is.na(i)], collapse = ", ")), "input", call)
    }
    d <- i
  }
  if (!is.null(d) && any(d > p)) {
    abort_askotch(sprintf("`dims` asks for column %d, but `x` has %d columns.",
                          max(d), p), "input", call)
  }
  if (is.character(cmp$dims)) cmp$dim_names <- cmp$dims  # for printing
  cmp$dims <- if (is.null(d)) NULL else as.integer(d)
  cmp
}

# The median distance between at most 1000 sampled rows in the component's
# own distance (the compiled statistic: Euclidean, L1 or great-circle km).
component_median <- function(cmp, xs, seed, call) {
  n <- nrow(xs)
  idx <- if (n > 1000L) with_seed(seed, sort(sample.int(n, 1000L))) else seq_len(n)
  xi <- xs[idx, , drop = FALSE]
  one <- cmp
  one$bandwidth <- 1
  st <- native_kcomp_stat(xi, xi, new_composite(list(list(amplitude = 1,
                                                          components = list(one)))), 1L)
  d <- st[lower.tri(st)]
  if (!identical(one$metric, "L1")) d <- sqrt(pmax(d, 0))
  d <- d[d > 0]
  if (!length(d)) {
    abort_askotch(paste("Cannot choose a \"median\" bandwidth: all sampled rows are identical",
                        "in the kernel's columns. Supply a number."), "input", call)
  }
  stats::median(d)
}

# The hyperparameters to estimate: one row per "ml" value, with the
# compiled derivative code (0-based component c, index j: 1 + 4 c + j; a
# term's amplitude: -t) and where it sits in the composite. If every
# amplitude is "ml", the first is held at 1 (hold_first, the fits that
# estimate lambda): the profiled signal variance (a GP classifier's lambda)
# carries the overall scale.
composite_params <- function(k, hold_first = TRUE) {
  rows <- list()
  amps <- vapply(k$terms, function(t) identical(t$amplitude, "ml"), TRUE)
  hold <- hold_first && all(amps)
  c0 <- 0L
  for (t in seq_along(k$terms)) {
    if (amps[t] && !(hold && t == 1L)) {
      rows[[length(rows) + 1L]] <- list(term = t, comp = 0L, what = "amplitude", code = -t)
    }
    for (c in seq_along(k$terms[[t]]$components)) {
      cmp <- k$terms[[t]]$components[[c]]
      pars <- family_params[[cmp$family %||% "listed"]]
      for (j in seq_along(pars)) if (identical(cmp[[pars[j]]], "ml")) {
        rows[[length(rows) + 1L]] <- list(term = t, comp = c, what = pars[j],
                                          code = 1L + 4L * (c0 + c - 1L) + (j - 1L))
      }
    }
    c0 <- c0 + length(k$terms[[t]]$components)
  }
  if (hold) k$terms[[1L]]$amplitude <- 1
  list(kernel = composite_finalise(k), table = do.call(rbind, lapply(rows, as.data.frame)))
}

# The composite with the table's hyperparameters set to `values`.
composite_set <- function(k, tab, values) {
  for (i in seq_len(NROW(tab))) {
    t <- tab$term[i]
    if (tab$what[i] == "amplitude") {
      k$terms[[t]]$amplitude <- values[i]
    } else {
      k$terms[[t]]$components[[tab$comp[i]]][[tab$what[i]]] <- values[i]
    }
  }
  composite_finalise(k)
}

# The start of an estimated hyperparameter: 1 for amplitudes, scales and
# offsets and the periodic length scale; the median distance for a
# bandwidth.
composite_start <- function(k, tab, xs, seed, call) {
  vapply(seq_len(NROW(tab)), function(i) {
    if (tab$what[i] != "bandwidth") return(1)
    cmp <- k$terms[[tab$term[i]]]$components[[tab$comp[i]]]
    if (identical(cmp$family, "periodic")) 1 else component_median(cmp, xs, seed, call)
  }, 0)
}

# The composite's settings in a fit: resolved on the data; "ml" marks the
# bandwidth rule for tune_composite().
settings_composite <- function(args, xs, xnames, seed, loss, standardize, call) {
  k <- composite_resolve(as_kernel(args$kernel, args$bandwidth,
                                   isTRUE(args$bandwidth_given), call),
                         xs, xnames, seed, call)
  gc <- any(vapply(unlist(lapply(k$terms, `[[`, "components"), recursive = FALSE),
                   function(cmp) identical(cmp$distance, "great_circle"), TRUE))
  if (gc && !isFALSE(standardize)) {
    abort_askotch(paste("A great-circle distance needs longitude and latitude in degrees:",
                        "use `standardize = FALSE` (or \"auto\")."), "input", call)
  }
  ml <- NROW(composite_params(k, hold_first = FALSE)$table) > 0L
  if (ml && loss$name != "squared" && !is_gp_classifier(args$posterior)) {
    abort_askotch(paste("Hyperparameters \"ml\" of a composite kernel need the squared loss",
                        "or a GP classifier (posterior = \"laplace\" or \"ep\");",
                        "give them as numbers."), "input", call)
  }
  k$bandwidth <- 1
  k$metric <- "L2"
  k$bandwidth_rule <- if (ml) "ml" else "fixed"
  k
}
