// Owns the calls Deno's FFI cannot make to libllama directly, or would make slowly: the by-value parameter
// structs (model and context params, llama_batch, thread pool params), the log callback (filtered here, never a
// call back into JavaScript from llama.cpp's threads), and one call per batch: the server hands over flat arrays
// of tokens, positions, sequence ids and output rows, and gets those rows' logits copied into its own buffer.
// Everything else (tokenizer, vocabulary, metadata, KV memory) the server calls in libllama itself.
// clock_gettime is POSIX, not C11; madvise's huge page advice is Linux's (glibc's default feature set).
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "llama.h"
#include "buffer_sizes.h"
#include "sampling.h"

#if defined(_WIN32)
#define LSHIM_API __declspec(dllexport)
#else
#define LSHIM_API __attribute__((visibility("default")))
#endif

static atomic_int g_log_level = GGML_LOG_LEVEL_WARN;
static atomic_int g_last_level = GGML_LOG_LEVEL_NONE;

static void lshim_log_cb(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    capture_line(text);
    // CONT lines continue the previous message at its level.
    if (level == GGML_LOG_LEVEL_CONT) level = (enum ggml_log_level) atomic_load(&g_last_level);
    else atomic_store(&g_last_level, level);
    if ((int) level >= atomic_load(&g_log_level)) fputs(text, stderr);
}

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized = 0;
/**
 * Model and context creation, one at a time per process. Each model's worker thread loads its own, and ggml's
 * GPU backends set their devices up lazily on first use (ggml-vulkan's instance, pipelines and device list are
 * process-wide and unguarded): with the Vulkan build, 2-4 models loading at once killed the process in 3 of 9
 * starts. Decoding stays concurrent; only creation is serialized.
 */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/**
 * Every call that makes a GPU device work (a decode, reading or writing a sequence's KV cells, loading or freeing
 * a model or context on it), one at a time per process, its queued work finished before the next. Each model
 * decodes in its own worker thread, and ggml's GPU backends keep one device object per GPU for the whole process
 * (ggml-vulkan guards its queue submissions and pipeline compiles itself; a whole graph of one model is not
 * guarded against another's). A precaution, not a measured fix: three models decoding at once on the H100
 * through Vulkan answered 90 of 90 requests with it. (Debian 12's Mesa 22.3.6 lavapipe corrupted its own heap
 * under batched decoding with or without it; Mesa 25 does not.) The cost is that models sharing a GPU never
 * overlap their graphs. CPU-only models (`gpu` 0) never wait for it.
 */
static pthread_mutex_t g_gpu_lock = PTHREAD_MUTEX_INITIALIZER;
#define GPU_LOCK(gpu) do { if (gpu) pthread_mutex_lock(&g_gpu_lock); } while (0)
#define GPU_UNLOCK(gpu) do { if (gpu) pthread_mutex_unlock(&g_gpu_lock); } while (0)
/** Waits for the context's queued device work before the lock is let go (a decode without outputs returns
 *  with its graph still running), so no two contexts' work is ever in flight on a device at once. */
#define GPU_SYNC_UNLOCK(gpu, ctx) do { if (gpu) { llama_synchronize(ctx); pthread_mutex_unlock(&g_gpu_lock); } } while (0)

/**
 * The log filter (GGML_LOG_LEVEL_*: 1 debug, 2 info, 3 warn, 4 error) and, once per process whichever thread
 * comes first, ggml's backends loaded from `backend_dir` (the per-CPU variants libggml-cpu-*.so, ggml picks the
 * best this CPU runs; and the GPU backend of a GPU build) and llama_backend_init. Every model's worker calls
 * it; the backend registry is not thread-safe, so later and concurrent calls wait for the first and return.
 */
LSHIM_API void lshim_init(const char * backend_dir, int log_level) {
    atomic_store(&g_log_level, log_level);
    pthread_mutex_lock(&g_init_lock);
    if (!g_initialized) {
        llama_log_set(lshim_log_cb, NULL);
        ggml_backend_load_all_from_path(backend_dir);
        llama_backend_init();
        g_initialized = 1;
    }
    pthread_mutex_unlock(&g_init_lock);
}

/**
 * The devices ggml found, one line each: "type\tname\tdescription\tfree bytes\ttotal bytes\n" (type: 0 CPU,
 * 1 GPU, 2 integrated GPU, 3 accelerator). Returns the bytes needed; the text is complete only when < cap.
 * Under the GPU lock: asking a GPU for its free memory is device work too.
 */
LSHIM_API int32_t lshim_devices(char * buf, int32_t cap) {
    int32_t at = 0;
    pthread_mutex_lock(&g_gpu_lock);
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        size_t free_b = 0, total_b = 0;
        ggml_backend_dev_memory(d, &free_b, &total_b);
        char line[512];
        int n = snprintf(line, sizeof line, "%d\t%s\t%s\t%zu\t%zu\n", (int) ggml_backend_dev_type(d),
                         ggml_backend_dev_name(d), ggml_backend_dev_description(d), free_b, total_b);
        if (n < 0) continue;
        if (n >= (int) sizeof line) n = (int) sizeof line - 1;
        if (at + n < cap) memcpy(buf + at, line, (size_t) n);
        at += n;
    }
    pthread_mutex_unlock(&g_gpu_lock);
    if (at < cap) buf[at] = 0;
    return at;
}

LSHIM_API void lshim_log_level(int log_level) { atomic_store(&g_log_level, log_level); }

/**
 * n_gpu_layers < 0 keeps every layer on the GPU when one is there (llama.cpp's default). `cpu_only` gives the
 * model no GPU device at all (its layers, KV cache and compute stay in host memory, and no operation is
 * offloaded), so a GPU build serves CPU models too. `out` receives [bytes of the weights' buffers as llama.cpp
 * allocated them (mapped file, repacked copies, GPU buffers), the part of them in GPU memory, layers offloaded,
 * layers in all] (the last two -1 when llama.cpp did not say).
 */
LSHIM_API struct llama_model * lshim_model_load(const char * path, int n_gpu_layers, int use_mmap, int cpu_only,
                                                double * out) {
    static ggml_backend_dev_t no_devices[1] = {NULL};
    struct llama_model_params p = llama_model_default_params();
    if (n_gpu_layers >= 0) p.n_gpu_layers = n_gpu_layers;
    if (cpu_only) {
        p.devices = no_devices;
        p.n_gpu_layers = 0;
    }
    p.load_mode = use_mmap ? p.load_mode : LLAMA_LOAD_MODE_NONE;
    pthread_mutex_lock(&g_load_lock);
    GPU_LOCK(!cpu_only);
    // "offloaded N/M layers" is an INFO line: let it through the callback while loading (printing stays filtered).
    capture_begin();
    struct llama_model * model = llama_model_load_from_file(path, p);
    out[0] = capture_end(NULL);
    out[1] = t_captured_device;
    out[2] = t_offloaded;
    out[3] = t_layers;
    GPU_UNLOCK(!cpu_only);
    pthread_mutex_unlock(&g_load_lock);
    return model;
}

/**
 * The host's transparent huge pages setting (/sys/kernel/mm/transparent_hugepage/enabled, the bracketed word):
 * 3 always, 2 madvise, 1 never, 0 unknown (not Linux, or unreadable). Read here because Deno lets only a
 * process holding every permission read /sys, and a runner holds a few.
 */
LSHIM_API int32_t lshim_huge_pages(void) {
#ifdef __linux__
    FILE * f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    char buf[128];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strstr(buf, "[always]")) return 3;
    if (strstr(buf, "[madvise]")) return 2;
    if (strstr(buf, "[never]")) return 1;
#endif
    return 0;
}

#ifdef __linux__
#include <sys/mman.h>
// Linux 6.1's; glibc 2.36's headers predate it.
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HUGE_REGIONS 8192
/** An anonymous read-write mapping of this process: [start, end). */
typedef struct { uintptr_t start, end; } anon_region;
static _Thread_local anon_region t_before[HUGE_REGIONS];
static _Thread_local int t_n_before = -1;

/** This process's anonymous read-write private mappings (no file, no [heap] or [stack]), up to `cap`. */
static int anon_regions(anon_region * out, int cap) {
    FILE * f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (n < cap && fgets(line, sizeof(line), f)) {
        unsigned long a, b, inode;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &a, &b, perms, &inode, &path_at) < 4) continue;
        if (strcmp(perms, "rw-p") != 0 || inode != 0) continue;
        if (path_at > 0 && line[path_at] != '\n' && line[path_at] != '\0') continue;
        out[n].start = (uintptr_t) a;
        out[n].end = (uintptr_t) b;
        n++;
    }
    fclose(f);
    return n;
}
#endif

/**
 * Brackets a model's load or a context's creation (lshim_huge_begin before, lshim_huge_end after): the
 * anonymous mappings that call made or grew, of `min_bytes` or more (ggml's buffers: weights read in or
 * repacked, KV cache, compute buffers), are advised to transparent huge pages (MADV_HUGEPAGE, which the
 * kernel's common "madvise" setting waits for) and the pages they already hold collapsed into huge ones now
 * (MADV_COLLAPSE, Linux 6.1; older kernels leave it to khugepaged). Only mappings that were not there before
 * are touched, so the runtime's own memory is left as it was.
 */
LSHIM_API void lshim_huge_begin(void) {
#ifdef __linux__
    t_n_before = anon_regions(t_before, HUGE_REGIONS);
#endif
}

LSHIM_API void lshim_huge_end(double min_bytes) {
#ifdef __linux__
    static _Thread_local anon_region after[HUGE_REGIONS];
    int n = anon_regions(after, HUGE_REGIONS);
    for (int i = 0; i < n; i++) {
        uintptr_t a = after[i].start, b = after[i].end;
        if ((double) (b - a) < min_bytes) continue;
        int seen = 0;
        for (int j = 0; j < t_n_before && !seen; j++) seen = t_before[j].start == a && t_before[j].end == b;
        if (seen) continue;
        if (madvise((void *) a, b - a, MADV_HUGEPAGE) == 0) {
            // One call stops at the first huge page it cannot make (EINVAL on a fresh context's KV cache here,
            // for a few of them): then huge page by huge page (361 of 483 made, against none).
            if (madvise((void *) a, b - a, MADV_COLLAPSE) != 0) {
                const uintptr_t huge = (uintptr_t) 2 << 20;
                for (uintptr_t p = (a + huge - 1) & ~(huge - 1); p + huge <= b; p += huge) {
                    madvise((void *) p, huge, MADV_COLLAPSE);
                }
            }
        }
    }
    t_n_before = -1;
#else
    (void) min_bytes;
#endif
}

typedef struct ggml_threadpool * (*threadpool_new_fn)(struct ggml_threadpool_params * params);
typedef void (*threadpool_free_fn)(struct ggml_threadpool * threadpool);

/** ggml-cpu's own functions, from whichever per-CPU variant ggml loaded (the shim links none of them). */
static void * cpu_proc(const char * name) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : NULL;
    return reg ? ggml_backend_reg_get_proc_address(reg, name) : NULL;
}

/**
 * A context over the model. With `unified`, `n_seq_max` sequences share one KV cache of `n_ctx` cells (a
 * sequence may use all of them, and copying a prefix to another sequence costs no memory, but every token's
 * attention spans the cells of all sequences); without, each sequence has a KV stream of its own of
 * n_ctx / n_seq_max cells (llama-server's default: sequences decoded together don't pay for each other). `pooling` < 0
 * keeps the model's pooling type; `embeddings` turns pooled outputs on (embedding models). `bytes` receives the
 * [size of the buffers the context allocated (KV cache, compute and output buffers), the part in GPU memory];
 * `threadpool_out` the
 * context's ggml thread pool (0 if none), for lshim_context_free.
 */
LSHIM_API struct llama_context * lshim_context(struct llama_model * model, int n_ctx, int n_batch, int n_ubatch,
                                               int n_seq_max,
                                               int n_threads, int embeddings, int pooling, int cpu_only,
                                               int unified, double * bytes, uint64_t * threadpool_out) {
    struct llama_context_params p = llama_context_default_params();
    p.n_ctx = (uint32_t) n_ctx;
    p.n_batch = (uint32_t) n_batch;
    p.n_ubatch = (uint32_t) n_ubatch;
    p.n_seq_max = (uint32_t) n_seq_max;
    p.n_threads = n_threads;
    p.n_threads_batch = n_threads;
    p.kv_unified = unified != 0;
    p.embeddings = embeddings != 0;
    p.no_perf = true;
    if (pooling >= 0) p.pooling_type = (enum llama_pooling_type) pooling;
    // A CPU-only model must not send large batches' matrix products to a GPU either.
    if (cpu_only) p.op_offload = false;
    pthread_mutex_lock(&g_load_lock);
    GPU_LOCK(!cpu_only);
    capture_begin();
    struct llama_context * ctx = llama_init_from_model(model, p);
    bytes[0] = capture_end(NULL);
    bytes[1] = t_captured_device;
    GPU_UNLOCK(!cpu_only);
    pthread_mutex_unlock(&g_load_lock);
    // A thread pool of the context's own, as llama-bench and llama-cli attach: without one ggml starts and
    // joins its worker threads for every graph, so for every generated token (measured on the SmolLM2-135M-shaped
    // bench files, 2 threads: libllama's decode loop 2-4% faster with the pool).
    // Its threads sleep between graphs (poll 0): polling ones spin after each token, and a process holds a
    // context per model, so idle models' spinning threads took cores from the busy one (poll 50 made prompts
    // up to 1.8x slower in the benchmark, which runs four contexts).
    *threadpool_out = 0;
    threadpool_new_fn tp_new = (threadpool_new_fn) cpu_proc("ggml_threadpool_new");
    if (ctx && tp_new) {
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
        tpp.poll = 0;
        struct ggml_threadpool * tp = tp_new(&tpp);
        if (tp) {
            llama_attach_threadpool(ctx, tp, tp);
            *threadpool_out = (uint64_t) (uintptr_t) tp;
        }
    }
    return ctx;
}

/** Frees a context, then its thread pool (which the context uses until then). */
LSHIM_API void lshim_context_free(struct llama_context * ctx, uint64_t threadpool, int gpu) {
    GPU_LOCK(gpu);
    llama_free(ctx);
    GPU_UNLOCK(gpu);
    threadpool_free_fn tp_free = (threadpool_free_fn) cpu_proc("ggml_threadpool_free");
    if (threadpool && tp_free) tp_free((struct ggml_threadpool *) (uintptr_t) threadpool);
}

/** Model facts in one call: [n_vocab, n_ctx_train, n_embd, bos, eos, vocab_type, add_bos, add_eos, n_cls_out]. */
LSHIM_API void lshim_model_info(const struct llama_model * model, int32_t * out) {
    const struct llama_vocab * v = llama_model_get_vocab(model);
    out[0] = llama_vocab_n_tokens(v);
    out[1] = llama_model_n_ctx_train(model);
    out[2] = llama_model_n_embd(model);
    out[3] = llama_vocab_bos(v);
    out[4] = llama_vocab_eos(v);
    out[5] = (int32_t) llama_vocab_type(v);
    out[6] = llama_vocab_get_add_bos(v);
    out[7] = llama_vocab_get_add_eos(v);
    out[8] = (int32_t) llama_model_n_cls_out(model);
}

/** For every token: bit 0 end-of-generation, bits 8.. llama_token_attr. */
LSHIM_API void lshim_token_flags(const struct llama_model * model, int32_t * out, int32_t n) {
    const struct llama_vocab * v = llama_model_get_vocab(model);
    for (int32_t t = 0; t < n; t++) {
        out[t] = (llama_vocab_is_eog(v, t) ? 1 : 0) | ((int32_t) llama_vocab_get_attr(v, t) << 8);
    }
}

/**
 * Every token's bytes as llama_token_to_piece gives them (special tokens rendered when `special`), packed
 * into `buf`; `offsets` gets n+1 entries. Returns the bytes needed; when more than `cap`, nothing is complete
 * and the caller retries with a buffer that large.
 */
LSHIM_API int64_t lshim_token_pieces(const struct llama_model * model, int special, uint8_t * buf, int64_t cap,
                                     int64_t * offsets, int32_t n) {
    const struct llama_vocab * v = llama_model_get_vocab(model);
    char piece[512];
    int64_t at = 0;
    for (int32_t t = 0; t < n; t++) {
        offsets[t] = at;
        int32_t len = llama_token_to_piece(v, t, piece, sizeof piece, 0, special != 0);
        if (len < 0) len = 0;  // longer than any real token; treated as no text
        if (at + len <= cap) memcpy(buf + at, piece, (size_t) len);
        at += len;
    }
    offsets[n] = at;
    return at;
}

LSHIM_API int32_t lshim_tokenize(const struct llama_model * model, const char * text, int32_t len, int32_t * out,
                                 int32_t max, int add_special, int parse_special) {
    return llama_tokenize(llama_model_get_vocab(model), text, len, out, max, add_special != 0, parse_special != 0);
}

/**
 * Decodes one batch: n entries of (token, position, sequence, output row). An entry whose `output` is k > 0
 * wants its logits, copied to row k - 1 of `logits_out` (n_vocab floats each): callers pick the rows, so each
 * sequence can own one that stays valid until its next decode. Returns llama_decode's status (0 ok, 1 no room
 * in the KV cache, negative on error), or -100 when the batch could not be allocated.
 */
LSHIM_API int32_t lshim_decode(struct llama_context * ctx, const int32_t * tokens, const int32_t * pos,
                               const int32_t * seq, const int32_t * output, int32_t n, float * logits_out,
                               int32_t n_vocab, int gpu) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    if (!b.token) return -100;
    for (int32_t i = 0; i < n; i++) {
        b.token[i] = tokens[i];
        b.pos[i] = pos[i];
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq[i];
        b.logits[i] = output[i] > 0;
    }
    b.n_tokens = n;
    GPU_LOCK(gpu);
    int32_t rc = llama_decode(ctx, b);
    if (rc == 0 && logits_out) {
        for (int32_t i = 0; i < n; i++) {
            if (output[i] <= 0) continue;
            const float * l = llama_get_logits_ith(ctx, i);
            if (!l) {
                rc = -101;
                break;
            }
            memcpy(logits_out + (size_t) (output[i] - 1) * (size_t) n_vocab, l, sizeof(float) * (size_t) n_vocab);
        }
    }
    GPU_SYNC_UNLOCK(gpu, ctx);
    llama_batch_free(b);
    return rc;
}

/**
 * Embeds `n_seqs` inputs packed in `tokens` (lengths in `lens`) as one batch, sequence i as seq id i, and
 * copies each pooled vector (n_embd floats) to `out`. The memory is cleared first and after: embedding
 * contexts keep nothing between calls. Returns 0, or the failing llama_decode / llama_encode status.
 */
LSHIM_API int32_t lshim_embed(struct llama_context * ctx, const int32_t * tokens, const int32_t * lens,
                              int32_t n_seqs, float * out, int32_t n_embd, int gpu) {
    int32_t n = 0;
    for (int32_t s = 0; s < n_seqs; s++) n += lens[s];
    struct llama_batch b = llama_batch_init(n, 0, 1);
    if (!b.token) return -100;
    int32_t i = 0;
    for (int32_t s = 0; s < n_seqs; s++) {
        for (int32_t p = 0; p < lens[s]; p++, i++) {
            b.token[i] = tokens[i];
            b.pos[i] = p;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = s;
            b.logits[i] = 1;
        }
    }
    b.n_tokens = n;
    GPU_LOCK(gpu);
    llama_memory_clear(llama_get_memory(ctx), true);
    const struct llama_model * model = llama_get_model(ctx);
    // Encoder-only models (BERT) run llama_encode; decoder models used for embeddings run llama_decode.
    int32_t rc = llama_model_has_encoder(model) && !llama_model_has_decoder(model) ? llama_encode(ctx, b)
                                                                                  : llama_decode(ctx, b);
    for (int32_t s = 0; rc == 0 && s < n_seqs; s++) {
        const float * e = llama_get_embeddings_seq(ctx, s);
        if (!e) {
            rc = -101;
            break;
        }
        memcpy(out + (size_t) s * (size_t) n_embd, e, sizeof(float) * (size_t) n_embd);
    }
    llama_memory_clear(llama_get_memory(ctx), true);
    GPU_SYNC_UNLOCK(gpu, ctx);
    llama_batch_free(b);
    return rc;
}

/** One token drawn from a logits row (see sampling.h); `rng` is the request's Rng state, advanced in place. */
LSHIM_API int32_t lshim_sample(const float * logits, int32_t n, double temperature, int32_t top_k, double top_p,
                               uint32_t * rng) {
    return smp_sample(logits, n, temperature, top_k, top_p, rng);
}

/**
 * One sequence's generation run ahead in C, for a lone stream whose tokens need nothing but the sampler:
 * decodes `token` at `pos`, draws the next token from its logits (smp_sample, from a copy of the request's
 * Rng state `rng`), publishes it, decodes it, and so on, with no JavaScript between two decodes: the model
 * thread's work per token (~0.1-0.3 ms) runs beside the decode instead of between two, which pays where a
 * core is free (a GPU, more cores than compute threads). Called without blocking the JavaScript thread,
 * which reads what is published as it comes and stops the run by setting ctl[0].
 * Published: draw i's token in tokens[i] and the Rng state after it in states[4i..4i+3], then ctl[1] = i + 1
 * (release order: a reader that sees the count sees the token). The first `masked` draws have the `eos` ids
 * masked (min_tokens, ignore_eos); a drawn eos ends the run when `stop_on_eos`; so does the `cap`-th draw
 * (the budget) before it is decoded. ctl[0] is read before each decode, so a stop costs at most the decode
 * already under way. Returns the llama_decode calls that succeeded (the cells written: `token` and every
 * draw but the last published); ctl[2] gets the failing llama_decode status (0 if none).
 */
LSHIM_API int32_t lshim_run_ahead(struct llama_context * ctx, int32_t seq, int32_t token, int32_t pos, int32_t cap,
                                  double temperature, int32_t top_k, double top_p, const uint32_t * rng,
                                  const int32_t * eos, int32_t n_eos, int32_t masked, int32_t stop_on_eos,
                                  int32_t * ctl, int32_t * tokens, uint32_t * states, int gpu) {
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    struct llama_batch b = llama_batch_init(1, 0, 1);
    ctl[2] = 0;
    if (!b.token) {
        ctl[2] = -100;
        return 0;
    }
    uint32_t state[4];
    memcpy(state, rng, sizeof state);
    int32_t decoded = 0;
    int32_t cur = token;
    for (int32_t n = 0; n < cap; n++) {
        if (__atomic_load_n(&ctl[0], __ATOMIC_ACQUIRE)) break;
        b.token[0] = cur;
        b.pos[0] = pos + n;
        b.n_seq_id[0] = 1;
        b.seq_id[0][0] = seq;
        b.logits[0] = 1;
        b.n_tokens = 1;
        GPU_LOCK(gpu);
        int32_t rc = llama_decode(ctx, b);
        float * l = rc == 0 ? llama_get_logits_ith(ctx, 0) : NULL;
        GPU_SYNC_UNLOCK(gpu, ctx);
        if (rc != 0 || !l) {
            ctl[2] = rc != 0 ? rc : -101;
            break;
        }
        decoded++;
        if (n < masked) {
            for (int32_t e = 0; e < n_eos; e++) l[eos[e]] = -INFINITY;
        }
        const int32_t t = smp_sample(l, n_vocab, temperature, top_k, top_p, state);
        if (t < 0) {
            ctl[2] = -102;
            break;
        }
        tokens[n] = t;
        memcpy(states + 4 * (size_t) n, state, sizeof state);
        __atomic_store_n(&ctl[1], n + 1, __ATOMIC_RELEASE);
        int32_t end = 0;
        for (int32_t e = 0; stop_on_eos && e < n_eos; e++) end |= eos[e] == t;
        if (end) break;
        cur = t;
    }
    llama_batch_free(b);
    return decoded;
}

/** Removes a sequence's cells in [p0, p1); 0 when the memory cannot cut a partial range (recurrent state). */
LSHIM_API int32_t lshim_seq_rm(struct llama_context * ctx, int32_t seq, int32_t p0, int32_t p1, int gpu) {
    GPU_LOCK(gpu);
    const bool ok = llama_memory_seq_rm(llama_get_memory(ctx), seq, p0, p1);
    GPU_UNLOCK(gpu);
    return ok ? 1 : 0;
}

LSHIM_API void lshim_seq_cp(struct llama_context * ctx, int32_t src, int32_t dst, int32_t p0, int32_t p1, int gpu) {
    GPU_LOCK(gpu);
    llama_memory_seq_cp(llama_get_memory(ctx), src, dst, p0, p1);
    GPU_UNLOCK(gpu);
}

/** A sequence's KV cells (llama_state_seq_get_data) into `buf` of `size`; returns the bytes written. */
LSHIM_API uint64_t lshim_state_get(struct llama_context * ctx, int32_t seq, uint8_t * buf, uint64_t size, int gpu) {
    GPU_LOCK(gpu);
    size_t n = llama_state_seq_get_data(ctx, buf, (size_t) size, seq);
    GPU_UNLOCK(gpu);
    return n;
}

/** Restores cells saved by lshim_state_get into sequence `seq`; returns the bytes read (0 on failure). */
LSHIM_API uint64_t lshim_state_set(struct llama_context * ctx, int32_t seq, const uint8_t * buf, uint64_t size,
                                   int gpu) {
    GPU_LOCK(gpu);
    size_t n = llama_state_seq_set_data(ctx, buf, (size_t) size, seq);
    GPU_SYNC_UNLOCK(gpu, ctx);
    return n;
}

/** Frees a model (its GPU buffers too). */
LSHIM_API void lshim_model_free(struct llama_model * model, int gpu) {
    GPU_LOCK(gpu);
    llama_model_free(model);
    GPU_UNLOCK(gpu);
}

/** A C string the library owns, copied into the caller's buffer (Deno's pointer views need unscoped FFI). */
LSHIM_API int32_t lshim_chat_template(const struct llama_model * model, char * buf, int32_t cap) {
    const char * t = llama_model_chat_template(model, NULL);
    if (!t) return -1;
    int32_t n = (int32_t) strlen(t);
    if (n < cap) memcpy(buf, t, (size_t) n + 1);
    return n;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * The benchmark's baseline: libllama's own decode loop with no server around it, as llama-bench runs it. Reads
 * an `n_prompt`-token prompt in one llama_decode, then decodes `n_gen` tokens one llama_decode each (greedy on
 * the logits, so the tokens depend on the model as in a real generation) on sequence 0. out_ns gets the
 * prompt's and the generation's nanoseconds. Returns 0 or the failing llama_decode status.
 */
LSHIM_API int32_t lshim_bench(struct llama_context * ctx, int32_t n_prompt, int32_t n_gen, int64_t * out_ns) {
    const struct llama_model * model = llama_get_model(ctx);
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_memory_clear(llama_get_memory(ctx), true);
    struct llama_batch b = llama_batch_init(n_prompt > 1 ? n_prompt : 1, 0, 1);
    for (int32_t i = 0; i < n_prompt; i++) {
        b.token[i] = 100 + (i * 7) % (n_vocab - 100);
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n_prompt - 1;
    }
    b.n_tokens = n_prompt;
    // The baseline holds the GPU lock throughout, like a decode does per call.
    pthread_mutex_lock(&g_gpu_lock);
    int64_t t0 = now_ns();
    int32_t rc = llama_decode(ctx, b);
    out_ns[0] = now_ns() - t0;
    t0 = now_ns();
    for (int32_t k = 0; rc == 0 && k < n_gen; k++) {
        const float * l = llama_get_logits_ith(ctx, -1);
        int32_t best = 0;
        for (int32_t t = 1; t < n_vocab; t++) if (l[t] > l[best]) best = t;
        b.token[0] = best;
        b.pos[0] = n_prompt + k;
        b.n_seq_id[0] = 1;
        b.seq_id[0][0] = 0;
        b.logits[0] = 1;
        b.n_tokens = 1;
        rc = llama_decode(ctx, b);
    }
    out_ns[1] = now_ns() - t0;
    pthread_mutex_unlock(&g_gpu_lock);
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_batch_free(b);
    return rc;
}
