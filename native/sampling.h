/*
 * Owns the native twin of src/chat/sampler.ts's hot path: one token drawn from a row of logits at a
 * temperature, with top-k / top-p, driven by the same xoshiro128** state the JavaScript Rng holds (passed in
 * and advanced in place). Same arithmetic (doubles, each weight rounded to float as the Float32Array scratch
 * does) up to rounding: the exponential may differ from V8's in the last bit or two (smp_exp), which changes a
 * float weight about once in 1e8, and sums are taken in lanes (smp_weights); either moves a draw only when it
 * lands within ~1e-14 of a boundary, so a seeded request draws the same tokens on either side.
 * Why native: the JavaScript loop costs ~0.56 ms per token over a 49k vocabulary (2.2 ms over 152k), and
 * top-p on a flat distribution sorts the vocabulary with a comparator (16 ms); native, the exponentials run
 * in vector lanes, and top-p uses a radix sort.
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

/**
 * exp(x) for x <= 0 within about an ulp of the correctly rounded value, written so the compiler vectorizes a
 * loop of it (no branches, no calls): x = k ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 in two parts), e^r by
 * its Taylor series to r^13 (truncation below 1e-17), times 2^k built from bits. Below -708 (and -inf) it is
 * 0: e^-708 is 3e-308, which rounds to 0 as a float weight and cannot change a total of at least 1.
 * libm's exp is a call per element (~6 ns); this is a few multiply-adds per lane.
 */
static inline double smp_exp(double x) {
    const double ln2_hi = 6.93147180369123816490e-01;
    const double ln2_lo = 1.90821492927058770002e-10;
    const double inv_ln2 = 1.44269504088896338700e+00;
    const double shifter = 6755399441055744.0; /* 0x1.8p52: adding it rounds to an integer in the low bits */
    const double xc = x < -708.0 ? -708.0 : x;
    const double t = xc * inv_ln2 + shifter;
    const double kd = t - shifter;
    const double r = (xc - kd * ln2_hi) - kd * ln2_lo;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // t's low bits hold k (two's complement): shifted into the exponent field, the shifter's own bits fall off.
    uint64_t tb;
    memcpy(&tb, &t, 8);
    const uint64_t bits = (tb + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, 8);
    return x < -708.0 ? 0.0 : p * scale;
}

/** Tokens per block of the weight sums (the draw skips whole blocks, then walks one). */
#define SMP_BLOCK 256

/**
 * For each block of SMP_BLOCK tokens: w[i] = (float) smp_exp((logits[i] - max) * inv), and the block's sums of
 * the exact weights (`bv`, for the total) and of the float ones (`bw`, what the draw subtracts), each summed in
 * four lanes. The lanes change the order of the additions against the JavaScript loop's one chain, so a sum
 * differs from it by rounding (~1e-16 relative): a draw falls on another token only when it lands that close
 * to a boundary. One chain over 152k tokens was half of the sampler's time (latency-bound adds). Vectorized
 * with AVX2 where the CPU has it; the shim is built with -O3 -fno-trapping-math, without which GCC keeps the
 * selects as branches.
 */
__attribute__((target_clones("avx2", "default"))) static void smp_weights(const float * logits, int32_t n,
                                                                         double max, double inv, float * w,
                                                                         double * bv, double * bw) {
    double v[SMP_BLOCK];
    for (int32_t b = 0; b * SMP_BLOCK < n; b++) {
        const int32_t start = b * SMP_BLOCK;
        const int32_t len = n - start < SMP_BLOCK ? n - start : SMP_BLOCK;
        const float * l = logits + start;
        float * wb = w + start;
        for (int32_t i = 0; i < len; i++) v[i] = smp_exp(((double) l[i] - max) * inv);
        for (int32_t i = 0; i < len; i++) wb[i] = (float) v[i];
        double a[4] = { 0, 0, 0, 0 };
        double c[4] = { 0, 0, 0, 0 };
        int32_t i = 0;
        for (; i + 4 <= len; i += 4) {
            for (int j = 0; j < 4; j++) {
                a[j] += v[i + j];
                c[j] += (double) wb[i + j];
            }
        }
        for (; i < len; i++) {
            a[0] += v[i];
            c[0] += (double) wb[i];
        }
        bv[b] = (a[0] + a[1]) + (a[2] + a[3]);
        bw[b] = (c[0] + c[1]) + (c[2] + c[3]);
    }
}

/** The largest logit, in eight lanes (one chain of compares over 152k tokens is latency-bound too). */
__attribute__((target_clones("avx2", "default"))) static double smp_max(const float * x, int32_t n) {
    float m[8] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int j = 0; j < 8; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    }
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    float best = m[0];
    for (int j = 1; j < 8; j++) best = m[j] > best ? m[j] : best;
    return best;
}

/** Per-thread scratch (each model's worker is a thread), grown to the largest vocabulary seen. */
static __thread double * smp_bv;
static __thread double * smp_bw;
static __thread float * smp_w;
static __thread uint32_t * smp_a;
static __thread uint32_t * smp_b;
static __thread int32_t smp_cap;

static int smp_reserve(int32_t n) {
    if (n <= smp_cap) return 1;
    float * w = (float *) realloc(smp_w, sizeof(float) * (size_t) n);
    if (w) smp_w = w;
    uint32_t * a = (uint32_t *) realloc(smp_a, sizeof(uint32_t) * (size_t) n);
    if (a) smp_a = a;
    uint32_t * b = (uint32_t *) realloc(smp_b, sizeof(uint32_t) * (size_t) n);
    if (b) smp_b = b;
    const size_t blocks = (size_t) n / SMP_BLOCK + 1;
    double * bv = (double *) realloc(smp_bv, sizeof(double) * blocks);
    if (bv) smp_bv = bv;
    double * bw = (double *) realloc(smp_bw, sizeof(double) * blocks);
    if (bw) smp_bw = bw;
    if (!w || !a || !b || !bv || !bw) return 0;
    smp_cap = n;
    return 1;
}

/**
 * Sorts `idx` (m token ids, ascending) by weight, highest first, ties by id (the JavaScript comparator's
 * order): positive floats order as their bits, and a stable LSD radix sort of the inverted bits keeps equal
 * weights in id order.
 */
static uint32_t * smp_sort(const float * w, uint32_t * idx, uint32_t * tmp, int32_t m) {
    static __thread uint32_t count[2048];
    uint32_t * src = idx;
    uint32_t * dst = tmp;
    for (int pass = 0; pass < 3; pass++) {
        const int shift = pass * 11;
        memset(count, 0, sizeof(count));
        for (int32_t i = 0; i < m; i++) {
            uint32_t bits;
            memcpy(&bits, &w[src[i]], 4);
            count[((~bits) >> shift) & 2047]++;
        }
        uint32_t sum = 0;
        for (int d = 0; d < 2048; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int32_t i = 0; i < m; i++) {
            uint32_t bits;
            memcpy(&bits, &w[src[i]], 4);
            dst[count[((~bits) >> shift) & 2047]++] = src[i];
        }
        uint32_t * t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/**
 * The next token from (already biased / penalized / masked) logits at temperature > 0; top_k 0 = off,
 * top_p 1 = off. `rng` is the Rng's four state words, advanced by one draw. Returns -1 when out of memory.
 */
static int32_t smp_sample(const float * logits, int32_t n, double temperature, int32_t top_k, double top_p,
                          uint32_t * rng) {
    if (!smp_reserve(n)) return -1;
    float * w = smp_w;
    const double max = smp_max(logits, n);
    if (max == -INFINITY) return smp_argmax(logits, n);
    const double inv = 1.0 / temperature;
    smp_weights(logits, n, max, inv, w, smp_bv, smp_bw);
    const int32_t blocks = (n + SMP_BLOCK - 1) / SMP_BLOCK;
    double total = 0;
    for (int32_t b = 0; b < blocks; b++) total += smp_bv[b];
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
    for (int f = 0; f < 3; f++) {
        const double floor = floors[f];
        int32_t m = 0;
        double mass = 0;
        for (int32_t i = 0; i < n; i++) {
            if (w[i] > floor) {
                smp_a[m++] = (uint32_t) i;
                mass += w[i];
            }
        }
        if (floor >= 0 && m < k && mass < target) continue;
        const uint32_t * cand = smp_sort(w, smp_a, smp_b, m);
        int32_t keep = 0;
        double kept = 0;
        const int32_t limit = k < m ? k : m;
        while (keep < limit) {
            kept += w[cand[keep]];
            keep++;
            if (kept >= target) break;
        }
        double r = smp_next(rng) * kept;
        for (int32_t j = 0; j < keep; j++) {
            r -= w[cand[j]];
            if (r < 0) return (int32_t) cand[j];
        }
        return (int32_t) cand[keep - 1];
    }
    return smp_argmax(w, n);
}

#endif
