#!/usr/bin/env Rscript
# GP regression at scale: Friedman 1 (p = 10, noise sd 1), n training points
# (default 1e5), 1e4 test points: the default fit (lambda by maximum
# likelihood on a subsample, solver "auto", automatic
# tolerance), then predictions with standard errors (predict()'s default
# method).
# Prints a table and saves it (with the machine and load) for the vignette
# "Gaussian-process regression with askotch".
#
#   Rscript inst/bench/bench_gp_scale.R [n] [out.rds]
suppressPackageStartupMessages(library(askotch))
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1L) as.numeric(args[1L]) else 1e5
out <- if (length(args) >= 2L) args[2L] else "inst/bench/gp_scale_results.rds"
nt <- 1e4
friedman <- function(m) {
  x <- matrix(runif(m * 10), m, 10)
  list(x = x, f = 10 * sin(pi * x[, 1] * x[, 2]) + 20 * (x[, 3] - 0.5)^2 +
         10 * x[, 4] + 5 * x[, 5])
}
set.seed(1)
tr <- friedman(n); y <- tr$f + rnorm(n)
te <- friedman(nt); yt <- te$f + rnorm(nt)
up <- system("uptime", intern = TRUE)
cpu <- sub(".*: *", "", grep("Model name", system("lscpu", intern = TRUE), value = TRUE))
el <- function() proc.time()[["elapsed"]]
t0 <- el()
fit <- krr(tr$x, y, seed = 1)
t_fit <- el() - t0
t1 <- el()
# the default method ("auto"): exact up to n = 5000; the Nystrom bracket
# when it is tight; the exact variance up to 1e4 points, else the pathwise
# Monte Carlo estimate (100 draws) when it is not
loose_msg <- NULL
# ASKOTCH_BENCH_PROFILE=file: R's sampling profiler over the standard errors
prof <- Sys.getenv("ASKOTCH_BENCH_PROFILE")
if (nzchar(prof)) Rprof(prof, interval = 0.05)
pr <- withCallingHandlers(predict(fit, te$x, se.fit = TRUE),
  askotch_warning_accuracy = function(w) {
    loose_msg <<- conditionMessage(w)
    invokeRestart("muffleWarning")
  })
t_se <- el() - t1
if (nzchar(prof)) {
  Rprof(NULL)
  cat("standard errors, profile (seconds by function, total time):\n")
  print(utils::head(summaryRprof(prof)$by.total[, c("total.time", "self.time")], 25))
}
rng <- attr(pr$se.fit, "var_range")
mcse <- attr(pr$se.fit, "var_mc_se")
se_method <- if (!is.null(mcse)) {
  sprintf(paste("pathwise Monte Carlo, %d draws, median relative Monte Carlo",
                "standard error of the variance %.3f"), attr(pr$se.fit, "draws"),
          median(mcse / pr$se.fit^2))
} else if (!is.null(rng)) {
  sprintf(paste("Nystrom rank %d, tr(K - K_hat) = %.3g, variance bracket",
                "upper/lower median %.3g"), attr(pr$se.fit, "rank"),
          attr(pr$se.fit, "trace_error"), median(rng[, "upper"] / rng[, "lower"]))
} else "exact"
t2 <- el()
mu <- predict(fit, te$x)
t_pred <- el() - t2
rmse <- sqrt(mean((mu - yt)^2))
# coverage of the 95% prediction intervals on the test set
half <- qnorm(0.975) * sqrt(pr$se.fit^2 + pr$residual.scale^2)
cover <- mean(abs(yt - pr$fit) <= half)
# held-out negative log predictive density (Gaussian, the noise included)
sd_pred <- sqrt(pr$se.fit^2 + pr$residual.scale^2)
nlpd <- mean(-dnorm(yt, pr$fit, sd_pred, log = TRUE))
tab <- data.frame(
  step = c("fit (ML lambda on a subsample + solve)", "predict, 1e4 points",
           "standard errors, 1e4 points", "total"),
  seconds = round(c(t_fit, t_pred, t_se, t_fit + t_se), 1))
note <- sprintf(paste0(
  "\n\nn = %d, p = 10, %s; lambda = %.3g (noise-to-signal; true 1/var(f) ~ %.3g), ",
  "%s, %.1f passes, converged: %s; test RMSE %.3f (noise sd 1); ",
  "95%% prediction intervals cover %.1f%% of the test responses; NLPD %.4f; ",
  "standard errors: %s. ",
  "Device: %s. Machine: %s, %d threads; load: %s.\n"),
  as.integer(n), format(Sys.time(), "%Y-%m-%d %H:%M UTC", tz = "UTC"),
  fit$lambda, 1 / var(tr$f), format(fit$solver), fit$passes,
  if (fit$converged) "yes" else fit$reason, rmse, 100 * cover, nlpd, se_method,
  fit$device, cpu,
  askotch_threads(), sub(".*load", "load", up))
print(tab)
cat(note)
if (!is.null(loose_msg)) cat("Warning (askotch_warning_accuracy):", loose_msg, "\n")
saveRDS(list(table = tab, note = note), out)
