/* rng.h: the seeded random generator of tandem-judge and of tandem's
 * property tests (tests/prop.c), so both draw the same way: xoshiro256**,
 * its state filled by splitmix64 from a seed and a stream id (a case, a
 * phase), which lets one stream be replayed alone. Header only: the tests
 * include it without linking any part of the judge. */
#ifndef TANDEM_JUDGE_RNG_H
#define TANDEM_JUDGE_RNG_H

#include <stdint.h>

typedef struct tdm__rng {
  uint64_t s[4];
} tdm__rng;

/* splitmix64: advances *x and returns a well-mixed word of it. */
static inline uint64_t tdm__splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void tdm__rng_init(tdm__rng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed * 0x100000001b3ull ^ stream;
  int i;
  for (i = 0; i < 4; i++) r->s[i] = tdm__splitmix(&x);
}

static inline uint64_t tdm__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t tdm__rng_next(tdm__rng *r) {
  uint64_t *s = r->s;
  uint64_t result = tdm__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = tdm__rotl(s[3], 45);
  return result;
}

/* Uniform in [0, bound); bound 0 gives 0. Rejection keeps the draw
 * unbiased. */
static inline uint64_t tdm__rng_below(tdm__rng *r, uint64_t bound) {
  uint64_t x, limit;
  if (bound == 0) return 0;
  limit = UINT64_MAX - UINT64_MAX % bound;
  do x = tdm__rng_next(r);
  while (x >= limit);
  return x % bound;
}

#endif /* TANDEM_JUDGE_RNG_H */
