/*===- ScratchCache.c - Large kernel buffers kept between calls -----------===*
 *
 * Part of the shared Halide runtime. A kernel's root-level buffers (K and V
 * copied head-major, rotated keys, packed-batch tables, the backward's
 * partial sums) are allocated and freed on every call. glibc hands blocks
 * that large back to the kernel (munmap, or trimming the heap's top), so the
 * next call faults every page in again: 6,650 page faults and ~10% of a
 * packed prefill's time. Freed blocks of 16 KiB or more are kept instead, up
 * to kSlots of them and kMaxKept bytes in all (a larger block takes the slot
 * of the smallest kept one when all are full), and a request reuses the
 * smallest kept block that holds it without wasting more than its own size.
 * Smaller blocks go straight to malloc and free.
 *
 * Why 16 KiB: a decode's partial softmax states are four blocks of 128 KiB
 * (H=32, D=128, 8 key chunks), which glibc maps and unmaps on its own; faulted
 * in on every call they took three quarters of a decode over 2048 keys (1.31
 * ms, 0.33 ms kept). A prefill task with head_dim 256 allocates its query
 * tile's state as four blocks of 32 KiB, which glibc (on the calling thread)
 * takes from the heap top and trims again after each task: page faults took
 * 40% of the kernel's time on one thread (N=1024, H=8, causal: 85-110 ms,
 * 63 ms kept).
 *
 *===----------------------------------------------------------------------===*/
#include <HalideRuntime.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

enum { kSlots = 32 };
static const size_t kMinKept = (size_t)16 << 10;
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

/* Keeps `block` in a free slot, or in the slot of the smallest kept block
 * if that one is smaller (then freed here), within kMaxKept bytes; 0 if it
 * is not kept (and nothing was evicted). */
static int keep(struct Header block) {
  int slot = -1, smallest = -1;
  struct Header evicted = {0, 0};
  pthread_mutex_lock(&lock);
  for (int s = 0; s < kSlots && slot < 0; ++s) {
    if (!kept[s].base)
      slot = s;
    else if (smallest < 0 || kept[s].size < kept[smallest].size)
      smallest = s;
  }
  if (slot < 0 && smallest >= 0 && kept[smallest].size < block.size)
    evicted = kept[smallest];
  if ((slot >= 0 || evicted.base) && keptBytes - evicted.size + block.size <= kMaxKept) {
    if (evicted.base)
      slot = smallest;
    keptBytes += block.size - evicted.size;
    kept[slot] = block;
  } else {
    slot = -1;
    evicted.base = 0;
  }
  pthread_mutex_unlock(&lock);
  free(evicted.base);
  return slot >= 0;
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
