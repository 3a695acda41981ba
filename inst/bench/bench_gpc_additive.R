# An additive GP classifier (a sum of one-dimensional kernels, each with its
# own bandwidth and amplitude estimated by the marginal likelihood) on the
# Pima Indians diabetes data (mlbench), against the GP classifier with one
# Gaussian kernel on all inputs, mgcv's additive logistic model (a smooth
# of each input, REML) and the linear logistic model (glm): held-out
# accuracy, expected calibration error (10 equal-width bins), log loss and
# seconds per fit, over random 80/20 splits drawn before any fit. Inputs
# are standardised on each training set.
#
# Rscript inst/bench/bench_gpc_additive.R [splits] [models, comma-separated]
suppressPackageStartupMessages({
  library(askotch)
  library(mgcv)
})
args <- commandArgs(TRUE)
S <- if (length(args) >= 1) as.integer(args[1]) else 20L
data(PimaIndiansDiabetes, package = "mlbench")
d <- PimaIndiansDiabetes
xn <- setdiff(names(d), "diabetes")
additive <- Reduce(`+`, lapply(xn, function(v) {
  kernel_rbf("ml", dims = v, amplitude = "ml")
}))
gpc <- function(kernel, posterior) {
  function(tr, te) {
    f <- kernel_machine(diabetes ~ ., data = tr, loss = loss_logistic(),
                        posterior = posterior, kernel = kernel, threads = 2)
    predict(f, te, type = "prob")
  }
}
models <- list(
  "askotch GP classifier, Gaussian kernel (Laplace)" = gpc("auto", "laplace"),
  "askotch GP classifier, Gaussian kernel (EP)" = gpc("auto", "ep"),
  "askotch additive GP classifier (Laplace)" = gpc(additive, "laplace"),
  "askotch additive GP classifier (EP)" = gpc(additive, "ep"),
  "mgcv::gam, additive logistic (REML)" = function(tr, te) {
    fm <- stats::reformulate(sprintf("s(%s)", xn), "diabetes")
    f <- gam(fm, family = binomial(), data = tr, method = "REML")
    drop(predict(f, te, type = "response"))
  },
  "glm, linear logistic" = function(tr, te) {
    f <- glm(diabetes ~ ., family = binomial(), data = tr)
    drop(predict(f, te, type = "response"))
  })
if (length(args) >= 2) models <- models[strsplit(args[2], ",")[[1]]]
ece <- function(p, y01, bins = 10) {
  b <- cut(p, seq(0, 1, length.out = bins + 1), include.lowest = TRUE)
  sum(tapply(seq_along(p), b, function(i) length(i) * abs(mean(p[i]) - mean(y01[i]))),
      na.rm = TRUE) / length(p)
}
set.seed(20261201)
tests <- lapply(seq_len(S), function(k) sample(nrow(d), round(0.2 * nrow(d))))
rows <- NULL
for (k in seq_len(S)) {
  tr <- d[-tests[[k]], ]
  te <- d[tests[[k]], ]
  mu <- colMeans(tr[xn])
  sdv <- vapply(tr[xn], stats::sd, 0)
  tr[xn] <- scale(tr[xn], mu, sdv)
  te[xn] <- scale(te[xn], mu, sdv)
  y01 <- as.numeric(te$diabetes == "pos")
  for (m in names(models)) {
    t0 <- proc.time()[["elapsed"]]
    p <- models[[m]](tr, te)
    secs <- proc.time()[["elapsed"]] - t0
    pc <- pmin(pmax(p, 1e-12), 1 - 1e-12)
    rows <- rbind(rows, data.frame(split = k, model = m,
                                   accuracy = mean((p > 0.5) == (y01 == 1)),
                                   ece = ece(p, y01),
                                   logloss = -mean(y01 * log(pc) + (1 - y01) * log(1 - pc)),
                                   seconds = secs))
  }
}
cat(sprintf("Additive GP classifier, Pima (%s; %d splits)\n", format(Sys.time()), S))
agg <- aggregate(cbind(accuracy, ece, logloss, seconds) ~ model, rows, mean)
sds <- aggregate(cbind(accuracy, logloss) ~ model, rows, function(v) stats::sd(v) / sqrt(S))
names(sds)[-1] <- paste0(names(sds)[-1], "_se")
print(merge(agg, sds), digits = 3, row.names = FALSE)
