/* data/: the training points on the device, host <-> device conversions and
 * host-data kernel products (the public part is in krr.h). */
#ifndef KRR_DATA_H
#define KRR_DATA_H
#include "../base/base.h"

void krr_host_to_prec(krr_precision prec, const double *src, int64_t len, void *dst);
void krr_prec_to_host(krr_precision prec, const void *src, int64_t len, double *dst);
/* rows [r0, r0 + nr) of a host column-major double matrix (ld ldx, p columns)
 * as nr x p row-major prec in host memory dst */
void krr_points_rows_to_prec(krr_precision prec, const double *Xc, int64_t ldx, int64_t r0,
                             int64_t nr, int p, void *dst);
/* upload len host doubles into an existing device buffer of prec */
krr_status krr_upload_vec_into(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                               void *dst);
/* device buffer of one precision into another (len elements; host round trip
 * for a change of precision, in chunks) */
krr_status krr_convert(krr_ctx *ctx, krr_precision from, const void *src, krr_precision to,
                       void *dst, int64_t len);

/* The device kernel primitives (ops kernel_mv / kernel_block) over row
 * chunks of X1, with krr_poll(ctx) between chunks, so that a user
 * interrupt or a deadline stops a long kernel product within about a chunk's
 * time.  The chunk length depends only on (n2, p, q), never on time or
 * load, so results are reproducible. */
krr_status krr_kernel_mv_polled(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                const void *V, int64_t ldv, int q, void *out, int64_t ldo);
krr_status krr_kernel_block_polled(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                   const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                   void *out, int64_t ldo);
/* Composite kernels (kcomp.c): the products, blocks and diagonal (host
 * out) of a KRR_COMPOSITE kernel, through the device table; the _any forms
 * take a listed kernel (the polled products above) or a composite. */
krr_status krr_kcomp_mv(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                        int64_t n1, const void *X2, int64_t n2, int p, const void *V, int64_t ldv,
                        int q, void *out, int64_t ldo);
krr_status krr_kcomp_block(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                           int64_t n1, const void *X2, int64_t n2, int p, void *out, int64_t ldo);
krr_status krr_kcomp_diag(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X,
                          int64_t n, int p, double *out);
krr_status krr_kernel_mv_any(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                             int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                             int64_t ldv, int q, void *out, int64_t ldo);
krr_status krr_kernel_block_any(krr_ctx *ctx, krr_precision prec, const krr_kernel *k,
                                const void *X1, int64_t n1, const void *X2, int64_t n2, int p,
                                void *out, int64_t ldo);
/* Falkon's product OUT(n2 x q, ld ldo) = K(X2, X1) K(X1, X2) V(n2 x q, ld
 * ldv) with each kernel pair evaluated once (gram.c), where the backend
 * offers it for the kernel (krr_kernel_gram_fused); work:
 * krr_kernel_gram_work() bytes of device memory. */
int krr_kernel_gram_fused(const krr_ctx *ctx, krr_precision prec, const krr_kernel *k, int64_t n2,
                          int q);
size_t krr_kernel_gram_work(int64_t n2, int q);
krr_status krr_kernel_gram_mv(krr_ctx *ctx, krr_precision prec, const krr_kernel *k, const void *X1,
                              int64_t n1, const void *X2, int64_t n2, int p, const void *V,
                              int64_t ldv, int q, void *out, int64_t ldo, void *work);
/* rows of X1 per chunk for a product against n2 points of p coordinates
 * and q right-hand sides */
int64_t krr_kernel_chunk_rows(int64_t n2, int p, int q);
#endif
