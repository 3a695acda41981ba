# Universal kriging on fields::NorthAmericanRainfall (all 1720 stations):
# krr(mean = ~ lon + lat) with the Matern 3/2 kernel by maximum likelihood
# (and REML) against fields::spatialProcess() with the same covariance and
# its default linear trend: maximised log likelihood, range, lambda, trend
# coefficients and seconds, each fit timed twice in turn.
#
# Rscript inst/bench/bench_trend_rainfall.R
suppressPackageStartupMessages({
  library(askotch)
  library(fields)
})
data(NorthAmericanRainfall, package = "fields")
d <- NorthAmericanRainfall
x <- cbind(lon = d$longitude, lat = d$latitude)
y <- log10(d$precip)
fits <- list(
  fields = function() {
    sp <- spatialProcess(x, y, cov.args = list(Covariance = "Matern", smoothness = 1.5))
    c(loglik = sp$summary[["lnProfileLike.FULL"]], range = sp$summary[["aRange"]],
      lambda = sp$summary[["lambda"]], beta = drop(sp$beta))
  },
  askotch_ml = function() {
    f <- krr(x, y, mean = ~ lon + lat, kernel = "matern32", standardize = FALSE, threads = 2)
    # fields' Matern(range a, smoothness 3/2) is our bandwidth sqrt(3) a
    c(loglik = as.numeric(logLik(f)), range = f$kernel$bandwidth / sqrt(3),
      lambda = f$lambda, beta = unname(coef(f)))
  },
  askotch_reml = function() {
    f <- krr(x, y, mean = ~ lon + lat, kernel = "matern32", standardize = FALSE,
             likelihood = "reml", threads = 2)
    c(loglik = as.numeric(logLik(f)), range = f$kernel$bandwidth / sqrt(3),
      lambda = f$lambda, beta = unname(coef(f)))
  })
out <- NULL
for (rep in 1:2) {
  for (nm in names(fits)) {
    t0 <- proc.time()[["elapsed"]]
    v <- fits[[nm]]()
    out <- rbind(out, data.frame(fit = nm, rep = rep, seconds = proc.time()[["elapsed"]] - t0,
                                 t(v)))
  }
}
cat(sprintf("NorthAmericanRainfall, n = %d (%s)\n", length(y), format(Sys.time())))
print(out, digits = 6)
