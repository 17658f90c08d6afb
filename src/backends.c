/*
 * backends.c: the one place where the build decides which backends exist.
 * A context asks here for its backend's descriptor once, at creation; every
 * later call goes through the tables it got. Without CUDA the CUDA backend is
 * still offered by the API, and asking for it answers TDM_ERR_NO_DEVICE with
 * the reason.
 */
#include "backend.h"

#ifdef TANDEM_HAVE_CUDA

static const tdm__backend *cuda_backend(const char *fn) {
  (void)fn;
  return &tdm__cuda_backend;
}
int tdm__device_count(void) { return tdm__cuda_device_count(); }
int tdm__is_device_ptr(const void *p) { return p ? tdm__cuda_is_device_ptr(p) : 0; }

#else

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

static const tdm__backend *cuda_backend(const char *fn) {
  (void)tdm__fail(TDM_ERR_NO_DEVICE, "%s: CUDA backend requested, but " NOT_BUILT, fn);
  return NULL;
}
int tdm__device_count(void) { return 0; }
int tdm__is_device_ptr(const void *p) {
  (void)p;
  return 0;
}

#endif

tdm_status tdm__backend_get(tdm_backend which, const char *fn, const tdm__backend **out) {
  *out = which == TDM_BACKEND_CPU ? &tdm__cpu_backend : cuda_backend(fn);
  return *out ? TDM_OK : TDM_ERR_NO_DEVICE;
}
