# R's own dense algebra in the tests' oracles (solve(), determinant(), %*% on
# small matrices, often inside optim()) runs on one BLAS thread: OpenBLAS's
# threads hand off such small factorisations with a busy wait that costs 10x
# or more as soon as another process shares the cores. askotch sets the count
# for its own calls and puts this one back (test-blas-threads.R checks both).
invisible(askotch:::native_blas_threads(1L))
