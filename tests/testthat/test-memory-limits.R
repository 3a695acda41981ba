# The memory planner sees the limits a batch system or a container sets, not
# only /proc/meminfo: an address-space limit (ulimit -v; the cgroup parser is
# tested in the C driver's test_seams on fake cgroup trees).

test_that("an address-space limit gives askotch_error_memory, not a crash", {
  skip_on_cran()
  skip_if_not(.Platform$OS.type == "unix" && file.exists("/proc/self/statm"),
              "needs Linux /proc")
  bash <- Sys.which("bash")
  skip_if(!nzchar(bash), "needs bash for ulimit")
  script <- tempfile(fileext = ".R")
  on.exit(unlink(script))
  writeLines(c(
    sprintf(".libPaths(c(%s))", paste(deparse(.libPaths()), collapse = "")),
    "library(askotch)",
    "set.seed(1); n <- 20000; x <- matrix(rnorm(n * 5), n); y <- rnorm(n)",
    "r <- tryCatch(krr(x, y, lambda = 1, solver = pcg(rank = 15000),",
    "                  max_passes = 1, threads = 1), error = function(e) e)",
    "cat('CLASS', class(r)[1], '\\n')",
    "cat('MSG', conditionMessage(r), '\\n')"), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  # 2.5 GB of address space: R and its libraries take about 1.4 GB of it;
  # PCG's rank-15000 preconditioner would need 6.3 GB more
  out <- suppressWarnings(system2(bash, c("-c", shQuote(sprintf(
    "ulimit -v 2500000 && '%s' '%s'", rscript, script))),
    stdout = TRUE, stderr = TRUE))
  cls <- sub("^CLASS ([^ ]+).*", "\\1", grep("^CLASS", out, value = TRUE))
  skip_if(length(cls) == 0L, paste("R did not start under ulimit -v:",
                                   paste(utils::tail(out, 3), collapse = " ")))
  expect_identical(cls, "askotch_error_memory")
  msg <- grep("^MSG", out, value = TRUE)
  avail <- as.numeric(sub(".*only ([0-9.]+) MiB are available.*", "\\1", msg))
  expect_true(is.finite(avail) && avail < 2500000 / 1024)
})
