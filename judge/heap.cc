/* heap.cc: counts the heap blocks the candidate allocates and has not freed.
 *
 * Unsanitized builds replace the allocator in the executable: malloc, calloc,
 * realloc, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc
 * and every form of C++ operator new and delete (sized, aligned, nothrow,
 * arrays). The executable's symbols come first in the dynamic linker's
 * search, so the candidate, the C library's own internal calls (qsort's
 * buffer, strdup, stdio) and libstdc++ all reach these, which forward to
 * glibc's allocator (__libc_malloc and friends: no dlsym, so no recursion
 * while resolving). Sanitized builds keep the sanitizer's allocator (it must
 * see every block) and install its malloc and free hooks instead.
 *
 * While tracking is on, every new block is recorded (address -> size) in an
 * open-addressing table in memory of its own (mmap, never the heap); a free
 * of a recorded block removes it, whenever it comes. What remains is what the
 * candidate still holds: blocks the C library parks in its per-thread caches
 * are freed blocks here, not live ones.
 */
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JDG_HEAP_HOOKS 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define JDG_HEAP_HOOKS 1
#endif
#endif

extern "C" {
#include "jdg.h"
}

namespace {

struct slot {
  uintptr_t p; /* 0 empty, 1 deleted */
  size_t size;
};

std::atomic<int> tracking{0};
std::atomic<size_t> recorded{0}; /* live entries: frees skip the table when 0 */
std::atomic_flag lock = ATOMIC_FLAG_INIT;
slot *table;
size_t cap, used; /* used: live + deleted */
uint64_t live_blocks, live_bytes, allocs, peak_block, peak_grows;

constexpr uintptr_t DELETED = 1;

struct guard {
  guard() {
    while (lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~guard() { lock.clear(std::memory_order_release); }
};

size_t hash_ptr(uintptr_t p, size_t mask) { return (size_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 20) & mask; }

/* Doubles the table (live entries only). Returns false when out of memory. */
bool grow() {
  size_t ncap = cap ? 2 * cap : 1 << 16, i;
  void *mem = mmap(nullptr, ncap * sizeof(slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  slot *nt = static_cast<slot *>(mem);
  for (i = 0; i < cap; i++) {
    if (table[i].p <= DELETED) continue;
    size_t h = hash_ptr(table[i].p, ncap - 1);
    while (nt[h].p) h = (h + 1) & (ncap - 1);
    nt[h] = table[i];
  }
  if (table) munmap(table, cap * sizeof(slot));
  table = nt;
  cap = ncap;
  used = live_blocks;
  return true;
}

void record(const void *ptr, size_t size) {
  if (!ptr || !tracking.load(std::memory_order_relaxed)) return;
  guard g;
  if ((used + 1) * 4 > cap * 3 && !grow()) return;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  size_t h = hash_ptr(p, cap - 1);
  while (table[h].p > DELETED) h = (h + 1) & (cap - 1);
  if (table[h].p == 0) used++;
  table[h].p = p;
  table[h].size = size;
  live_blocks++;
  live_bytes += size;
  allocs++;
  if (size > peak_block) {
    peak_block = size;
    peak_grows++;
  }
  recorded.store(live_blocks, std::memory_order_relaxed);
}

void forget(const void *ptr) {
  if (!ptr || recorded.load(std::memory_order_relaxed) == 0) return;
  guard g;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  size_t h = hash_ptr(p, cap - 1);
  for (; table[h].p; h = (h + 1) & (cap - 1))
    if (table[h].p == p) {
      table[h].p = DELETED;
      live_blocks--;
      live_bytes -= table[h].size;
      recorded.store(live_blocks, std::memory_order_relaxed);
      return;
    }
}

} // namespace

extern "C" void jdg_heap_track(int on) {
  if (on) {
    guard g;
    peak_block = 0;
    peak_grows = 0;
    allocs = 0;
  }
  tracking.store(on, std::memory_order_seq_cst);
}

extern "C" void jdg_heap_stats(jdg_heap *h) {
  guard g;
  h->blocks = live_blocks;
  h->bytes = live_bytes;
  h->allocs = allocs;
  h->largest = peak_block;
  h->largest_grew = peak_grows;
}

#ifdef JDG_HEAP_HOOKS

/* The sanitizer runtime's hooks (sanitizer/allocator_interface.h, which not
 * every compiler installation ships): called for every user allocation. */
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                                         void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t size) { record(const_cast<const void *>(p), size); }
static void on_free(const volatile void *p) { forget(const_cast<const void *>(p)); }

extern "C" const char *jdg_heap_method(void) { return "the sanitizer allocator's malloc and free hooks"; }

static const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);

extern "C" int jdg_heap_available(void) { return hooks_installed != 0; }

#else

extern "C" {
void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);

const char *jdg_heap_method(void) { return "the judge's malloc and operator new, forwarding to glibc"; }
int jdg_heap_available(void) { return 1; }

void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  record(p, n);
  return p;
}

void free(void *p) {
  forget(p);
  __libc_free(p);
}

void *calloc(size_t n, size_t size) {
  void *p = __libc_calloc(n, size);
  record(p, n * size); /* no overflow: __libc_calloc refused it */
  return p;
}

void *realloc(void *old, size_t n) {
  void *p;
  if (!old) return malloc(n);
  if (n == 0) {
    free(old);
    return nullptr;
  }
  p = __libc_realloc(old, n);
  if (p) {
    forget(old);
    record(p, n);
  }
  return p;
}

void *memalign(size_t align, size_t n) {
  void *p = __libc_memalign(align, n);
  record(p, n);
  return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
  void *p;
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  p = memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

void *valloc(size_t n) {
  void *p = __libc_valloc(n);
  record(p, n);
  return p;
}

void *pvalloc(size_t n) {
  void *p = __libc_pvalloc(n);
  record(p, n);
  return p;
}
} // extern "C"

/* operator new: the standard's loop (new_handler, then bad_alloc). */
static void *new_block(size_t n, size_t align) {
  if (n == 0) n = 1;
  for (;;) {
    void *p = align > alignof(std::max_align_t) ? __libc_memalign(align, n) : __libc_malloc(n);
    if (p) {
      record(p, n);
      return p;
    }
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

static void *new_nothrow(size_t n, size_t align) noexcept {
  try {
    return new_block(n, align);
  } catch (...) {
    return nullptr;
  }
}

static void delete_block(void *p) noexcept {
  forget(p);
  __libc_free(p);
}

void *operator new(size_t n) { return new_block(n, 0); }
void *operator new[](size_t n) { return new_block(n, 0); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return new_nothrow(n, 0); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return new_nothrow(n, 0); }
void *operator new(size_t n, std::align_val_t a) { return new_block(n, (size_t)a); }
void *operator new[](size_t n, std::align_val_t a) { return new_block(n, (size_t)a); }
void *operator new(size_t n, std::align_val_t a, const std::nothrow_t &) noexcept { return new_nothrow(n, (size_t)a); }
void *operator new[](size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
  return new_nothrow(n, (size_t)a);
}
void operator delete(void *p) noexcept { delete_block(p); }
void operator delete[](void *p) noexcept { delete_block(p); }
void operator delete(void *p, size_t) noexcept { delete_block(p); }
void operator delete[](void *p, size_t) noexcept { delete_block(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { delete_block(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { delete_block(p); }
void operator delete(void *p, std::align_val_t) noexcept { delete_block(p); }
void operator delete[](void *p, std::align_val_t) noexcept { delete_block(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { delete_block(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { delete_block(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { delete_block(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { delete_block(p); }

#endif
