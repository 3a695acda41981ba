# ASkotch and its relatives: askotch() (journal and v1 variants), skotch(),
# sap() -- the compiled solvers "askotch" and "askotch_v1" ----------------------

#' @rdname solvers
#' @export
askotch <- function(block_size = NULL, rank = NULL, rho = NULL,
                    accelerated = TRUE, sampling = c("uniform", "rls"),
                    mu = NULL, nu = NULL, power_iters = NULL,
                    variant = c("journal", "v1"), rls_subsample = NULL,
                    v1_beta = NULL, restart = NULL) {
  check_flag(accelerated, "accelerated")
  # the journal's settings by name: b = n / 100, r = 100 (a given rank stays)
  defaults <- NULL
  if (is.character(block_size)) {
    if (!identical(tolower(block_size), "paper")) {
      abort_askotch(paste(
        "`block_size` must be a positive whole number, NULL (chosen by cost)",
        "or \"paper\" (the journal's b = n / 100, r = 100); found",
        sprintf("%s.", fmt_value(block_size))), "input")
    }
    defaults <- "paper"
    block_size <- NULL
  }
  sampling <- if (missing(sampling)) "uniform" else
    check_choice(sampling, option_choices("askotch", "sampling"), "sampling")
  variant <- if (missing(variant)) "journal" else
    check_choice(variant, c("journal", "v1"), "variant")
  if (!is.null(rls_subsample) && sampling != "rls") {
    abort_askotch(paste(
      "`rls_subsample` is only used with `sampling = \"rls\"`; found",
      sprintf("`sampling = \"%s\"`.", sampling)), "input")
  }
  if (variant == "v1") {
    if (!is.null(defaults)) {
      abort_askotch(paste(
        "`block_size = \"paper\"` names the journal's settings (b = n / 100,",
        "r = 100); `variant = \"v1\"` has a fixed partition of its own",
        "(give `block_size` as a number)."), "input")
    }
    if (sampling != "uniform") {
      abort_askotch(paste(
        "`variant = \"v1\"` samples the blocks of a fixed partition with",
        "probabilities set by their step sizes; it cannot be combined with",
        "`sampling = \"rls\"`."), "input")
    }
    if (!accelerated) {
      abort_askotch(paste(
        "`variant = \"v1\"` is always accelerated (NU_ACDM); it cannot be",
        "combined with `accelerated = FALSE` (skotch())."), "input")
    }
    if (!is.null(nu)) {
      abort_askotch(paste(
        "`nu` is not used by `variant = \"v1\"` (NU_ACDM derives its",
        "parameters from `mu` and the block step sizes); found",
        sprintf("`nu = %s`.", fmt_value(nu))), "input")
    }
    if (!is.null(restart)) {
      abort_askotch(paste(
        "`restart` is not used by `variant = \"v1\"` (NU_ACDM has no",
        "momentum restart); found", sprintf("`restart = %s`.",
                                           fmt_value(restart))), "input")
    }
  } else if (!is.null(v1_beta)) {
    abort_askotch(paste(
      "`v1_beta` is NU_ACDM's parameter and only used with",
      "`variant = \"v1\"`."), "input")
  }
  restart <- check_restart(restart, accelerated)
  name <- if (variant == "v1") "askotch_v1" else if (accelerated) "askotch"
    else "skotch"
  check_spec(new_solver_spec(name, list(
    block_size = block_size, defaults = defaults, rank = rank,
    rho = lower_choice(rho), accelerated = accelerated, sampling = sampling,
    variant = variant,
    rls_subsample = rls_subsample, mu = mu, nu = nu,
    power_iters = power_iters, v1_beta = v1_beta, restart = restart),
    family = "askotch"))
}

# the momentum restart of the accelerated methods: NULL (the compiled
# default) or one of the compiled choices; an error without acceleration
check_restart <- function(restart, accelerated) {
  if (is.null(restart)) return(NULL)
  if (!accelerated) {
    abort_askotch(paste(
      "`restart` restarts the momentum of the accelerated methods; it cannot",
      "be combined with `accelerated = FALSE` (skotch(), SAP)."), "input")
  }
  check_choice(restart, option_choices("askotch", "restart"), "restart")
}

#' @rdname solvers
#' @export
skotch <- function(...) {
  args <- list(...)
  if ("accelerated" %in% names(args)) {
    abort_askotch("`accelerated` cannot be set in skotch(); use askotch().",
                  "input")
  }
  if ("variant" %in% names(args) && !identical(args$variant, "journal")) {
    abort_askotch(paste(
      "`variant` cannot be set in skotch(): Skotch is the journal method",
      "without acceleration; use askotch(variant = \"v1\")."), "input")
  }
  askotch(..., accelerated = FALSE)
}

#' @rdname solvers
#' @export
sap <- function(block_size = NULL, accelerated = TRUE, mu = NULL, nu = NULL,
                restart = NULL) {
  check_flag(accelerated, "accelerated")
  restart <- check_restart(restart, accelerated)
  check_spec(new_solver_spec(if (accelerated) "nsap" else "sap", list(
    block_size = block_size, accelerated = accelerated, mu = mu, nu = nu,
    restart = restart), family = "sap"))
}

spec_askotch <- function() askotch()
spec_skotch <- function() skotch()
spec_askotch_v1 <- function() askotch(variant = "v1")
spec_nsap <- function() sap()
spec_sap <- function() sap(accelerated = FALSE)

#' @export
solver_c.askotch_solver_askotch <- function(spec) {
  v1 <- identical(spec$variant, "v1")
  rank <- if (isTRUE(spec$rank_by_spectrum)) NULL else spec$rank
  opts <- list(block_size = spec$block_size, rank = rank, rho = spec$rho,
               mu = spec$mu, power_iters = spec$power_iters)
  if (v1) {
    opts$v1_beta <- spec$v1_beta
  } else {
    opts <- c(opts, list(defaults = spec$defaults,
                         accelerated = spec$accelerated,
                         sampling = spec$sampling,
                         rls_subsample = spec$rls_subsample, nu = spec$nu,
                         restart = spec$restart))
  }
  list(name = if (v1) "askotch_v1" else "askotch", options = compact(opts))
}

#' @export
solver_resolved.askotch_solver_askotch <- function(spec, options, extras) {
  spec <- NextMethod()
  # the rank by the spectrum (the option stays 0 in the compiled solver; a
  # refit at another lambda chooses it again)
  if (identical(as.numeric(options$rank), 0) && "rank_used" %in% names(extras) &&
      isTRUE(extras[["rank_used"]] > 0)) {
    spec$rank <- as.integer(extras[["rank_used"]])
    spec$rank_by_spectrum <- TRUE
  }
  if (identical(spec$sampling, "rls")) spec$rls_subsample <- options$rls_subsample
  resolved_restart(spec, options, extras)
}

# the accelerated methods report the restart rule they used and how often
# the momentum was restarted
resolved_restart <- function(spec, options, extras) {
  if (isTRUE(spec$accelerated) && !is.null(options$restart)) {
    spec$restart <- options$restart
    spec$restarts <- extras[["restarts"]]
  }
  # lambda >= n/b with the default mu and nu: the plain method's step
  if (isTRUE(spec$accelerated) && "momentum" %in% names(extras) &&
      identical(unname(extras[["momentum"]]), 0)) {
    spec$momentum <- FALSE
  }
  spec
}

#' @export
format.askotch_solver_askotch <- function(x, ...) {
  rho <- auto(if (is.null(x$rho)) option_default("askotch", "rho") else x$rho)
  if (identical(x$name, "askotch_v1")) {
    return(sprintf(paste0("ASkotch v1 (fixed partition, NU_ACDM; block size",
                          " %s, rank %s, rho %s%s)"), auto(x$block_size),
                   auto(x$rank), rho,
                   if (is.null(x$mu)) "" else sprintf(", mu %s", auto(x$mu))))
  }
  smp <- if (identical(x$sampling, "rls"))
    sprintf(", RLS sampling (subsample %s)", auto(x$rls_subsample)) else ""
  sprintf("%s (block size %s, rank %s%s, rho %s%s%s%s)",
          if (x$accelerated) "ASkotch" else "Skotch", auto(x$block_size),
          auto(x$rank),
          if (isTRUE(x$rank_by_spectrum)) " by the spectrum" else
            if (identical(x$defaults, "paper")) " as in the journal" else "",
          rho, smp, fmt_restart(x),
          if (is.null(x$mu) && is.null(x$nu)) "" else
            sprintf(", mu %s, nu %s",
                    if (is.null(x$mu)) "lambda" else auto(x$mu),
                    if (is.null(x$nu)) "n/b" else auto(x$nu)))
}

#' @export
solver_c.askotch_solver_sap <- function(spec) {
  list(name = "askotch", options = compact(list(
    block_solve = "exact", accelerated = spec$accelerated,
    block_size = spec$block_size, mu = spec$mu, nu = spec$nu,
    restart = spec$restart)))
}

#' @export
solver_resolved.askotch_solver_sap <- function(spec, options, extras) {
  spec$block_size <- options$block_size
  resolved_restart(spec, options, extras)
}

# ", momentum restart auto" (accelerated methods, when known or set)
fmt_restart <- function(x) {
  if (isFALSE(x$momentum)) return(", no momentum: lambda >= n/b, the plain method's step")
  if (!isTRUE(x$accelerated) || is.null(x$restart)) return("")
  sprintf(", momentum restart %s%s", x$restart,
          if (is.null(x$restarts) || is.na(x$restarts)) "" else
            sprintf(" (%d restarts)", as.integer(x$restarts)))
}

#' @export
format.askotch_solver_sap <- function(x, ...) {
  sprintf("%s (exact block solves, block size %s%s)", toupper(x$name),
          auto(x$block_size), fmt_restart(x))
}
