/*
 * test_hd_btree_lanes.c: the lane-group node search of the CUDA B-tree search,
 * simulated on the CPU (one loop iteration per lane, ballots as bit counts),
 * against tdm__bt_lower on random sorted nodes with padding, for groups of
 * 8 and 16 lanes and queries on, between and outside the keys; then the whole
 * lane-group search as the CUDA kernels run it (compact separator array, children,
 * ranks and leaf sizes from the geometry) against tdm__bt_descend and against
 * the CPU backend's find, rank and range_count, and the choice between that
 * search and the descent through child arrays.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "prop.h"
#include "tandem/detail/btree_lanes.h"
#include "tandem/tandem.h"

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

static uint32_t simulate(const uint64_t *key, uint64_t q, uint32_t lanes) {
  uint32_t b0 = 0, b1 = 0, lane;
  for (lane = 0; lane < lanes; lane++) {
    uint32_t c = tdm__bt_lane_lower(key, q, lane, lanes);
    b0 += c & 1u; /* popc of the ballot of bit 0 */
    b1 += (c >> 1) & 1u;
  }
  return tdm__bt_lanes_combine(b0, b1);
}

Test(hd_btree_lanes, group_count_equals_single_thread_lower_bound) {
  uint64_t s = 42, key[16];
  for (int trial = 0; trial < 2000; trial++) {
    uint32_t count = 1 + (uint32_t)(next(&s) % 16), i;
    uint64_t spread = trial % 3 == 0 ? 4 : (uint64_t)1 << 40;
    key[0] = next(&s) % spread;
    for (i = 1; i < count; i++) key[i] = key[i - 1] + 1 + next(&s) % spread;
    if (trial % 7 == 0) key[count - 1] = TDM_BT_PAD; /* all-ones key stored */
    for (; i < 16; i++) key[i] = TDM_BT_PAD;
    uint64_t qs[8] = {0, key[0], key[0] + 1, key[count / 2], key[count - 1],
                      key[count - 1] - 1, TDM_BT_PAD, next(&s)};
    for (int k = 0; k < 8; k++) {
      uint32_t want = tdm__bt_lower(key, qs[k]);
      cr_assert_eq(simulate(key, qs[k], 8), want, "8 lanes, trial %d query %d", trial, k);
      cr_assert_eq(simulate(key, qs[k], 16), want, "16 lanes, trial %d query %d", trial, k);
    }
  }
}

/* The two-sector search of a node (btree_lanes.h, "two sectors per node")
 * as lanes 0..3 of a group run it: the summary's ballot, then the chosen
 * sector's; *at receives the word at the slot (unset for slot 16). */
static uint32_t simulate_two(const uint64_t *sum, const uint64_t *key, uint64_t q, uint64_t *at) {
  uint32_t s = 0, c = 0, lane;
  for (lane = 0; lane < 4; lane++) s += sum[lane] < q;
  if (s >= 4) return tdm__bt_two_step(s, 0);
  for (lane = 0; lane < 4; lane++) c += key[4 * s + lane] < q;
  *at = key[4 * s + c];
  return tdm__bt_two_step(s, c);
}

Test(hd_btree_lanes, two_sectors_equal_single_thread_lower_bound) {
  uint64_t s = 7, key[16], sum[4], at;
  for (int trial = 0; trial < 2000; trial++) {
    uint32_t count = 1 + (uint32_t)(next(&s) % 16), i;
    uint64_t spread = trial % 3 == 0 ? 4 : (uint64_t)1 << 40;
    key[0] = next(&s) % spread;
    for (i = 1; i < count; i++) key[i] = key[i - 1] + 1 + next(&s) % spread;
    if (trial % 7 == 0) key[count - 1] = TDM_BT_PAD;
    for (; i < 16; i++) key[i] = TDM_BT_PAD;
    for (i = 0; i < 4; i++) sum[i] = tdm__bt_sum_of(key, i);
    uint64_t qs[8] = {0, key[0], key[0] + 1, key[count / 2], key[count - 1], key[count - 1] - 1, TDM_BT_PAD, next(&s)};
    for (int k = 0; k < 8; k++) {
      uint32_t want = tdm__bt_lower(key, qs[k]), got = simulate_two(sum, key, qs[k], &at);
      cr_assert_eq(got, want, "trial %d query %d", trial, k);
      if (got < 16) cr_assert_eq(at, key[got], "trial %d query %d: the word at the slot", trial, k);
    }
  }
}

/* The lane-group search of one query, as the kernels run it: keys-only descent
 * through the search array, children from the geometry, each node searched
 * by a simulated group of `lanes` over its 16 words (0: by two sectors, the
 * kernels' global levels and leaves). Returns the leaf (level 0 index). */
static uint64_t sim_leaf(const tdm__bt_node *nodes, const uint64_t *seps, const tdm__bt_lgeom *lg, uint64_t q,
                         uint32_t lanes, uint32_t *pos) {
  uint32_t n = 0, l;
  uint64_t at = 0;
  for (l = lg->h - 1; l > 0; l--) {
    const uint64_t *key = seps + tdm__bt_lg_sep(lg, l, n);
    uint32_t c = lanes ? simulate(key, q, lanes) : simulate_two(seps + tdm__bt_lg_sum(lg, l, n), key, q, &at);
    n = tdm__bt_lg_child(lg, l, n, c);
  }
  *pos = lanes ? simulate(nodes[n].key, q, lanes) : simulate_two(seps + tdm__bt_lg_sum(lg, 0, n), nodes[n].key, q, &at);
  if (!lanes && *pos < 16) cr_assert_eq(at, nodes[n].key[*pos], "the two-sector search's word at the slot");
  return n;
}
static int sim_hit(const tdm__bt_node *nodes, const tdm__bt_lgeom *lg, uint64_t leaf, uint32_t pos, uint64_t q) {
  return tdm__bt_lg_leaf_hit(nodes[leaf].key, pos, tdm__bt_lg_leaf_count(lg, leaf), q);
}

/* The search array (separators, summaries) of a bulk-layout node array. */
static uint64_t *make_seps(const tdm__bt_node *nodes, const tdm__bt_geom *g) {
  uint64_t w = tdm__bt_search_words(g), j;
  uint64_t *seps = malloc(w * 8 + 8);
  cr_assert(seps);
  for (j = 0; j < w; j++) seps[j] = tdm__bt_search_word(nodes, g, j);
  return seps;
}

/* Bulk-builds a tree of m keys of one type (ks bytes, kind) and checks that
 * the keys-only, lane-group descent over the compact separator array, with
 * child, rank and leaf size from the geometry, lands on the same leaf, slot,
 * rank and hit as tdm__bt_descend. */
static void check_tree(uint64_t m, uint32_t ks, int kind, uint64_t seed) {
  uint64_t *bits = malloc(m * sizeof *bits), i, s = seed;
  void *raw = malloc(m * ks);
  tdm__bt_geom g, g2;
  tdm__bt_lgeom lg;
  tdm__bt_geom_init(&g, m);
  tdm__bt_lgeom_init(&lg, &g);
  tdm__bt_node *nodes = malloc(g.nodes * sizeof *nodes);
  cr_assert(bits && raw && nodes);
  /* Strictly increasing bits inside the type's range; floats keep away from
   * the NaN patterns at both ends. */
  uint64_t lo = kind == TDM_KIND_FLOAT ? (ks == 4 ? 0x00800000u : 0x0010000000000000ull) : 0;
  uint64_t span = ks == 4 ? 0x7f000000ull : 0x7fe0000000000000ull;
  uint64_t step = span / (m + 1);
  bits[0] = lo + next(&s) % (step ? step : 1);
  for (i = 1; i < m; i++) bits[i] = bits[i - 1] + 1 + next(&s) % (step ? step : 1);
  if (kind != TDM_KIND_FLOAT && m > 2) { /* the type's smallest and largest keys */
    bits[0] = 0;
    bits[m - 1] = ks == 4 ? 0xffffffffull : TDM_BT_PAD;
  }
  for (i = 0; i < m; i++) tdm__bt_store_key(raw, i, bits[i], ks, kind);
  for (i = 0; i < m; i++) cr_assert_eq(tdm__bt_key_bits(raw, i, ks, kind), bits[i]);
  for (i = 0; i < g.cnt[0]; i++) tdm__bt_fill_leaf(nodes, &g, raw, NULL, ks, 8, kind, i);
  for (uint32_t l = 1; l < g.h; l++)
    for (i = 0; i < g.cnt[l]; i++) tdm__bt_fill_inner(nodes, &g, raw, ks, kind, l, i);
  uint32_t root = g.base[g.h - 1];
  uint64_t *seps = make_seps(nodes, &g);
  /* What a CUDA tree's install step records: the layout is the bulk layout,
   * so the kernels take the lane-group search. */
  cr_assert(tdm__bt_is_bulk_layout(nodes, g.nodes, m, root, g.h, &g2), "m %llu: not the bulk layout",
            (unsigned long long)m);
  cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root, g.h, seps), TDM__BT_SEARCH_LANES);
  /* The quotient/remainder geometry equals the division form everywhere. */
  for (uint32_t l = 1; l < g.h; l++)
    for (i = 0; i < g.cnt[l]; i++)
      for (uint32_t c = 0; c < 16; c++)
        cr_assert_eq(tdm__bt_lg_child(&lg, l, (uint32_t)i, c), tdm__bt_geom_child(&g, l, i, c));
  for (i = 0; i <= g.cnt[0]; i++) cr_assert_eq(tdm__bt_lg_leaf_start(&lg, i), tdm__bt_geom_rank(&g, i, 0));
  for (i = 0; i < g.cnt[0]; i++) cr_assert_eq(tdm__bt_lg_leaf_count(&lg, i), nodes[g.base[0] + i].count);
  for (uint64_t t = 0; t < 3 * m + 20; t++) {
    uint64_t q = t % 3 == 0 ? bits[next(&s) % m] : t % 3 == 1 ? bits[next(&s) % m] + 1 : next(&s);
    if (ks == 4) q &= 0xffffffffull;
    if (t == 0) q = 0;
    if (t == 1) q = ks == 4 ? 0xffffffffull : TDM_BT_PAD;
    if (t == 2) q = bits[m - 1];
    uint32_t leaf, pos, lanes = t % 3 == 0 ? 0 : t % 3 == 1 ? 8 : 16;
    uint64_t want = tdm__bt_descend(nodes, root, g.h, q, &leaf, &pos);
    uint32_t p;
    uint64_t n = sim_leaf(nodes, seps, &lg, q, lanes, &p);
    cr_assert_eq(g.base[0] + n, leaf, "m %llu ks %u kind %d: leaf", (unsigned long long)m, ks, kind);
    cr_assert_eq(p, pos);
    cr_assert_eq(tdm__bt_geom_rank(&g, n, p), want);
    cr_assert_eq(tdm__bt_lg_leaf_start(&lg, n) + p, want);
    cr_assert_eq(sim_hit(nodes, &lg, n, p, q), tdm__bt_leaf_hit(&nodes[leaf], pos, q), "m %llu: hit of %llx",
                 (unsigned long long)m, (unsigned long long)q);
  }
  free(bits), free(raw), free(nodes), free(seps);
}

Test(hd_btree_lanes, keys_only_geometry_descent_matches_descend) {
  static const uint64_t sizes[] = {1, 2, 14, 15, 16, 17, 224, 225, 3585, 100000};
  static const struct { uint32_t ks; int kind; } types[] = {
      {4, TDM_KIND_UNSIGNED}, {8, TDM_KIND_UNSIGNED}, {4, TDM_KIND_SIGNED},
      {8, TDM_KIND_SIGNED},   {4, TDM_KIND_FLOAT},    {8, TDM_KIND_FLOAT}};
  for (unsigned z = 0; z < sizeof sizes / sizeof *sizes; z++)
    for (unsigned k = 0; k < 6; k++) check_tree(sizes[z], types[k].ks, types[k].kind, 1000 + z * 7 + k);
}

/* ---- against the CPU backend ------------------------------------------------ */

static const tdm_type ALL_TYPES[6] = {TDM_U32, TDM_U64, TDM_I32, TDM_I64, TDM_F32, TDM_F64};

typedef struct answers {
  uint8_t *found;
  void *vals;
  uint64_t *rank, *count;
} answers;

static void answers_alloc(answers *a, size_t n) {
  a->found = malloc(n + 1);
  a->vals = malloc(n * 8 + 8);
  a->rank = malloc(n * 8 + 8);
  a->count = malloc(n * 8 + 8);
  cr_assert(a->found && a->vals && a->rank && a->count);
}
static void answers_free(answers *a) { free(a->found), free(a->vals), free(a->rank), free(a->count); }

/* The answers the CUDA backend computes for a tree whose view is v: the
 * lane-group search when tdm__bt_search_plan picks it, else the descent
 * through the child arrays (tdm__bt_descend, the descent kernels' code).
 * Returns the plan. */
static int device_answers(const tdm_btree_view *v, int bulk, const void *lo, const void *hi, size_t n, answers *out) {
  const tdm__bt_node *nodes = (const tdm__bt_node *)v->nodes;
  tdm__bt_geom g;
  tdm__bt_lgeom lg;
  uint64_t *seps = NULL;
  size_t i;
  int plan;
  memset(&g, 0, sizeof g);
  if (v->size) tdm__bt_geom_init(&g, v->size);
  if (bulk) seps = make_seps(nodes, &g);
  plan = tdm__bt_search_plan(&g, bulk, v->size, v->root, v->height, seps);
  if (plan == TDM__BT_SEARCH_LANES) tdm__bt_lgeom_init(&lg, &g);
  for (i = 0; i < n; i++) {
    uint64_t a = tdm__bt_key_bits(lo, i, v->key_bytes, v->key_kind);
    uint64_t b = tdm__bt_key_bits(hi, i, v->key_bytes, v->key_kind);
    uint64_t ra = 0, rb = 0, val = 0;
    int hit = 0, hitb = 0;
    if (v->size && plan == TDM__BT_SEARCH_LANES) {
      uint32_t lanes = i % 3 == 0 ? 0 : i % 3 == 1 ? 8 : 16, p;
      uint64_t leaf = sim_leaf(nodes, seps, &lg, a, lanes, &p);
      hit = sim_hit(nodes, &lg, leaf, p, a);
      val = hit ? nodes[leaf].u.val[p] : 0;
      ra = tdm__bt_lg_leaf_start(&lg, leaf) + p;
      leaf = sim_leaf(nodes, seps, &lg, b, lanes, &p);
      rb = tdm__bt_lg_leaf_start(&lg, leaf) + p;
      hitb = sim_hit(nodes, &lg, leaf, p, b);
    } else if (v->size) {
      uint32_t leaf, p;
      ra = tdm__bt_descend(nodes, v->root, v->height, a, &leaf, &p);
      hit = tdm__bt_leaf_hit(&nodes[leaf], p, a);
      val = hit ? nodes[leaf].u.val[p] : 0;
      rb = tdm__bt_descend(nodes, v->root, v->height, b, &leaf, &p);
      hitb = tdm__bt_leaf_hit(&nodes[leaf], p, b);
    }
    out->found[i] = (uint8_t)hit;
    tdm__bt_store_val(out->vals, i, val, v->value_bytes);
    out->rank[i] = ra;
    out->count[i] = a <= b ? rb + (uint64_t)hitb - ra : 0;
  }
  free(seps);
  return plan;
}

static void cpu_answers(const tdm_btree *t, const void *lo, const void *hi, size_t n, answers *out) {
  cr_assert_eq(tdm_btree_find(t, lo, out->vals, out->found, n), TDM_OK);
  cr_assert_eq(tdm_btree_rank(t, lo, out->rank, n), TDM_OK);
  cr_assert_eq(tdm_btree_range_count(t, lo, hi, out->count, n), TDM_OK);
}

static void same_answers(const answers *want, const answers *got, size_t n, uint32_t vs, const char *what) {
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(got->found[i], want->found[i], "%s: found[%zu]", what, i);
    cr_assert(memcmp((const char *)got->vals + i * vs, (const char *)want->vals + i * vs, vs) == 0,
              "%s: value[%zu]", what, i);
    cr_assert_eq(got->rank[i], want->rank[i], "%s: rank[%zu]", what, i);
    cr_assert_eq(got->count[i], want->count[i], "%s: count[%zu]", what, i);
  }
}

/* Keys with duplicates and the type's extreme values: uniform keys, every
 * seventh a copy of an earlier one, every eleventh a boundary value (MIN,
 * MAX, 0, -0.0, infinities, NaN, ...). */
static void make_keys(prop_rng *r, tdm_type t, size_t es, char *k, size_t n) {
  char bnd[64 * 8];
  prop_fill(r, t, k, n, PROP_UNIFORM);
  prop_fill(r, t, bnd, 64, PROP_BOUNDARY);
  for (size_t i = 1; i < n; i++) {
    if (i % 7 == 0) memcpy(k + i * es, k + prop_below(r, i) * es, es);
    else if (i % 11 == 0) memcpy(k + i * es, bnd + prop_below(r, 64) * es, es);
  }
}

/* CPU-backend trees of many sizes and every key type, with duplicates and
 * MIN / MAX keys: right after a build the tree is the bulk layout, and the
 * lane-group search gives exactly the CPU's find values, hits, ranks and range counts;
 * after an insert and an erase batch (which the CPU applies in place) the
 * geometry no longer describes the tree, the plan falls back to the descent,
 * and the answers are still the CPU's. */
Test(hd_btree_lanes, lane_search_equals_cpu_backend_and_falls_back_off_the_bulk_layout) {
  static const size_t sizes[] = {1, 2, 14, 15, 16, 17, 224, 225, 3585, 100000};
  tdm_ctx *c = prop_ctx(TDM_BACKEND_CPU, 2);
  size_t fallbacks = 0, after_update_lanes = 0;
  prop_rng r;
  prop_rng_init(&r, 0xB7A9E5);
  for (unsigned ti = 0; ti < 6; ti++) {
    tdm_type kt = ALL_TYPES[ti], vt = ALL_TYPES[(ti + 3) % 6];
    size_t es = (kt == TDM_U32 || kt == TDM_I32 || kt == TDM_F32) ? 4 : 8;
    size_t vsz = (vt == TDM_U32 || vt == TDM_I32 || vt == TDM_F32) ? 4 : 8;
    for (unsigned z = 0; z < sizeof sizes / sizeof *sizes; z++) {
      size_t n = sizes[z], nq = 2 * n + 64, nb = n / 2 + 1;
      char *k = malloc(n * es), *v = malloc(n * vsz), *lo = malloc(nq * es), *hi = malloc(nq * es);
      char *bk = malloc(nb * es), *bv = malloc(nb * vsz);
      answers want, got;
      tdm_btree *t = NULL;
      tdm_btree_opts o = {kt, vt, TDM_DUP_KEEP_LAST};
      tdm_btree_view view;
      tdm__bt_geom g;
      char what[96];
      cr_assert(k && v && lo && hi && bk && bv);
      answers_alloc(&want, nq);
      answers_alloc(&got, nq);
      make_keys(&r, kt, es, k, n);
      prop_fill(&r, vt, v, n, PROP_UNIFORM);
      /* Queries: the stored keys, random and boundary keys; the range ends
       * pair them up at random (so some ranges are empty, some lo > hi, and
       * the first one is [MIN, MAX] when the boundary fill gives those). */
      memcpy(lo, k, n * es);
      prop_fill(&r, kt, lo + n * es, n, PROP_UNIFORM);
      prop_fill(&r, kt, lo + 2 * n * es, 64, PROP_BOUNDARY);
      for (size_t i = 0; i < nq; i++) memcpy(hi + i * es, lo + prop_below(&r, nq) * es, es);
      cr_assert_eq(tdm_btree_build(c, &o, k, v, n, &t), TDM_OK);
      cr_assert_eq(tdm_btree_view_get(t, &view), TDM_OK);
      snprintf(what, sizeof what, "%s n %zu after build", tdm_type_name(kt), n);
      cr_assert(tdm__bt_is_bulk_layout((const tdm__bt_node *)view.nodes, (uint64_t)view.root + 1, view.size,
                                       view.root, view.height, &g),
                "%s: not the bulk layout", what);
      cpu_answers(t, lo, hi, nq, &want);
      cr_assert_eq(device_answers(&view, 1, lo, hi, nq, &got), TDM__BT_SEARCH_LANES, "%s", what);
      same_answers(&want, &got, nq, (uint32_t)vsz, what);

      /* In-place updates. */
      make_keys(&r, kt, es, bk, nb);
      prop_fill(&r, vt, bv, nb, PROP_UNIFORM);
      cr_assert_eq(tdm_btree_insert(t, bk, bv, nb), TDM_OK);
      cr_assert_eq(tdm_btree_erase(t, lo + n * es, n / 3 + 1, NULL), TDM_OK);
      cr_assert_eq(tdm_btree_view_get(t, &view), TDM_OK);
      snprintf(what, sizeof what, "%s n %zu after insert and erase", tdm_type_name(kt), n);
      int bulk = view.size > 0 && tdm__bt_is_bulk_layout((const tdm__bt_node *)view.nodes,
                                                         (uint64_t)view.root + 1, view.size, view.root,
                                                         view.height, &g);
      cpu_answers(t, lo, hi, nq, &want);
      int plan = device_answers(&view, bulk, lo, hi, nq, &got);
      cr_assert_eq(plan, bulk ? TDM__BT_SEARCH_LANES : TDM__BT_SEARCH_DESCEND, "%s", what);
      if (plan == TDM__BT_SEARCH_DESCEND) fallbacks++;
      else after_update_lanes++;
      same_answers(&want, &got, nq, (uint32_t)vsz, what);
      tdm_btree_destroy(t);
      answers_free(&want), answers_free(&got);
      free(k), free(v), free(lo), free(hi), free(bk), free(bv);
    }
  }
  /* The updates changed the shape of most trees: the fallback was taken. */
  cr_assert_gt(fallbacks, 30u, "fallbacks %zu, lane search after updates %zu", fallbacks, after_update_lanes);
  tdm_ctx_destroy(c);
}

/* The plan refuses the lane-group search whenever the geometry and the tree
 * disagree in any way the header shows, or the nodes were not written from
 * the geometry. */
Test(hd_btree_lanes, search_plan_refuses_anything_but_the_bulk_layout) {
  static const uint64_t sizes[] = {1, 2, 14, 17, 225, 3585, 100000};
  uint64_t dummy = 0;
  for (unsigned z = 0; z < sizeof sizes / sizeof *sizes; z++) {
    uint64_t m = sizes[z];
    tdm__bt_geom g;
    tdm__bt_geom_init(&g, m);
    uint32_t root = (uint32_t)(g.nodes - 1), h = g.h;
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root, h, &dummy), TDM__BT_SEARCH_LANES);
    /* Every tree's search array holds its nodes' summaries, a single leaf's too. */
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root, h, NULL), TDM__BT_SEARCH_DESCEND);
    cr_assert_eq(tdm__bt_search_plan(&g, 0, m, root, h, &dummy), TDM__BT_SEARCH_DESCEND);
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m + 1, root, h, &dummy), TDM__BT_SEARCH_DESCEND);
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m - 1, root, h, &dummy), TDM__BT_SEARCH_DESCEND);
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root + 1, h, &dummy), TDM__BT_SEARCH_DESCEND);
    cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root, h + 1, &dummy), TDM__BT_SEARCH_DESCEND);
    if (root > 0) cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root - 1, h, &dummy), TDM__BT_SEARCH_DESCEND);
    if (h > 1) {
      cr_assert_eq(tdm__bt_search_plan(&g, 1, m, root, h - 1, &dummy), TDM__BT_SEARCH_DESCEND);
    }
  }
}
