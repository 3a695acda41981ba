# Kernel algebra: composite kernels' matrices against base R constructions
# (and kernlab, fields), the Matern of any smoothness against besselK(), the
# derivatives against finite differences, fits against the closed form, and
# maximum likelihood against the package's own exact likelihood.

ka_matern <- function(d, nu, ell) {
  u <- sqrt(2 * nu) * d / ell
  r <- 2^(1 - nu) / gamma(nu) * u^nu * besselK(u, nu)
  r[u == 0] <- 1
  r
}
ka_dist <- function(a, b = a) {
  sqrt(pmax(outer(rowSums(a^2), rowSums(b^2), "+") - 2 * a %*% t(b), 0))
}
ka_data <- function(n = 60, seed = 1) {
  set.seed(seed)
  cbind(a = runif(n), b = runif(n), c = runif(n))
}
ka_resolve <- function(k, x) {
  ffi("composite_resolve")(ffi("as_composite")(k), x, colnames(x), 1, NULL)
}
# the oracle of ka_kernel() below, from base R
ka_oracle <- function(x1, x2) {
  d12 <- ka_dist(x1[, 1:2], x2[, 1:2])
  d3 <- ka_dist(x1[, 3, drop = FALSE], x2[, 3, drop = FALSE])
  exp(-d12^2 / (2 * 0.7^2)) * exp(-2 * sin(pi * d3 / 0.5)^2 / 0.8^2) +
    0.5 * ka_matern(ka_dist(x1, x2), 1.3, 0.4) +
    (0.5 * x1[, c(1, 3)] %*% t(x2[, c(1, 3)]) + 1)^2
}
ka_kernel <- function() {
  kernel_rbf(0.7, dims = 1:2) * kernel_periodic(period = 0.5, bandwidth = 0.8, dims = 3) +
    0.5 * kernel_matern(nu = 1.3, bandwidth = 0.4) +
    kernel_polynomial(2, 0.5, 1, dims = c("a", "c"))
}

test_that("a composite kernel's matrix and products equal their base R construction", {
  x <- ka_data()
  xn <- ka_data(25, seed = 2)
  kc <- ka_resolve(ka_kernel(), x)
  o <- ka_oracle(x, xn)
  km <- ffi("native_kernel_matrix")
  expect_lt(max(abs(km(x, xn, kc) - o)), 1e-13 * max(abs(o)))
  # single precision: the points and the products in float
  expect_lt(max(abs(km(x, xn, kc, precision = "single") - o)), 1e-5 * max(abs(o)))
  v <- matrix(rnorm(25 * 3), 25)
  ap <- ffi("native_kernel_apply")
  expect_equal(ap(x, xn, v, kc), o %*% v, tolerance = 1e-12)
  expect_equal(ap(x, xn, v, kc, precision = "single"), o %*% v, tolerance = 1e-5)
  # a sum of listed kernels goes through the fused products, term by term
  ks <- ka_resolve(kernel_laplace(0.9, dims = 2:3) + 2 * kernel_matern32(0.5), x)
  l1 <- as.matrix(stats::dist(rbind(x[, 2:3], xn[, 2:3]), "manhattan"))[1:60, 60 + 1:25]
  os <- unname(exp(-l1 / 0.9) + 2 * ka_matern(ka_dist(x, xn), 1.5, 0.5))
  expect_equal(ap(x, xn, v, ks), os %*% v, tolerance = 1e-12)
  expect_equal(km(x, xn, ks), os, tolerance = 1e-13)
  # eight components, each on its own columns: every call gathers 16 point sets
  k8 <- Reduce(`+`, lapply(1:8, function(i) {
    kernel_rbf(0.2 * i, dims = 1 + i %% 3) * kernel_linear(dims = 1 + (i + 1) %% 3)
  })[1:4])
  o8 <- Reduce(`+`, lapply(1:4, function(i) {
    exp(-outer(x[, 1 + i %% 3], xn[, 1 + i %% 3], "-")^2 / (2 * (0.2 * i)^2)) *
      outer(x[, 1 + (i + 1) %% 3], xn[, 1 + (i + 1) %% 3])
  }))
  expect_equal(km(x, xn, ka_resolve(k8, x)), o8, tolerance = 1e-13)
  expect_equal(ap(x, xn, v, ka_resolve(k8, x)), o8 %*% v, tolerance = 1e-12)
  # eight one-component terms on their own columns, X1 != X2: every term
  # gathers its own columns of both point sets as well
  kp8 <- Reduce(`+`, lapply(1:8, function(i) kernel_periodic(0.2 * i, 1, dims = 1 + i %% 3)))
  op8 <- Reduce(`+`, lapply(1:8, function(i) {
    exp(-2 * sin(pi * abs(outer(x[, 1 + i %% 3], xn[, 1 + i %% 3], "-")) / (0.2 * i))^2)
  }))
  expect_equal(ap(x, xn, v, ka_resolve(kp8, x)), op8 %*% v, tolerance = 1e-12)
  expect_equal(km(x, xn, ka_resolve(kp8, x)), op8, tolerance = 1e-13)
  # the linear kernel, and the polynomial against kernlab
  expect_equal(km(x, xn, ka_resolve(3 * kernel_linear(dims = 2), x)),
               3 * x[, 2] %o% xn[, 2], tolerance = 1e-14)
  skip_if_not_installed("kernlab")
  kp <- kernlab::kernelMatrix(kernlab::polydot(degree = 3, scale = 0.2, offset = 0.5), x, xn)
  expect_equal(km(x, xn, ka_resolve(kernel_polynomial(3, 0.2, 0.5), x)), unclass(kp)[, ],
               tolerance = 1e-13, ignore_attr = TRUE)
})

test_that("product terms equal base R on every instruction set (the CPU's fused products)", {
  # sizes across the CPU tiles (512 points of X2, 4-row blocks, odd remainders),
  # a time column spanning 15 periods, and every family the fused products serve
  set.seed(3)
  mk <- function(n) cbind(t = runif(n, 0, 20), a = runif(n), b = runif(n), c = runif(n),
                          d = rnorm(n))
  x <- mk(701)
  xn <- mk(533)
  k <- kernel_rbf(0.7, dims = c("a", "b")) * kernel_laplace(0.9, dims = "c") *
    kernel_periodic(period = 1.3, bandwidth = 0.8, dims = "t") +
    0.6 * kernel_linear(dims = "d") * kernel_matern52(0.6, dims = c("a", "d")) +
    0.7 * kernel_polynomial(3, 0.4, 1, dims = c("b", "c")) * kernel_matern32(4, dims = "t")
  l1 <- function(a, b) abs(outer(a, b, "-"))
  d_ad <- ka_dist(x[, c("a", "d")], xn[, c("a", "d")])
  d_t <- l1(x[, "t"], xn[, "t"])
  o <- exp(-ka_dist(x[, 2:3], xn[, 2:3])^2 / (2 * 0.7^2)) * exp(-l1(x[, "c"], xn[, "c"]) / 0.9) *
    exp(-2 * sin(pi * d_t / 1.3)^2 / 0.8^2) +
    0.6 * outer(x[, "d"], xn[, "d"]) * ka_matern(d_ad, 2.5, 0.6) +
    0.7 * (0.4 * x[, c("b", "c")] %*% t(xn[, c("b", "c")]) + 1)^3 * ka_matern(d_t, 1.5, 4)
  kc <- ka_resolve(k, x)
  v1 <- matrix(rnorm(533), 533)
  v20 <- matrix(rnorm(533 * 20), 533)
  old <- Sys.getenv("ASKOTCH_CPU_ISA", NA)
  on.exit(if (is.na(old)) Sys.unsetenv("ASKOTCH_CPU_ISA") else Sys.setenv(ASKOTCH_CPU_ISA = old))
  for (isa in c("avx512", "avx2", "generic")) {
    Sys.setenv(ASKOTCH_CPU_ISA = isa)
    km <- ffi("native_kernel_matrix")
    ap <- ffi("native_kernel_apply")
    expect_lt(max(abs(km(x, xn, kc) - o)), 1e-13 * max(abs(o)))
    expect_lt(max(abs(km(x, xn, kc, precision = "single") - o)), 1e-5 * max(abs(o)))
    # one right-hand side fused into the tiles; 20 through a stored tile
    expect_equal(ap(x, xn, v1, kc), o %*% v1, tolerance = 1e-12)
    expect_equal(ap(x, xn, v20, kc, threads = 1), o %*% v20, tolerance = 1e-12)
    expect_equal(ap(x, xn, v20, kc, precision = "single"), o %*% v20, tolerance = 1e-5)
  }
  # great-circle distances (the haversine formula in base R), fused with a
  # kernel on time: every instruction set, double and single
  hav <- function(a, b) {
    r <- pi / 180
    dl <- outer(a[, 2], b[, 2], "-") * r
    dg <- outer(a[, 1], b[, 1], "-") * r
    h <- sin(dl / 2)^2 + outer(cos(a[, 2] * r), cos(b[, 2] * r)) * sin(dg / 2)^2
    2 * 6371.0088 * asin(sqrt(pmin(h, 1)))
  }
  mg <- function(n) cbind(lon = runif(n, -125, -65), lat = runif(n, 25, 50), t = runif(n, 0, 5))
  sg <- mg(300)
  sg[1:20, 1:2] <- sg[21:40, 1:2] + 1e-4  # pairs about 10 m apart
  sn <- mg(77)
  kg <- ka_resolve(kernel_matern32(600, dims = c("lon", "lat"), distance = "great_circle") *
                     kernel_rbf(2, dims = "t"), sg)
  u <- sqrt(3) * hav(sg, sn) / 600
  og <- (1 + u) * exp(-u) * exp(-outer(sg[, 3], sn[, 3], "-")^2 / 8)
  vg <- matrix(rnorm(77), 77)
  for (isa in c("avx512", "avx2", "generic")) {
    Sys.setenv(ASKOTCH_CPU_ISA = isa)
    expect_lt(max(abs(ffi("native_kernel_matrix")(sg, sn, kg) - og)), 1e-12)
    expect_lt(max(abs(ffi("native_kernel_matrix")(sg, sn, kg, precision = "single") - og)), 1e-5)
    expect_equal(ffi("native_kernel_apply")(sg, sn, vg, kg), og %*% vg, tolerance = 1e-12)
  }
  # the pairs 10 m apart (and every other) against themselves: K(x, x) = 1
  us <- sqrt(3) * hav(sg, sg) / 600
  os <- (1 + us) * exp(-us) * exp(-outer(sg[, 3], sg[, 3], "-")^2 / 8)
  Ks <- ffi("native_kernel_matrix")(sg, sg, kg)
  expect_lt(max(abs(Ks - os)), 1e-12)
  expect_equal(diag(Ks), rep(1, 300))
  # far pairs: each Matern factor's polynomial is large where its exponential
  # is 0; the product stays finite (0) in single precision too
  xf <- cbind(a = seq(0, 1000, length.out = 40), b = seq(1000, 0, length.out = 40))
  kf <- ka_resolve(kernel_matern52(1e-4, dims = "a") * kernel_matern52(1e-4, dims = "b") *
                     kernel_matern52(2e-4, dims = c("a", "b")), xf)
  for (prec in c("double", "single"))
    expect_equal(ffi("native_kernel_matrix")(xf, xf, kf, precision = prec), diag(40))
})

test_that("random features of a composite kernel: prior draws have its covariance", {
  # one draw of M = 16 features per column (fresh frequencies), so the
  # covariance of q columns psi_j(x)^T theta_j, theta_j ~ N(0, I), estimates
  # the kernel itself with standard errors sqrt((K_ii K_jj + K_ij^2) / q)
  set.seed(4)
  x <- cbind(t = runif(20, 0, 3), a = runif(20), b = runif(20))
  kernels <- list(
    periodic = 2 * kernel_periodic(period = 0.8, bandwidth = 0.7, dims = "t"),
    matern = kernel_matern(nu = 1.3, bandwidth = 0.5, dims = c("a", "b")),
    small_nu = kernel_matern(nu = 0.6, bandwidth = 0.8),
    rbf_laplace = kernel_rbf(0.5, dims = "a") * kernel_laplace(0.7, dims = c("a", "b")),
    algebra = kernel_rbf(0.7, dims = c("a", "b")) *
      kernel_periodic(period = 0.8, bandwidth = 0.9, dims = "t") +
      0.5 * kernel_laplace(0.5, dims = "a") * kernel_matern52(1, dims = "t"))
  q <- 20000
  M <- 16
  for (nm in names(kernels)) {
    kc <- ka_resolve(kernels[[nm]], x)
    K <- ffi("native_kernel_matrix")(x, x, kc)
    Fz <- ffi("native_features_apply")(x, matrix(rnorm(M * q), M), kc, M, seed = as.numeric(1:q))
    z <- (tcrossprod(Fz) / q - K) / sqrt((outer(diag(K), diag(K)) + K^2) / q)
    expect_lt(max(abs(z)), 4.5, label = nm)
  }
  # a fit in random features approaches the exact fit as M grows
  y <- sin(3 * x[, "t"]) + x[, "a"]
  k <- kernels$algebra
  f0 <- krr(x, y, kernel = k, lambda = 0.05, threads = 1)
  err <- vapply(c(200, 20000), function(M) {
    f <- kernel_machine(x, y, loss = loss_squared(), kernel = k, lambda = 0.05, features = M,
                        seed = 1, threads = 1)
    max(abs(predict(f, x) - fitted(f0)))
  }, 0)
  expect_lt(err[2], 0.05)
  expect_lt(err[2], err[1] / 3)
})

# a seasonal series with a second covariate, and a composite for it
ka_season <- function(n, sd, seed) {
  set.seed(seed)
  x <- cbind(t = runif(n, 0, 4), a = runif(n))
  list(x = x, y = sin(2 * pi * x[, "t"]) + x[, "a"]^2 + rnorm(n, sd = sd),
       k = kernel_rbf(1.5, dims = "t") * kernel_periodic(period = 1, bandwidth = 1, dims = "t") +
         0.5 * kernel_matern32(0.5, dims = "a"))
}

test_that("pathwise standard errors and draws for a composite kernel", {
  d <- ka_season(300, 0.2, 5)
  x <- d$x
  fit <- krr(x, d$y, kernel = d$k, lambda = 0.1, threads = 1)
  xnew <- cbind(t = c(0.3, 2.2, 4.5), a = c(0.1, 0.5, 0.9))
  ex <- predict(fit, xnew, se.fit = TRUE, method = "exact")$se.fit^2
  old <- options(askotch.gp_cv_rank = 0)
  on.exit(options(old), add = TRUE)
  N <- 2000
  p <- predict(fit, xnew, se.fit = TRUE, method = "pathwise", draws = N)
  mc <- attr(p$se.fit, "var_mc_se")
  expect_true(all(abs(p$se.fit^2 - ex) <= 5 * mc))
  expect_true(all(mc / ex < 2 * sqrt(2 / N)))
  # with the control variate: the same, with smaller Monte Carlo errors
  options(old)
  pc <- predict(fit, xnew, se.fit = TRUE, method = "pathwise", draws = N)
  mcc <- attr(pc$se.fit, "var_mc_se")
  expect_gt(attr(pc$se.fit, "control_rank"), 10L)
  expect_true(all(abs(pc$se.fit^2 - ex) <= 5 * mcc))
  expect_lt(stats::median(mcc / mc), 0.8)
  # posterior draws (each with its own random features): the exact variance
  # within 5 Monte Carlo sd (sqrt(2 / 4000) relative)
  sims <- as.matrix(simulate(fit, nsim = 4000, seed = 2, newdata = xnew, method = "pathwise"))
  expect_lt(max(abs(apply(sims, 1, stats::var) / ex - 1)), 5 * sqrt(2 / 4000))
  expect_lt(max(abs(rowMeans(sims) - predict(fit, xnew)) / sqrt(ex / 4000)), 4.5)
})

test_that("lambda of a composite kernel by GCV, LOO and K-fold CV: the closed forms", {
  n <- 120
  d <- ka_season(n, 0.3, 6)
  x <- d$x
  y <- d$y
  k <- d$k
  K <- ffi("native_kernel_matrix")(x, x, ka_resolve(k, x))
  yc <- y - mean(y)
  crit <- function(l) {
    H <- K %*% solve(K + l * diag(n))
    r <- drop(yc - H %*% yc)
    c(gcv = mean(r^2) / (1 - sum(diag(H)) / n)^2, loo = mean((r / (1 - diag(H)))^2))
  }
  grid <- 10^seq(-4, 1, length.out = 101)
  cg <- vapply(grid, crit, numeric(2))
  for (rule in c("gcv", "loo")) {
    fit <- krr(x, y, kernel = k, lambda = rule, threads = 1)
    expect_identical(fit$tuning$lambda_rule, rule)
    at <- crit(fit$lambda)[[rule]]
    # the chosen lambda minimises the closed-form criterion: no grid point
    # and no 2% step does better
    expect_lte(at, min(cg[rule, ]) * (1 + 1e-6))
    expect_lte(at, crit(fit$lambda * 1.02)[[rule]] * (1 + 1e-9))
    expect_lte(at, crit(fit$lambda / 1.02)[[rule]] * (1 + 1e-9))
  }
  # 5-fold CV of a given path: the folds' held-out errors in base R
  lams <- c(0.01, 0.1, 1)
  fit <- krr(x, y, kernel = k, lambda = lams, seed = 3, threads = 1)
  fold <- ffi("with_seed")(3 + 11, sample(rep_len(1:5, n)))
  cv <- vapply(lams, function(l) {
    sum(vapply(1:5, function(f) {
      tr <- fold != f
      mu <- mean(y[tr])
      pr <- mu + K[!tr, tr] %*% solve(K[tr, tr] + l * diag(sum(tr)), y[tr] - mu)
      sum((y[!tr] - pr)^2)
    }, 0)) / n
  }, 0)
  path <- fit$tuning$path
  expect_equal(path$cv[match(lams, path$lambda)], cv, tolerance = 1e-8)
  expect_equal(fit$lambda, lams[which.min(cv)])
  expect_identical(fit$tuning$lambda_rule, "path")
  # with hyperparameters by maximum likelihood, then lambda by GCV
  fm <- krr(x, y, kernel = kernel_rbf("ml", dims = "t") *
              kernel_periodic(period = 1, bandwidth = 1, dims = "t") +
              0.5 * kernel_matern32(0.5, dims = "a"), lambda = "gcv", threads = 1)
  expect_identical(fm$tuning$lambda_rule, "gcv")
  expect_true(is.finite(fm$tuning$composite$estimate))
})

test_that("the Matern kernel of any smoothness matches besselK()", {
  u <- 10^seq(-6, log10(600), length.out = 50)
  worst <- 0
  for (nu in c(0.1, 0.3, 0.75, 1, 1.7, 2.2, 3.3, 5, 8, 12, 20)) {
    xx <- cbind(c(0, u / sqrt(2 * nu)))
    k <- ffi("as_composite")(kernel_matern(nu = nu, bandwidth = 1))
    got <- ffi("native_kernel_matrix")(xx[1, , drop = FALSE], xx, k)
    o <- ka_matern(xx[, 1], nu, 1)
    ok <- o > 1e-280
    worst <- max(worst, abs(got[ok] - o[ok]) / o[ok])
  }
  expect_lt(worst, 1e-12)
  # the half-integers are the closed forms of the kernel list
  expect_s3_class(kernel_matern(nu = 2.5), "askotch_kernel_matern52")
  expect_s3_class(kernel_matern(nu = 1), "askotch_kernel_matern")
  expect_error(kernel_matern(nu = 25), class = "askotch_error_input")
  expect_error(kernel_matern(nu = -1), class = "askotch_error_input")
})

test_that("great-circle distances match fields::rdist.earth()", {
  skip_if_not_installed("fields")
  set.seed(3)
  ll <- cbind(lon = runif(40, -120, -70), lat = runif(40, 25, 50))
  k <- ka_resolve(kernel_matern12(bandwidth = 800, dims = 1:2, distance = "great_circle"), ll)
  d <- fields::rdist.earth(ll, ll, miles = FALSE, R = 6371.0088)
  diag(d) <- 0
  got <- ffi("native_kernel_matrix")(ll, ll, k)
  expect_equal(got, exp(-d / 800), tolerance = 1e-9)
  expect_equal(diag(got), rep(1, 40))
  expect_error(kernel_rbf(dims = 1, distance = "great_circle"), class = "askotch_error_input")
  expect_error(kernel_laplace(dims = 1:2) * kernel_rbf(dims = 1:2, distance = "great_circle"),
               NA)
})

test_that("a composite's derivative matrices match finite differences", {
  x <- ka_data(30)
  k <- kernel_rbf("ml", dims = 1:2) * kernel_periodic(0.5, "ml", dims = 3) +
    kernel_matern(nu = 0.8, bandwidth = "ml", amplitude = "ml") +
    kernel_polynomial(2, "ml", "ml", dims = c(1, 3), amplitude = "ml")
  pr <- ffi("composite_params")(ka_resolve(k, x))
  tab <- pr$table
  expect_equal(tab$what, c("bandwidth", "bandwidth", "amplitude", "bandwidth", "amplitude",
                           "scale", "offset"))
  vals <- c(0.6, 0.9, 0.7, 0.5, 0.3, 0.8, 1.2)
  kk <- ffi("composite_set")(pr$kernel, tab, vals)
  D <- ffi("native_kernel_deriv")(x, x, kk, c(0L, tab$code))
  km <- ffi("native_kernel_matrix")
  expect_equal(D[, , 1], km(x, x, kk), tolerance = 1e-14)
  h <- 1e-5
  for (i in seq_len(nrow(tab))) {
    up <- dn <- vals
    up[i] <- vals[i] * exp(h)
    dn[i] <- vals[i] * exp(-h)
    fd <- (km(x, x, ffi("composite_set")(pr$kernel, tab, up)) -
             km(x, x, ffi("composite_set")(pr$kernel, tab, dn))) / (2 * h)
    expect_lt(max(abs(D[, , i + 1L] - fd)), 1e-7 * max(1, max(abs(fd))))
  }
  # the contractions sum(W * dK_c) without the matrices, for a W that is
  # not symmetric
  set.seed(3)
  W <- matrix(rnorm(900), 30)
  dots <- ffi("native_kernel_deriv_dot")(x, kk, c(0L, tab$code), W)
  expect_equal(dots, vapply(seq_len(nrow(tab) + 1L), function(c) sum(W * D[, , c]), 0),
               tolerance = 1e-12)
  # a composite's contraction has no scale or low-rank part
  expect_error(ffi("native_kernel_deriv_dot")(x, kk, tab$code, W, U = W[, 1, drop = FALSE]),
               class = "askotch_error_input")
})

test_that("the contractions of listed components' bandwidth derivatives", {
  # the listed kernels' derivatives are taken from their values (POLY(u)
  # exp(-u) with POLY above 1 for the Matern kernels): against differences
  x <- ka_data(25)
  k <- kernel_matern(nu = 2.5, bandwidth = "ml", dims = 1:2) +
    kernel_laplace("ml", dims = 3, amplitude = "ml") + kernel_matern(nu = 1.5, "ml", dims = 2)
  pr <- ffi("composite_params")(ka_resolve(k, x))
  tab <- pr$table
  vals <- seq(0.4, 1.2, length.out = nrow(tab))
  kk <- ffi("composite_set")(pr$kernel, tab, vals)
  km <- ffi("native_kernel_matrix")
  set.seed(4)
  W <- matrix(rnorm(625), 25)
  dots <- ffi("native_kernel_deriv_dot")(x, kk, tab$code, W)
  h <- 1e-5
  for (i in seq_len(nrow(tab))) {
    up <- dn <- vals
    up[i] <- vals[i] * exp(h)
    dn[i] <- vals[i] * exp(-h)
    fd <- sum(W * (km(x, x, ffi("composite_set")(pr$kernel, tab, up)) -
                     km(x, x, ffi("composite_set")(pr$kernel, tab, dn)))) / (2 * h)
    expect_equal(dots[i], fd, tolerance = 1e-7)
  }
})

test_that("a fit with a fixed composite kernel is the closed form, on every solver", {
  x <- ka_data(120)
  y <- sin(6 * x[, 1]) + x[, 2] * x[, 3] + rnorm(120, sd = 0.05)
  xn <- ka_data(20, seed = 5)
  k <- ka_kernel()
  o <- ka_oracle(x, x)
  alpha <- solve(o + 0.1 * diag(120), y - mean(y))
  want <- drop(ka_oracle(xn, x) %*% alpha) + mean(y)
  fit <- krr(x, y, kernel = k, lambda = 0.1, solver = cholesky(), threads = 1)
  expect_equal(unname(predict(fit, xn)), want, tolerance = 1e-10)
  expect_s3_class(fit$kernel, "askotch_kernel_composite")
  expect_true(all(fit$scaling$scale == 1) && all(fit$scaling$center == 0))  # x as given
  fp <- krr(x, y, kernel = k, lambda = 0.1, solver = pcg(rank = 20), tol = 1e-10, threads = 1)
  expect_equal(unname(predict(fp, xn)), want, tolerance = 1e-7)
  fa <- krr(x, y, kernel = k, lambda = 0.1, solver = askotch(), tol = 1e-9, max_passes = 500,
            threads = 1)
  expect_equal(unname(predict(fa, xn)), want, tolerance = 1e-6)
  # the exact GP variance with the composite
  pv <- predict(fit, xn, se.fit = TRUE)
  s2 <- sum((y - mean(y)) * alpha) / 120
  kn <- ka_oracle(xn, x)
  Ak <- solve(o + 0.1 * diag(120), t(kn))
  # the sample mean's own error: b = (1 - 1^T A^{-1} k) / n, Var(1^T y / n) / s^2 =
  # (1^T K 1 + n lambda) / n^2 (the package's constant-mean GP variance)
  b <- (1 - colSums(Ak)) / 120
  v <- diag(ka_oracle(xn, xn)) - rowSums(kn * t(Ak)) + b^2 * (sum(o) + 120 * 0.1)
  expect_equal(unname(pv$se.fit), sqrt(s2 * v), tolerance = 1e-8)
  # tidy() lists the composite's hyperparameters
  tb <- tidy(fit)
  expect_true(all(c("term[1]:amplitude", "rbf[1]:bandwidth", "periodic[2]:period",
                    "matern[3]:nu", "polynomial[4]:scale", "lambda") %in% tb$term))
  expect_equal(tb$estimate[tb$term == "periodic[2]:period"], 0.5)
  expect_true(is.na(glance(fit)$bandwidth))
  expect_output(print(fit), "periodic")
})

test_that("maximum likelihood over a composite's hyperparameters", {
  set.seed(4)
  tt <- sort(runif(150, 0, 10))
  y <- 0.3 * tt + sin(2 * pi * tt) + rnorm(150, sd = 0.2)
  d <- data.frame(t = tt, y = y)
  k <- kernel_rbf("ml", dims = "t", amplitude = "ml") +
    kernel_periodic(period = 1, bandwidth = "ml", dims = "t", amplitude = "ml")
  fit <- krr(y ~ t, data = d, kernel = k, threads = 1)
  tab <- fit$tuning$composite
  expect_equal(nrow(tab), 3L)   # the first amplitude is held at 1 (s^2 profiled)
  # the optimum's likelihood is the package's exact likelihood (one
  # eigendecomposition, gp_loglik_exact), and the base R one
  expect_equal(fit$tuning$loglik, as.numeric(logLik(fit)), tolerance = 1e-8)
  kk <- fit$kernel
  K <- ffi("native_kernel_matrix")(cbind(t = tt), cbind(t = tt), kk)
  A <- K + fit$lambda * diag(150)
  yc <- y - mean(y)
  s2 <- drop(crossprod(yc, solve(A, yc))) / 150
  ll <- -75 * log(2 * pi * s2) - 75 - 0.5 * determinant(A)$modulus
  expect_equal(as.numeric(logLik(fit)), as.numeric(ll), tolerance = 1e-9)
  expect_equal(attr(logLik(fit), "df"), 1 + 1 + 1 + 3)  # s^2, mean, lambda, 3 in tab
  # a stationary point: the analytic gradient vanishes within the bounds
  g <- ffi("composite_loglik")(kk, ffi("composite_params")(kk)$table, fit$lambda,
                               cbind(t = tt), cbind(yc))
  # held amplitudes: composite_params on the fitted kernel finds no "ml"
  expect_length(g$grad, 1L)
  expect_lt(abs(g$grad), 1e-2)
  expect_equal(tab$estimate[tab$what == "bandwidth"][1], kk$terms[[1]]$components[[1]]$bandwidth)
  # the periodic part is found: the fit interpolates the seasonal shape
  expect_lt(sqrt(mean((fitted(fit) - (0.3 * tt + sin(2 * pi * tt)))^2)), 0.1)
  # with lambda given, both amplitudes are estimated (the signal-to-noise
  # ratio is no longer free), at a maximum of the base R likelihood
  fl <- krr(y ~ t, data = d, kernel = k, lambda = 0.05, threads = 1)
  tl <- fl$tuning$composite
  expect_identical(tl$what, c("amplitude", "bandwidth", "amplitude", "bandwidth"))
  ll_at <- function(th) {
    kk <- ffi("composite_set")(fl$kernel, tl, exp(th))
    A <- ffi("native_kernel_matrix")(cbind(t = tt), cbind(t = tt), kk) + 0.05 * diag(150)
    s2 <- drop(crossprod(yc, solve(A, yc))) / 150
    -75 * log(2 * pi * s2) - 0.5 * as.numeric(determinant(A)$modulus)
  }
  th <- log(tl$estimate)
  expect_lt(max(abs(num_grad(ll_at, th, 1e-4))), 1e-2)
  # one "ml" amplitude alone, lambda given: estimated
  f1 <- krr(y ~ t, data = d, kernel = kernel_rbf(1, dims = "t", amplitude = "ml"),
            lambda = 0.05, threads = 1)
  expect_identical(f1$tuning$composite$what, "amplitude")
  expect_true(is.numeric(f1$kernel$terms[[1]]$amplitude))
})

test_that("vcov() of a composite's hyperparameters is the inverse observed information", {
  set.seed(9)
  tt <- sort(runif(90, 0, 5))
  y <- sin(2 * pi * tt) + 0.4 * tt + rnorm(90, sd = 0.15)
  x <- cbind(t = tt)
  k <- kernel_rbf("ml", dims = 1) + kernel_periodic(1, "ml", dims = 1, amplitude = "ml")
  fit <- krr(x, y, kernel = k, threads = 1)
  V <- vcov(fit)
  expect_equal(rownames(V), c("rbf[1]:bandwidth", "term[2]:amplitude", "periodic[2]:bandwidth",
                              "lambda", "signal_var"))
  # the full log likelihood in base R, its Hessian by optimHess(); compared on the
  # information scale, which differences resolve to about 1e-6 here (the covariance is
  # its inverse, whose condition number of ~1e3 would magnify that error)
  tab <- fit$tuning$composite
  yc <- y - mean(y)
  full <- function(phi) {
    kk <- ffi("composite_set")(fit$kernel, tab, exp(phi[1:3]))
    A <- ffi("native_kernel_matrix")(x, x, kk) + exp(phi[4]) * diag(90)
    s2 <- exp(phi[5])
    R <- chol(A)
    a <- backsolve(R, backsolve(R, yc, transpose = TRUE))
    -45 * log(2 * pi * s2) - sum(log(diag(R))) - sum(yc * a) / (2 * s2)
  }
  phi <- log(c(tab$estimate, fit$lambda, ffi("gp_signal_var")(fit)))
  H <- stats::optimHess(phi, full)
  expect_lt(max(abs(solve(V) + H)) / max(abs(H)), 1e-4)
  ci <- confint(fit)
  est <- c(tab$estimate, fit$lambda, ffi("gp_signal_var")(fit))
  expect_true(all(ci[rownames(V), 1] < est & est < ci[rownames(V), 2]))
  expect_true("noise_var" %in% rownames(ci))
  tb <- tidy(fit, conf.int = TRUE)
  expect_equal(tb$std.error[tb$term == "periodic[2]:bandwidth"],
               tab$estimate[3] * sqrt(V[3, 3]), tolerance = 1e-12)
  expect_error(confint(fit, method = "profile"), class = "askotch_error_input")
})

test_that("a composite kernel with a mean function: ML and REML are the exact likelihood", {
  set.seed(6)
  tt <- sort(runif(120, 0, 6))
  d <- data.frame(t = tt, y = 1 + 0.8 * tt + sin(2 * pi * tt) + 0.5 * sin(tt) +
                    rnorm(120, sd = 0.2))
  k <- kernel_periodic(period = 1, bandwidth = 1.2, dims = "t") +
    kernel_matern32("ml", dims = "t", amplitude = "ml")
  for (lik in c("ml", "reml")) {
    fit <- krr(y ~ t, data = d, kernel = k, mean = ~ t, likelihood = lik, threads = 1)
    expect_equal(fit$tuning$loglik, as.numeric(logLik(fit)), tolerance = 1e-8)
    # the closed form at the estimates (base R; REML without log|F^T F|)
    K <- ffi("native_kernel_matrix")(cbind(t = tt), cbind(t = tt), fit$kernel)
    A <- K + fit$lambda * diag(120)
    Fm <- cbind(1, tt)
    Ai <- solve(A)
    C <- solve(crossprod(Fm, Ai %*% Fm))
    beta <- C %*% crossprod(Fm, Ai %*% d$y)
    r <- d$y - Fm %*% beta
    nq <- 120 - (lik == "reml") * 2
    s2 <- drop(crossprod(r, Ai %*% r)) / nq
    ll <- -nq / 2 * log(2 * pi * s2) - nq / 2 - 0.5 * determinant(A)$modulus -
      (lik == "reml") * 0.5 * determinant(solve(C))$modulus
    expect_equal(as.numeric(logLik(fit)), as.numeric(ll), tolerance = 1e-9)
    expect_equal(unname(coef(fit)), unname(drop(beta)), tolerance = 1e-8)
    # the gradient of the restricted / profile likelihood vanishes at the estimates
    pr <- ffi("composite_params")(k)
    g <- ffi("composite_loglik")(
      ffi("composite_set")(ffi("composite_resolve")(k, cbind(t = tt), "t", 1, NULL), pr$table,
                           fit$tuning$composite$estimate),
      pr$table, fit$lambda, cbind(t = tt), cbind(d$y), list(F = Fm, reml = lik == "reml"))
    expect_lt(max(abs(g$grad)), 1e-2)
    expect_equal(g$value, as.numeric(ll), tolerance = 1e-9)
    # the value alone (no inverse): the same
    g0 <- ffi("composite_loglik")(
      ffi("composite_set")(ffi("composite_resolve")(k, cbind(t = tt), "t", 1, NULL), pr$table,
                           fit$tuning$composite$estimate),
      pr$table, fit$lambda, cbind(t = tt), cbind(d$y), list(F = Fm, reml = lik == "reml"),
      gradient = FALSE)
    expect_identical(g0$value, g$value)
  }
})

test_that("a composite fit's likelihood above the exact range is the stochastic estimate", {
  set.seed(8)
  n <- 2300
  x <- cbind(a = runif(n), b = runif(n))
  y <- sin(5 * x[, 1]) + cos(3 * x[, 2]) + rnorm(n, sd = 0.1)
  k <- kernel_rbf(0.3, dims = 1) + kernel_matern32(0.5, dims = 2)
  fit <- krr(x, y, kernel = k, lambda = 0.05, threads = 1, seed = 1)
  ll <- logLik(fit)
  K <- ffi("native_kernel_matrix")(x, x, fit$kernel)
  R <- chol(K + 0.05 * diag(n))
  yc <- y - mean(y)
  a <- backsolve(R, backsolve(R, yc, transpose = TRUE))
  exact <- -n / 2 * log(2 * pi * sum(yc * a) / n) - n / 2 - sum(log(diag(R)))
  expect_true(is.finite(attr(ll, "se")))
  expect_lt(abs(as.numeric(ll) - exact), 4 * attr(ll, "se") + 1e-6 * abs(exact))
})

test_that("a composite kernel with a noise model: the likelihood of the weighted fit", {
  set.seed(10)
  tt <- sort(runif(150, 0, 4))
  sdv <- 0.05 + 0.3 * (tt > 2)
  d <- data.frame(t = tt, y = sin(2 * pi * tt) + 0.3 * tt + rnorm(150, sd = sdv))
  k <- kernel_rbf("ml", dims = "t") + kernel_periodic(1, "ml", dims = "t", amplitude = "ml")
  fit <- krr(y ~ t, data = d, kernel = k, noise = ~ I(t > 2), threads = 1)
  gam <- fit$noise$coef
  expect_gt(gam[[1]], 1)  # more noise after t = 2
  expect_equal(fit$tuning$loglik, as.numeric(logLik(fit)), tolerance = 1e-8)
  # the noise variances at new points: lambda s^2 exp(z gamma), larger after t = 2
  p <- predict(fit, data.frame(t = c(1, 3)), interval = "prediction")
  expect_gt(p[2, "upr"] - p[2, "lwr"], 3 * (p[1, "upr"] - p[1, "lwr"]))
  # the gradient in (log kernel values, log lambda, gamma) vanishes at the estimates
  pr <- ffi("composite_params")(k)
  tab <- fit$tuning$composite
  Z <- scale(as.numeric(tt > 2)) * sqrt(150 / 149)
  g <- ffi("composite_loglik")(
    ffi("composite_set")(ffi("composite_resolve")(k, cbind(t = tt), "t", 1, NULL), pr$table,
                         tab$estimate),
    pr$table, fit$lambda, cbind(t = tt), cbind(d$y), list(F = matrix(1, 150, 1), reml = FALSE),
    list(Z = Z, gamma = gam))
  expect_lt(max(abs(g$grad)), 1e-2)
})

test_that("composite kernels refuse what they cannot do, with classed errors", {
  x <- ka_data(40)
  y <- x[, 1]
  expect_error(kernel_rbf(dims = 0), class = "askotch_error_input")
  expect_error(kernel_rbf(dims = c(1, 1)), class = "askotch_error_input")
  expect_error(kernel_periodic(), class = "askotch_error_input")
  expect_error(kernel_polynomial(degree = 1.5), class = "askotch_error_input")
  expect_error(kernel_rbf(amplitude = -1), class = "askotch_error_input")
  expect_error(kernel_rbf() - kernel_rbf(), class = "askotch_error_input")
  expect_error(kernel_rbf() + 1, class = "askotch_error_input")
  many <- Reduce(`+`, lapply(1:8, function(i) kernel_rbf(1)))
  expect_error(many * (kernel_rbf(1) + kernel_rbf(1)), class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = "zz"), lambda = 1),
               class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = 5), lambda = 1),
               class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = 1), bandwidth = 2, lambda = 1),
               class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf("ard", dims = 1), lambda = 1),
               class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = 1), weights = rep(2, 40)),
               class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = 1), lambda = "gcv", noise = ~ b),
               "maximum likelihood", class = "askotch_error_input")
  expect_error(kernel_machine(x, y, kernel = kernel_rbf(1, dims = 1) + kernel_linear(dims = 2),
                              lambda = 1, features = 50), class = "askotch_error_input")
  expect_error(krr(x, y, kernel = kernel_rbf(1, dims = 1:2, distance = "great_circle"),
                   lambda = 1, standardize = TRUE), class = "askotch_error_input")
  expect_error(kernel_machine(x, factor(y > 0.5), loss = loss_hinge(),
                              kernel = kernel_rbf("ml", dims = 1)),
               class = "askotch_error_input")
  # random features (so pathwise draws) need stationary components
  fit <- krr(x, y, kernel = kernel_rbf(1, dims = 1) * kernel_linear(dims = 2), lambda = 1,
             threads = 1)
  expect_error(simulate(fit, nsim = 2, seed = 1, method = "pathwise"),
               "not stationary", class = "askotch_error_input")
  expect_error(kernel_machine(x, factor(y > 0.5), kernel = kernel_periodic(1, 1, dims = 1:2),
                              lambda = 0.01, features = 50, threads = 1),
               "one column", class = "askotch_error_input")
  expect_error(kernel_machine(x, factor(y > 0.5), loss = loss_logistic(),
                              kernel = kernel_rbf("ml", dims = 1)), "GP classifier",
               class = "askotch_error_input")
  # a fixed composite fits the other losses
  km <- kernel_machine(x, factor(y > 0.5), kernel = kernel_rbf(0.5, dims = 1) +
                         kernel_linear(dims = 2), lambda = 0.01, threads = 1)
  expect_gt(mean(predict(km, x) == factor(y > 0.5)), 0.9)
  # and their lambda by K-fold CV on those losses' own path
  kc <- kernel_machine(x, factor(y > 0.5), loss = loss_hinge(),
                       kernel = kernel_rbf(0.5, dims = 1) + kernel_linear(dims = 2),
                       lambda = "cv", threads = 1)
  expect_identical(kc$tuning$lambda_rule, "cv")
  expect_setequal(kc$tuning$path$lambda, ffi("default_loss_lambda_path")())
  expect_true(kc$lambda %in% kc$tuning$path$lambda)
})
