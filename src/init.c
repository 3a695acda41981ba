/* Registration of the .Call entry points (exact arities, no dynamic lookup). */
#include <R.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>

SEXP ffi_fit_init(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP,
                  SEXP, SEXP);
SEXP ffi_fit_features_theta(SEXP);
SEXP ffi_features_apply(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_check_options(SEXP, SEXP);
SEXP ffi_options_caps(SEXP, SEXP);
SEXP ffi_fit_run(SEXP, SEXP);
SEXP ffi_fit_stop(SEXP, SEXP);
void askotch_glue_init(void);
SEXP ffi_fit_weights(SEXP);
SEXP ffi_fit_free(SEXP);
SEXP ffi_fit_alive(SEXP);
SEXP ffi_fit_centers(SEXP);
SEXP ffi_fit_options(SEXP);
SEXP ffi_fit_vectors(SEXP);
SEXP ffi_fit_set_targets(SEXP, SEXP);
SEXP ffi_fit_set_lambda(SEXP, SEXP);
SEXP ffi_fit_set_weights(SEXP, SEXP);
SEXP ffi_fit_set_rows(SEXP, SEXP);
SEXP ffi_fit_products(SEXP);
SEXP ffi_info(void);
SEXP ffi_loss_bound(SEXP, SEXP, SEXP);
SEXP ffi_kernel_apply(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kernel_matrix(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kernel_deriv(SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kernel_deriv_dot(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kcomp_stat(SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kernel_diag(SEXP, SEXP, SEXP);
SEXP ffi_gp_slq(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_kernel_eval(SEXP, SEXP, SEXP, SEXP);
SEXP ffi_median_distance(SEXP, SEXP);
SEXP ffi_kernel_rate(SEXP, SEXP);
SEXP ffi_sym_eigen(SEXP, SEXP);
SEXP ffi_chol(SEXP, SEXP);
SEXP ffi_gp_sites(SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_ep_tilted(SEXP, SEXP, SEXP);
SEXP ffi_pivoted_cholesky(SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP, SEXP);
SEXP ffi_threads(SEXP);
SEXP ffi_devices(void);
SEXP ffi_blas_threads(SEXP);

SEXP ffi_mpi_built(void);
SEXP ffi_mpi_init(void);
SEXP ffi_mpi_finalize(void);
SEXP ffi_mpi_use(SEXP);
SEXP ffi_mpi_allreduce(SEXP, SEXP);
SEXP ffi_mpi_bcast(SEXP, SEXP);
SEXP ffi_mpi_bytes(void);
#define CALLDEF(name, n) {#name, (DL_FUNC)&name, n}

static const R_CallMethodDef call_methods[] = {
    CALLDEF(ffi_mpi_built, 0),
    CALLDEF(ffi_mpi_init, 0),
    CALLDEF(ffi_mpi_finalize, 0),
    CALLDEF(ffi_mpi_use, 1),
    CALLDEF(ffi_mpi_allreduce, 2),
    CALLDEF(ffi_mpi_bcast, 2),
    CALLDEF(ffi_mpi_bytes, 0),
    CALLDEF(ffi_fit_init, 15),
    CALLDEF(ffi_check_options, 2),
    CALLDEF(ffi_fit_run, 2),
    CALLDEF(ffi_fit_weights, 1),
    CALLDEF(ffi_fit_free, 1),
    CALLDEF(ffi_fit_alive, 1),
    CALLDEF(ffi_fit_centers, 1),
    CALLDEF(ffi_fit_options, 1),
    CALLDEF(ffi_fit_vectors, 1),
    CALLDEF(ffi_fit_set_targets, 2),
    CALLDEF(ffi_fit_set_lambda, 2),
    CALLDEF(ffi_fit_set_weights, 2),
    CALLDEF(ffi_fit_set_rows, 2),
    CALLDEF(ffi_fit_products, 1),
    CALLDEF(ffi_info, 0),
    CALLDEF(ffi_loss_bound, 3),
    CALLDEF(ffi_kernel_apply, 8),
    CALLDEF(ffi_kernel_matrix, 6),
    CALLDEF(ffi_kernel_deriv, 5),
    CALLDEF(ffi_kernel_deriv_dot, 9),
    CALLDEF(ffi_kcomp_stat, 5),
    CALLDEF(ffi_kernel_diag, 3),
    CALLDEF(ffi_gp_slq, 11),
    CALLDEF(ffi_kernel_eval, 4),
    CALLDEF(ffi_median_distance, 2),
    CALLDEF(ffi_kernel_rate, 2),
    CALLDEF(ffi_sym_eigen, 2),
    CALLDEF(ffi_chol, 2),
    CALLDEF(ffi_gp_sites, 5),
    CALLDEF(ffi_ep_tilted, 3),
    CALLDEF(ffi_pivoted_cholesky, 8),
    CALLDEF(ffi_fit_features_theta, 1),
    CALLDEF(ffi_features_apply, 9),
    CALLDEF(ffi_threads, 1),
    CALLDEF(ffi_devices, 0),
    CALLDEF(ffi_blas_threads, 1),
    CALLDEF(ffi_fit_stop, 2),
    CALLDEF(ffi_options_caps, 2),
    {NULL, NULL, 0},
};

void R_init_askotch(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
  askotch_glue_init();
}
