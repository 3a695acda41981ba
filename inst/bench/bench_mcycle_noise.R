# Heteroscedastic noise on MASS's data: held-out RMSE, negative log
# predictive density and 95% prediction-interval coverage by region, 25
# random 80/20 splits, askotch's krr(noise = ) (log-linear models and the
# latent Gaussian process gp()) against its homoscedastic default, the
# former default (Gaussian kernel at the median-heuristic bandwidth) and mgcv
# (gam(y ~ s(x)) and the location-scale gaulss family).
#   mcycle:   accel ~ times, regions "calm" (times < 15 ms) and "crash"
#   GAGurine: GAG ~ Age, regions "calm" (Age >= 2) and "crash" (Age < 2,
#             where the GAG level and its scatter are largest)
#
# Rscript inst/bench/bench_mcycle_noise.R [splits] [set: mcycle | GAGurine]
suppressPackageStartupMessages({
  library(askotch)
  library(mgcv)
})
args <- commandArgs(TRUE)
S <- if (length(args)) as.integer(args[1]) else 25L
set <- if (length(args) > 1L) args[2] else "mcycle"
sets <- list(
  mcycle = list(cols = c(x = "times", y = "accel"), held = 26,
                crash = function(x) x >= 15),
  GAGurine = list(cols = c(x = "Age", y = "GAG"), held = 63,
                  crash = function(x) x < 2))
if (!set %in% names(sets)) stop("set must be one of ", paste(names(sets), collapse = ", "))
st <- sets[[set]]
raw <- get(data(list = set, package = "MASS"))
d <- data.frame(x = raw[[st$cols[["x"]]]], y = raw[[st$cols[["y"]]]])

krr_noise <- function(noise, ...) {
  function(tr, te) {
    f <- krr(y ~ x, data = tr, noise = noise, threads = 1, ...)
    p <- predict(f, te, se.fit = TRUE)
    list(mu = p$fit, sd = sqrt(p$se.fit^2 + p$residual.scale^2))
  }
}
models <- list(
  "krr() default" = krr_noise(NULL),
  # the former default (it warns of an implausible signal variance on mcycle)
  "krr(bandwidth = \"median\")" = function(tr, te) {
    suppressWarnings(krr_noise(NULL, kernel = "rbf", bandwidth = "median")(tr, te))
  },
  "krr(noise = ~ x)" = krr_noise(~ x),
  "krr(noise = ~ poly(x, 2))" = krr_noise(~ poly(x, 2)),
  "krr(noise = ~ ns(x, 3))" = krr_noise(~ splines::ns(x, df = 3)),
  "krr(noise = ~ gp(x))" = krr_noise(~ gp(x)),
  "krr(noise = ~ gp(x, prior = FALSE))" = krr_noise(~ gp(x, prior = FALSE)),
  "mgcv gam(y ~ s(x))" = function(tr, te) {
    g <- gam(y ~ s(x), data = tr, method = "REML")
    p <- predict(g, te, se.fit = TRUE)
    list(mu = p$fit, sd = sqrt(p$se.fit^2 + g$sig2))
  },
  "mgcv gaulss" = function(tr, te) {
    g <- gam(list(y ~ s(x), ~ s(x)), data = tr, family = gaulss())
    p <- predict(g, te, type = "response")
    # gaulss' second linear predictor gives 1 / sd; add the mean's se
    pse <- predict(g, te, se.fit = TRUE)$se.fit[, 1]
    list(mu = p[, 1], sd = sqrt(pse^2 + (1 / p[, 2])^2))
  })
# mcycle's own regions: a noise level per phase
if (set == "mcycle") {
  models <- append(models, list("krr(noise = ~ I(x < 15))" = krr_noise(~ I(x < 15))), 4L)
}

set.seed(20261129)
splits <- replicate(S, sample(nrow(d), st$held), simplify = FALSE)
rows <- list()
for (nm in names(models)) {
  acc <- list(se = 0, nlpd = 0, n = 0, calm = c(0, 0), crash = c(0, 0), secs = 0)
  for (s in splits) {
    tr <- d[-s, ]
    te <- d[s, ]
    t0 <- proc.time()[["elapsed"]]
    p <- models[[nm]](tr, te)
    acc$secs <- acc$secs + proc.time()[["elapsed"]] - t0
    e <- te$y - p$mu
    inside <- abs(e) <= qnorm(0.975) * p$sd
    calm <- !st$crash(te$x)
    acc$se <- acc$se + sum(e^2)
    acc$nlpd <- acc$nlpd - sum(dnorm(te$y, p$mu, p$sd, log = TRUE))
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
cat(sprintf("MASS::%s (%s ~ %s), %d random %d/%d splits (%s)\n", set, st$cols[["y"]],
            st$cols[["x"]], S, nrow(d) - st$held, st$held, format(Sys.time())))
print(out, digits = 3)
