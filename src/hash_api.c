/*
 * hash_api.c: the public hash table calls. Arguments are checked once here,
 * growth is decided here (the same policy for both backends), then the call
 * goes to the backend of the table's context.
 *
 * Growth policy: before an insert of n keys, if live table keys + tombstones
 * + n could pass the limit (max_load * slots), the table is rehashed into the
 * smallest power-of-two size whose limit holds live + n; a rehash only for
 * tombstones that would leave the table more than 3/4 full doubles it instead,
 * so reclaiming stays amortised O(1) per insert. A fixed-capacity table may be
 * rehashed at its own size to drop tombstones, never grown. The check counts
 * every key of the batch as new: a batch that might not fit is refused (fixed)
 * or grown for (otherwise), before anything changes.
 *
 * Counts left on the device: a backend with a sync_counts entry (CUDA) may
 * let an insert return before its outcome counts (new keys, reused
 * tombstones, side slots) reach the host; it adds n to h->pending instead.
 * fold_counts is the one place that brings them over (a host
 * wait). Only an insert that may queue (insert_may_queue) keeps them there;
 * every other insert folds before it returns, as does every call that needs
 * exact counts (size, export, erase, clear, validate, destroy). A fixed table
 * plans a batch from the upper bound size + pending and folds only when that
 * bound might not fit, so a stream-ordered insert that certainly fits never
 * waits.
 */
#include <math.h>

#include "backend.h"


static tdm_status check_h(const tdm_hash *h, const char *fn) {
  tdm__call_begin(); /* every entry on a table checks it first */
  if (!h) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: table is NULL", fn);
  return TDM_OK;
}

static tdm_status fold_counts(tdm_hash *h, const char *fn, int report);

/* Smallest table size whose limit holds `need` keys, or 0 when it would
 * exceed TDM_HASH_MAX_LOG2. */
static unsigned log2_for(size_t need, double max_load, unsigned from) {
  unsigned l = from < TDM_HASH_MIN_LOG2 ? TDM_HASH_MIN_LOG2 : from;
  while (tdm__hash_limit(l, max_load) < (uint64_t)need) {
    if (++l > TDM_HASH_MAX_LOG2) return 0;
  }
  return l;
}

void tdm__hash_init_common(tdm_hash *h, tdm_ctx *ctx, const tdm__hash_ops *ops, void *be, tdm_type key_type,
                           tdm_type value_type, int dup, int fixed, double max_load, unsigned log2cap) {
  h->ctx = ctx;
  h->ops = ops;
  h->be = be;
  h->key_type = key_type;
  h->value_type = value_type;
  h->dup = dup;
  h->vkind = tdm__key_kind(value_type);
  h->fixed = fixed;
  h->max_load = max_load;
  h->ks = (unsigned)tdm_type_size(key_type);
  h->vs = (unsigned)tdm_type_size(value_type);
  h->slot_bytes = (h->ks == 4 && h->vs == 4) ? 8u : 16u;
  h->log2cap = log2cap;
  h->cap = (size_t)1 << log2cap;
  h->limit = (size_t)tdm__hash_limit(log2cap, max_load);
}

tdm_status tdm_hash_create(tdm_ctx *ctx, const tdm_hash_opts *opts, tdm_hash **out) {
  static const char fn[] = "tdm_hash_create";
  const tdm__hash_ops *ops;
  void *be;
  tdm_hash *h;
  double ml;
  unsigned l;
  tdm_status st;

  if (!out) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if ((st = tdm__check_ctx(ctx, fn)) != TDM_OK) return st;
  if (!opts) return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: opts is NULL; key and value types are needed", fn);
  if ((st = tdm__check_kv_opts(fn, opts->key_type, opts->value_type, (int)opts->on_duplicate)) != TDM_OK) return st;
  if (isnan(opts->max_load) || opts->max_load < 0.0 || opts->max_load >= 1.0)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: max_load %g must be 0 (default) or in (0, 1)", fn,
                     opts->max_load);
  if (opts->key_type == TDM_F32 || opts->key_type == TDM_F64)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: float keys (%s) are not supported; use an integer key type", fn,
                     tdm_type_name(opts->key_type));
  ml = opts->max_load == 0.0 ? TDM_HASH_DEFAULT_MAX_LOAD : opts->max_load;
  l = log2_for(opts->capacity, ml, TDM_HASH_MIN_LOG2);
  if (!l)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: capacity %zu at max_load %g needs more than 2^%u slots", fn,
                     opts->capacity, ml, TDM_HASH_MAX_LOG2);

  ops = ctx->be->hash;
  h = (tdm_hash *)tdm__ctx_handle_alloc(ctx, sizeof *h, ops->state_bytes, &be);
  if (!h) return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of host memory for the table object", fn);
  tdm__hash_init_common(h, ctx, ops, be, opts->key_type, opts->value_type, (int)opts->on_duplicate,
                        opts->fixed_capacity != 0, ml, l);
  if (pthread_mutex_init(&h->fold_lock, NULL) != 0) {
    tdm__ctx_handle_free(ctx, h, sizeof *h, ops->state_bytes);
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: no resources for the table's lock", fn);
  }
  st = ops->create(h);
  if (st != TDM_OK) {
    pthread_mutex_destroy(&h->fold_lock);
    tdm__ctx_handle_free(ctx, h, sizeof *h, ops->state_bytes);
    return st;
  }
  *out = h;
  return TDM_OK;
}

void tdm_hash_destroy(tdm_hash *h) {
  if (!h) return;
  /* Drains the queued inserts; a deferred device error stays the context's
   * to report (tdm_ctx_sync). */
  (void)fold_counts(h, "tdm_hash_destroy", 0);
  h->ops->destroy(h);
  pthread_mutex_destroy(&h->fold_lock);
  tdm__ctx_handle_free(h->ctx, h, sizeof *h, h->ops->state_bytes);
}

/* The one place that folds the device counts of earlier inserts into the
 * common part (h->pending > 0 only with a backend that has sync_counts): a
 * host wait when any are pending, TDM_OK at once otherwise (always on the
 * CPU). Keys that found no free slot are reported as TDM_ERR_CORRUPT named
 * after fn, the call that folds, when it can report (report = 1); else
 * (tdm_hash_size, destroy) they wait in h->lost for the next call that can.
 * On failure pending stays: size stays the count of the folded inserts,
 * size + pending an upper bound, and the next call that folds reports the
 * error again. The lock makes two read-only calls (size, export) that fold
 * at once read the device counts once. */
static tdm_status fold_counts(tdm_hash *h, const char *fn, int report) {
  size_t no_slot = 0;
  tdm_status st = TDM_OK;
  if (!h->ops->sync_counts ||
      (__atomic_load_n(&h->pending, __ATOMIC_ACQUIRE) == 0 && __atomic_load_n(&h->lost, __ATOMIC_ACQUIRE) == 0))
    return TDM_OK;
  pthread_mutex_lock(&h->fold_lock);
  if (h->pending) { /* else another thread folded while this one waited for the lock */
    st = h->ops->sync_counts(h, fn, &no_slot);
    if (st == TDM_OK) {
      h->lost += no_slot;
      __atomic_store_n(&h->pending, 0, __ATOMIC_RELEASE);
    }
  }
  if (st == TDM_OK && report && h->lost) {
    no_slot = h->lost;
    __atomic_store_n(&h->lost, 0, __ATOMIC_RELEASE);
    st = tdm__fail(TDM_ERR_CORRUPT,
                   "%s: %zu keys of earlier inserts found no free slot; the table is corrupt "
                   "(tdm_hash_validate names the broken invariant)",
                   fn, no_slot);
  }
  pthread_mutex_unlock(&h->fold_lock);
  return st;
}

/* 1 when an insert may return with its counts still on the device: a
 * backend that can leave them there, a stream-ordered context, a fixed table
 * (a growing one plans its growth from exact counts) and both arrays in
 * device memory (a call with a host array waits, as every call does). */
static int insert_may_queue(const tdm_hash *h, const void *keys, const void *values) {
  return h->ops->sync_counts && (h->ctx->flags & TDM_CTX_STREAM_ORDERED) && h->fixed && tdm__is_device_ptr(keys) &&
         tdm__is_device_ptr(values);
}

/* Decides whether an insert of n keys needs a rehash first: *grow is 0 (no),
 * or the log2 size of the new table. TDM_ERR_CAPACITY for a fixed table the
 * batch might not fit. */
static tdm_status plan_insert(tdm_hash *h, size_t n, unsigned *grow) {
  static const char fn[] = "tdm_hash_insert";
  size_t live, need, used;
  unsigned l;
  tdm_status st;
  *grow = 0;
  if (h->pending) {
    /* Every pending key counted as a new table key (none reusing a tombstone)
     * bounds live + tombs from above. A fixed table whose batch fits under
     * that bound gets the same answer the exact counts would give (no
     * rehash) without reading them; otherwise, and for a growing table, which
     * sizes its growth from exact counts, read them (a wait). */
    if (h->fixed && tdm__add_ok(h->size - h->side, h->pending, &live) && tdm__add_ok(live, n, &need) &&
        tdm__add_ok(need, h->tombs, &used) && used <= h->limit)
      return TDM_OK;
    if ((st = fold_counts(h, fn, 1)) != TDM_OK) return st;
  }
  live = h->size - h->side;
  if (!tdm__add_ok(live, n, &need) || !tdm__add_ok(need, h->tombs, &used))
    return tdm__fail(h->fixed ? TDM_ERR_CAPACITY : TDM_ERR_INVALID_ARGUMENT,
                     "%s: %zu keys plus a batch of %zu overflows size_t", fn, live, n);
  if (used <= h->limit) return TDM_OK;
  if (h->fixed) {
    if (need > h->limit)
      return tdm__fail(TDM_ERR_CAPACITY,
                       "%s: fixed-capacity table holds %zu keys and takes at most %zu; a batch of %zu might "
                       "not fit (create it with a larger capacity, or without fixed_capacity)",
                       fn, h->size, h->limit, n);
    *grow = h->log2cap; /* same size: only drop the tombstones */
    return TDM_OK;
  }
  l = log2_for(need, h->max_load, h->log2cap);
  if (!l)
    return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: %zu keys would need a table of more than 2^%u slots", fn, need,
                     TDM_HASH_MAX_LOG2);
  if (l == h->log2cap && need > h->limit / 4u * 3u && l < TDM_HASH_MAX_LOG2) l++;
  *grow = l;
  return TDM_OK;
}

tdm_status tdm_hash_insert(tdm_hash *h, const void *keys, const void *values, size_t n) {
  static const char fn[] = "tdm_hash_insert";
  unsigned grow;
  int queue;
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(h->ctx, fn, "keys", keys, n, h->ks, NULL)) != TDM_OK) return st;
  if ((st = tdm__check_array(h->ctx, fn, "values", values, n, h->vs, NULL)) != TDM_OK) return st;
  if (n == 0) return TDM_OK;
  queue = insert_may_queue(h, keys, values);
  if ((st = plan_insert(h, n, &grow)) != TDM_OK) return st;
  if ((st = h->ops->insert(h, keys, values, n, grow)) != TDM_OK) return st;
  /* A queued insert's counts stay on the device (h->pending); any other
   * insert reads them before it returns (nothing to read on the CPU). */
  return queue ? TDM_OK : fold_counts(h, fn, 1);
}

/* Insert-or-number in pieces (backend.h): each piece is numbered into the
 * room the table has, so growth follows the distinct keys met, not the
 * batch (a batch of 10^7 rows with 100 distinct keys keeps a table of 1024
 * slots); when the room is spent the table doubles and the next piece goes
 * on from the key that stopped. */
tdm_status tdm__hash_number(tdm_hash *h, const char *fn, const void *keys, size_t n, size_t max_size,
                            uint32_t *gid_out, uint32_t *first_out, size_t *done) {
  size_t at = 0;
  tdm_status st;
  *done = 0;
  if (!h->ops->number || h->value_type != TDM_U64 || h->fixed)
    return tdm__fail(TDM_ERR_UNSUPPORTED, "%s: this table cannot number keys (backend, value type or fixed size)",
                     fn);
  if (n > (size_t)UINT32_MAX - h->size)
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: %zu keys do not fit 32-bit group numbers", fn, n);
  while (at < n) {
    size_t live = h->size - h->side, used = live + h->tombs, did = 0;
    size_t room = h->limit > used ? h->limit - used : 0, left = max_size > h->size ? max_size - h->size : 0;
    unsigned grow = 0;
    if (room == 0 && left > 0) {
      /* Double (from the live keys: the rehash drops the tombstones). */
      grow = log2_for(live < SIZE_MAX / 2 ? 2 * live + 1 : live, h->max_load, h->log2cap + 1);
      if (!grow)
        return tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: %zu distinct keys would need a table of more than 2^%u slots",
                         fn, live, TDM_HASH_MAX_LOG2);
      room = (size_t)tdm__hash_limit(grow, h->max_load) - live;
    }
    st = h->ops->number(h, (const char *)keys + at * h->ks, n - at, room < left ? room : left,
                        gid_out ? gid_out + at : NULL, first_out, at, &did, grow);
    if (st != TDM_OK) return st;
    at += did;
    if (at < n && h->size >= max_size) break; /* the next key would be one too many */
    /* With room for a new key, a call numbers at least one: else the loop
     * would never end. */
    if (did == 0)
      return tdm__fail(TDM_ERR_CORRUPT, "%s: numbering made no progress at key %zu of %zu (table of %zu keys)", fn,
                       at, n, h->size);
  }
  *done = at;
  return TDM_OK;
}

/* The counts sit in the values (backend.h): read by export. */
tdm_status tdm__hash_number_counts(tdm_hash *h, const char *fn, uint32_t *counts_out) {
  size_t G = h->size, i;
  void *kx;
  uint64_t *vx;
  tdm_status st;
  if (G == 0) return TDM_OK;
  kx = tdm__ctx_alloc(h->ctx, G * h->ks);
  vx = (uint64_t *)tdm__ctx_alloc(h->ctx, G * 8);
  if (!kx || !vx) {
    st = tdm__fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of memory (reading the counts of %zu groups)", fn, G);
  } else if ((st = h->ops->export_all(h, kx, vx)) == TDM_OK) {
    for (i = 0; i < G; i++) counts_out[(uint32_t)vx[i]] = (uint32_t)(vx[i] / TDM__HASH_NUMBER_ONE);
  }
  if (kx) tdm__ctx_free(h->ctx, kx, G * h->ks);
  if (vx) tdm__ctx_free(h->ctx, vx, G * 8);
  return st;
}

tdm_status tdm_hash_find(const tdm_hash *h, const void *keys, void *values_out, uint8_t *found_out, size_t n) {
  static const char fn[] = "tdm_hash_find";
  size_t kb, vb = 0, fb = 0;
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(h->ctx, fn, "keys", keys, n, h->ks, &kb)) != TDM_OK) return st;
  if (values_out && (st = tdm__check_array(h->ctx, fn, "values_out", values_out, n, h->vs, &vb)) != TDM_OK)
    return st;
  if (found_out && (st = tdm__check_array(h->ctx, fn, "found_out", found_out, n, 1, &fb)) != TDM_OK) return st;
  if (tdm__overlap(keys, kb, values_out, vb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and values_out overlap", fn);
  if (tdm__overlap(keys, kb, found_out, fb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and found_out overlap", fn);
  if (tdm__overlap(values_out, vb, found_out, fb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: values_out and found_out overlap", fn);
  if (n == 0 || (!values_out && !found_out)) return TDM_OK;
  return h->ops->find(h, keys, values_out, found_out, n);
}

tdm_status tdm_hash_erase(tdm_hash *h, const void *keys, size_t n, size_t *erased_out) {
  static const char fn[] = "tdm_hash_erase";
  size_t kb, erased = 0;
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if ((st = tdm__check_array(h->ctx, fn, "keys", keys, n, h->ks, &kb)) != TDM_OK) return st;
  if (erased_out && tdm__is_device_ptr(erased_out))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: erased_out must point to host memory", fn);
  if (tdm__overlap(keys, kb, erased_out, erased_out ? sizeof *erased_out : 0))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys and erased_out overlap", fn);
  if ((st = fold_counts(h, fn, 1)) != TDM_OK) return st;
  if (n > 0) {
    st = h->ops->erase(h, keys, n, &erased);
    if (st != TDM_OK) return st;
  }
  if (erased_out) *erased_out = erased;
  return TDM_OK;
}

/* Cannot fail, so it reports nothing: keys that found no free slot wait for
 * the next call that returns a status, and when the counts of queued inserts
 * cannot be read (a device fault) it returns the upper bound size + pending,
 * so an export buffer sized from it is never too small, and leaves the error
 * to the next call that folds. (h is never a const object: tdm_hash_create
 * made it.) */
size_t tdm_hash_size(const tdm_hash *h) {
  tdm_hash *m = (tdm_hash *)h;
  size_t n;
  if (!h) return 0;
  if (fold_counts(m, "tdm_hash_size", 0) == TDM_OK) return h->size;
  pthread_mutex_lock(&m->fold_lock);
  n = tdm__add_ok(m->size, m->pending, &n) ? n : SIZE_MAX;
  pthread_mutex_unlock(&m->fold_lock);
  return n;
}

tdm_status tdm_hash_export(const tdm_hash *h, void *keys_out, void *values_out, size_t cap, size_t *n_out) {
  static const char fn[] = "tdm_hash_export";
  size_t kb, vb;
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if (n_out && tdm__is_device_ptr(n_out))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: n_out must point to host memory", fn);
  if ((st = fold_counts((tdm_hash *)h, fn, 1)) != TDM_OK) return st;
  if (n_out) *n_out = h->size;
  if (cap < h->size)
    return tdm__fail(TDM_ERR_CAPACITY, "%s: the table holds %zu keys but the output arrays take %zu", fn, h->size,
                     cap);
  if ((st = tdm__check_array(h->ctx, fn, "keys_out", keys_out, h->size, h->ks, &kb)) != TDM_OK) return st;
  if ((st = tdm__check_array(h->ctx, fn, "values_out", values_out, h->size, h->vs, &vb)) != TDM_OK) return st;
  if (tdm__overlap(keys_out, kb, values_out, vb))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: keys_out and values_out overlap", fn);
  if (n_out && (tdm__overlap(n_out, sizeof *n_out, keys_out, kb) || tdm__overlap(n_out, sizeof *n_out, values_out, vb)))
    return tdm__fail(TDM_ERR_INVALID_ARGUMENT, "%s: n_out overlaps an output array", fn);
  if (h->size == 0) return TDM_OK;
  return h->ops->export_all(h, keys_out, values_out);
}

tdm_status tdm_hash_clear(tdm_hash *h) {
  static const char fn[] = "tdm_hash_clear";
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if ((st = fold_counts(h, fn, 1)) != TDM_OK) return st;
  return h->ops->clear(h);
}

tdm_status tdm_hash_validate(const tdm_hash *h) {
  static const char fn[] = "tdm_hash_validate";
  tdm_status st;
  if ((st = check_h(h, fn)) != TDM_OK) return st;
  if ((st = fold_counts((tdm_hash *)h, fn, 1)) != TDM_OK) return st;
  return h->ops->validate(h);
}
