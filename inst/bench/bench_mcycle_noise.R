# Heteroscedastic noise on MASS::mcycle: held-out RMSE, negative log
# predictive density and 95% prediction-interval coverage by region (calm:
# times < 15 ms; crash: the rest), 25 random 107/26 splits, askotch's
# krr(noise = ) (log-linear models and the latent Gaussian process gp())
# against its homoscedastic default and mgcv (gam(accel ~ s(times)) and the
# location-scale gaulss family).
#
# Rscript inst/bench/bench_mcycle_noise.R [splits]
suppressPackageStartupMessages({
  library(askotch)
  library(mgcv)
})
data(mcycle, package = "MASS")
args <- commandArgs(TRUE)
S <- if (length(args)) as.integer(args[1]) else 25L

krr_noise <- function(noise) {
  function(tr, te) {
    f <- krr(accel ~ times, data = tr, noise = noise, threads = 1)
    p <- predict(f, te, se.fit = TRUE)
    list(mu = p$fit, sd = sqrt(p$se.fit^2 + p$residual.scale^2))
  }
}
models <- list(
  "krr() default" = krr_noise(NULL),
  "krr(noise = ~ times)" = krr_noise(~ times),
  "krr(noise = ~ poly(times, 2))" = krr_noise(~ poly(times, 2)),
  "krr(noise = ~ ns(times, 3))" = krr_noise(~ splines::ns(times, df = 3)),
  "krr(noise = ~ I(times < 15))" = krr_noise(~ I(times < 15)),
  "krr(noise = ~ gp(times))" = krr_noise(~ gp(times)),
  "mgcv gam(accel ~ s(times))" = function(tr, te) {
    g <- gam(accel ~ s(times), data = tr, method = "REML")
    p <- predict(g, te, se.fit = TRUE)
    list(mu = p$fit, sd = sqrt(p$se.fit^2 + g$sig2))
  },
  "mgcv gaulss" = function(tr, te) {
    g <- gam(list(accel ~ s(times), ~ s(times)), data = tr, family = gaulss())
    p <- predict(g, te, type = "response")
    # gaulss' second linear predictor gives 1 / sd; add the mean's se
    pse <- predict(g, te, se.fit = TRUE)$se.fit[, 1]
    list(mu = p[, 1], sd = sqrt(pse^2 + (1 / p[, 2])^2))
  })

set.seed(20261129)
splits <- replicate(S, sample(nrow(mcycle), 26), simplify = FALSE)
rows <- list()
for (nm in names(models)) {
  acc <- list(se = 0, nlpd = 0, n = 0, calm = c(0, 0), crash = c(0, 0), secs = 0)
  for (s in splits) {
    tr <- mcycle[-s, ]
    te <- mcycle[s, ]
    t0 <- proc.time()[["elapsed"]]
    p <- models[[nm]](tr, te)
    acc$secs <- acc$secs + proc.time()[["elapsed"]] - t0
    e <- te$accel - p$mu
    inside <- abs(e) <= qnorm(0.975) * p$sd
    calm <- te$times < 15
    acc$se <- acc$se + sum(e^2)
    acc$nlpd <- acc$nlpd - sum(dnorm(te$accel, p$mu, p$sd, log = TRUE))
    acc$n <- acc$n + length(e)
    acc$calm <- acc$calm + c(sum(inside[calm]), sum(calm))
    acc$crash <- acc$crash + c(sum(inside[!calm]), sum(!calm))
  }
  rows[[nm]] <- data.frame(model = nm, rmse = sqrt(acc$se / acc$n),
                           nlpd = acc$nlpd / acc$n,
                           cover_calm = acc$calm[1] / acc$calm[2],
                           cover_crash = acc$crash[1] / acc$crash[2],
                           n_calm = acc$calm[2], n_crash = acc$crash[2],
                           seconds_per_fit = acc$secs / S)
}
out <- do.call(rbind, rows)
rownames(out) <- NULL
cat(sprintf("MASS::mcycle, %d random 107/26 splits (%s)\n", S, format(Sys.time())))
print(out, digits = 3)
