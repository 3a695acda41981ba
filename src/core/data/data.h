/* data/: the training points on the device, host <-> device conversions and
 * host-data kernel products (the public part is in krr.h). */
#ifndef KRR_DATA_H
#define KRR_DATA_H
#include "../base/base.h"

void krr_host_to_prec(krr_precision prec, const double *src, int64_t len, void *dst);
void krr_prec_to_host(krr_precision prec, const void *src, int64_t len, double *dst);
/* upload len host doubles into an existing device buffer of prec */
krr_status krr_upload_vec_into(krr_ctx *ctx, krr_precision prec, const double *h, int64_t len,
                               void *dst);
/* device buffer of one precision into another (len elements; host round trip
 * for a change of precision, in chunks) */
krr_status krr_convert(krr_ctx *ctx, krr_precision from, const void *src, krr_precision to,
                       void *dst, int64_t len);
#endif
