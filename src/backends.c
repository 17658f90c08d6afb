/*
 * backends.c: the one place where the build decides which backends exist.
 * A context asks here for its backend's descriptor once, at creation (for
 * CUDA: the descriptor of its kernel design); every later call goes through
 * the tables it got. Without CUDA the CUDA backend is
 * still offered by the API, and asking for it answers TDM_ERR_NO_DEVICE with
 * the reason.
 */
#include "backend.h"

#ifdef TANDEM_HAVE_CUDA

#include <stdlib.h>
#include <string.h>

/* The CUDA descriptor of the design TANDEM_GPU_DESIGN names (unset, empty or
 * "default": the list's first), read here only, once per context. */
static tdm_status cuda_backend(const char *fn, const tdm__backend **out) {
  const char *d = getenv("TANDEM_GPU_DESIGN");
  char names[128] = "";
  size_t i;
  if (!d || !*d || !strcmp(d, "default")) d = tdm__cuda_designs[0].name;
  for (i = 0; tdm__cuda_designs[i].name; i++) {
    if (!strcmp(d, tdm__cuda_designs[i].name)) {
      *out = tdm__cuda_designs[i].backend;
      return TDM_OK;
    }
    strncat(names, tdm__cuda_designs[i].name, sizeof names - strlen(names) - 1);
    strncat(names, ", ", sizeof names - strlen(names) - 1);
  }
  *out = NULL;
  return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: TANDEM_GPU_DESIGN is '%s'; use %sor default", fn, d, names);
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
