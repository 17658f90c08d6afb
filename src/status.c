/* status.c: status names, the thread-local last-error text, version. */
#include <stdio.h>

#include "internal.h"

#ifndef TANDEM_VERSION_STRING
#define TANDEM_VERSION_STRING "0.0.0"
#endif

static _Thread_local char last_error[512];

const char *tdm_status_name(tdm_status s) {
  switch (s) {
  case TDM_OK: return "TDM_OK";
  case TDM_ERR_INVALID_ARGUMENT: return "TDM_ERR_INVALID_ARGUMENT";
  case TDM_ERR_UNSUPPORTED: return "TDM_ERR_UNSUPPORTED";
  case TDM_ERR_OUT_OF_MEMORY: return "TDM_ERR_OUT_OF_MEMORY";
  case TDM_ERR_NO_DEVICE: return "TDM_ERR_NO_DEVICE";
  case TDM_ERR_DEVICE: return "TDM_ERR_DEVICE";
  case TDM_ERR_CAPACITY: return "TDM_ERR_CAPACITY";
  case TDM_ERR_CORRUPT: return "TDM_ERR_CORRUPT";
  case TDM_ERR_COMM: return "TDM_ERR_COMM";
  }
  return "TDM_STATUS_UNKNOWN";
}

const char *tdm_last_error(void) { return last_error; }

const char *tdm_version(void) { return TANDEM_VERSION_STRING; }

/* Formats the thread's error text (the status's name when the text would be
 * empty); returns s. Both error setters below use it. */
static tdm_status set_error(tdm_status s, const char *fmt, va_list ap) {
  /* Every caller has started ap; the analyzer cannot see across the call. */
  vsnprintf(last_error, sizeof last_error, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
  if (!last_error[0]) snprintf(last_error, sizeof last_error, "%s", tdm_status_name(s));
  return s;
}

tdm_status tdm__fail(tdm_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(s, fmt, ap);
  va_end(ap);
  return s;
}

size_t tdm_type_size(tdm_type t) {
  switch (t) {
  case TDM_U32: case TDM_I32: case TDM_F32: return 4;
  case TDM_U64: case TDM_I64: case TDM_F64: return 8;
  }
  return 0;
}

const char *tdm_type_name(tdm_type t) {
  switch (t) {
  case TDM_U32: return "u32";
  case TDM_U64: return "u64";
  case TDM_I32: return "i32";
  case TDM_I64: return "i64";
  case TDM_F32: return "f32";
  case TDM_F64: return "f64";
  }
  return "?";
}

tdm_status tdm_set_last_error(tdm_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(s, fmt, ap);
  va_end(ap);
  return s;
}
