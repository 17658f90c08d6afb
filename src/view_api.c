/*
 * view_api.c: tdm_hash_view_get and tdm_btree_view_get. The public layer
 * fills what it owns (sizes, types, tree shape); the backend's `view` entry
 * supplies the storage pointer and where it lives.
 */
#include <string.h>

#include "backend.h"

tdm_status tdm_hash_view_get(const tdm_hash *h, tdm_hash_view *out) {
  if (!h) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_hash_view_get: table is NULL");
  if (!out) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_hash_view_get: out is NULL");
  /* No counts in a hash view, so nothing to fold and no wait: kernels that
   * use it on the table's stream run after the queued inserts anyway. */
  memset(out, 0, sizeof *out);
  out->log2cap = h->log2cap;
  out->key_bytes = h->ks;
  out->value_bytes = h->vs;
  out->device = -1;
  return h->ops->view(h, out);
}

tdm_status tdm_btree_view_get(const tdm_btree *t, tdm_btree_view *out) {
  if (!t) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_btree_view_get: tree is NULL");
  if (!out) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "tdm_btree_view_get: out is NULL");
  memset(out, 0, sizeof *out);
  out->root = t->root;
  out->height = t->height;
  out->key_bytes = t->ks;
  out->value_bytes = t->vs;
  out->key_kind = t->kind;
  out->device = -1;
  out->size = t->size;
  return t->ops->view(t, out);
}
