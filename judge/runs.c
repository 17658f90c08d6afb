/* runs.c: runs of similar operations (the same call on keys that follow a
 * formula), which the shrinker shortens as a unit and the printer prints as
 * one loop. */
#include "jdg.h"

static uint64_t inverse(uint64_t m) { /* m odd: m * inverse(m) == 1 mod 2^64 (Newton) */
  uint64_t x = m;
  int i;
  for (i = 0; i < 6; i++) x *= 2 - m * x;
  return x;
}

uint64_t jdg_formula_key(const jdg_formula *f, uint64_t i) { return (f->a + f->d * i) * f->mul; }

static int formable(jdg_opcode c) {
  return c == JDG_OP_INSERT || c == JDG_OP_FIND || c == JDG_OP_ERASE || c == JDG_OP_RANK || c == JDG_OP_RANGE_COUNT;
}

/* Length of the run from op i with multiplier mul. */
static size_t run_with(const jdg_seq *s, size_t i, const uint64_t *ex, size_t at, uint64_t mul, jdg_formula *f) {
  uint64_t inv = inverse(mul);
  const jdg_op *o0 = &s->ops[i], *o1;
  size_t j, w = jdg_op_words(o0);
  f->code = o0->code;
  f->mul = mul;
  f->a = o0->a * inv;
  f->a2 = o0->b * inv;
  f->d = 0;
  f->vconst = 0;
  f->vx = o0->b ^ o0->a;
  f->e0 = ex ? ex[at] : 0;
  f->es = 0;
  f->v0 = ex && o0->code == JDG_OP_FIND ? ex[at + 1] ^ o0->a : 0;
  if (i + 1 >= s->n || s->ops[i + 1].code != o0->code || !formable(o0->code)) return 1;
  o1 = &s->ops[i + 1];
  f->d = o1->a * inv - f->a;
  if (o0->code == JDG_OP_INSERT && (o1->b ^ o1->a) != f->vx) {
    f->vconst = 1;
    f->vx = o0->b;
  }
  if (ex && o0->code != JDG_OP_FIND) f->es = ex[at + w] - f->e0;
  for (j = 1; i + j < s->n; j++) {
    const jdg_op *o = &s->ops[i + j];
    const uint64_t *e = ex ? ex + at + j * w : NULL;
    if (o->code != o0->code || o->a != jdg_formula_key(f, j)) break;
    if (o->code == JDG_OP_RANGE_COUNT && o->b != (f->a2 + f->d * j) * mul) break;
    if (o->code == JDG_OP_INSERT && o->b != (f->vconst ? f->vx : o->a ^ f->vx)) break;
    if (e && e[0] != f->e0 + f->es * j) break;
    if (e && o->code == JDG_OP_FIND && e[0] && (e[1] ^ o->a) != f->v0) break;
  }
  return j;
}

size_t jdg_run_len(const jdg_seq *s, size_t i, const uint64_t *expected, jdg_formula *f) {
  jdg_formula g;
  size_t at = 0, k, n1, n2;
  if (expected)
    for (k = 0; k < i; k++) at += jdg_op_words(&s->ops[k]);
  n1 = run_with(s, i, expected, at, 1, f);
  if (n1 > 2 || !formable(s->ops[i].code)) return n1;
  n2 = run_with(s, i, expected, at, JDG_GOLD, &g);
  if (n2 > n1) {
    *f = g;
    return n2;
  }
  return n1;
}
