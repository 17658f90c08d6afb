/*
 * backends.c: the one place where the build decides which backends exist.
 * A context asks here for its backend's descriptor once, at creation; every
 * later call goes through the tables it got. Without CUDA the CUDA backend is
 * still offered by the API, and asking for it answers TDM_ERR_NO_DEVICE with
 * the reason.
 */
#include "backend.h"

#ifdef TANDEM_HAVE_CUDA

static tdm_status cuda_backend(const char *fn, const tdm__backend **out) {
  (void)fn;
  *out = &tdm__cuda_backend;
  return TDM_OK;
}
int tdm__device_count(void) { return tdm__cuda_device_count(); }

#else

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

static tdm_status cuda_backend(const char *fn, const tdm__backend **out) {
  *out = NULL;
  return tdm__fail(TDM_ERR_NO_DEVICE, "%s: CUDA backend requested, but " NOT_BUILT, fn);
}
int tdm__device_count(void) { return 0; }

#endif

tdm_status tdm__backend_get(tdm_backend which, const char *fn, const tdm__backend **out) {
  if (which != TDM_BACKEND_CPU) return cuda_backend(fn, out);
  *out = &tdm__cpu_backend;
  return TDM_OK;
}
