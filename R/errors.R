# Classed conditions -------------------------------------------------------
#
# Every error the package signals goes through abort_askotch(), both those
# raised in R (argument checks) and those coming from the C core (through
# raise_from_c(), which the C glue calls with a status name and a message).

askotch_error_statuses <- c("input", "memory", "device", "numeric",
                            "not_built", "internal", "object", "interrupt",
                            "time_limit")

#' Signal a classed askotch error
#'
#' @param message Character string, the message.
#' @param class One of `"input"`, `"memory"`, `"device"`, `"numeric"`,
#'   `"not_built"`, `"internal"`, `"object"` (a corrupted fitted object),
#'   `"interrupt"`, `"time_limit"` (a `time_limit` that the setup of a solver
#'   could not meet).
#' @param call The call to report, or `NULL`.
#' @return Does not return; signals a condition of class
#'   `c("askotch_error_<class>", "askotch_error", "error", "condition")`.
#' @noRd
abort_askotch <- function(message, class = "input", call = NULL) {
  class <- as.character(class)[1L]
  if (is.na(class) || !class %in% askotch_error_statuses) class <- "internal"
  cond <- structure(
    class = c(paste0("askotch_error_", class), "askotch_error", "error",
              "condition"),
    list(message = paste(message, collapse = "\n"), call = call)
  )
  stop(cond)
}

#' Entry point for errors reported by the C core
#'
#' Called from the C glue (src/r_*.c) after it has freed its resources.
#' @param status Status name, see [abort_askotch()].
#' @param message Detail written by the core.
#' @noRd
raise_from_c <- function(status, message) {
  status <- tryCatch(as.character(status)[1L], error = function(e) "internal")
  message <- tryCatch(as.character(message)[1L], error = function(e) "")
  if (is.na(message) || !nzchar(message)) {
    message <- sprintf("askotch C core failed (status '%s').", status)
  }
  abort_askotch(message, status, call = NULL)
}

# Argument checks -----------------------------------------------------------

fmt_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (is.function(x)) return("a function")
  if (length(x) == 0L) return(sprintf("a length-0 %s", class(x)[1L]))
  if (length(x) > 1L) {
    return(sprintf("a %s of length %d", class(x)[1L], length(x)))
  }
  if (is.character(x)) return(sprintf("\"%s\"", x))
  if (is.numeric(x) || is.logical(x)) return(format(x, digits = 6))
  sprintf("an object of class %s", class(x)[1L])
}

# A positive finite number (scalar).
check_positive <- function(x, arg, allow_null = FALSE, allow_inf = FALSE,
                           integerish = FALSE, call = NULL, max = Inf) {
  if (allow_null && is.null(x)) return(invisible(NULL))
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && x > 0 &&
    (allow_inf || is.finite(x))
  if (ok && integerish) ok <- is.infinite(x) || x == round(x)
  if (!ok || x > max) {
    what <- if (integerish) "a positive whole number" else "a positive number"
    if (!allow_inf) what <- paste("finite", what)
    what <- sub("^finite a ", "a finite ", what)
    if (is.finite(max)) what <- paste(what, "up to", format(max, big.mark = ","))
    abort_askotch(sprintf("`%s` must be %s, not %s.", arg, what, fmt_value(x)),
                  "input", call)
  }
  invisible(x)
}

# A stopping tolerance: a non-negative finite number.
check_tol <- function(tol, call = NULL) {
  if (!is.numeric(tol) || length(tol) != 1L || is.na(tol) || tol < 0 ||
      !is.finite(tol)) {
    abort_askotch(sprintf("`tol` must be a non-negative number, not %s.",
                          fmt_value(tol)), "input", call)
  }
  invisible(tol)
}

check_flag <- function(x, arg, call = NULL) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    abort_askotch(sprintf("`%s` must be TRUE or FALSE, not %s.", arg,
                          fmt_value(x)), "input", call)
  }
  invisible(x)
}

check_choice <- function(x, choices, arg, call = NULL) {
  if (!is.character(x) || length(x) != 1L || is.na(x) ||
      !tolower(x) %in% choices) {
    abort_askotch(sprintf("`%s` must be one of %s, not %s.", arg,
                          paste0("\"", choices, "\"", collapse = ", "),
                          fmt_value(x)), "input", call)
  }
  tolower(x)
}

#' Signal a classed askotch warning
#'
#' @param message Character string, the message.
#' @param class The kind, e.g. `"convergence"`.
#' @param call The call to report, or `NULL`.
#' @return `NULL` invisibly; signals a warning of class
#'   `c("askotch_warning_<class>", "askotch_warning", "warning", "condition")`.
#' @noRd
warn_askotch <- function(message, class = "convergence", call = NULL) {
  cond <- structure(
    class = c(paste0("askotch_warning_", class), "askotch_warning", "warning",
              "condition"),
    list(message = paste(message, collapse = "\n"), call = call)
  )
  warning(cond)
  invisible(NULL)
}
