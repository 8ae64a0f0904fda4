/*
 * Owns the native twin of src/chat/sampler.ts's hot path: one token drawn from a row of logits at a
 * temperature, with top-k / top-p, driven by the same xoshiro128** state the JavaScript Rng holds (passed in
 * and advanced in place), the same walk and the same candidate rules (the candidates' mass, which only decides
 * whether a lower floor is needed, is summed in lanes here: it can differ from a sum in order in the last
 * bits). Its weights are floats from a float exponential (smp_expf) where the JavaScript sampler rounds
 * Math.exp's double to float: they differ in the last bit now and then, so a draw lands on another token
 * only when it falls within ~1e-7 of a boundary between two (about once in millions of tokens); same seed,
 * same tokens on either side otherwise.
 * src/engines/llama/sample_kernel_test.ts holds a JavaScript reference of these exact float steps (each
 * rounded with Math.fround, sums in the same blocks and lanes) and checks every draw against it.
 * Why native: the JavaScript loop costs ~2 ms per token over a 152k vocabulary; here the exponentials run
 * in float vector lanes (16 with AVX-512), ~0.05 ms, and top-p uses a radix sort instead of a comparator.
 * Why float: an exponential in doubles (the first version, to an ulp of Math.exp) cost 0.5 ms over 152k
 * tokens, a quarter of a 0.5B model's token on a GPU; a float weight is what both sides kept anyway.
 * Built without contracting multiply-adds (ISO C mode, -ffp-contract=off): each step must round as
 * JavaScript's does.
 */
#ifndef OAI_SAMPLING_H
#define OAI_SAMPLING_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint32_t smp_rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

/** xoshiro128**, as Rng.next() in src/chat/sampler.ts: uniform in [0, 1). */
static double smp_next(uint32_t * s) {
    uint32_t result = smp_rotl(s[1] * 5u, 7) * 9u;
    uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = smp_rotl(s[3], 11);
    return (double) result / 4294967296.0;
}

static int32_t smp_argmax(const float * x, int32_t n) {
    int32_t best = 0;
    double best_value = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        if (x[i] > best_value) {
            best_value = x[i];
            best = i;
        }
    }
    return best;
}

/** Below this a weight is 0 (e^-80 is 2e-35 of the most likely token's: it cannot change a draw). */
#define SMP_EXP_FLOOR -80.0f

/**
 * exp(x) for x <= 0 in float steps, each rounded to float (the JavaScript twin, expf32 in sampler.ts, rounds
 * each with Math.fround and gets the same bits): x = k ln2 + r (Cody-Waite, ln2 in two parts, the first
 * exact in 16 bits so k * ln2_hi is exact), e^r by its Taylor series to r^7 (|r| <= ln2/2: truncation 5e-9),
 * times 2^k built from bits. Below SMP_EXP_FLOOR (and -inf) it is 0. No branches or calls: vectorizes.
 */
static inline float smp_expf(float x) {
    const float log2e = (float) 1.4426950408889634074;
    const float shifter = 12582912.0f; /* 0x1.8p23: adding it rounds to an integer in the low bits */
    const float ln2_hi = 0.693145751953125f;
    const float ln2_lo = (float) (0.69314718055994530942 - 0.693145751953125);
    const float xc = x < SMP_EXP_FLOOR ? SMP_EXP_FLOOR : x;
    const float t = xc * log2e + shifter;
    const float kf = t - shifter;
    const float r = (xc - kf * ln2_hi) - kf * ln2_lo;
    float p = (float) (1.0 / 5040.0);
    p = p * r + (float) (1.0 / 720.0);
    p = p * r + (float) (1.0 / 120.0);
    p = p * r + (float) (1.0 / 24.0);
    p = p * r + (float) (1.0 / 6.0);
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    // t's low bits hold k (two's complement): shifted into the exponent field, the shifter's own bits fall off.
    uint32_t tb;
    memcpy(&tb, &t, 4);
    const uint32_t bits = (tb + 127u) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return x < SMP_EXP_FLOOR ? 0.0f : p * scale;
}

/** Tokens per block of the weight sums (the draw skips whole blocks, then walks one). */
#define SMP_BLOCK 256
/** Lanes of a block's sum: token i adds to lane i % SMP_LANES; the lanes fold in halves (j += j + half). */
#define SMP_LANES 16

/**
 * For each block of SMP_BLOCK tokens: w[i] = smp_expf((logits[i] - max) * inv), and the block's sum of the
 * weights in doubles, in four lanes ((l0 + l1) + (l2 + l3)), as the JavaScript does: one chain of adds over
 * 152k tokens was latency-bound. Vectorized for AVX-512 or AVX2 where the CPU has them; the shim is built
 * with -O3 -fno-trapping-math, without which GCC keeps the selects as branches.
 */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void smp_weights(const float * logits, int32_t n,
                                                                                  float max, float inv, float * w,
                                                                                  double * bw) {
    for (int32_t b = 0; b * SMP_BLOCK < n; b++) {
        const int32_t start = b * SMP_BLOCK;
        const int32_t len = n - start < SMP_BLOCK ? n - start : SMP_BLOCK;
        const float * l = logits + start;
        float * wb = w + start;
        for (int32_t i = 0; i < len; i++) wb[i] = smp_expf((l[i] - max) * inv);
        double c[SMP_LANES] = { 0 };
        int32_t i = 0;
        for (; i + SMP_LANES <= len; i += SMP_LANES) {
            for (int j = 0; j < SMP_LANES; j++) c[j] += (double) wb[i + j];
        }
        for (; i < len; i++) c[i % SMP_LANES] += (double) wb[i];
        for (int half = SMP_LANES / 2; half > 0; half /= 2) {
            for (int j = 0; j < half; j++) c[j] += c[j + half];
        }
        bw[b] = c[0];
    }
}

/**
 * The largest logit (NaN never wins), in sixteen lanes: one chain of compares over 152k tokens is
 * latency-bound, and GCC keeps a compare-select reduction scalar unless told NaN cannot occur, so NaN is
 * turned into -inf first (a bit test the vector units do) and the select then vectorizes as max.
 */
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("finite-math-only", "no-signed-zeros")))
static float smp_max(const float * x, int32_t n) {
    float m[16];
    for (int j = 0; j < 16; j++) m[j] = -INFINITY;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) {
            uint32_t bits;
            memcpy(&bits, &x[i + j], 4);
            const float v = (bits & 0x7fffffffu) > 0x7f800000u ? -INFINITY : x[i + j];
            m[j] = v > m[j] ? v : m[j];
        }
    }
    float best = -INFINITY;
    for (; i < n; i++) {
        // The same bit test: under finite-math-only the compare may let a NaN through.
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        const float v = (bits & 0x7fffffffu) > 0x7f800000u ? -INFINITY : x[i];
        best = v > best ? v : best;
    }
    for (int j = 0; j < 16; j++) best = m[j] > best ? m[j] : best;
    return best;
}

/** Per-thread scratch (each model's worker is a thread), grown to the largest vocabulary seen. */
static __thread double * smp_bw;
static __thread float * smp_w;
static __thread uint64_t * smp_k1;
static __thread uint64_t * smp_k2;
static __thread uint32_t * smp_heap;
static __thread int32_t smp_cap;

static int smp_reserve(int32_t n) {
    if (n <= smp_cap) return 1;
    float * w = (float *) realloc(smp_w, sizeof(float) * (size_t) n);
    if (w) smp_w = w;
    uint64_t * k1 = (uint64_t *) realloc(smp_k1, sizeof(uint64_t) * (size_t) n);
    if (k1) smp_k1 = k1;
    uint64_t * k2 = (uint64_t *) realloc(smp_k2, sizeof(uint64_t) * (size_t) n);
    if (k2) smp_k2 = k2;
    uint32_t * heap = (uint32_t *) realloc(smp_heap, sizeof(uint32_t) * (size_t) n);
    if (heap) smp_heap = heap;
    const size_t blocks = (size_t) n / SMP_BLOCK + 1;
    double * bw = (double *) realloc(smp_bw, sizeof(double) * blocks);
    if (bw) smp_bw = bw;
    if (!w || !k1 || !k2 || !heap || !bw) return 0;
    smp_cap = n;
    return 1;
}

/** A weight's bits: non-negative floats order as their bits do. */
static inline uint32_t smp_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return bits;
}

/** A candidate as one integer: ascending keys are weights highest first, ties by token id (the comparator's). */
static inline uint64_t smp_key(uint32_t bits, uint32_t id) {
    return ((uint64_t) ~bits << 32) | id;
}

/**
 * Keeps in `keys` (m candidates in id order, 0 < k < m) those whose weight is at least the k-th largest's,
 * still in id order, and returns how many (at least k): sorting them gives the full sort's first k. The k-th
 * largest comes from a heap of the k best seen, whose root almost every candidate loses to at one compare
 * (top-k 40 over 45k flat weights: ~20 µs, where histogram passes over the candidates took ~100).
 */
static int32_t smp_top(uint64_t * keys, int32_t m, int32_t k) {
    // A max-heap of the k smallest weight digits (smp_key's high half: the highest weights).
    uint32_t * h = smp_heap;
    for (int32_t i = 0; i < k; i++) {
        const uint32_t d = (uint32_t) (keys[i] >> 32);
        int32_t at = i;
        while (at > 0 && h[(at - 1) / 2] < d) {
            h[at] = h[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        h[at] = d;
    }
    for (int32_t i = k; i < m; i++) {
        const uint32_t d = (uint32_t) (keys[i] >> 32);
        if (d >= h[0]) continue;
        int32_t at = 0;
        for (;;) {
            int32_t c = 2 * at + 1;
            if (c >= k) break;
            if (c + 1 < k && h[c + 1] > h[c]) c++;
            if (h[c] <= d) break;
            h[at] = h[c];
            at = c;
        }
        h[at] = d;
    }
    const uint32_t last = h[0];
    int32_t n = 0;
    for (int32_t i = 0; i < m; i++) {
        if ((uint32_t) (keys[i] >> 32) <= last) keys[n++] = keys[i];
    }
    return n;
}

/**
 * Sorts `m` keys (smp_key) ascending: an LSD radix sort of the weight bits, in as many 11-bit digits as the
 * candidates' weights span (three over a floor of 1e-4: 27 bits; fewer when they lie close), reading keys in
 * order (the sort before read each weight through its token id, at random); the input is in id order and
 * each pass is stable, so equal weights stay in id order. Returns the buffer holding the result.
 */
static uint64_t * smp_sort(uint64_t * keys, uint64_t * tmp, int32_t m) {
    if (m <= 48) {
        for (int32_t i = 1; i < m; i++) {
            const uint64_t v = keys[i];
            int32_t j = i - 1;
            while (j >= 0 && keys[j] > v) {
                keys[j + 1] = keys[j];
                j--;
            }
            keys[j + 1] = v;
        }
        return keys;
    }
    uint32_t lo = UINT32_MAX;
    uint32_t hi = 0;
    for (int32_t i = 0; i < m; i++) {
        const uint32_t d = (uint32_t) (keys[i] >> 32);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    const uint32_t span = hi - lo;
    int passes = 0;
    while (passes < 3 && (span >> (11 * passes)) != 0) passes++;
    static __thread uint32_t counts[3][2048];
    // A local pointer: a shared library reaches its thread-locals through a call (__tls_get_addr).
    uint32_t(*count)[2048] = counts;
    memset(count, 0, sizeof(counts));
    for (int32_t i = 0; i < m; i++) {
        const uint32_t d = (uint32_t) (keys[i] >> 32) - lo;
        for (int p = 0; p < passes; p++) count[p][(d >> (11 * p)) & 2047]++;
    }
    uint64_t * src = keys;
    uint64_t * dst = tmp;
    for (int p = 0; p < passes; p++) {
        uint32_t sum = 0;
        for (int b = 0; b < 2048; b++) {
            const uint32_t c = count[p][b];
            count[p][b] = sum;
            sum += c;
        }
        const int shift = 11 * p;
        for (int32_t i = 0; i < m; i++) {
            const uint32_t d = (uint32_t) (src[i] >> 32) - lo;
            dst[count[p][(d >> shift) & 2047]++] = src[i];
        }
        uint64_t * t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/**
 * argmax() of sampler.ts (the lowest index of the largest value; NaN never wins; 0 when nothing is above
 * -inf) in two passes the compiler vectorizes: the largest value in lanes, then the first index holding it
 * (12-14 µs over 49k logits where the one-pass loop in JavaScript took 66-94, per stream and token).
 */
static int32_t smp_greedy(const float * x, int32_t n) {
    const float max = smp_max(x, n);
    if (max == -INFINITY) return 0;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int hit = 0;
        for (int j = 0; j < 16; j++) hit |= x[i + j] == max;
        if (hit) break;
    }
    for (; i < n; i++) {
        if (x[i] == max) return i;
    }
    return 0;
}

/**
 * The next token from (already biased / penalized / masked) logits; temperature 0 is greedy (smp_greedy, no
 * draw), top_k 0 = off, top_p 1 = off. `rng` is the Rng's four state words, advanced by one draw at
 * temperature > 0. Returns -1 when out of memory.
 */
static int32_t smp_sample(const float * logits, int32_t n, double temperature, int32_t top_k, double top_p,
                          uint32_t * rng) {
    if (temperature <= 0) return smp_greedy(logits, n);
    if (!smp_reserve(n)) return -1;
    float * w = smp_w;
    const float max = smp_max(logits, n);
    if (max == -INFINITY) return smp_argmax(logits, n);
    const float inv = (float) (1.0 / temperature);
    smp_weights(logits, n, max, inv, w, smp_bw);
    const int32_t blocks = (n + SMP_BLOCK - 1) / SMP_BLOCK;
    double total = 0;
    for (int32_t b = 0; b < blocks; b++) total += smp_bw[b];
    const int use_top_k = top_k > 0 && top_k < n;
    if (top_p >= 1 && !use_top_k) {
        // As the JavaScript walk (r less each weight until it goes below 0), skipping whole blocks r outlasts.
        double r = smp_next(rng) * total;
        for (int32_t b = 0; b < blocks; b++) {
            if (r - smp_bw[b] >= 0) {
                r -= smp_bw[b];
                continue;
            }
            const int32_t end = (b + 1) * SMP_BLOCK < n ? (b + 1) * SMP_BLOCK : n;
            for (int32_t i = b * SMP_BLOCK; i < end; i++) {
                if (w[i] == 0) continue;
                r -= w[i];
                if (r < 0) return i;
            }
        }
        // Rounding left r at or above 0: the last token with any weight.
        for (int32_t i = n - 1; i > 0; i--) {
            if (w[i] != 0) return i;
        }
        return 0;
    }
    // Top-k / top-p: as sampler.ts, the tokens above a small weight first; exact when the cut falls among them.
    const int32_t k = top_k > 0 ? (top_k < n ? top_k : n) : n;
    const double target = top_p * total;
    static const double floors[3] = { 1e-4, 1e-8, -1 };
    uint64_t * keys = smp_k1;
    for (int f = 0; f < 3; f++) {
        const double floor = floors[f];
        // The candidates as keys, in id order, and their mass in SMP_LANES lanes (token i adds to lane
        // i % SMP_LANES; they fold in halves): one chain of adds was latency-bound. The mass only decides
        // whether a lower floor is needed.
        int32_t c = 0;
        double lanes[SMP_LANES] = { 0 };
        for (int32_t i = 0; i < n; i++) {
            if (w[i] > floor) {
                keys[c++] = smp_key(smp_bits(w[i]), (uint32_t) i);
                lanes[i % SMP_LANES] += w[i];
            }
        }
        for (int half = SMP_LANES / 2; half > 0; half /= 2) {
            for (int j = 0; j < half; j++) lanes[j] += lanes[j + half];
        }
        if (floor >= 0 && c < k && lanes[0] < target) continue;
        // Only the k best can be kept: sort those (and their ties), not every candidate.
        if (k < c / 4) c = smp_top(keys, c, k);
        const uint64_t * cand = smp_sort(keys, smp_k2, c);
        int32_t keep = 0;
        double kept = 0;
        const int32_t limit = k < c ? k : c;
        while (keep < limit) {
            kept += w[(uint32_t) cand[keep]];
            keep++;
            if (kept >= target) break;
        }
        double r = smp_next(rng) * kept;
        for (int32_t j = 0; j < keep; j++) {
            r -= w[(uint32_t) cand[j]];
            if (r < 0) return (int32_t) (uint32_t) cand[j];
        }
        return (int32_t) (uint32_t) cand[keep - 1];
    }
    return smp_argmax(w, n);
}

#endif
