/*
 * test_hd_claim.c: the CUDA hash insert (gpu/hash_probe.cu, the direct claim
 * by lane groups) run on the CPU with its per-element functions, against the
 * CPU backend.
 *
 * The simulation does what the kernels do: every copy of a key gets a lane
 * group whose lanes are simulated one by one (tdm__hs_lane_bits,
 * tdm__hs_claim_step, tdm__hs_claim_last, the swap,
 * tdm__hs_claim_cas_outcome), a whole bucket's lanes and half a bucket's
 * (the sector lanes of the CUDA policy table); up to eight groups are in
 * flight at once, advanced a step or a swap at a time in random order, so groups lose
 * swaps to each other and probe again, and two copies of one key race for
 * its slot, as on a GPU. Then the duplicate policy's passes run in a random
 * order of the copies: SUM adds, MIN / MAX store the claimer's value and
 * fold the others in, KEEP_FIRST / KEEP_LAST elect by batch index (KEEP_FIRST
 * on the slots claimed in this batch only).
 *
 * The table that results must answer every find exactly as a CPU-backend
 * table that received the same calls, for every key / value width, every
 * policy, unsigned, signed and float values (MIN / MAX in the value type's
 * order), keys equal to the empty and tombstone markers (side slots), tables
 * filled to one free slot (full probe runs), keys crowded into the last
 * bucket (runs that wrap at the table's end), tombstones, and batches of
 * heavy duplicates. The outcome counts (NEW_EMPTY / NEW_TOMB / NEW_SIDE)
 * must match what changed in the table.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prop.h"
#include "tandem/detail/hash_layout.h"

/* What the cases must have reached, or they test less than they claim: lost
 * swaps (the restart path), claims that wrapped past the table's end, and
 * tables left with a single empty slot. */
static uint64_t g_retries, g_wraps, g_full;
/* The simulated groups take the bucket's lanes divided by this: 1 for whole
 * buckets, 2 for the sector lanes the CUDA policy table holds (each step
 * reads half a bucket, gpu/hash_probe.cu's sector_lanes). */
static unsigned g_lane_div = 1;

/* A random order of 0..n-1 (the order in which the copies' value passes
 * land). */
static size_t *shuffled(size_t n, prop_rng *r) {
  size_t *o = (size_t *)malloc((n ? n : 1) * sizeof *o), i;
  cr_assert(o);
  for (i = 0; i < n; i++) o[i] = i;
  for (i = n; i > 1; i--) {
    size_t j = (size_t)prop_below(r, i), t = o[i - 1];
    o[i - 1] = o[j];
    o[j] = t;
  }
  return o;
}

/* The simulation for one width pair:
 *  - sim_insert_SFX(s, l, keys, vals, n, dup, vkind, r, cnt): the insert of
 *    a batch into slots s of 2^l slots; cnt[o] counts claim outcomes.
 *  - claim_one_SFX(s, l, key, &o): one group alone (no concurrency).
 * A group's state between its actions: */
typedef struct group {
  size_t u;       /* batch index of the copy */
  uint64_t pos;   /* bucket to read next */
  uint64_t tomb;  /* first tombstone of the probe */
  uint64_t g;     /* buckets read */
  uint64_t at;    /* chosen slot */
  uint64_t expect;/* its key word when chosen */
  int swap;       /* 1: the next action is the swap */
} group;

#define SIM(SFX, K, V, KW, VW)                                                                                    \
  /* One action of group gr for key (not a marker value); returns 1 when the                                     \
   * claim is settled (*o, gr->at). */                                                                            \
  static int step_##SFX(tdm__hslot_##SFX *s, unsigned l, K key, group *gr, int *o) {                              \
    uint64_t cap = (uint64_t)1 << l, mask = cap - 1u;                                                             \
    unsigned lanes = tdm__hs_lanes_##SFX() / g_lane_div;                                                          \
    K expect = (K)gr->expect;                                                                                     \
    int st;                                                                                                       \
    if (gr->swap) {                                                                                               \
      K prev = (K)tdm__hash_cas##KW(&s[gr->at].k, expect, key);                                                   \
      *o = tdm__hs_claim_cas_outcome_##SFX(prev, expect, key);                                                    \
      if (*o != TDM_HASH_RETRY) return 1;                                                                         \
      g_retries++;                                                                                                \
      gr->pos = tdm__hs_start_##SFX(key, l);                                                                      \
      gr->tomb = TDM_HASH_NONE;                                                                                   \
      gr->g = 0;                                                                                                  \
      gr->swap = 0;                                                                                               \
      return 0;                                                                                                   \
    }                                                                                                             \
    unsigned eq = 0, em = 0, tm = 0;                                                                              \
    for (unsigned lane = 0; lane < lanes; lane++) { /* the ballots */                                            \
      unsigned e, m, t;                                                                                           \
      tdm__hs_lane_bits_##SFX(s, gr->pos, key, lane, 1, &e, &m, &t);                                              \
      cr_assert_eq((e | m | t) & ~(1u << lane), 0u, "lane %u set another lane's bit", lane);                      \
      eq |= e;                                                                                                    \
      em |= m;                                                                                                    \
      tm |= t;                                                                                                    \
    }                                                                                                             \
    st = tdm__hs_claim_step_##SFX(gr->pos, eq, em, tm, &gr->tomb, &gr->at, &expect);                              \
    gr->pos = (gr->pos + lanes) & mask;                                                                           \
    if (st == TDM_HASH_STEP_ON && ++gr->g == cap / lanes) st = tdm__hs_claim_last_##SFX(gr->tomb, &gr->at, &expect); \
    else if (st == TDM_HASH_STEP_ON) return 0;                                                                    \
    if (st == TDM_HASH_STEP_ON) { /* no free slot */                                                              \
      gr->at = TDM_HASH_NONE;                                                                                     \
      *o = TDM_HASH_FOUND;                                                                                        \
      return 1;                                                                                                   \
    }                                                                                                             \
    if (st == TDM_HASH_STEP_FOUND) {                                                                              \
      *o = TDM_HASH_FOUND;                                                                                        \
      return 1;                                                                                                   \
    }                                                                                                             \
    cr_assert_eq(st, TDM_HASH_STEP_TAKE);                                                                         \
    gr->expect = expect;                                                                                          \
    gr->swap = 1;                                                                                                 \
    return 0;                                                                                                     \
  }                                                                                                               \
                                                                                                                  \
  /* A group alone: the slot and outcome of key's claim (TDM_HASH_NONE: none). */                                \
  static uint64_t claim_one_##SFX(tdm__hslot_##SFX *s, unsigned l, K key, int *o) {                               \
    group gr;                                                                                                     \
    uint64_t start = tdm__hs_start_##SFX(key, l);                                                                 \
    if (start >= ((uint64_t)1 << l)) return tdm__hs_claim_##SFX(s, l, key, start, 1, TDM_HASH_NONE, o);          \
    memset(&gr, 0, sizeof gr);                                                                                    \
    gr.pos = start;                                                                                               \
    gr.tomb = TDM_HASH_NONE;                                                                                      \
    while (!step_##SFX(s, l, key, &gr, o)) {                                                                      \
    }                                                                                                             \
    return gr.at;                                                                                                 \
  }                                                                                                               \
                                                                                                                  \
  static void sim_insert_##SFX(tdm__hslot_##SFX *s, unsigned l, const K *keys, const V *vals, size_t n, int dup,  \
                               int vkind, prop_rng *r, uint64_t cnt[4]) {                                         \
    uint64_t *at = (uint64_t *)malloc((n ? n : 1) * sizeof *at), cap = (uint64_t)1 << l;                          \
    uint32_t *w = (uint32_t *)calloc(cap + 2u, sizeof *w);                                                        \
    int *oc = (int *)malloc((n ? n : 1) * sizeof *oc);                                                            \
    size_t i, next = 0, live = 0, *ord;                                                                           \
    group fl[8];                                                                                                  \
    size_t width = 1 + (size_t)prop_below(r, 8);                                                                  \
    cr_assert(at && w && oc);                                                                                     \
    /* The claims: up to width groups in flight, each advanced in turn at                                        \
     * random; a marker key settles in one action. */                                                            \
    while (next < n || live) {                                                                                    \
      size_t gi;                                                                                                  \
      int o = TDM_HASH_FOUND, done;                                                                               \
      K key;                                                                                                      \
      if (next < n && live < width) {                                                                             \
        memset(&fl[live], 0, sizeof fl[live]);                                                                    \
        fl[live].u = next++;                                                                                      \
        fl[live].pos = tdm__hs_start_##SFX(keys[fl[live].u], l);                                                  \
        fl[live].tomb = TDM_HASH_NONE;                                                                            \
        live++;                                                                                                   \
        continue;                                                                                                 \
      }                                                                                                           \
      gi = (size_t)prop_below(r, live);                                                                           \
      key = keys[fl[gi].u];                                                                                       \
      if (tdm__hs_start_##SFX(key, l) >= cap) { /* a marker key: lane 0 claims its side slot */                  \
        fl[gi].at = tdm__hs_claim_##SFX(s, l, key, tdm__hs_start_##SFX(key, l), 1, TDM_HASH_NONE, &o);            \
        done = 1;                                                                                                 \
      } else {                                                                                                    \
        done = step_##SFX(s, l, key, &fl[gi], &o);                                                                \
      }                                                                                                           \
      if (!done) continue;                                                                                        \
      cr_assert_neq(fl[gi].at, TDM_HASH_NONE, "key %llu found no free slot", (unsigned long long)key);            \
      cr_assert(o == TDM_HASH_FOUND || o == TDM_HASH_NEW_EMPTY || o == TDM_HASH_NEW_TOMB || o == TDM_HASH_NEW_SIDE); \
      cnt[o]++;                                                                                                   \
      if (fl[gi].at < cap && fl[gi].at < tdm__hs_home_##SFX(key, l)) g_wraps++;                                   \
      at[fl[gi].u] = fl[gi].at;                                                                                   \
      oc[fl[gi].u] = o;                                                                                           \
      fl[gi] = fl[--live];                                                                                        \
    }                                                                                                             \
    /* The policy's passes, each over the copies in a random order (the                                          \
     * kernels' atomics land in any order); w[slot] stands for a slot's                                          \
     * election word (the kernels keep it in the slot's value word for                                           \
     * KEEP_LAST, in its claimer's word for KEEP_FIRST), 0 before the batch. */                                  \
    ord = shuffled(n, r);                                                                                         \
    if (dup == TDM__DUP_SUM) {                                                                                    \
      for (i = 0; i < n; i++) s[at[ord[i]]].v = (V)(s[at[ord[i]]].v + vals[ord[i]]);                              \
    } else if (dup == TDM__DUP_MIN || dup == TDM__DUP_MAX) {                                                      \
      for (i = 0; i < n; i++)                                                                                     \
        if (oc[i] != TDM_HASH_FOUND) s[at[i]].v = vals[i];                                                        \
      for (i = 0; i < n; i++)                                                                                     \
        if (oc[ord[i]] == TDM_HASH_FOUND)                                                                         \
          s[at[ord[i]]].v = tdm__hs_combine_##SFX(s[at[ord[i]]].v, vals[ord[i]], dup, vkind);                     \
    } else {                                                                                                      \
      int first = dup == TDM__DUP_KEEP_FIRST;                                                                     \
      for (i = 0; i < n; i++)                                                                                     \
        if (first && oc[i] != TDM_HASH_FOUND) w[at[i]] = 1; /* new in this batch */                              \
      for (i = 0; i < n; i++) {                                                                                   \
        uint32_t b = first ? 0xffffffffu - (uint32_t)ord[i] : (uint32_t)ord[i] + 1u;                              \
        if (first && !w[at[ord[i]]]) continue; /* present before the batch: keeps its value */                   \
        if (b > w[at[ord[i]]]) w[at[ord[i]]] = b;                                                                 \
      }                                                                                                           \
      for (i = 0; i < n; i++)                                                                                     \
        if (w[at[i]] == (first ? 0xffffffffu - (uint32_t)i : (uint32_t)i + 1u)) s[at[i]].v = vals[i];             \
    }                                                                                                             \
    free(ord);                                                                                                    \
    free(at);                                                                                                     \
    free(w);                                                                                                      \
    free(oc);                                                                                                     \
  }                                                                                                               \
                                                                                                                  \
  /* Live keys (side slots included) and tombstones of a table; every free                                       \
   * slot must hold value 0. */                                                                                   \
  static void census_##SFX(const tdm__hslot_##SFX *s, unsigned l, size_t *live, size_t *tombs) {                  \
    uint64_t cap = (uint64_t)1 << l, i;                                                                           \
    *live = (size_t)(s[cap].k != 0) + (size_t)(s[cap + 1].k != 0);                                                \
    *tombs = 0;                                                                                                   \
    for (i = 0; i < cap + 2u; i++) {                                                                              \
      int free_slot = i < cap ? (s[i].k == (K)TDM_HASH_EMPTY || s[i].k == (K)TDM_HASH_TOMB##KW) : !s[i].k;        \
      if (free_slot) cr_assert_eq(s[i].v, (V)0, "free slot %llu holds a value", (unsigned long long)i);          \
      if (i < cap && s[i].k == (K)TDM_HASH_TOMB##KW) ++*tombs;                                                    \
      else if (i < cap && s[i].k != (K)TDM_HASH_EMPTY) ++*live;                                                   \
    }                                                                                                             \
  }
SIM(k32v32, uint32_t, uint32_t, 32, 32)
SIM(k32v64, uint32_t, uint64_t, 32, 64)
SIM(k64v32, uint64_t, uint32_t, 64, 32)
SIM(k64v64, uint64_t, uint64_t, 64, 64)

/* ---- the simulated insert against the CPU backend ---------------------------- */

/* A key pool for a table of 2^l slots: the two marker values, keys whose home
 * is the table's last bucket (their probe runs wrap to slot 0), and others. */
static void make_pool(prop_rng *r, unsigned kw, unsigned l, unsigned group, uint64_t *pool, size_t np, int crowd) {
  uint64_t cap = (uint64_t)1 << l;
  size_t i = 0, j;
  pool[i++] = TDM_HASH_EMPTY;
  if (i < np) pool[i++] = kw == 32 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64;
  while (i < np) {
    uint64_t k = prop_next(r);
    int dupe = 0;
    if (kw == 32) k &= 0xffffffffu;
    if (k == TDM_HASH_EMPTY || k == (kw == 32 ? (uint64_t)TDM_HASH_TOMB32 : TDM_HASH_TOMB64)) continue;
    /* Crowded pools: about half the keys homed in the last bucket. */
    if (crowd && i % 2 && tdm__hash_home(tdm__hash_mix(k), l, group) != cap - group) continue;
    for (j = 0; j < i && !dupe; j++) dupe = pool[j] == k;
    if (!dupe) pool[i++] = k;
  }
}

/* Draws n keys from the pool: uniform, or heavy duplicates (one key most of
 * the time, or a handful). */
static void draw_keys(prop_rng *r, const uint64_t *pool, size_t np, uint64_t *out, size_t n, int heavy) {
  size_t i, hot = (size_t)prop_below(r, np);
  for (i = 0; i < n; i++) {
    if (heavy == 1 && prop_below(r, 8)) out[i] = pool[hot];
    else if (heavy == 2) out[i] = pool[prop_below(r, np < 4 ? np : 4)];
    else out[i] = pool[prop_below(r, np)];
  }
}

static tdm_type value_type(unsigned vw, int kind) {
  if (kind == TDM_KIND_FLOAT) return vw == 32 ? TDM_F32 : TDM_F64;
  if (kind == TDM_KIND_SIGNED) return vw == 32 ? TDM_I32 : TDM_I64;
  return vw == 32 ? TDM_U32 : TDM_U64;
}

/* One case: a table of 2^l slots, batches from a pool, an erase in between,
 * the simulated CUDA insert against the CPU backend after every call. */
#define CASE(SFX, K, V, KW, VW)                                                                                  \
  static void case_##SFX(uint64_t id, unsigned l, int dup, int vkind, int crowd, int heavy, int erase) {         \
    prop_rng r;                                                                                                   \
    uint64_t cap = (uint64_t)1 << l, cnt[4] = {0, 0, 0, 0}, *pool, *tmp;                                          \
    unsigned lanes = tdm__hs_lanes_##SFX();                                                                       \
    /* Keys + tombstones stay below cap (an empty slot must remain): the pool                                    \
     * holds cap - 1 table keys (a full probe run), or cap / 2 - 1 when                                          \
     * erases leave tombstones besides them. */                                                                                \
    size_t np = 2u + (size_t)(erase ? cap / 2u - 1u : cap - 1u), n, i, live0, tombs0, live1, tombs1;                   \
    tdm_type vt = value_type(VW, vkind);                                                                          \
    tdm__hslot_##SFX *s = (tdm__hslot_##SFX *)calloc(cap + 2u, sizeof *s);                                        \
    tdm_ctx *ctx = prop_ctx(TDM_BACKEND_CPU, 1);                                                                  \
    tdm_hash_opts ho;                                                                                             \
    tdm_hash *h = NULL;                                                                                           \
    K *keys, *q;                                                                                                  \
    V *vals, *got;                                                                                                \
    uint8_t *found;                                                                                               \
    prop_rng_init(&r, id);                                                                                        \
    pool = (uint64_t *)malloc(np * sizeof *pool);                                                                 \
    cr_assert(s && pool);                                                                                         \
    make_pool(&r, KW, l, lanes, pool, np, crowd);                                                                 \
    memset(&ho, 0, sizeof ho);                                                                                    \
    ho.key_type = KW == 32 ? TDM_U32 : TDM_U64;                                                                   \
    ho.value_type = vt;                                                                                           \
    ho.on_duplicate = (tdm_dup)dup;                                                                               \
    cr_assert_eq(tdm_hash_create(ctx, &ho, &h), TDM_OK, "%s", tdm_last_error());                                  \
    n = np * 4u;                                                                                                  \
    tmp = (uint64_t *)malloc(n * sizeof *tmp);                                                                    \
    keys = (K *)malloc(n * sizeof *keys);                                                                         \
    vals = (V *)malloc(n * sizeof *vals);                                                                         \
    q = (K *)malloc(np * sizeof *q);                                                                              \
    got = (V *)malloc(np * sizeof *got);                                                                          \
    found = (uint8_t *)malloc(np);                                                                                \
    cr_assert(tmp && keys && vals && q && got && found);                                                          \
    for (i = 0; i < np; i++) q[i] = (K)pool[i];                                                                   \
    for (int call = 0; call < 4; call++) {                                                                        \
      size_t m = 1 + (size_t)prop_below(&r, n);                                                                   \
      if (erase && call == 2) { /* erase a random part of the pool: tombstones */                                 \
        size_t ne = (size_t)prop_below(&r, np), e1 = 0;                                                           \
        draw_keys(&r, pool, np, tmp, ne, 0);                                                                      \
        for (i = 0; i < ne; i++) {                                                                                \
          keys[i] = (K)tmp[i];                                                                                    \
          (void)tdm__hs_erase_##SFX(s, l, keys[i], tdm__hs_start_##SFX(keys[i], l), 1);                           \
        }                                                                                                         \
        cr_assert_eq(tdm_hash_erase(h, keys, ne, &e1), TDM_OK, "%s", tdm_last_error());                           \
      } else {                                                                                                    \
        draw_keys(&r, pool, np, tmp, m, heavy);                                                                   \
        for (i = 0; i < m; i++) keys[i] = (K)tmp[i];                                                              \
        prop_fill(&r, vt, vals, m, prop_below(&r, 2) ? PROP_BOUNDARY : PROP_UNIFORM);                            \
        census_##SFX(s, l, &live0, &tombs0);                                                                      \
        memset(cnt, 0, sizeof cnt);                                                                               \
        sim_insert_##SFX(s, l, keys, vals, m, dup, vkind, &r, cnt);                                               \
        census_##SFX(s, l, &live1, &tombs1);                                                                      \
        if (live1 - (size_t)(s[cap].k != 0) - (size_t)(s[cap + 1].k != 0) + tombs1 == cap - 1u) g_full++;          \
        cr_assert_eq(live1, live0 + cnt[TDM_HASH_NEW_EMPTY] + cnt[TDM_HASH_NEW_TOMB] + cnt[TDM_HASH_NEW_SIDE],    \
                     "case %llu: %zu live keys after, %zu before, outcomes %llu/%llu/%llu",                        \
                     (unsigned long long)id, live1, live0, (unsigned long long)cnt[1], (unsigned long long)cnt[2], \
                     (unsigned long long)cnt[3]);                                                                 \
        cr_assert_eq(tombs1 + cnt[TDM_HASH_NEW_TOMB], tombs0, "case %llu: tombstones %zu -> %zu, %llu taken",      \
                     (unsigned long long)id, tombs0, tombs1, (unsigned long long)cnt[TDM_HASH_NEW_TOMB]);         \
        cr_assert_eq(tdm_hash_insert(h, keys, vals, m), TDM_OK, "%s", tdm_last_error());                          \
      }                                                                                                           \
      census_##SFX(s, l, &live1, &tombs1);                                                                        \
      cr_assert_eq(live1, tdm_hash_size(h), "case %llu call %d: %zu keys, CPU backend %zu",                       \
                   (unsigned long long)id, call, live1, tdm_hash_size(h));                                        \
      cr_assert_eq(tdm_hash_find(h, q, got, found, np), TDM_OK, "%s", tdm_last_error());                          \
      for (i = 0; i < np; i++) {                                                                                  \
        uint64_t at = tdm__hs_lookup_##SFX(s, l, q[i], tdm__hs_start_##SFX(q[i], l), 0);                          \
        V mine = at == TDM_HASH_NONE ? (V)0 : s[at].v;                                                            \
        cr_assert_eq(at != TDM_HASH_NONE, found[i] != 0,                                                          \
                     "case %llu call %d (policy %d, kind %d): key %llu found %d, CPU backend %d",                 \
                     (unsigned long long)id, call, dup, vkind, (unsigned long long)q[i], at != TDM_HASH_NONE,     \
                     found[i]);                                                                                   \
        cr_assert_eq(mine, got[i],                                                                                \
                     "case %llu call %d (policy %d, kind %d, seed %" PRIu64 "): key %llu value %llx, CPU backend %llx", \
                     (unsigned long long)id, call, dup, vkind, prop_seed(), (unsigned long long)q[i],             \
                     (unsigned long long)mine, (unsigned long long)got[i]);                                       \
      }                                                                                                           \
    }                                                                                                             \
    tdm_hash_destroy(h);                                                                                          \
    tdm_ctx_destroy(ctx);                                                                                         \
    free(s);                                                                                                      \
    free(pool);                                                                                                   \
    free(tmp);                                                                                                    \
    free(keys);                                                                                                   \
    free(vals);                                                                                                   \
    free(q);                                                                                                      \
    free(got);                                                                                                    \
    free(found);                                                                                                  \
  }
CASE(k32v32, uint32_t, uint32_t, 32, 32)
CASE(k32v64, uint32_t, uint64_t, 32, 64)
CASE(k64v32, uint64_t, uint32_t, 64, 32)
CASE(k64v64, uint64_t, uint64_t, 64, 64)

Test(hd_claim, insert_matches_cpu_backend) {
  static const int kinds[] = {TDM_KIND_UNSIGNED, TDM_KIND_SIGNED, TDM_KIND_FLOAT};
  uint64_t id = 0;
  for (g_lane_div = 1; g_lane_div <= 2; g_lane_div++) {
    for (int dup = TDM__DUP_KEEP_FIRST; dup <= TDM__DUP_MAX; dup++)
      for (int k = 0; k < 3; k++) {
        if (dup == TDM__DUP_SUM && kinds[k] == TDM_KIND_FLOAT) continue; /* refused by the API */
        for (unsigned l = TDM_HASH_MIN_LOG2; l <= 8; l += 2)
          for (int shape = 0; shape < 6; shape++) {
            int crowd = shape % 2, heavy = shape / 2, erase = (shape + l) % 3 == 0;
            case_k32v32(++id, l, dup, kinds[k], crowd, heavy, erase);
            case_k32v64(++id, l, dup, kinds[k], crowd, heavy, erase);
            case_k64v32(++id, l, dup, kinds[k], crowd, heavy, erase);
            case_k64v64(++id, l, dup, kinds[k], crowd, heavy, erase);
          }
      }
  }
  cr_assert_gt(g_retries, 0, "no simulated group ever lost a swap: the restart path went untested");
  cr_assert_gt(g_wraps, 0, "no claim wrapped past the table's end");
  cr_assert_gt(g_full, 0, "no table was filled to one empty slot");
}

/* ---- one group alone decides as tdm__hs_claim ---------------------------------- */

/* Random tables of every kind of slot, including tables with no empty slot
 * at all (only tombstones and keys, or keys alone: no free slot): for every
 * key of a range and the markers, the lane-group claim on one copy and
 * tdm__hs_claim on another take the same slot with the same outcome and leave
 * the same table. */
#define SAME_CLAIM(SFX, K, KW)                                                                                    \
  static void same_claim_##SFX(prop_rng *r, unsigned l, int fill) {                                               \
    uint64_t cap = (uint64_t)1 << l, i;                                                                           \
    size_t bytes = (cap + 2u) * sizeof(tdm__hslot_##SFX);                                                         \
    tdm__hslot_##SFX *a = (tdm__hslot_##SFX *)calloc(cap + 2u, sizeof *a);                                        \
    tdm__hslot_##SFX *b = (tdm__hslot_##SFX *)malloc(bytes);                                                      \
    K range = (K)(cap * 3u);                                                                                      \
    cr_assert(a && b);                                                                                            \
    for (i = 0; i < cap; i++) { /* fill: 0 sparse, 1 no empty slot, 2 keys only */                                \
      uint64_t d = prop_below(r, 10);                                                                             \
      K k = (K)(1u + prop_below(r, range));                                                                       \
      if (k == (K)TDM_HASH_TOMB##KW) k++;                                                                         \
      if (fill == 0) a[i].k = d < 4 ? (K)TDM_HASH_EMPTY : d < 6 ? (K)TDM_HASH_TOMB##KW : k;                       \
      else if (fill == 1) a[i].k = d < 3 ? (K)TDM_HASH_TOMB##KW : k;                                              \
      else a[i].k = k;                                                                                            \
    }                                                                                                             \
    a[cap].k = (K)prop_below(r, 2);                                                                               \
    for (K key = 0; key < range; key++) {                                                                         \
      K kk = key == range - 1u ? (K)TDM_HASH_TOMB##KW : key;                                                      \
      int o1, o2;                                                                                                 \
      uint64_t p1, p2;                                                                                            \
      memcpy(b, a, bytes);                                                                                        \
      p1 = tdm__hs_claim_##SFX(a, l, kk, tdm__hs_start_##SFX(kk, l), 0, TDM_HASH_NONE, &o1);                      \
      p2 = claim_one_##SFX(b, l, kk, &o2);                                                                        \
      cr_assert_eq(p1, p2, "fill %d, key %llu: tdm__hs_claim slot %llu, lane group %llu", fill,                   \
                   (unsigned long long)kk, (unsigned long long)p1, (unsigned long long)p2);                       \
      if (p1 != TDM_HASH_NONE) cr_assert_eq(o1, o2, "key %llu: outcome %d, lane group %d", (unsigned long long)kk, o1, o2); \
      cr_assert(memcmp(a, b, bytes) == 0, "key %llu: the tables differ after the claim", (unsigned long long)kk); \
      memcpy(a, b, bytes);                                                                                        \
      if (fill == 0 && prop_below(r, 2)) { /* undo, so the table keeps its shape */                               \
        if (p1 < cap && o1 != TDM_HASH_FOUND) a[p1].k = o1 == TDM_HASH_NEW_TOMB ? (K)TDM_HASH_TOMB##KW : (K)TDM_HASH_EMPTY; \
      }                                                                                                           \
    }                                                                                                             \
    free(a);                                                                                                      \
    free(b);                                                                                                      \
  }
SAME_CLAIM(k32v32, uint32_t, 32)
SAME_CLAIM(k32v64, uint32_t, 32)
SAME_CLAIM(k64v32, uint64_t, 64)
SAME_CLAIM(k64v64, uint64_t, 64)

Test(hd_claim, lane_group_claim_decides_as_tdm_hs_claim) {
  prop_rng r;
  prop_rng_init(&r, 1);
  for (g_lane_div = 1; g_lane_div <= 2; g_lane_div++) {
    for (int fill = 0; fill < 3; fill++)
      for (unsigned l = TDM_HASH_MIN_LOG2; l <= 9; l++) {
        same_claim_k32v32(&r, l, fill);
        same_claim_k32v64(&r, l, fill);
        same_claim_k64v32(&r, l, fill);
        same_claim_k64v64(&r, l, fill);
      }
  }
}

/* ---- the pieces ---------------------------------------------------------------- */

Test(hd_claim, unmix_inverts_the_hash) {
  static const uint64_t edge[] = {0,
                                  1,
                                  TDM_HASH_TOMB32,
                                  TDM_HASH_TOMB64,
                                  0xffffffffu,
                                  0x100000000ull,
                                  0x7fffffffffffffffull,
                                  0x8000000000000000ull,
                                  ~(uint64_t)0};
  prop_rng r;
  prop_rng_init(&r, 2);
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    cr_assert_eq(tdm__hash_unmix(tdm__hash_mix(edge[i])), edge[i]);
    cr_assert_eq(tdm__hash_mix(tdm__hash_unmix(edge[i])), edge[i]);
  }
  for (int i = 0; i < 100000; i++) {
    uint64_t x = prop_next(&r);
    cr_assert_eq(tdm__hash_unmix(tdm__hash_mix(x)), x, "unmix(mix(%" PRIx64 "))", x);
    cr_assert_eq(tdm__hash_mix(tdm__hash_unmix(x)), x, "mix(unmix(%" PRIx64 "))", x);
  }
}

Test(hd_claim, cas_outcome) {
  cr_assert_eq(tdm__hs_claim_cas_outcome_k64v32(0, 0, 5), TDM_HASH_NEW_EMPTY);
  cr_assert_eq(tdm__hs_claim_cas_outcome_k64v32(TDM_HASH_TOMB64, TDM_HASH_TOMB64, 5), TDM_HASH_NEW_TOMB);
  cr_assert_eq(tdm__hs_claim_cas_outcome_k64v32(5, 0, 5), TDM_HASH_FOUND);
  cr_assert_eq(tdm__hs_claim_cas_outcome_k64v32(6, 0, 5), TDM_HASH_RETRY);
  cr_assert_eq(tdm__hs_claim_cas_outcome_k64v32(6, TDM_HASH_TOMB64, 5), TDM_HASH_RETRY);
}
