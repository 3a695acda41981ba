library(testthat)
library(askotch)

test_check("askotch")
