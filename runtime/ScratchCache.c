/*===- ScratchCache.c - Large kernel buffers kept between calls -----------===*
 *
 * Part of the shared Halide runtime. A kernel's root-level buffers (K and V
 * copied head-major, rotated keys, packed-batch tables, the backward's
 * partial sums) are allocated and freed on every call. glibc hands blocks
 * that large back to the kernel (munmap, or trimming the heap's top), so the
 * next call faults every page in again: 6,650 page faults and ~10% of a
 * packed prefill's time. Freed blocks of 64 KiB or more are kept instead, up
 * to kSlots of them and kMaxKept bytes in all, and a request reuses the
 * smallest kept block that holds it without wasting more than its own size.
 * Smaller blocks go straight to malloc and free.
 *
 * Why 64 KiB: glibc maps blocks from 128 KiB up on their own, and a decode's
 * partial softmax states are four such blocks (128 KiB each for H=32, D=128,
 * 8 key chunks). Faulted in on every call they took three quarters of a
 * decode over 2048 keys (1.31 ms, 0.33 ms kept) and 10% over 32768.
 *
 *===----------------------------------------------------------------------===*/
#include <HalideRuntime.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

enum { kSlots = 16 };
static const size_t kMinKept = (size_t)64 << 10;
static const size_t kMaxKept = (size_t)512 << 20;
/* Halide's own allocator aligns to 128 bytes on x86; so do we. */
static const size_t kAlign = 128;

/* Before each block's aligned start: where malloc's block begins, and its
 * usable size. */
struct Header {
  void *base;
  size_t size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct Header kept[kSlots];
static size_t keptBytes;

static void *aligned(void *base, size_t size) {
  uintptr_t start = ((uintptr_t)base + sizeof(struct Header) + kAlign - 1) & ~(uintptr_t)(kAlign - 1);
  struct Header *header = (struct Header *)start - 1;
  header->base = base;
  header->size = size;
  return (void *)start;
}

static void *take(size_t size) {
  int best = -1;
  pthread_mutex_lock(&lock);
  for (int s = 0; s < kSlots; ++s)
    if (kept[s].base && kept[s].size >= size && kept[s].size <= 2 * size &&
        (best < 0 || kept[s].size < kept[best].size))
      best = s;
  struct Header found = {0, 0};
  if (best >= 0) {
    found = kept[best];
    kept[best].base = 0;
    keptBytes -= found.size;
  }
  pthread_mutex_unlock(&lock);
  return found.base ? aligned(found.base, found.size) : 0;
}

static int keep(struct Header block) {
  int done = 0;
  pthread_mutex_lock(&lock);
  if (keptBytes + block.size <= kMaxKept)
    for (int s = 0; s < kSlots && !done; ++s)
      if (!kept[s].base) {
        kept[s] = block;
        keptBytes += block.size;
        done = 1;
      }
  pthread_mutex_unlock(&lock);
  return done;
}

static void *scratchMalloc(void *user_context, size_t size) {
  (void)user_context;
  size_t total = size + sizeof(struct Header) + kAlign;
  if (total < size)
    return 0;
  if (total >= kMinKept) {
    void *reused = take(total);
    if (reused)
      return reused;
  }
  void *base = malloc(total);
  return base ? aligned(base, total) : 0;
}

static void scratchFree(void *user_context, void *ptr) {
  (void)user_context;
  if (!ptr)
    return;
  struct Header block = ((struct Header *)ptr)[-1];
  if (block.size >= kMinKept && keep(block))
    return;
  free(block.base);
}

__attribute__((constructor)) static void installScratchCache(void) {
  halide_set_custom_malloc(scratchMalloc);
  halide_set_custom_free(scratchFree);
}
