# GP classification (kernel_machine(loss = loss_logistic(), posterior =
# "laplace" or "ep")) on Sonar (mlbench) and spam (kernlab): held-out accuracy,
# expected calibration error (10 equal-width bins of the predicted
# probability of the second class) and log loss, against the logistic
# kernel machine with its default C = 1, the hinge-loss kernel machine with
# Platt scaling (kernel_machine(probability = TRUE)) and LIBSVM with Platt
# scaling (e1071::svm(probability = TRUE), its defaults), the same random
# splits.
#
# Rscript inst/bench/bench_gp_classifier.R [sonar_splits] [spam_splits]
suppressPackageStartupMessages({
  library(askotch)
  library(e1071)
})
args <- commandArgs(TRUE)
S1 <- if (length(args) >= 1) as.integer(args[1]) else 10L
S2 <- if (length(args) >= 2) as.integer(args[2]) else 3L
data(Sonar, package = "mlbench")
data(spam, package = "kernlab")
sets <- list(Sonar = list(d = Sonar, y = "Class", splits = S1, test = 0.25),
             spam = list(d = spam, y = "type", splits = S2, test = 0.2))

ece <- function(p, y01, bins = 10) {
  b <- cut(p, seq(0, 1, length.out = bins + 1), include.lowest = TRUE)
  sum(tapply(seq_along(p), b, function(i) length(i) * abs(mean(p[i]) - mean(y01[i]))),
      na.rm = TRUE) / length(p)
}
models <- list(
  "askotch GP classifier (Laplace, ML)" = function(x, y, xt) {
    f <- kernel_machine(x, y, loss = loss_logistic(), posterior = "laplace", threads = 2)
    predict(f, xt, type = "prob")
  },
  "askotch GP classifier (EP, EP's hyperparameters)" = function(x, y, xt) {
    f <- kernel_machine(x, y, loss = loss_logistic(), posterior = "ep", threads = 2)
    predict(f, xt, type = "prob")
  },
  "askotch GP classifier (EP, Laplace's hyperparameters)" = function(x, y, xt) {
    op <- options(askotch.ep_tune = FALSE)
    on.exit(options(op))
    f <- kernel_machine(x, y, loss = loss_logistic(), posterior = "ep", threads = 2)
    predict(f, xt, type = "prob")
  },
  "askotch logistic, C = 1 (default)" = function(x, y, xt) {
    f <- kernel_machine(x, y, loss = loss_logistic(), threads = 2)
    predict(f, xt, type = "prob")
  },
  "askotch hinge + Platt (defaults)" = function(x, y, xt) {
    f <- kernel_machine(x, y, loss = loss_hinge(), probability = TRUE, threads = 2)
    predict(f, xt, type = "prob")
  },
  "e1071::svm + Platt (defaults)" = function(x, y, xt) {
    f <- svm(x, y, probability = TRUE)
    attr(predict(f, xt, probability = TRUE), "probabilities")[, levels(y)[2]]
  })
set.seed(20261129)
rows <- NULL
for (nm in names(sets)) {
  s <- sets[[nm]]
  x <- as.matrix(s$d[, setdiff(names(s$d), s$y)])
  y <- s$d[[s$y]]
  # the splits are drawn before any fit (LIBSVM's Platt scaling draws
  # random numbers), so that every model sees the same ones
  tests <- lapply(seq_len(s$splits), function(k) sample(nrow(x), round(s$test * nrow(x))))
  for (k in seq_len(s$splits)) {
    te <- tests[[k]]
    for (m in names(models)) {
      t0 <- proc.time()[["elapsed"]]
      p <- models[[m]](x[-te, ], y[-te], x[te, ])
      secs <- proc.time()[["elapsed"]] - t0
      y01 <- as.numeric(y[te] == levels(y)[2])
      pc <- pmin(pmax(p, 1e-12), 1 - 1e-12)
      rows <- rbind(rows, data.frame(data = nm, split = k, model = m,
                                     accuracy = mean((p > 0.5) == (y01 == 1)),
                                     ece = ece(p, y01),
                                     logloss = -mean(y01 * log(pc) + (1 - y01) * log(1 - pc)),
                                     seconds = secs))
    }
  }
}
cat(sprintf("GP classifier calibration (%s)\n", format(Sys.time())))
agg <- aggregate(cbind(accuracy, ece, logloss, seconds) ~ data + model, rows, mean)
print(agg[order(agg$data, agg$model), ], digits = 3, row.names = FALSE)
