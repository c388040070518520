/* generate: one attention layer of a text generator, driving a paged KV cache
 * the way a serving engine does.
 *
 * Two sequences with prompts of 100 and 37 tokens share a key/value cache
 * kept in 16-token blocks: a pool of blocks, a free list that hands blocks to
 * sequences as they grow, and a block table row per sequence naming its
 * blocks in order (vLLM's paged attention). The kernel attnc generated from
 * generate.attn appends each call's new keys (rotated) and values to the
 * cache in place and attends the new queries over all of their sequence's
 * rows; the same kernel serves prefill (Lq > 1) and decode (Lq = 1).
 *
 * The app prefills both prompts, then runs 50 decode steps that add one token
 * to each sequence. There is no model: each new token's q, k and v come from a
 * small LCG. After every call the output is checked against full attention
 * over the whole sequence so far, recomputed in float64 from the app's own
 * history of un-rotated keys and values; at the end the cache rows themselves
 * are checked. Exits non-zero on any mismatch.
 */
#include "generate_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { H = 8, G = 2, D = 64, BLOCK = 16 }; /* as in generate.attn */
enum { NSEQ = 2, DECODE_STEPS = 50 };
enum { PREFILL_CHUNK = 64 };              /* tokens per prefill call */
enum { MAX_TOKENS = 160 };                /* longest sequence we allow */
enum { MAX_BLOCKS = MAX_TOKENS / BLOCK }; /* block table width */
enum { NUM_BLOCKS = 24 };                 /* blocks in the pool */
static const int prompt_len[NSEQ] = {100, 37};
static const double tolerance = 1e-4;

/* ---- The engine's state: the cache and its bookkeeping. ---------------- */

/* The pool: k_cache / v_cache [NUM_BLOCKS, G, BLOCK, D], written by the kernel. */
static float k_cache[NUM_BLOCKS][G][BLOCK][D], v_cache[NUM_BLOCKS][G][BLOCK][D];
static int free_list[NUM_BLOCKS], num_free; /* a stack of unused block ids */
/* Per sequence: its tokens so far, and its blocks (-1 past the used ones). */
static int32_t cache_len[NSEQ], block_table[NSEQ][MAX_BLOCKS];

/* Gives sequence s enough blocks to hold `tokens` rows, taking them from the
 * free list; 0 if the pool is dry or the sequence too long. */
static int reserve(int s, int tokens) {
  for (int n = 0; n * BLOCK < tokens; ++n) {
    if (n == MAX_BLOCKS)
      return 0; /* longer than a block table row */
    if (block_table[s][n] < 0) {
      if (num_free == 0)
        return 0;
      block_table[s][n] = free_list[--num_free];
    }
  }
  return 1;
}

/* ---- What the app keeps to check the kernel. --------------------------- */

/* Every token's key and value as given to the kernel (k not rotated). */
static float k_hist[NSEQ][MAX_TOKENS][G][D], v_hist[NSEQ][MAX_TOKENS][G][D];
static double max_error; /* over the current phase */

/* A tiny LCG: uniform floats in [-1, 1), the same on every machine. */
static uint32_t lcg_state = 12345;
static float lcg_uniform(void) {
  lcg_state = lcg_state * 1664525u + 1013904223u;
  return (float)((lcg_state >> 8) * (2.0 / 16777216.0) - 1.0);
}

/* Rotary embedding of one head row at position t, the spec's half-split
 * pairs: channel c turns with channel c + D/2 by angle t * 10000^(-2c/D). */
static void rotate(double row[D], int t) {
  for (int c = 0; c < D / 2; ++c) {
    double angle = t * pow(10000.0, -2.0 * c / D);
    double x = row[c], y = row[c + D / 2];
    row[c] = x * cos(angle) - y * sin(angle);
    row[c + D / 2] = y * cos(angle) + x * sin(angle);
  }
}

/* float64 attention of sequence s's new query rows q[H][Lq][D] (the batch
 * entry of s in this call) over all its tokens 0 .. cache_len[s] + Lq - 1,
 * against the kernel's out[H][Lq][D]; updates max_error. */
static void check(int s, int Lq, const float *q, const float *out) {
  static double keys[MAX_TOKENS][G][D]; /* rotated at their positions */
  int len = cache_len[s] + Lq;
  for (int t = 0; t < len; ++t)
    for (int g = 0; g < G; ++g) {
      for (int c = 0; c < D; ++c)
        keys[t][g][c] = k_hist[s][t][g][c];
      rotate(keys[t][g], t);
    }
  for (int h = 0; h < H; ++h) {
    int g = h / (H / G); /* the key/value head this query head reads */
    for (int i = 0; i < Lq; ++i) {
      int pos = cache_len[s] + i; /* the query's position in its sequence */
      double qr[D], score[MAX_TOKENS], top = -INFINITY, sum = 0;
      for (int c = 0; c < D; ++c)
        qr[c] = q[((size_t)h * Lq + i) * D + c];
      rotate(qr, pos);
      for (int t = 0; t <= pos; ++t) { /* causal: keys up to the query's own */
        double dot = 0;
        for (int c = 0; c < D; ++c)
          dot += qr[c] * keys[t][g][c];
        score[t] = dot / sqrt((double)D);
        top = fmax(top, score[t]);
      }
      for (int t = 0; t <= pos; ++t)
        sum += exp(score[t] - top);
      for (int c = 0; c < D; ++c) {
        double want = 0;
        for (int t = 0; t <= pos; ++t)
          want += exp(score[t] - top) / sum * v_hist[s][t][g][c];
        double got = out[((size_t)h * Lq + i) * D + c];
        double err = isfinite(got) ? fabs(got - want) : INFINITY;
        max_error = fmax(max_error, err);
      }
    }
  }
}

/* ---- One forward call of the layer. ------------------------------------ */

/* Appends Lq new tokens to each of the nb sequences seqs[] and attends them.
 * Returns 0, or the kernel's error code. */
static int step(const int *seqs, int nb, int Lq) {
  /* q [B, H, Lq, D], k and v [B, G, Lq, D], out [B, H, Lq, D]; the largest
   * call is a prefill chunk of one sequence or a decode step of all. */
  static float q[NSEQ * PREFILL_CHUNK][H][D], k[NSEQ * PREFILL_CHUNK][G][D],
      v[NSEQ * PREFILL_CHUNK][G][D], out[NSEQ * PREFILL_CHUNK][H][D];
  float *qp = &q[0][0][0], *kp = &k[0][0][0], *vp = &v[0][0][0], *op = &out[0][0][0];
  int32_t lens[NSEQ], table[NSEQ][MAX_BLOCKS];

  for (int b = 0; b < nb; ++b) {
    int s = seqs[b];
    if (!reserve(s, cache_len[s] + Lq)) {
      fprintf(stderr, "sequence %d: out of cache blocks at %d tokens\n", s, cache_len[s] + Lq);
      return -1;
    }
    /* The call's cache_len and block table: this batch's rows of the engine's. */
    lens[b] = cache_len[s];
    memcpy(table[b], block_table[s], sizeof table[b]);
    /* The new tokens (a model would project them from its hidden states). */
    for (int i = 0; i < Lq; ++i) {
      int t = cache_len[s] + i;
      for (int h = 0; h < H; ++h)
        for (int c = 0; c < D; ++c)
          qp[(((size_t)b * H + h) * Lq + i) * D + c] = lcg_uniform();
      for (int g = 0; g < G; ++g)
        for (int c = 0; c < D; ++c) {
          k_hist[s][t][g][c] = kp[(((size_t)b * G + g) * Lq + i) * D + c] = lcg_uniform();
          v_hist[s][t][g][c] = vp[(((size_t)b * G + g) * Lq + i) * D + c] = lcg_uniform();
        }
    }
  }

  int err = generate_step_run(qp, kp, vp, &k_cache[0][0][0][0], &v_cache[0][0][0][0], lens,
                              &table[0][0], op, nb, Lq, NUM_BLOCKS, MAX_BLOCKS);
  if (err != 0) {
    fprintf(stderr, "generate_step_run(B = %d, Lq = %d) failed with error %d\n", nb, Lq, err);
    return err;
  }
  for (int b = 0; b < nb; ++b) {
    check(seqs[b], Lq, qp + (size_t)b * H * Lq * D, op + (size_t)b * H * Lq * D);
    cache_len[seqs[b]] += Lq; /* the kernel wrote the rows; the engine counts them */
  }
  return 0;
}

int main(void) {
  /* An empty cache: every block free, every row NaN (a row the kernel read
   * before writing it would turn an output into NaN and fail the check). */
  float *rows = &k_cache[0][0][0][0];
  for (size_t n = 0; n < sizeof k_cache / sizeof(float); ++n)
    rows[n] = NAN;
  memcpy(v_cache, k_cache, sizeof v_cache);
  for (int n = 0; n < NUM_BLOCKS; ++n)
    free_list[n] = NUM_BLOCKS - 1 - n; /* hands out block 0 first */
  num_free = NUM_BLOCKS;
  memset(block_table, -1, sizeof block_table);
  int failed = 0;

  /* Prefill. The kernel takes one Lq for the whole batch and appends all Lq
   * rows of every sequence, so prompts of different lengths cannot share a
   * call (padding the short one would store the pads as tokens). An engine
   * with such a kernel prefills each prompt in its own call (B = 1, with
   * that sequence's cache_len and block-table row) and splits a long prompt
   * into chunks under a per-call token budget, so that one long prompt does
   * not hold up everyone else's next decode step (vLLM's chunked prefill).
   * A later chunk is just a call whose cache_len is not 0: its queries see
   * the earlier chunks' keys in the cache. Here the budget is 64 tokens. */
  int calls = 0;
  max_error = 0;
  for (int s = 0; s < NSEQ; ++s)
    while (cache_len[s] < prompt_len[s] && !failed) {
      int Lq = prompt_len[s] - cache_len[s];
      Lq = Lq < PREFILL_CHUNK ? Lq : PREFILL_CHUNK;
      failed |= step(&s, 1, Lq) != 0;
      ++calls;
    }
  if (failed)
    return 1;
  printf("prefill: prompts of %d and %d tokens in %d calls of at most %d tokens, "
         "max |out - ref| = %.3g\n",
         prompt_len[0], prompt_len[1], calls, PREFILL_CHUNK, max_error);
  failed |= !(max_error <= tolerance);

  /* Decode: every sequence adds one token per step, all in one call (B = 2,
   * Lq = 1); a sequence takes a new block from the pool every 16 tokens. */
  const int both[NSEQ] = {0, 1};
  max_error = 0;
  for (int n = 0; n < DECODE_STEPS && !failed; ++n)
    failed |= step(both, NSEQ, 1) != 0;
  if (failed)
    return 1;
  printf("decode: %d steps of B = %d, Lq = 1, sequences now %d and %d tokens, "
         "max |out - ref| = %.3g\n",
         DECODE_STEPS, NSEQ, cache_len[0], cache_len[1], max_error);
  failed |= !(max_error <= tolerance);

  /* The cache itself: row t of sequence s is row t % BLOCK of block
   * block_table[s][t / BLOCK]; it holds the key rotated at position t and
   * the value as given. Blocks still in the free list were never written. */
  double key_error = 0;
  int value_mismatches = 0, used = 0, untouched = 1;
  for (int s = 0; s < NSEQ; ++s)
    for (int t = 0; t < cache_len[s]; ++t)
      for (int g = 0; g < G; ++g) {
        int block = block_table[s][t / BLOCK], row = t % BLOCK;
        double want[D];
        for (int c = 0; c < D; ++c)
          want[c] = k_hist[s][t][g][c];
        rotate(want, t);
        for (int c = 0; c < D; ++c) {
          float got = k_cache[block][g][row][c];
          key_error = fmax(key_error, isfinite(got) ? fabs(got - want[c]) : INFINITY);
          value_mismatches += v_cache[block][g][row][c] != v_hist[s][t][g][c];
        }
      }
  for (int n = 0; n < num_free; ++n) {
    const float *k0 = &k_cache[free_list[n]][0][0][0], *v0 = &v_cache[free_list[n]][0][0][0];
    for (int x = 0; x < G * BLOCK * D; ++x)
      untouched &= isnan(k0[x]) && isnan(v0[x]);
  }
  for (int s = 0; s < NSEQ; ++s)
    for (int n = 0; n < MAX_BLOCKS; ++n)
      used += block_table[s][n] >= 0;
  printf("cache: %d rows in %d of %d blocks, max |k_cache - rotary(k)| = %.3g, "
         "%d v_cache values differ, free blocks %s\n",
         cache_len[0] + cache_len[1], used, NUM_BLOCKS, key_error, value_mismatches,
         untouched ? "untouched" : "WRITTEN");
  failed |= !(key_error <= 1e-5) || value_mismatches != 0 || !untouched;

  if (failed) {
    fprintf(stderr, "mismatch against the float64 reference\n");
    return 1;
  }
  printf("Success!\n");
  return 0;
}
