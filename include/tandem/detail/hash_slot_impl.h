/*
 * hash_slot_impl.h: the slot type and the probe functions for one key width
 * and one value width. Included by hash_layout.h once per combination, with
 *   HS_K, HS_V    key and value words (uint32_t / uint64_t)
 *   HS_KW, HS_VW  their widths in bits (32 / 64)
 *   HS_SFX        name suffix (k64v64, ...)
 * No include guard on purpose.
 *
 * The functions take `atomic`: nonzero when other threads may claim or erase
 * slots at the same time (claims then use a CAS on the key word). A single
 * thread passes 0 and gets plain stores for claims.
 */

#define HS_CAT2(a, b) a##_##b
#define HS_CAT(a, b) HS_CAT2(a, b)
#define HS_WCAT2(a, b) a##b
#define HS_WCAT(a, b) HS_WCAT2(a, b)
#define HS_SLOT HS_CAT(tdm__hslot, HS_SFX)
#define HS_FN(name) HS_CAT(name, HS_SFX)
#define HS_KFN(name) HS_WCAT(name, HS_KW)
#define HS_VFN(name) HS_WCAT(name, HS_VW)

/* One slot: the key word, then the value word. C's natural padding gives 8
 * bytes for 32/32 and 16 bytes otherwise; a 64-byte aligned table never splits
 * a slot across cache lines. */
typedef struct HS_SLOT {
  HS_K k;
  HS_V v;
} HS_SLOT;

/* Slots per 64-byte line: the probe bucket of tdm__hash_home. */
#define HS_GROUP ((unsigned)(64u / sizeof(HS_SLOT)))

/* Where a key's probe starts: its home slot, or its side slot (>= cap) for
 * the two marker values: slot cap for the empty marker's value, cap + 1 for
 * the tombstone's. */
TDM_HD uint64_t HS_FN(tdm__hs_start)(HS_K key, unsigned log2cap) {
  unsigned side = HS_WCAT(tdm__hash_side, HS_KW)(key);
  if (side) return ((uint64_t)1 << log2cap) + side - 1u;
  return tdm__hash_home(tdm__hash_mix(key), log2cap, HS_GROUP);
}

/* Home slot of a table key (not a marker value). */
TDM_HD uint64_t HS_FN(tdm__hs_home)(HS_K key, unsigned log2cap) {
  return tdm__hash_home(tdm__hash_mix(key), log2cap, HS_GROUP);
}

/* Reads a key word: an atomic / volatile read when other threads write. */
TDM_HD HS_K HS_FN(tdm__hs_key)(const HS_SLOT *s, uint64_t i, int atomic) {
#if defined(__CUDA_ARCH__)
  return atomic ? HS_KFN(tdm__hash_load)(&s[i].k) : s[i].k;
#else
  (void)atomic;
  return HS_KFN(tdm__hash_load)(&s[i].k);
#endif
}

/* One probe bucket (the HS_GROUP slots of a line, from pos): bit j of *eq /
 * *em / *tm is set when slot pos + j holds key / is empty / is a tombstone.
 * Comparing the whole line at once leaves no branch on where in the line the
 * key sits, which a slot-by-slot loop would mispredict about once a probe. */
TDM_HD void HS_FN(tdm__hs_scan)(const HS_SLOT *s, uint64_t pos, HS_K key, int atomic, unsigned *eq, unsigned *em,
                               unsigned *tm) {
  unsigned j, e = 0, m = 0, t = 0;
  for (j = 0; j < HS_GROUP; j++) {
    HS_K c = HS_FN(tdm__hs_key)(s, pos + j, atomic);
    e |= (unsigned)(c == key) << j;
    m |= (unsigned)(c == (HS_K)TDM_HASH_EMPTY) << j;
    t |= (unsigned)(c == (HS_K)HS_KFN(TDM_HASH_TOMB)) << j;
  }
  *eq = e;
  *em = m;
  *tm = t;
}

/* Bits of the slots before the first empty one of a bucket (all when none):
 * a probe reads a bucket's slots in order and stops at an empty one. */
TDM_HD unsigned HS_FN(tdm__hs_before_empty)(unsigned em) {
  return em ? (em & (0u - em)) - 1u : (1u << HS_GROUP) - 1u;
}

/* Index of key's slot (table or side), or TDM_HASH_NONE when it is absent.
 * start is tdm__hs_start of the key (a bucket's first slot, or a side slot).
 * Reads bucket after bucket; stops at the first empty slot; gives up after
 * the whole table (a corrupt, full table). The same result as reading slot by
 * slot from start. */
TDM_HD uint64_t HS_FN(tdm__hs_lookup)(const HS_SLOT *s, unsigned log2cap, HS_K key, uint64_t start,
                                     int atomic) {
  uint64_t cap = (uint64_t)1 << log2cap, mask = cap - 1u, pos = start, g;
  if (start >= cap) return HS_FN(tdm__hs_key)(s, start, atomic) ? start : TDM_HASH_NONE;
  for (g = 0; g < cap / HS_GROUP; g++) {
    unsigned eq, em, tm, hit;
    HS_FN(tdm__hs_scan)(s, pos, key, atomic, &eq, &em, &tm);
    hit = eq & HS_FN(tdm__hs_before_empty)(em);
    if (hit) return pos + tdm__hash_ctz(hit);
    if (em) return TDM_HASH_NONE;
    pos = (pos + HS_GROUP) & mask;
  }
  return TDM_HASH_NONE;
}

/* Duplicate policy on this value width. */
TDM_HD HS_V HS_FN(tdm__hs_combine)(HS_V old, HS_V in, int dup, int vkind) {
  return HS_VFN(tdm__dup_combine)(old, in, dup, vkind);
}

/* ---- lane groups (the CUDA kernels) -----------------------------------------
 * A group of HS_GROUP lanes probes for one key: lane j reads slot pos + j of
 * the bucket (one wide load of a whole slot), the group exchanges its three
 * match bits (a tile ballot on the GPU), and every lane takes the same
 * decision from the bucket's masks. The functions below are the per-lane
 * read and the per-bucket decision; the CPU tests run them with the lanes
 * simulated in a loop and compare with the one-thread probe above. */

/* Lane lane's bits of a slot whose key word is c: bit lane of *eq / *em /
 * *tm (a find that loaded the whole slot passes its key word). */
TDM_HD void HS_FN(tdm__hs_word_bits)(HS_K c, HS_K key, unsigned lane, unsigned *eq, unsigned *em, unsigned *tm) {
  *eq = (unsigned)(c == key) << lane;
  *em = (unsigned)(c == (HS_K)TDM_HASH_EMPTY) << lane;
  *tm = (unsigned)(c == (HS_K)HS_KFN(TDM_HASH_TOMB)) << lane;
}

/* Lane lane's bits of the bucket at pos: bit lane of *eq / *em / *tm. */
TDM_HD void HS_FN(tdm__hs_lane_bits)(const HS_SLOT *s, uint64_t pos, HS_K key, unsigned lane, int atomic,
                                    unsigned *eq, unsigned *em, unsigned *tm) {
  HS_FN(tdm__hs_word_bits)(HS_FN(tdm__hs_key)(s, pos + lane, atomic), key, lane, eq, em, tm);
}

/* One bucket of a lookup from the group's masks: 1 when the probe ends here
 * (*at = the key's slot, or TDM_HASH_NONE when it is absent), 0 when it goes
 * on to the next bucket. The same rule as tdm__hs_lookup. */
TDM_HD int HS_FN(tdm__hs_lookup_step)(uint64_t pos, unsigned eq, unsigned em, uint64_t *at) {
  unsigned hit = eq & HS_FN(tdm__hs_before_empty)(em);
  if (hit) {
    *at = pos + tdm__hash_ctz(hit);
    return 1;
  }
  if (em) {
    *at = TDM_HASH_NONE;
    return 1;
  }
  return 0;
}

/* Lanes in a group: the slots of one 64-byte bucket. */
TDM_HD unsigned HS_FN(tdm__hs_lanes)(void) { return HS_GROUP; }

/* ---- lane-group claims (the CUDA insert) -------------------------------------
 * The claim of tdm__hs_claim, taken a bucket at a time by a lane group: the
 * lanes read the bucket (tdm__hs_lane_bits with atomic set), the group's three
 * masks go to tdm__hs_claim_step, which every lane runs and which decides
 * exactly as tdm__hs_claim's loop does; when the probe has read every bucket
 * without meeting an empty slot, tdm__hs_claim_last decides as tdm__hs_claim
 * does after its loop. One lane then swaps the key into the chosen slot and
 * tdm__hs_claim_cas_outcome reads the swap's result. tests/test_hd_claim.c
 * runs these with the lanes and concurrent groups simulated, against the CPU
 * backend. */

/* One bucket of a lane-group claim, from the group's masks of the bucket at
 * pos. *tomb carries the probe's first tombstone from bucket to bucket (set it
 * to TDM_HASH_NONE before the first). Returns TDM_HASH_STEP_FOUND with *at =
 * the key's slot; TDM_HASH_STEP_TAKE when the bucket has an empty slot, with
 * *at = the slot to claim (the probe's first tombstone, else that empty slot)
 * and *expect = its key word now; TDM_HASH_STEP_ON: go on to the next
 * bucket. */
TDM_HD int HS_FN(tdm__hs_claim_step)(uint64_t pos, unsigned eq, unsigned em, unsigned tm, uint64_t *tomb,
                                    uint64_t *at, HS_K *expect) {
  unsigned before = HS_FN(tdm__hs_before_empty)(em);
  if (eq & before) {
    *at = pos + tdm__hash_ctz(eq & before);
    return TDM_HASH_STEP_FOUND;
  }
  if (*tomb == TDM_HASH_NONE && (tm & before)) *tomb = pos + tdm__hash_ctz(tm & before);
  if (!em) return TDM_HASH_STEP_ON;
  if (*tomb != TDM_HASH_NONE) {
    *at = *tomb;
    *expect = (HS_K)HS_KFN(TDM_HASH_TOMB);
  } else {
    *at = pos + tdm__hash_ctz(em);
    *expect = (HS_K)TDM_HASH_EMPTY;
  }
  return TDM_HASH_STEP_TAKE;
}

/* After a probe that read the whole table and met no empty slot (a table
 * that breaks the load invariant): take its first tombstone if it saw one
 * (TDM_HASH_STEP_TAKE, as tdm__hs_claim does), else TDM_HASH_STEP_ON: no
 * free slot. */
TDM_HD int HS_FN(tdm__hs_claim_last)(uint64_t tomb, uint64_t *at, HS_K *expect) {
  if (tomb == TDM_HASH_NONE) return TDM_HASH_STEP_ON;
  *at = tomb;
  *expect = (HS_K)HS_KFN(TDM_HASH_TOMB);
  return TDM_HASH_STEP_TAKE;
}

/* The claim's outcome from the key word prev that the swap of key into a slot
 * expected to hold expect found there: TDM_HASH_NEW_EMPTY / NEW_TOMB when the
 * slot was taken, TDM_HASH_FOUND when the same key was written there first
 * (two copies of one key in a batch: both claim, one takes the slot, the
 * other finds it there; tdm__hs_claim's rule), TDM_HASH_RETRY when another key took the slot first: the
 * probe starts again from the key's home and sees that key in its path. */
TDM_HD int HS_FN(tdm__hs_claim_cas_outcome)(HS_K prev, HS_K expect, HS_K key) {
  if (prev == expect) return expect == (HS_K)TDM_HASH_EMPTY ? TDM_HASH_NEW_EMPTY : TDM_HASH_NEW_TOMB;
  return prev == key ? TDM_HASH_FOUND : TDM_HASH_RETRY;
}

/* Finds key's slot or claims one for it; *outcome receives a TDM_HASH_FOUND /
 * NEW_* code. The probe runs to the key or the first empty slot, remembering
 * the first tombstone; a new key takes that tombstone, else the empty slot.
 *
 * Concurrent claims (atomic): a slot only ever goes from free (empty or
 * tombstone) to a key during an insert, never back. A failed CAS means another
 * thread took the slot first: if it wrote the same key, that is our key's
 * slot; otherwise the probe restarts and sees the new key in its path. Two
 * threads with the same key compute the same sequence and the same first free
 * slot, so at most one of them can claim and the other finds it.
 * Window: a probe that would go on to the bucket starting at slot stop (cap
 * for a wrap to slot 0) gives up before reading it: *outcome =
 * TDM_HASH_DEFER, TDM_HASH_NONE returned, nothing written. A thread that
 * owns the slots [start's window, stop) can then claim without atomics, and
 * leaves keys whose probe leaves its window for later. stop = TDM_HASH_NONE:
 * no window.
 * Returns TDM_HASH_NONE otherwise only when no free slot exists (a corrupt
 * table). */
TDM_HD uint64_t HS_FN(tdm__hs_claim)(HS_SLOT *s, unsigned log2cap, HS_K key, uint64_t start, int atomic,
                                    uint64_t stop, int *outcome) {
  uint64_t cap = (uint64_t)1 << log2cap, mask = cap - 1u;
  *outcome = TDM_HASH_FOUND;
  if (start >= cap) {
    /* Side slot: its key word is the present flag. */
    if (HS_FN(tdm__hs_key)(s, start, atomic)) {
      *outcome = TDM_HASH_FOUND;
    } else if (!atomic) {
      HS_KFN(tdm__hash_store)(&s[start].k, 1u);
      *outcome = TDM_HASH_NEW_SIDE;
    } else {
      *outcome = HS_KFN(tdm__hash_cas)(&s[start].k, 0u, 1u) == 0u ? TDM_HASH_NEW_SIDE : TDM_HASH_FOUND;
    }
    return start;
  }
  for (;;) {
    uint64_t pos = start, tomb = TDM_HASH_NONE, empty = TDM_HASH_NONE, g, target;
    HS_K expect, prev;
    for (g = 0; g < cap / HS_GROUP; g++) {
      unsigned eq, em, tm, before;
      HS_FN(tdm__hs_scan)(s, pos, key, atomic, &eq, &em, &tm);
      before = HS_FN(tdm__hs_before_empty)(em);
      if (eq & before) {
        *outcome = TDM_HASH_FOUND;
        return pos + tdm__hash_ctz(eq & before);
      }
      if (tomb == TDM_HASH_NONE && (tm & before)) tomb = pos + tdm__hash_ctz(tm & before);
      if (em) {
        empty = pos + tdm__hash_ctz(em);
        break;
      }
      if (pos + HS_GROUP == stop) {
        *outcome = TDM_HASH_DEFER;
        return TDM_HASH_NONE;
      }
      pos = (pos + HS_GROUP) & mask;
    }
    if (tomb != TDM_HASH_NONE) {
      target = tomb;
      expect = (HS_K)HS_KFN(TDM_HASH_TOMB);
    } else if (empty != TDM_HASH_NONE) {
      target = empty;
      expect = (HS_K)TDM_HASH_EMPTY;
    } else {
      return TDM_HASH_NONE;
    }
    if (!atomic) {
      HS_KFN(tdm__hash_store)(&s[target].k, key);
      prev = expect;
    } else {
      prev = HS_KFN(tdm__hash_cas)(&s[target].k, expect, key);
    }
    if (prev == expect) {
      *outcome = expect == (HS_K)TDM_HASH_EMPTY ? TDM_HASH_NEW_EMPTY : TDM_HASH_NEW_TOMB;
      return target;
    }
    if (prev == key) {
      *outcome = TDM_HASH_FOUND;
      return target;
    }
    /* Another key took the slot: probe again from the start. */
  }
}

/* Erases key found at pos (a tdm__hs_lookup result; TDM_HASH_NONE: absent);
 * returns a TDM_HASH_ABSENT / GONE_* code. The freed slot's value is zeroed
 * (the invariant). When the next slot is empty no probe can pass the freed
 * slot, so it becomes empty instead of a tombstone. With atomic set, the CAS
 * makes exactly one of several threads erasing one key succeed. A GPU lane
 * group finds pos together and one lane calls this. */
TDM_HD int HS_FN(tdm__hs_erase_at)(HS_SLOT *s, unsigned log2cap, HS_K key, uint64_t pos, int atomic) {
  uint64_t cap = (uint64_t)1 << log2cap, mask = cap - 1u;
  if (pos == TDM_HASH_NONE) return TDM_HASH_ABSENT;
  if (pos >= cap) {
    if (atomic) {
      if (HS_KFN(tdm__hash_cas)(&s[pos].k, 1u, 0u) != 1u) return TDM_HASH_ABSENT;
    } else {
      HS_KFN(tdm__hash_store)(&s[pos].k, 0u);
    }
    s[pos].v = 0;
    return TDM_HASH_GONE_SIDE;
  }
  if (atomic) {
    if (HS_KFN(tdm__hash_cas)(&s[pos].k, key, (HS_K)HS_KFN(TDM_HASH_TOMB)) != key) return TDM_HASH_ABSENT;
  } else {
    HS_KFN(tdm__hash_store)(&s[pos].k, (HS_K)HS_KFN(TDM_HASH_TOMB));
  }
  s[pos].v = 0;
  if (HS_FN(tdm__hs_key)(s, tdm__hash_next(pos, mask), atomic) == (HS_K)TDM_HASH_EMPTY) {
    HS_KFN(tdm__hash_store)(&s[pos].k, (HS_K)TDM_HASH_EMPTY);
    return TDM_HASH_GONE_EMPTY;
  }
  return TDM_HASH_GONE_TOMB;
}

/* Erases key, probing from start (tdm__hs_start); as tdm__hs_erase_at. */
TDM_HD int HS_FN(tdm__hs_erase)(HS_SLOT *s, unsigned log2cap, HS_K key, uint64_t start, int atomic) {
  return HS_FN(tdm__hs_erase_at)(s, log2cap, key, HS_FN(tdm__hs_lookup)(s, log2cap, key, start, atomic), atomic);
}


#undef HS_CAT2
#undef HS_CAT
#undef HS_WCAT2
#undef HS_WCAT
#undef HS_SLOT
#undef HS_FN
#undef HS_KFN
#undef HS_VFN
#undef HS_GROUP
