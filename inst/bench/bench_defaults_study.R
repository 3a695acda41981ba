#!/usr/bin/env Rscript
# Defaults study: which kernel, which hyperparameters learned and which input
# scaling a default krr() fit should use, judged on held-out data of real
# data sets that askotch's authors did not choose, side by side with the
# field's standard tool (fields::spatialProcess for spatial data, an
# additive mgcv::gam otherwise).
#
# Every data set is split 80/20 three times (set.seed(1), (2), (3)); every
# candidate is fitted on the 80% and scored on the 20%:
#   rmse      root mean squared error of the predictive mean
#   nlpd      mean negative log predictive density of the test responses
#             under the Gaussian predictive distribution (noise included)
#   cover95   share of test responses inside the 95% prediction interval
#   seconds   wall time of the fit (one thread)
#
# Candidates (krr() arguments; x as given, unless "joint" says otherwise):
#   median      kernel = "rbf", bandwidth = "median" (per-column scaling)
#   ml          rbf, bandwidth = "ml" (bandwidth and lambda by ML)
#   ard         rbf, bandwidth = "ard" (one length scale per column)
#   m52_ml      matern52, bandwidth = "ml"
#   m32_ml      matern32, bandwidth = "ml"
#   m32_ard     matern32, bandwidth = "ard"
#   m32_joint   matern32, bandwidth = "ml", scale = "joint" (one scale for
#               every column: coordinates stay isotropic)
#   m12_ml      matern12, bandwidth = "ml"
#   m12_joint   matern12, bandwidth = "ml", scale = "joint"
#   default     krr(x, y) with every default (whatever the package's are:
#               the kernel and scaling chosen by likelihood)
#
# Usage: Rscript inst/bench/bench_defaults_study.R [data set names...]
# ASKOTCH_STUDY_FITS=default,median,m32_ml limits the candidates (the peer
# always runs).
# Needs fields, MASS, mgcv, mlbench, modeldata (Debian: r-cran-modeldata).

suppressPackageStartupMessages({
  library(askotch)
})
args <- commandArgs(trailingOnly = TRUE)

# Data sets: list(x, y, spatial) -------------------------------------------
study_data <- function() {
  out <- list()
  e <- new.env()
  utils::data("NorthAmericanRainfall", package = "fields", envir = e)
  r <- e$NorthAmericanRainfall
  out$rainfall <- list(x = cbind(lon = r$longitude, lat = r$latitude),
                       y = log(r$precip), spatial = TRUE)
  utils::data("COmonthlyMet", package = "fields", envir = e)
  ok <- !is.na(e$CO.tmean.MAM.climate)
  out$co_temp <- list(x = e$CO.loc[ok, ], y = e$CO.tmean.MAM.climate[ok],
                      spatial = TRUE)
  utils::data("Boston", package = "MASS", envir = e)
  b <- e$Boston
  out$boston <- list(x = as.matrix(b[, names(b) != "medv"]), y = b$medv,
                     spatial = FALSE)
  utils::data("mcycle", package = "MASS", envir = e)
  out$mcycle <- list(x = cbind(times = e$mcycle$times), y = e$mcycle$accel,
                     spatial = FALSE)
  if (requireNamespace("modeldata", quietly = TRUE)) {
    utils::data("concrete", package = "modeldata", envir = e)
    cc <- as.data.frame(e$concrete)
    out$concrete <- list(x = as.matrix(cc[, names(cc) != "compressive_strength"]),
                         y = cc$compressive_strength, spatial = FALSE)
    utils::data("biomass", package = "modeldata", envir = e)
    bm <- as.data.frame(e$biomass)
    out$biomass <- list(x = as.matrix(bm[, c("carbon", "hydrogen", "oxygen",
                                             "nitrogen", "sulfur")]),
                        y = bm$HHV, spatial = FALSE)
  }
  out
}

# Candidates --------------------------------------------------------------
joint_scale <- function(x) {
  ctr <- colMeans(x)
  s <- mean(apply(x, 2L, stats::sd))
  list(f = function(z) sweep(z, 2L, ctr) / s)
}

candidates <- list(
  median = list(kernel = "rbf", bandwidth = "median"),
  ml = list(kernel = "rbf", bandwidth = "ml"),
  ard = list(kernel = "rbf", bandwidth = "ard"),
  m52_ml = list(kernel = "matern52", bandwidth = "ml"),
  m32_ml = list(kernel = "matern32", bandwidth = "ml"),
  m32_ard = list(kernel = "matern32", bandwidth = "ard"),
  m32_joint = list(kernel = "matern32", bandwidth = "ml", joint = TRUE),
  m12_ml = list(kernel = "matern12", bandwidth = "ml"),
  m12_joint = list(kernel = "matern12", bandwidth = "ml", joint = TRUE),
  default = list()
)

only <- Sys.getenv("ASKOTCH_STUDY_FITS", "")
if (nzchar(only)) candidates <- candidates[intersect(strsplit(only, ",")[[1L]], names(candidates))]

score <- function(mu, sd, y) {
  z <- (y - mu) / sd
  c(rmse = sqrt(mean((y - mu)^2)),
    nlpd = mean(0.5 * log(2 * pi * sd^2) + z^2 / 2),
    cover95 = mean(abs(z) <= stats::qnorm(0.975)))
}

fit_krr <- function(cand, xtr, ytr, xte) {
  joint <- isTRUE(cand$joint)
  cand$joint <- NULL
  if (joint) {
    js <- joint_scale(xtr)
    xtr <- js$f(xtr)
    xte <- js$f(xte)
    cand$standardize <- FALSE
  } else if (length(cand) > 0L) {
    cand$standardize <- TRUE  # the named candidates scale each column
  }
  fit <- do.call(krr, c(list(xtr, ytr, seed = 1, threads = 1), cand))
  p <- predict(fit, xte, interval = "prediction", level = 0.95)
  list(mu = p[, "fit"], sd = (p[, "upr"] - p[, "fit"]) / stats::qnorm(0.975),
       fit = fit)
}

fit_peer <- function(d, xtr, ytr, xte) {
  if (d$spatial) {
    suppressPackageStartupMessages(library(fields))  # its covariances by name
    f <- fields::spatialProcess(xtr, ytr)
    mu <- drop(stats::predict(f, xte))
    se <- drop(fields::predictSE(f, xte))
    sd <- sqrt(se^2 + f$summary[["tau"]]^2)
    return(list(mu = mu, sd = sd, name = "fields"))
  }
  df <- data.frame(xtr, y = ytr)
  num <- colnames(xtr)[apply(xtr, 2L, function(v) length(unique(v)) >= 10)]
  lin <- setdiff(colnames(xtr), num)
  k <- pmin(10L, vapply(num, function(v) length(unique(xtr[, v])) - 1L, 1L))
  rhs <- c(sprintf("s(%s, k = %d)", num, k), lin)
  g <- mgcv::gam(stats::as.formula(paste("y ~", paste(rhs, collapse = " + "))),
                 data = df, method = "REML")
  pr <- mgcv::predict.gam(g, data.frame(xte), se.fit = TRUE)
  list(mu = drop(pr$fit), sd = sqrt(drop(pr$se.fit)^2 + g$sig2), name = "mgcv")
}

run_one <- function(name, d, split) {
  set.seed(split)
  n <- length(d$y)
  te <- sample.int(n, round(0.2 * n))
  xtr <- d$x[-te, , drop = FALSE]
  xte <- d$x[te, , drop = FALSE]
  ytr <- d$y[-te]
  yte <- d$y[te]
  rows <- list()
  for (cn in names(candidates)) {
    t0 <- proc.time()[["elapsed"]]
    r <- tryCatch(fit_krr(candidates[[cn]], xtr, ytr, xte),
                  error = function(e) {
                    message(name, " ", cn, ": ", conditionMessage(e))
                    NULL
                  })
    secs <- proc.time()[["elapsed"]] - t0
    sc <- if (is.null(r)) c(rmse = NA, nlpd = NA, cover95 = NA) else score(r$mu, r$sd, yte)
    rows[[cn]] <- data.frame(data = name, split = split, fit = cn, t(sc),
                             seconds = secs)
  }
  t0 <- proc.time()[["elapsed"]]
  pr <- tryCatch(fit_peer(d, xtr, ytr, xte), error = function(e) {
    message(name, " peer: ", conditionMessage(e))
    NULL
  })
  secs <- proc.time()[["elapsed"]] - t0
  if (!is.null(pr)) {
    rows$peer <- data.frame(data = name, split = split, fit = pr$name,
                            t(score(pr$mu, pr$sd, yte)), seconds = secs)
  }
  do.call(rbind, rows)
}

main <- function() {
  ds <- study_data()
  if (length(args)) ds <- ds[intersect(names(ds), args)]
  cat(sprintf("# defaults study, %s, askotch %s, load %s\n", format(Sys.time()),
              utils::packageVersion("askotch"),
              paste(readLines("/proc/loadavg", warn = FALSE), collapse = "")))
  res <- list()
  for (nm in names(ds)) {
    for (s in 1:3) {
      res[[paste(nm, s)]] <- run_one(nm, ds[[nm]], s)
      print(res[[paste(nm, s)]], digits = 4, row.names = FALSE)
    }
  }
  all <- do.call(rbind, res)
  agg <- stats::aggregate(cbind(rmse, nlpd, cover95, seconds) ~ data + fit,
                          data = all, FUN = mean)
  agg <- agg[order(agg$data, agg$rmse), ]
  cat("\n# means over the three splits\n")
  print(agg, digits = 4, row.names = FALSE)
  saveRDS(all, file.path(tempdir(), "defaults_study.rds"))
  invisible(all)
}

main()
