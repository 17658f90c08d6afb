/* btree.c: a textbook B-tree as a tandem-judge candidate (kind "ordered").
 *
 * An ordered map from uint64_t keys to uint64_t values. Every node but the
 * root holds between T - 1 and 2T - 1 keys; all leaves are at the same
 * depth. Insertion is the one-pass, top-down algorithm of Cormen et al.: a
 * full node is split before the descent enters it, so there is always room
 * below. Deletion works bottom-up: the key is removed from its leaf (a key in
 * an inner node is first replaced by its predecessor), and every node left
 * with fewer than T - 1 keys on the way back up borrows a key from a sibling
 * or is merged with one. rank and range_count walk the tree and count.
 *
 *   tandem-judge ordered ./libjudge_btree.so
 *
 * T = 2 (a 2-3-4 tree) makes splits and merges happen with a handful of
 * keys, which is what a checker wants to reach (and what keeps its shrunk
 * programs short); any T >= 2 works: define JUDGE_BTREE_T before including
 * this file for another node size.
 */
#include <stdlib.h>
#include <string.h>

#include <tandem/judge.h>

#ifdef JUDGE_BTREE_T
#define T JUDGE_BTREE_T
#else
#define T 2
#endif
#define MAX_KEYS (2 * T - 1)

typedef struct node {
  int n;    /* keys in use */
  int leaf; /* 1: no children */
  uint64_t keys[MAX_KEYS];
  uint64_t vals[MAX_KEYS];
  struct node *child[MAX_KEYS + 1];
} node;

typedef struct btree {
  node *root;
  size_t size;
} btree;

static node *new_node(int leaf) {
  node *x = calloc(1, sizeof *x);
  if (x) x->leaf = leaf;
  return x;
}

static void free_node(node *x) {
  int i;
  if (!x) return;
  if (!x->leaf)
    for (i = 0; i <= x->n; i++) free_node(x->child[i]);
  free(x);
}

void *judge_map_create(void) { return calloc(1, sizeof(btree)); }

void judge_map_destroy(void *m) {
  btree *t = m;
  if (!t) return;
  free_node(t->root);
  free(t);
}

/* First position i with keys[i] >= key (n when none). */
static int lower(const node *x, uint64_t key) {
  int i = 0;
  while (i < x->n && x->keys[i] < key) i++;
  return i;
}

static node *search(node *x, uint64_t key, int *pos) {
  while (x) {
    int i = lower(x, key);
    if (i < x->n && x->keys[i] == key) {
      *pos = i;
      return x;
    }
    x = x->leaf ? NULL : x->child[i];
  }
  return NULL;
}

int judge_map_find(void *m, uint64_t key, uint64_t *value) {
  btree *t = m;
  int i;
  node *x = search(t->root, key, &i);
  if (!x) return 0;
  *value = x->vals[i];
  return 1;
}

void judge_map_find_bulk(void *m, const uint64_t *keys, uint64_t *values_out, uint8_t *found_out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) found_out[i] = (uint8_t)judge_map_find(m, keys[i], &values_out[i]);
}

size_t judge_map_size(void *m) { return ((btree *)m)->size; }

/* ---- insertion ---------------------------------------------------------------- */

/* x->child[i] is full: split it around its middle key, which moves up into x. */
static int split_child(node *x, int i) {
  node *y = x->child[i], *z = new_node(y->leaf);
  int j;
  if (!z) return 0;
  z->n = T - 1;
  for (j = 0; j < T - 1; j++) {
    z->keys[j] = y->keys[j + T];
    z->vals[j] = y->vals[j + T];
  }
  if (!y->leaf)
    for (j = 0; j < T; j++) z->child[j] = y->child[j + T];
  y->n = T - 1;
  for (j = x->n; j > i; j--) x->child[j + 1] = x->child[j];
  x->child[i + 1] = z;
  for (j = x->n - 1; j >= i; j--) {
    x->keys[j + 1] = x->keys[j];
    x->vals[j + 1] = x->vals[j];
  }
#ifdef JUDGE_BUG_SPLIT_LOSES_MIDDLE
  /* BUG (btree_split_bug.c): the right half's first key goes up as the
   * separator, a B+ tree habit, so the middle key is lost. */
  x->keys[i] = z->keys[0];
  x->vals[i] = z->vals[0];
#else
  x->keys[i] = y->keys[T - 1];
  x->vals[i] = y->vals[T - 1];
#endif
  x->n++;
  return 1;
}

/* x is not full. */
static int insert_nonfull(node *x, uint64_t key, uint64_t value) {
  for (;;) {
    int i = lower(x, key), j;
    if (x->leaf) {
      for (j = x->n; j > i; j--) {
        x->keys[j] = x->keys[j - 1];
        x->vals[j] = x->vals[j - 1];
      }
      x->keys[i] = key;
      x->vals[i] = value;
      x->n++;
      return 1;
    }
    if (x->child[i]->n == MAX_KEYS) {
      if (!split_child(x, i)) return 0;
      if (key > x->keys[i]) i++;
    }
    x = x->child[i];
  }
}

int judge_map_insert(void *m, uint64_t key, uint64_t value) {
  btree *t = m;
  int i;
  node *x = search(t->root, key, &i);
  if (x) {
    x->vals[i] = value;
    return 0;
  }
  if (!t->root) {
    t->root = new_node(1);
    if (!t->root) abort();
  }
  if (t->root->n == MAX_KEYS) {
    node *s = new_node(0);
    if (!s) abort();
    s->child[0] = t->root;
    t->root = s;
    if (!split_child(s, 0)) abort();
  }
  if (!insert_nonfull(t->root, key, value)) abort();
  t->size++;
  return 1;
}

/* ---- deletion ----------------------------------------------------------------- */

static void remove_at(node *x, int i) {
  for (; i + 1 < x->n; i++) {
    x->keys[i] = x->keys[i + 1];
    x->vals[i] = x->vals[i + 1];
  }
  x->n--;
}

/* Moves the separator keys[i - 1] down into child[i] and the left sibling's
 * last key up in its place. */
static void borrow_from_left(node *x, int i) {
  node *c = x->child[i], *l = x->child[i - 1];
  int j;
#ifdef JUDGE_BUG_BORROW_LEFT
  /* BUG (judge/tests/btree255_borrow_bug.c): the shift starts one short, so the
   * child's last key is overwritten and a stale slot becomes live. */
  for (j = c->n - 1; j > 0; j--) {
#else
  for (j = c->n; j > 0; j--) {
#endif
    c->keys[j] = c->keys[j - 1];
    c->vals[j] = c->vals[j - 1];
  }
  if (!c->leaf)
    for (j = c->n + 1; j > 0; j--) c->child[j] = c->child[j - 1];
  c->keys[0] = x->keys[i - 1];
  c->vals[0] = x->vals[i - 1];
  if (!c->leaf) c->child[0] = l->child[l->n];
  c->n++;
  x->keys[i - 1] = l->keys[l->n - 1];
  x->vals[i - 1] = l->vals[l->n - 1];
  l->n--;
}

/* The mirror image: separator keys[i] down, the right sibling's first key up. */
static void borrow_from_right(node *x, int i) {
  node *c = x->child[i], *r = x->child[i + 1];
  int j;
  c->keys[c->n] = x->keys[i];
  c->vals[c->n] = x->vals[i];
  if (!c->leaf) c->child[c->n + 1] = r->child[0];
  c->n++;
  x->keys[i] = r->keys[0];
  x->vals[i] = r->vals[0];
  for (j = 0; j + 1 < r->n; j++) {
    r->keys[j] = r->keys[j + 1];
    r->vals[j] = r->vals[j + 1];
  }
  if (!r->leaf)
    for (j = 0; j < r->n; j++) r->child[j] = r->child[j + 1];
  r->n--;
}

/* child[i], the separator keys[i] and child[i + 1] become one node. */
static void merge(node *x, int i) {
  node *l = x->child[i], *r = x->child[i + 1];
  int j;
  l->keys[l->n] = x->keys[i];
  l->vals[l->n] = x->vals[i];
  for (j = 0; j < r->n; j++) {
    l->keys[l->n + 1 + j] = r->keys[j];
    l->vals[l->n + 1 + j] = r->vals[j];
  }
  if (!l->leaf)
    for (j = 0; j <= r->n; j++) l->child[l->n + 1 + j] = r->child[j];
  l->n += 1 + r->n;
  remove_at(x, i);
  for (j = i + 1; j <= x->n; j++) x->child[j] = x->child[j + 1];
  free(r);
}

/* Restores the minimum fill of x->child[i] after a deletion below it. */
static void fix_child(node *x, int i) {
#ifdef JUDGE_BUG_NO_REBALANCE
  /* BUG (btree_no_rebalance.c): an under-full child is left as it is, with
   * no borrow and no merge, so a node may end up with no keys at all. */
  (void)x;
  (void)i;
  return;
#endif
  if (x->child[i]->n >= T - 1) return;
  if (i > 0 && x->child[i - 1]->n > T - 1) borrow_from_left(x, i);
  else if (i < x->n && x->child[i + 1]->n > T - 1) borrow_from_right(x, i);
  else if (i > 0) merge(x, i - 1);
  else merge(x, i);
}

/* Removes the largest key of the subtree at x into *key, *value. */
static void take_max(node *x, uint64_t *key, uint64_t *value) {
  if (x->leaf) {
    x->n--;
    *key = x->keys[x->n];
    *value = x->vals[x->n];
    return;
  }
  take_max(x->child[x->n], key, value);
  fix_child(x, x->n);
}

static int delete_key(node *x, uint64_t key) {
  int i = lower(x, key), found;
  if (i < x->n && x->keys[i] == key) {
    if (x->leaf) {
      remove_at(x, i);
      return 1;
    }
    take_max(x->child[i], &x->keys[i], &x->vals[i]);
    fix_child(x, i);
    return 1;
  }
  if (x->leaf) return 0;
  found = delete_key(x->child[i], key);
  fix_child(x, i);
  return found;
}

int judge_map_erase(void *m, uint64_t key) {
  btree *t = m;
  if (!t->root || !delete_key(t->root, key)) return 0;
  t->size--;
  /* An inner root left without keys gives way to its only child. */
  if (t->root->n == 0) {
    node *old = t->root;
    t->root = old->leaf ? NULL : old->child[0];
    free(old);
  }
  return 1;
}

/* ---- counting ----------------------------------------------------------------- */

static uint64_t count_all(const node *x) {
  uint64_t c;
  int i;
  if (!x) return 0;
  c = (uint64_t)x->n;
  if (!x->leaf)
    for (i = 0; i <= x->n; i++) c += count_all(x->child[i]);
  return c;
}

/* Keys < key, or <= key when inclusive. */
static uint64_t count_below(const node *x, uint64_t key, int inclusive) {
  uint64_t c = 0;
  int i = 0;
  if (!x) return 0;
  while (i < x->n && (x->keys[i] < key || (inclusive && x->keys[i] == key))) {
    c += 1 + (x->leaf ? 0 : count_all(x->child[i]));
    i++;
  }
  if (!x->leaf) c += count_below(x->child[i], key, inclusive);
  return c;
}

uint64_t judge_map_rank(void *m, uint64_t key) { return count_below(((btree *)m)->root, key, 0); }

uint64_t judge_map_range_count(void *m, uint64_t lo, uint64_t hi) {
  btree *t = m;
  if (lo > hi) return 0;
  return count_below(t->root, hi, 1) - count_below(t->root, lo, 0);
}
