/*
 * backends.c: the one place where the build decides which backends exist.
 * A context asks here for its backend's descriptor once, at creation; every
 * later call goes through the tables it got. Without CUDA the CUDA backend is
 * still offered by the API, and asking for it answers TDM_ERR_NO_DEVICE with
 * the reason.
 */
#include "backend.h"

#define NOT_BUILT "tandem was built without CUDA (configure with -DTANDEM_CUDA=ON and nvcc installed)"

tdm_status tdm__backend_get(tdm_backend which, const char *fn, const tdm__backend **out) {
  *out = NULL;
  if (which == TDM_BACKEND_CPU) {
    *out = &tdm__cpu_backend;
    return TDM_OK;
  }
#ifdef TANDEM_HAVE_CUDA
  (void)fn;
  *out = &tdm__cuda_backend;
  return TDM_OK;
#else
  return tdm__fail(TDM_ERR_NO_DEVICE, "%s: CUDA backend requested, but " NOT_BUILT, fn);
#endif
}

int tdm__device_count(void) {
#ifdef TANDEM_HAVE_CUDA
  return tdm__cuda_device_count();
#else
  return 0;
#endif
}

int tdm__is_device_ptr(const void *p) {
#ifdef TANDEM_HAVE_CUDA
  return p ? tdm__cuda_is_device_ptr(p) : 0;
#else
  (void)p;
  return 0;
#endif
}
