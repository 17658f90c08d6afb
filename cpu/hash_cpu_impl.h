/*
 * hash_cpu_impl.h: the CPU loops of the hash table for one key and value
 * width. Each of cpu/hash_cpu_k32v32.c ... hash_cpu_k64v64.c defines HS_K,
 * HS_V, HS_KW, HS_VW and HS_SFX (as for include/tandem/detail/hash_slot_impl.h), includes
 * this file once, which defines that width's table tdm__hash_cpu_<sfx>.
 *
 * The random-access loops hide memory latency the same way: keys are hashed
 * PF ahead of the one being probed and their start slots (and tag bytes)
 * prefetched, so about PF cache misses are in flight per thread while the
 * probes themselves hit the cache; find goes through the tag bytes in two
 * prefetch stages (below). The partitioned insert streams each table region
 * instead.
 */

#ifndef TANDEM_HASH_CPU_IMPL_H
#define TANDEM_HASH_CPU_IMPL_H

#include <string.h>

#include "cpu.h"

enum {
  PF = 32, /* prefetch distance, in keys; a power of two */
  HB = 512 /* keys per block of the insert loop */
};

#define HC_CAT2(a, b) a##_##b
#define HC_CAT(a, b) HC_CAT2(a, b)
#define HC_SLOT HC_CAT(tdm__hslot, HS_SFX)
#define HC_FN(name) HC_CAT(name, HS_SFX)
#define HC_WCAT2(a, b) a##b
#define HC_WCAT(a, b) HC_WCAT2(a, b)
#define HC_TOMB ((HS_K)HC_WCAT(TDM_HASH_TOMB, HS_KW))

/* The tag byte of a table key (cpu.h). */
static inline uint8_t HC_FN(tag_of)(HS_K key) { return tdm__hc_tag(tdm__hash_mix(key)); }

/* tdm__hs_claim of a table key (start < cap) without atomics, read through
 * the tags: the same probe, bucket by bucket, the same decision (the key's
 * slot, else the first tombstone before the first empty slot, else that
 * empty slot; TDM_HASH_DEFER at stop), but the buckets are read from the tag
 * bytes, and a slot's key word only where its tag matches the key's. Tags
 * are exact, so the outcome is tdm__hs_claim's; the probe costs a line of
 * the tags (64 slots) and the line of the slot taken instead of every slot
 * line it passes, which at the loads a growing table runs at (up to
 * max_load) is several. */
static inline uint64_t HC_FN(claim_tags)(HC_SLOT *s, const uint8_t *tg, unsigned l, HS_K key, uint8_t t,
                                         uint64_t start, uint64_t stop, int *outcome) {
  enum { G = (unsigned)(64u / sizeof(HC_SLOT)) };
  uint64_t mask = ((uint64_t)1 << l) - 1u, pos = start, tomb = TDM_HASH_NONE, target, g;
  *outcome = TDM_HASH_FOUND;
  for (g = 0; g <= mask / G; g++) {
    unsigned j, eq = 0, em = 0, tm = 0, before;
    for (j = 0; j < G; j++) {
      eq |= (unsigned)(tg[pos + j] == t) << j;
      em |= (unsigned)(tg[pos + j] == TDM__HC_TAG_EMPTY) << j;
      tm |= (unsigned)(tg[pos + j] == TDM__HC_TAG_TOMB) << j;
    }
    before = HC_FN(tdm__hs_before_empty)(em);
    for (eq &= before; eq; eq &= eq - 1u)
      if (s[pos + tdm__hash_ctz(eq)].k == key) return pos + tdm__hash_ctz(eq);
    if (tomb == TDM_HASH_NONE && (tm & before)) tomb = pos + tdm__hash_ctz(tm & before);
    if (em) {
      target = tomb != TDM_HASH_NONE ? tomb : pos + tdm__hash_ctz(em);
      *outcome = tomb != TDM_HASH_NONE ? TDM_HASH_NEW_TOMB : TDM_HASH_NEW_EMPTY;
      s[target].k = key;
      return target;
    }
    if (pos + G == stop) {
      *outcome = TDM_HASH_DEFER;
      return TDM_HASH_NONE;
    }
    pos = (pos + G) & mask;
  }
  if (tomb == TDM_HASH_NONE) return TDM_HASH_NONE; /* no free slot: a corrupt table */
  *outcome = TDM_HASH_NEW_TOMB;
  s[tomb].k = key;
  return tomb;
}

/* Inserts one key at its start slot under the table's policy; a probe that
 * would pass stop (see tdm__hs_claim) sets *deferred and changes nothing. A
 * key that takes a table slot writes its tag (threads claim distinct slots,
 * so tag bytes are never written by two threads at once). Without atomics a
 * table key's probe reads the tags (claim_tags); with them, where other
 * threads may be claiming, the key words (whose CAS decides a race). */
static inline void HC_FN(put)(HC_SLOT *s, uint8_t *tg, unsigned l, HS_K key, HS_V val, uint64_t start, int atomic,
                              uint64_t stop, int dup, int vkind, tdm__hc_counts *c, uint8_t *deferred) {
  int o;
  uint64_t pos = !atomic && start < ((uint64_t)1 << l)
                     ? HC_FN(claim_tags)(s, tg, l, key, HC_FN(tag_of)(key), start, stop, &o)
                     : HC_FN(tdm__hs_claim)(s, l, key, start, atomic, stop, &o);
  if (pos == TDM_HASH_NONE) {
    if (o == TDM_HASH_DEFER) *deferred = 1;
    else c->n[TDM_HASH_FOUND]++; /* no free slot: only in a corrupt table */
  } else if (o == TDM_HASH_FOUND) {
    if (dup != TDM__DUP_KEEP_FIRST) s[pos].v = HC_FN(tdm__hs_combine)(s[pos].v, val, dup, vkind);
  } else {
    s[pos].v = val;
    if (o != TDM_HASH_NEW_SIDE) tg[pos] = HC_FN(tag_of)(key);
    c->n[o]++;
  }
}

/* Inserts the keys of the batch owned by thread t of nt, in batch order.
 * Ownership: a key belongs to the thread whose run of buckets holds its home
 * slot (tdm__hash_owner; marker keys, in the side slots, to thread 0). All
 * copies of one key therefore meet in one thread, in batch order, and every
 * duplicate policy gives exactly the sequential result whatever the schedule.
 * With dfr non-NULL a thread writes only inside its run, without atomics: a
 * key whose probe would leave the run is flagged in dfr[i] and left for the
 * caller's sequential pass (such keys are rare: a probe must run off the end
 * of the run). With dfr NULL and nt > 1, claims use the CAS instead.
 * The batch goes in blocks of HB keys: first the owned keys of a block are
 * listed without a branch (a thread owns a random share of the keys, a
 * branch on it would mispredict), then the list is inserted with the usual
 * prefetch-ahead loop. */
static void HC_FN(insert_run)(tdm_hash *h, const HS_K *keys, const HS_V *vals, size_t n, unsigned nt, unsigned t,
                              uint8_t *dfr, tdm__hc_counts *c) {
  HC_SLOT *s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  unsigned l = h->log2cap, group = (unsigned)(64u / sizeof(HC_SLOT));
  uint64_t cap = h->cap;
  int atomic = nt > 1 && !dfr, dup = (int)h->dup, vkind = h->vkind;
  uint64_t stop = nt > 1 && dfr ? tdm__hash_run_start(t + 1, l, group, nt) : TDM_HASH_NONE;
  size_t idx[HB], b;
  uint64_t st[HB];
  uint8_t none = 0;

  for (b = 0; b < n; b += HB) {
    size_t e = n - b < HB ? n : b + HB, i, j, m = 0;
    for (i = b; i < e; i++) {
      HS_K key = keys[i];
      unsigned side = HC_WCAT(tdm__hash_side, HS_KW)(key);
      uint64_t home = tdm__hash_home(tdm__hash_mix(key), l, group);
      int own = side ? t == 0 : (nt == 1 || tdm__hash_owner(home, l, group, nt) == t);
      idx[m] = i;
      st[m] = side ? cap + side - 1u : home;
      m += (size_t)own;
    }
    /* The tag line too: a new key writes its tag there. */
    for (j = 0; j < m && j < PF; j++) {
      __builtin_prefetch(&s[st[j]], 1, 3);
      __builtin_prefetch(&tg[st[j] & (cap - 1u)], 1, 3);
    }
    for (j = 0; j < m; j++) {
      size_t k = idx[j];
      if (j + PF < m) {
        __builtin_prefetch(&s[st[j + PF]], 1, 3);
        __builtin_prefetch(&tg[st[j + PF] & (cap - 1u)], 1, 3);
      }
      HC_FN(put)(s, tg, l, keys[k], vals[k], st[j], atomic, st[j] >= cap ? TDM_HASH_NONE : stop, dup, vkind, c,
                 dfr ? &dfr[k] : &none);
    }
  }
}

/* One key of the sequential pass after insert_run / part_insert: put with no
 * window, no hint and no tag to skip. */
static inline void HC_FN(put_deferred)(tdm_hash *h, HC_SLOT *s, uint8_t *tg, HS_K k, HS_V v, tdm__hc_counts *c) {
  uint8_t none = 0;
  HC_FN(put)(s, tg, h->log2cap, k, v, HC_FN(tdm__hs_start)(k, h->log2cap), 0, TDM_HASH_NONE, (int)h->dup, h->vkind, c,
             &none);
}

/* The sequential pass after insert_run / part_insert: the flagged keys, in
 * order. */
static void HC_FN(insert_deferred)(tdm_hash *h, const HS_K *keys, const HS_V *vals, const uint8_t *dfr, size_t n,
                                   tdm__hc_counts *c) {
  HC_SLOT *s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  size_t i;
  for (i = 0; i < n; i++)
    if (dfr[i]) HC_FN(put_deferred)(h, s, tg, keys[i], vals[i], c);
}

/* insert_deferred over partition records. */
static void HC_FN(part_deferred)(tdm_hash *h, const HC_SLOT *rec, const uint8_t *dfr, size_t n, tdm__hc_counts *c) {
  HC_SLOT *s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  size_t i;
  for (i = 0; i < n; i++)
    if (dfr[i]) HC_FN(put_deferred)(h, s, tg, rec[i].k, rec[i].v, c);
}

/* ---- partitioned insert (dense batches) ------------------------------------
 * A batch about as large as the table would cost one random memory access
 * per key. Instead the batch is first split, stably, into partitions by the
 * table region of each key's home slot (the top bits of its hash; marker keys
 * get partition np), then each region is streamed into cache and its keys
 * inserted there: sequential memory traffic instead of random misses. All
 * copies of a key land in one partition in batch order, so the duplicate
 * policies see them exactly as a sequential insert would. */

/* Partition of a key: region of its home slot, or np for a marker key. */
static inline size_t HC_FN(part_of)(HS_K key, unsigned pbits, size_t np) {
  if (HC_WCAT(tdm__hash_side, HS_KW)(key)) return np;
  return pbits ? (size_t)(tdm__hash_mix(key) >> (64u - pbits)) : 0u;
}

/* Counts the keys [lo, hi) per partition into cnt[0..np]. */
static void HC_FN(part_count)(const HS_K *keys, size_t lo, size_t hi, unsigned pbits, size_t np, size_t *cnt) {
  size_t i;
  for (i = lo; i < hi; i++) cnt[HC_FN(part_of)(keys[i], pbits, np)]++;
}

/* Copies keys / values [lo, hi) to their partitions; at[p] is where this
 * chunk's next entry of partition p goes (advanced). */
static void HC_FN(part_scatter)(const HS_K *keys, const HS_V *vals, size_t lo, size_t hi, unsigned pbits, size_t np,
                                size_t *at, HC_SLOT *rec) {
  size_t i;
  for (i = lo; i < hi; i++) {
    size_t d = at[HC_FN(part_of)(keys[i], pbits, np)]++;
    rec[d].k = keys[i];
    rec[d].v = vals[i];
  }
}

/* Inserts partitions [plo, phi) (partition p is rec[b[p], b[p+1])), and
 * partition np (the marker keys) too when side is set. Writes stay inside
 * the regions [plo, phi): a probe that would leave them is flagged in dfr
 * (indexed like rec) for the sequential pass; dfr NULL: no window (one
 * thread). */
static void HC_FN(part_insert)(tdm_hash *h, const HC_SLOT *rec, const size_t *b, size_t plo, size_t phi, size_t np,
                               int side, uint8_t *dfr, tdm__hc_counts *c) {
  HC_SLOT *s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  unsigned l = h->log2cap;
  int dup = (int)h->dup, vkind = h->vkind;
  size_t region = h->cap / np, p, j;
  uint64_t stop = dfr ? (uint64_t)(phi * region) : TDM_HASH_NONE;
  uint8_t none = 0;
  for (p = plo; p < phi; p++) {
    const char *r = (const char *)(s + p * region), *end = (const char *)(s + (p + 1) * region);
    /* Stream the region in (the hardware prefetcher follows a sequential
     * sweep), so the random probes below hit the cache. */
    for (; r < end; r += 64) __builtin_prefetch(r, 1, 2);
    for (r = (const char *)(tg + p * region), end = r + region; r < end; r += 64) __builtin_prefetch(r, 1, 2);
    for (j = b[p]; j < b[p + 1]; j++)
      HC_FN(put)(s, tg, l, rec[j].k, rec[j].v, HC_FN(tdm__hs_start)(rec[j].k, l), 0, stop, dup, vkind, c,
                 dfr ? &dfr[j] : &none);
  }
  if (side)
    for (j = b[np]; j < b[np + 1]; j++)
      HC_FN(put)(s, tg, l, rec[j].k, rec[j].v, HC_FN(tdm__hs_start)(rec[j].k, l), 0, TDM_HASH_NONE, dup, vkind, c, &none);
}

/* Moves every live table key of old slots [lo, hi) into the table dst of
 * 2^dl slots. Keys are distinct, so a claim always takes a new slot. Reading
 * the old table in order writes the new one almost in order too (homes are
 * the top hash bits, see tdm__hash_home), so no prefetching is needed. */
static void HC_FN(rehash_range)(const HC_SLOT *src, size_t lo, size_t hi, HC_SLOT *dst, uint8_t *dtg, unsigned dl,
                                int atomic) {
  size_t i;
  for (i = lo; i < hi; i++) {
    HS_K k = src[i].k;
    int o;
    uint64_t pos;
    if (k == (HS_K)TDM_HASH_EMPTY || k == HC_TOMB) continue;
    pos = HC_FN(tdm__hs_claim)(dst, dl, k, HC_FN(tdm__hs_home)(k, dl), atomic, TDM_HASH_NONE, &o);
    if (pos != TDM_HASH_NONE) { /* always: the new table has room */
      dst[pos].v = src[i].v;
      dtg[pos] = HC_FN(tag_of)(k);
    }
  }
}

/* ---- streaming rehash (one thread) -------------------------------------------
 * Growth moves every key into a table of 2^dl slots (dl >= sl) whose memory
 * is not cleared: a mapping recycled from the context's cache holds an old
 * table. The keys are read in old slot order; a key in old slot i that did
 * not wrap has its old home h <= i and its new home at or above h * 2^(dl -
 * sl) (homes are the top hash bits), so the keys arrive in nearly ascending
 * order of new home and the new table fills from the front. Its slots and
 * tags are cleared just ahead of the highest slot a probe has reached (RC
 * slots at a time, which stay in cache until the keys land there), so the
 * new table is written once, front to back, instead of being cleared in a
 * pass of its own and then written again. Keys are distinct and the new
 * table has no tombstones, so a key takes the first empty slot from its home
 * (the slot tdm__hs_claim would give it) and no key compare is needed; the
 * tags, which say empty as 0, are scanned instead of the key words. Keys that
 * wrapped in the old table (home above their slot: all sit in the run of
 * non-empty slots at its start) would land near the end of the new table
 * before its front is written, so they go last, once the whole table is
 * cleared. */
enum { RC = 1024 /* slots cleared ahead at a time: 16 KiB of slots and 1 KiB of tags at most */ };

/* Clears slots and tags [*clr, upto) of the new table (rounded up to RC,
 * capped at dcap) when upto passes *clr. */
static inline void HC_FN(rh_clear)(HC_SLOT *dst, uint8_t *dtg, uint64_t dcap, uint64_t *clr, uint64_t upto) {
  uint64_t at = *clr, end;
  if (upto <= at) return;
  end = (upto + RC - 1u) & ~(uint64_t)(RC - 1u);
  if (end > dcap) end = dcap;
  memset(dst + at, 0, (size_t)(end - at) * sizeof(HC_SLOT));
  memset(dtg + at, 0, (size_t)(end - at));
  *clr = end;
}

/* Puts a key into the first empty slot of its probe from home in the new
 * table, clearing ahead as the probe goes. Returns 0 only when no slot is
 * free (a corrupt old table holding more keys than the new one can). */
static inline int HC_FN(rh_put)(HC_SLOT *dst, uint8_t *dtg, uint64_t dcap, uint64_t *clr, HS_K k, HS_V v,
                                uint64_t mx, uint64_t home) {
  enum { G = (unsigned)(64u / sizeof(HC_SLOT)) };
  uint64_t pos = home, g;
  for (g = 0; g < dcap / G; g++) {
    unsigned j, em = 0;
    HC_FN(rh_clear)(dst, dtg, dcap, clr, pos + G);
    for (j = 0; j < G; j++) em |= (unsigned)(dtg[pos + j] == TDM__HC_TAG_EMPTY) << j;
    if (em) {
      pos += tdm__hash_ctz(em);
      dst[pos].k = k;
      dst[pos].v = v;
      dtg[pos] = tdm__hc_tag(mx);
      return 1;
    }
    pos = (pos + G) & (dcap - 1u);
  }
  return 0;
}

/* Moves the live table keys of src (2^sl slots) into dst (2^dl slots, its
 * contents unspecified) and its tags dtg, which it clears as it goes; on
 * return every slot and tag of dst is written. Side slots are the caller's. */
static void HC_FN(rehash_stream)(const HC_SLOT *src, unsigned sl, HC_SLOT *dst, uint8_t *dtg, unsigned dl) {
  enum { G = (unsigned)(64u / sizeof(HC_SLOT)) };
  uint64_t scap = (uint64_t)1 << sl, dcap = (uint64_t)1 << dl, clr = 0, i;
  for (i = 0; i < scap; i++) {
    HS_K k = src[i].k;
    uint64_t mx;
    if (k == (HS_K)TDM_HASH_EMPTY || k == HC_TOMB) continue;
    mx = tdm__hash_mix(k);
    if (tdm__hash_home(mx, sl, G) > i) continue; /* wrapped: placed below */
    (void)HC_FN(rh_put)(dst, dtg, dcap, &clr, k, src[i].v, mx, tdm__hash_home(mx, dl, G));
  }
  HC_FN(rh_clear)(dst, dtg, dcap, &clr, dcap);
  for (i = 0; i < scap && src[i].k != (HS_K)TDM_HASH_EMPTY; i++) {
    HS_K k = src[i].k;
    uint64_t mx = tdm__hash_mix(k);
    if (k == HC_TOMB || tdm__hash_home(mx, sl, G) <= i) continue;
    (void)HC_FN(rh_put)(dst, dtg, dcap, &clr, k, src[i].v, mx, tdm__hash_home(mx, dl, G));
  }
}

/* ---- find through the tags --------------------------------------------------
 * A find runs in three stages over a window of keys: key i + TD has its hash,
 * home and tag computed and its home's tag line prefetched; key i + SD has
 * its tags scanned (now in cache) down to its candidate slot, whose line is
 * prefetched only when a tag matched; key i is answered from that slot. A
 * miss thus touches the slot array only on a false tag match (about one in
 * 254 per occupied slot scanned). */
enum {
  TD = 48, /* tag prefetch distance, in keys */
  SD = 24, /* slot prefetch distance */
  FR = 64  /* ring size: a power of two above TD */
};
#define HC_UNSURE (TDM_HASH_NONE - 1u) /* answer from the slots: a side key, or no empty slot was met */

/* The candidate slot of a probe from home (a bucket's first slot) read from
 * the tags: the first slot whose tag is t before the first empty one;
 * TDM_HASH_NONE when there is none, so the key is absent; HC_UNSURE when the
 * whole table was scanned without meeting an empty slot (a corrupt table).
 * Tags are exact, so an absent answer is certain, and a candidate holding
 * the key is the slot tdm__hs_lookup finds. */
static inline uint64_t HC_FN(tag_candidate)(const uint8_t *tg, uint64_t home, uint64_t mask, uint8_t t) {
  enum { G = (unsigned)(64u / sizeof(HC_SLOT)) };
  uint64_t pos = home, g;
  for (g = 0; g <= mask / G; g++) {
    unsigned j, eq = 0, em = 0, hit;
    for (j = 0; j < G; j++) {
      eq |= (unsigned)(tg[pos + j] == t) << j;
      em |= (unsigned)(tg[pos + j] == TDM__HC_TAG_EMPTY) << j;
    }
    hit = eq & HC_FN(tdm__hs_before_empty)(em);
    if (hit) return pos + tdm__hash_ctz(hit);
    if (em) return TDM_HASH_NONE;
    pos = (pos + G) & mask;
  }
  return HC_UNSURE;
}

/* Finds keys [lo, hi). values_out / found_out may be NULL. */
static void HC_FN(find_range)(const tdm_hash *h, const HS_K *keys, HS_V *vo, uint8_t *fo, size_t lo, size_t hi) {
  const HC_SLOT *s = (const HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  const uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  unsigned l = h->log2cap;
  uint64_t cap = h->cap, mask = cap - 1u, start[FR], cand[FR];
  uint8_t tag[FR];
  size_t m = hi - lo, i;
  const HS_K *k = keys + lo;
  /* Stage 1 for key j: home (or side slot) and tag; prefetch the tag line. */
#define HC_STAGE1(j)                                                                                              \
  do {                                                                                                            \
    HS_K key_ = k[j];                                                                                             \
    uint64_t mx_ = tdm__hash_mix(key_);                                                                           \
    unsigned side_ = HC_WCAT(tdm__hash_side, HS_KW)(key_);                                                        \
    start[(j) % FR] = side_ ? cap + side_ - 1u : tdm__hash_home(mx_, l, 64u / sizeof(HC_SLOT));                   \
    tag[(j) % FR] = tdm__hc_tag(mx_);                                                                             \
    if (!side_) __builtin_prefetch(&tg[start[(j) % FR]], 0, 3);                                                   \
  } while (0)
  /* Stage 2 for key j: the candidate from the tags; prefetch its slot. */
#define HC_STAGE2(j)                                                                                              \
  do {                                                                                                            \
    uint64_t st_ = start[(j) % FR], c_ = st_ >= cap ? HC_UNSURE : HC_FN(tag_candidate)(tg, st_, mask, tag[(j) % FR]); \
    cand[(j) % FR] = c_;                                                                                          \
    if (c_ < cap) __builtin_prefetch(&s[c_], 0, 3);                                                               \
    else if (c_ == HC_UNSURE) __builtin_prefetch(&s[st_], 0, 3);                                                  \
  } while (0)
  for (i = 0; i < TD && i < m; i++) HC_STAGE1(i);
  for (i = 0; i < SD && i < m; i++) HC_STAGE2(i);
  for (i = 0; i < m; i++) {
    uint64_t c = cand[i % FR], pos;
    HS_K key = k[i];
    if (i + TD < m) HC_STAGE1(i + TD);
    if (i + SD < m) HC_STAGE2(i + SD);
    if (c == TDM_HASH_NONE) pos = TDM_HASH_NONE;
    else if (c < cap && s[c].k == key) pos = c;
    /* A false tag match, a side key or a corrupt table: the slots decide. */
    else pos = HC_FN(tdm__hs_lookup)(s, l, key, start[i % FR], 0);
    if (pos != TDM_HASH_NONE) {
      if (vo) vo[lo + i] = s[pos].v;
      if (fo) fo[lo + i] = 1;
    } else {
      if (vo) vo[lo + i] = 0;
      if (fo) fo[lo + i] = 0;
    }
  }
#undef HC_STAGE1
#undef HC_STAGE2
}

/* First table slot in [lo, hi) whose tag is not what its key word says, or
 * hi when all agree (tdm_hash_validate). */
static size_t HC_FN(check_tags)(const HC_SLOT *s, const uint8_t *tg, size_t lo, size_t hi) {
  size_t i;
  for (i = lo; i < hi; i++) {
    HS_K key = s[i].k;
    uint8_t want = key == (HS_K)TDM_HASH_EMPTY ? TDM__HC_TAG_EMPTY : key == HC_TOMB ? TDM__HC_TAG_TOMB : HC_FN(tag_of)(key);
    if (tg[i] != want) return i;
  }
  return hi;
}

/* Erases keys [lo, hi); outcomes counted in c. */
static void HC_FN(erase_range)(tdm_hash *h, const HS_K *keys, size_t lo, size_t hi, int atomic, tdm__hc_counts *c) {
  HC_SLOT *s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  uint8_t *tg = tdm__hash_cpu_of(h)->tags;
  unsigned l = h->log2cap;
  uint64_t ring[PF], mask = h->cap - 1u;
  size_t m = hi - lo, i;
  for (i = 0; i < PF && i < m; i++) {
    ring[i] = HC_FN(tdm__hs_start)(keys[lo + i], l);
    __builtin_prefetch(&s[ring[i]], 1, 3);
    __builtin_prefetch(&tg[ring[i] & mask], 1, 3);
  }
  for (i = 0; i < m; i++) {
    uint64_t st = ring[i % PF], pos;
    HS_K key = keys[lo + i];
    int o;
    if (i + PF < m) {
      uint64_t ns = HC_FN(tdm__hs_start)(keys[lo + i + PF], l);
      ring[i % PF] = ns;
      __builtin_prefetch(&s[ns], 1, 3);
      __builtin_prefetch(&tg[ns & mask], 1, 3);
    }
    /* The slot the key sits in (the erase finds it again, in cache), so the
     * thread that erases it sets its tag to what the erase left there. */
    pos = HC_FN(tdm__hs_lookup)(s, l, key, st, atomic);
    o = pos == TDM_HASH_NONE ? TDM_HASH_ABSENT : HC_FN(tdm__hs_erase)(s, l, key, st, atomic);
    if (o == TDM_HASH_GONE_TOMB) tg[pos] = TDM__HC_TAG_TOMB;
    else if (o == TDM_HASH_GONE_EMPTY) tg[pos] = TDM__HC_TAG_EMPTY;
    c->n[4 + o]++;
  }
}

/* Live table keys in slots [lo, hi). */
static size_t HC_FN(count_range)(const HC_SLOT *s, size_t lo, size_t hi) {
  size_t i, c = 0;
  for (i = lo; i < hi; i++) c += s[i].k != (HS_K)TDM_HASH_EMPTY && s[i].k != HC_TOMB;
  return c;
}

/* Writes the live table keys of slots [lo, hi) from output position at. */
static void HC_FN(export_range)(const HC_SLOT *s, size_t lo, size_t hi, HS_K *ko, HS_V *vo, size_t at) {
  size_t i;
  for (i = lo; i < hi; i++) {
    HS_K k = s[i].k;
    if (k == (HS_K)TDM_HASH_EMPTY || k == HC_TOMB) continue;
    ko[at] = k;
    vo[at] = s[i].v;
    at++;
  }
}

/* Writes the present side-slot keys first; returns how many. */
static size_t HC_FN(export_side)(const HC_SLOT *s, uint64_t cap, HS_K *ko, HS_V *vo) {
  size_t at = 0;
  if (s[cap].k) {
    ko[at] = (HS_K)TDM_HASH_EMPTY;
    vo[at++] = s[cap].v;
  }
  if (s[cap + 1].k) {
    ko[at] = HC_TOMB;
    vo[at++] = s[cap + 1].v;
  }
  return at;
}

/* ---- insert-or-number --------------------------------------------------- */
#if HS_VW == 64

enum {
  NPF = 32,      /* number run: slot and tag prefetch distance, in keys (a power of two) */
  NFAR = 1 << 15 /* ... in tables of more slots than this (past the first caches) */
};

/* Slot of a key (table or side) whose probe starts at st, with tag t, or
 * TDM_HASH_NONE: tdm__hs_lookup's answer, with the first bucket read from
 * its tags (tdm__hc_tag_masks). Tags are exact, so no match before an
 * empty slot means absent; a match is checked against the key word. */
static inline uint64_t HC_FN(number_find)(const HC_SLOT *s, const uint8_t *tg, unsigned l, uint64_t cap, HS_K key,
                                          uint64_t st, uint8_t t) {
  unsigned eq, em, hit;
  if (st >= cap) return HC_FN(tdm__hs_lookup)(s, l, key, st, 0);
  tdm__hc_tag_masks(&tg[st], (unsigned)(64u / sizeof(HC_SLOT)), t, &eq, &em);
  hit = eq & ((em & (0u - em)) - 1u); /* matches before the first empty slot (all: none empty) */
  if (hit) {
    uint64_t pos = st + tdm__hash_ctz(hit);
    if (s[pos].k == key) return pos;
  } else if (em) {
    return TDM_HASH_NONE;
  }
  /* A false tag match, or a full bucket: the slots decide. */
  return HC_FN(tdm__hs_lookup)(s, l, key, st, 0);
}

/* Probe start of key (a side key: its side slot), from its hash mx. */
static inline uint64_t HC_FN(number_start)(HS_K key, uint64_t mx, unsigned l, uint64_t cap) {
  unsigned side = HC_WCAT(tdm__hash_side, HS_KW)(key);
  return side ? cap + side - 1u : tdm__hash_home(mx, l, 64u / sizeof(HC_SLOT));
}

/* The state of a number run (number_run). */
typedef struct HC_FN(number_state) {
  HC_SLOT *s;
  uint8_t *tg;
  unsigned l;
  uint64_t cap;
  size_t next, added, max_new;
  uint32_t *gid, *first;
  uint64_t base;
  tdm__hc_counts *c;
} HC_FN(number_state);

/* Row i (key, its hash mx, probe start st) of a number run: 0 when it
 * stops the run (a new key past max_new, or a table without a free slot).
 * The tag is taken for every row, the fast path's too: it is a shift of
 * mx, cheaper than a branch around it. */
static inline int HC_FN(number_one)(HC_FN(number_state) *r, size_t i, HS_K key, uint64_t mx, uint64_t st) {
  uint64_t pos, v;
  uint8_t t = tdm__hc_tag(mx);
  int o = TDM_HASH_FOUND;
  /* In a sparse table nearly every key sits first in its bucket, and the
   * branch on it is predicted. */
  if (r->next * 8u <= r->cap && st < r->cap && r->s[st].k == key) pos = st;
  else pos = HC_FN(number_find)(r->s, r->tg, r->l, r->cap, key, st, t);
  if (pos == TDM_HASH_NONE) {
    if (r->added == r->max_new) return 0;
    pos = st < r->cap ? HC_FN(claim_tags)(r->s, r->tg, r->l, key, t, st, TDM_HASH_NONE, &o)
                      : HC_FN(tdm__hs_claim)(r->s, r->l, key, st, 0, TDM_HASH_NONE, &o);
    if (pos == TDM_HASH_NONE) {
      r->c->n[TDM_HASH_FOUND]++;
      return 0;
    }
  }
  /* The value is kept in a register: read back from the slot after the
   * store, it would wait for the store to forward. */
  if (o == TDM_HASH_FOUND) {
    v = r->s[pos].v + TDM__HASH_NUMBER_ONE;
  } else {
    v = TDM__HASH_NUMBER_ONE | r->next;
    if (o != TDM_HASH_NEW_SIDE) r->tg[pos] = t;
    r->c->n[o]++;
    r->added++;
    if (r->first) r->first[r->next] = (uint32_t)(r->base + i);
    r->next++;
  }
  r->s[pos].v = v;
  if (r->gid) r->gid[i] = (uint32_t)v;
  return 1;
}

/* The number call (backend.h) on keys [0, n), in batch order, by one
 * thread: the numbers are the order of first occurrence, so they do not
 * depend on the thread count. A key's value is its number with its count
 * above it (TDM__HASH_NUMBER_ONE), so a row reads and writes the one slot
 * line its probe already holds. Most rows repeat a key, so a row is first
 * looked up (number_find); only an absent key takes the insert's probe
 * (claim_tags), which keeps the tags. A table that fits the caches (at
 * most NFAR slots) is probed as it comes; in a larger one a row's slot and
 * tag lines are prefetched NPF rows ahead. From max_new new keys on, the
 * first absent key stops the run. Returns the keys numbered; c counts the
 * claims' outcomes as insert_run does ([TDM_HASH_FOUND]: no free slot, a
 * corrupt table, which also stops the run). */
static size_t HC_FN(number_run)(tdm_hash *h, const HS_K *keys, size_t n, size_t max_new, uint32_t *gid,
                                uint32_t *first, uint64_t base, tdm__hc_counts *c) {
  HC_FN(number_state) r;
  uint64_t start[NPF], mixv[NPF];
  size_t i;
  int far = h->cap > NFAR;
  r.s = (HC_SLOT *)tdm__hash_cpu_of(h)->slots;
  r.tg = tdm__hash_cpu_of(h)->tags;
  r.l = h->log2cap;
  r.cap = h->cap;
  r.next = h->size;
  r.added = 0;
  r.max_new = max_new;
  r.gid = gid;
  r.first = first;
  r.base = base;
  r.c = c;
  for (i = 0; i < NPF && i < n; i++) {
    mixv[i] = tdm__hash_mix(keys[i]);
    start[i] = HC_FN(number_start)(keys[i], mixv[i], r.l, r.cap);
  }
  for (i = 0; i < n; i++) {
    uint64_t st = start[i % NPF], mx = mixv[i % NPF];
    if (i + NPF < n) {
      uint64_t ma = tdm__hash_mix(keys[i + NPF]), sa = HC_FN(number_start)(keys[i + NPF], ma, r.l, r.cap);
      mixv[i % NPF] = ma;
      start[i % NPF] = sa;
      __builtin_prefetch(&r.s[sa], 1, 3);
      if (far) __builtin_prefetch(&r.tg[sa & (r.cap - 1u)], 1, 3);
    }
    if (!HC_FN(number_one)(&r, i, keys[i], mx, st)) break;
  }
  return i;
}
#endif

/* ---- the table of this instantiation: untyped entry points ---------------- */

static void hc_insert_run(tdm_hash *h, const void *keys, const void *vals, size_t n, unsigned nt, unsigned t,
                          uint8_t *dfr, tdm__hc_counts *c) {
  HC_FN(insert_run)(h, (const HS_K *)keys, (const HS_V *)vals, n, nt, t, dfr, c);
}
static void hc_insert_deferred(tdm_hash *h, const void *keys, const void *vals, const uint8_t *dfr, size_t n,
                               tdm__hc_counts *c) {
  HC_FN(insert_deferred)(h, (const HS_K *)keys, (const HS_V *)vals, dfr, n, c);
}
static void hc_part_count(const void *keys, size_t lo, size_t hi, unsigned pbits, size_t np, size_t *cnt) {
  HC_FN(part_count)((const HS_K *)keys, lo, hi, pbits, np, cnt);
}
static void hc_part_scatter(const void *keys, const void *vals, size_t lo, size_t hi, unsigned pbits, size_t np,
                            size_t *at, void *rec) {
  HC_FN(part_scatter)((const HS_K *)keys, (const HS_V *)vals, lo, hi, pbits, np, at, (HC_SLOT *)rec);
}
static void hc_part_insert(tdm_hash *h, const void *rec, const size_t *b, size_t plo, size_t phi, size_t np, int side,
                           uint8_t *dfr, tdm__hc_counts *c) {
  HC_FN(part_insert)(h, (const HC_SLOT *)rec, b, plo, phi, np, side, dfr, c);
}
static void hc_part_deferred(tdm_hash *h, const void *rec, const uint8_t *dfr, size_t n, tdm__hc_counts *c) {
  HC_FN(part_deferred)(h, (const HC_SLOT *)rec, dfr, n, c);
}
static void hc_rehash_range(const void *src, size_t lo, size_t hi, void *dst, uint8_t *dtg, unsigned dl, int atomic) {
  HC_FN(rehash_range)((const HC_SLOT *)src, lo, hi, (HC_SLOT *)dst, dtg, dl, atomic);
}
static void hc_rehash_stream(const void *src, unsigned sl, void *dst, uint8_t *dtg, unsigned dl) {
  HC_FN(rehash_stream)((const HC_SLOT *)src, sl, (HC_SLOT *)dst, dtg, dl);
}
static void hc_find_range(const tdm_hash *h, const void *keys, void *vo, uint8_t *fo, size_t lo, size_t hi) {
  HC_FN(find_range)(h, (const HS_K *)keys, (HS_V *)vo, fo, lo, hi);
}
static void hc_erase_range(tdm_hash *h, const void *keys, size_t lo, size_t hi, int atomic, tdm__hc_counts *c) {
  HC_FN(erase_range)(h, (const HS_K *)keys, lo, hi, atomic, c);
}
static size_t hc_count_range(const void *s, size_t lo, size_t hi) {
  return HC_FN(count_range)((const HC_SLOT *)s, lo, hi);
}
static void hc_export_range(const void *s, size_t lo, size_t hi, void *ko, void *vo, size_t at) {
  HC_FN(export_range)((const HC_SLOT *)s, lo, hi, (HS_K *)ko, (HS_V *)vo, at);
}
static size_t hc_export_side(const void *s, uint64_t cap, void *ko, void *vo) {
  return HC_FN(export_side)((const HC_SLOT *)s, cap, (HS_K *)ko, (HS_V *)vo);
}
static size_t hc_check_tags(const void *s, const uint8_t *tg, size_t lo, size_t hi) {
  return HC_FN(check_tags)((const HC_SLOT *)s, tg, lo, hi);
}
#if HS_VW == 64
static size_t hc_number_run(tdm_hash *h, const void *keys, size_t n, size_t max_new, uint32_t *gid, uint32_t *first,
                            uint64_t base, tdm__hc_counts *c) {
  return HC_FN(number_run)(h, (const HS_K *)keys, n, max_new, gid, first, base, c);
}
#define HC_NUMBER_RUN hc_number_run
#else
#define HC_NUMBER_RUN NULL
#endif

const tdm__hash_cpu_fns HC_CAT(tdm__hash_cpu, HS_SFX) = {
    .insert_run = hc_insert_run,
    .insert_deferred = hc_insert_deferred,
    .part_count = hc_part_count,
    .part_scatter = hc_part_scatter,
    .part_insert = hc_part_insert,
    .part_deferred = hc_part_deferred,
    .rehash_range = hc_rehash_range,
    .rehash_stream = hc_rehash_stream,
    .find_range = hc_find_range,
    .erase_range = hc_erase_range,
    .count_range = hc_count_range,
    .export_range = hc_export_range,
    .export_side = hc_export_side,
    .check_tags = hc_check_tags,
    .number_run = HC_NUMBER_RUN,
};

#undef HC_CAT2
#undef HC_CAT
#undef HC_SLOT
#undef HC_FN
#undef HC_WCAT2
#undef HC_WCAT
#undef HC_TOMB
#undef HC_UNSURE
#undef HC_NUMBER_RUN

#endif /* TANDEM_HASH_CPU_IMPL_H */
