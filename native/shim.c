// Owns the few calls Deno's FFI cannot make to whisper.cpp directly: the by-value parameter structs
// (whisper_full_params, whisper_context_params, the VAD params) and the callbacks whisper_full fires on its own
// thread. Instead of calling back into JavaScript from that thread, a job buffers each new segment under a mutex
// and reads an atomic abort flag; the server polls the buffer while whisper_full runs as a nonblocking FFI call.
// Everything else (states, results, languages) the server calls in libwhisper itself.
// strdup is POSIX, not C11.
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>

#include "whisper.h"
#include "ggml-backend.h"
#include "buffer_sizes.h"

#if defined(_WIN32)
#define WSHIM_API __declspec(dllexport)
#else
#define WSHIM_API __attribute__((visibility("default")))
#endif

// ---------------------------------------------------------------- logging

static atomic_int g_log_level = GGML_LOG_LEVEL_WARN;

static void wshim_log_cb(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    capture_line(text);
    // CONT lines continue the previous message; keep them only when everything is shown.
    if (level == GGML_LOG_LEVEL_CONT) {
        if (atomic_load(&g_log_level) <= GGML_LOG_LEVEL_INFO) fputs(text, stderr);
        return;
    }
    if ((int) level >= atomic_load(&g_log_level)) fputs(text, stderr);
}

/** Only messages at `level` or above reach stderr (GGML_LOG_LEVEL_*: 1 debug, 2 info, 3 warn, 4 error). */
WSHIM_API void wshim_log_level(int level) {
    atomic_store(&g_log_level, level);
    whisper_log_set(wshim_log_cb, NULL);
}

// ---------------------------------------------------------------- model

/**
 * Loads a model without the context's default state: every transcription brings its own (whisper_init_state).
 * Negative flags keep whisper.cpp's defaults (GPU on when built with one, flash attention on). `bytes` receives
 * [the size of the weights' buffers as whisper.cpp allocated them, the part of it in GPU memory].
 */
WSHIM_API struct whisper_context * wshim_init(const char * path, int use_gpu, int flash_attn, int gpu_device,
                                              double * bytes) {
    struct whisper_context_params cp = whisper_context_default_params();
    if (use_gpu >= 0) cp.use_gpu = use_gpu != 0;
    if (flash_attn >= 0) cp.flash_attn = flash_attn != 0;
    if (gpu_device >= 0) cp.gpu_device = gpu_device;
    capture_begin();
    struct whisper_context * ctx = whisper_init_from_file_with_params_no_state(path, cp);
    bytes[0] = capture_end(NULL);
    bytes[1] = t_captured_device;
    return ctx;
}

/**
 * The device whisper.cpp computes on for these flags, as it picks it (the `gpu_device`-th GPU when use_gpu),
 * written as "name (description)", or "CPU" for a CPU build or use_gpu 0. Returns the length.
 */
WSHIM_API int32_t wshim_device(int use_gpu, int gpu_device, char * buf, int32_t cap) {
    ggml_backend_dev_t dev = NULL;
    if (use_gpu != 0) {
        int cnt = 0;
        int want = gpu_device >= 0 ? gpu_device : 0;
        for (size_t i = 0; i < ggml_backend_dev_count() && !dev; i++) {
            ggml_backend_dev_t d = ggml_backend_dev_get(i);
            enum ggml_backend_dev_type t = ggml_backend_dev_type(d);
            if (t != GGML_BACKEND_DEVICE_TYPE_GPU && t != GGML_BACKEND_DEVICE_TYPE_IGPU) continue;
            if (cnt++ == want) dev = d;
        }
    }
    int n = dev ? snprintf(buf, (size_t) cap, "%s (%s)", ggml_backend_dev_name(dev), ggml_backend_dev_description(dev))
                : snprintf(buf, (size_t) cap, "CPU");
    return n;
}

/** A transcription's own state; `bytes` receives [its KV caches' and compute buffers' size, the part on a GPU]. */
WSHIM_API struct whisper_state * wshim_init_state(struct whisper_context * ctx, double * bytes) {
    capture_begin();
    struct whisper_state * state = whisper_init_state(ctx);
    bytes[0] = capture_end(NULL);
    bytes[1] = t_captured_device;
    return state;
}

// ---------------------------------------------------------------- jobs

typedef struct wshim_segment {
    int64_t t0;
    int64_t t1;
    char * text;
    /** Start of the 30 s window the segment was decoded in, in centiseconds (whisper's `seek`). */
    int64_t seek;
    /** The temperature of the decode whisper kept for that window (after any fallbacks). */
    float temperature;
} wshim_segment;

typedef struct wshim_job {
    atomic_int abort;
    pthread_mutex_t mu;
    wshim_segment * segs;
    int n_segs;
    int cap_segs;
    // Written on whisper_full's thread only (its callbacks), read back after it returns.
    float temperature;
    float temperature_inc;
    /** Decodes started in the current window: whisper.cpp retries at a higher temperature when one fails. */
    int attempts;
    /** The first token of the current attempt (as the first decoder to go on saw it), -1 before one. */
    int first_token;
    /** Segments of the current window so far; the first one tells where the window starts. */
    int window_segs;
    int64_t window_seek;
} wshim_job;

WSHIM_API wshim_job * wshim_job_new(void) {
    wshim_job * job = calloc(1, sizeof(wshim_job));
    if (!job) return NULL;
    atomic_init(&job->abort, 0);
    pthread_mutex_init(&job->mu, NULL);
    return job;
}

WSHIM_API void wshim_job_free(wshim_job * job) {
    if (!job) return;
    for (int i = 0; i < job->n_segs; i++) free(job->segs[i].text);
    free(job->segs);
    pthread_mutex_destroy(&job->mu);
    free(job);
}

/** Asks the running whisper_full to stop at its next check (before an encode, or inside a graph compute). */
WSHIM_API void wshim_job_abort(wshim_job * job) {
    atomic_store(&job->abort, 1);
}

/** Segments buffered so far. */
WSHIM_API int wshim_job_n_segments(wshim_job * job) {
    pthread_mutex_lock(&job->mu);
    const int n = job->n_segs;
    pthread_mutex_unlock(&job->mu);
    return n;
}

/**
 * Copies segment i's text (NUL-terminated, truncated to cap) and its times in centiseconds.
 * Returns the full text length in bytes, or -1 when segment i is not buffered yet.
 */
WSHIM_API int wshim_job_segment(wshim_job * job, int i, char * out, int cap, int64_t * t0t1) {
    pthread_mutex_lock(&job->mu);
    int len = -1;
    if (i >= 0 && i < job->n_segs) {
        const wshim_segment * s = &job->segs[i];
        len = (int) strlen(s->text);
        if (cap > 0) {
            const int n = len < cap - 1 ? len : cap - 1;
            memcpy(out, s->text, (size_t) n);
            out[n] = '\0';
        }
        t0t1[0] = s->t0;
        t0t1[1] = s->t1;
    }
    pthread_mutex_unlock(&job->mu);
    return len;
}

/** Segment i's window start (centiseconds) and decode temperature; 0 when it is buffered, -1 otherwise. */
WSHIM_API int wshim_job_segment_meta(wshim_job * job, int i, double * seek_temperature) {
    pthread_mutex_lock(&job->mu);
    int rc = -1;
    if (i >= 0 && i < job->n_segs) {
        seek_temperature[0] = (double) job->segs[i].seek;
        seek_temperature[1] = job->segs[i].temperature;
        rc = 0;
    }
    pthread_mutex_unlock(&job->mu);
    return rc;
}

static void on_new_segment(struct whisper_context * ctx, struct whisper_state * state, int n_new, void * user_data) {
    wshim_job * job = user_data;
    const int n = whisper_full_n_segments_from_state(state);
    pthread_mutex_lock(&job->mu);
    for (int i = n - n_new; i < n; i++) {
        if (job->n_segs == job->cap_segs) {
            const int cap = job->cap_segs ? job->cap_segs * 2 : 16;
            wshim_segment * segs = realloc(job->segs, (size_t) cap * sizeof(wshim_segment));
            if (!segs) break; // out of memory: the stream misses a delta, the final result is still complete
            job->segs = segs;
            job->cap_segs = cap;
        }
        const char * text = whisper_full_get_segment_text_from_state(state, i);
        wshim_segment * s = &job->segs[job->n_segs];
        s->text = strdup(text ? text : "");
        if (!s->text) break;
        s->t0 = whisper_full_get_segment_t0_from_state(state, i);
        s->t1 = whisper_full_get_segment_t1_from_state(state, i);
        if (job->window_segs++ == 0) {
            // whisper.cpp starts a window's first segment at seek + 2 * (ts - <|0.00|>), ts being the decode's
            // first token when that is a timestamp after <|0.00|> (whisper leaves it out of the segment; only one
            // timestamp can lead), else the timestamp id (tid) of the segment's first token.
            const whisper_token beg = whisper_token_beg(ctx);
            const whisper_token ts = job->first_token > beg
                ? job->first_token
                : whisper_full_get_token_data_from_state(state, i, 0).tid;
            job->window_seek = s->t0 - 2 * (int64_t) (ts - beg);
        }
        s->seek = job->window_seek;
        // whisper.cpp's temperature ladder: t, t + inc, t + 2 inc, ... (one attempt each until one passes).
        s->temperature = job->temperature + (job->attempts > 1 ? (float) (job->attempts - 1) * job->temperature_inc : 0.0f);
        job->n_segs++;
    }
    pthread_mutex_unlock(&job->mu);
}

static bool on_abort(void * user_data) {
    return atomic_load(&((wshim_job *) user_data)->abort) != 0;
}

/** Called before each 30 s window is encoded: a new window, no decode attempts yet. */
static bool on_encoder_begin(struct whisper_context * ctx, struct whisper_state * state, void * user_data) {
    (void) ctx;
    (void) state;
    wshim_job * job = user_data;
    job->attempts = 0;
    job->window_segs = 0;
    return !on_abort(user_data);
}

/**
 * Sees every sampling step; the one with no tokens yet is the start of a decode attempt (whisper.cpp processes
 * the prompt's logits once per temperature, then copies them to the other decoders). Leaves the logits alone.
 */
static void on_logits(struct whisper_context * ctx, struct whisper_state * state, const whisper_token_data * tokens,
                      int n_tokens, float * logits, void * user_data) {
    (void) ctx;
    (void) state;
    (void) logits;
    wshim_job * job = user_data;
    if (n_tokens == 0) {
        job->attempts++;
        job->first_token = -1;
    } else if (n_tokens == 1 && job->first_token < 0) {
        // With several decoders (a fallback's best_of, beam search) this is the first one's; they start from
        // the same distribution and, for a leading timestamp, almost always agree.
        job->first_token = tokens[0].id;
    }
}

/** The knobs the server sets per request; the rest stay at whisper.cpp's greedy defaults. */
typedef struct wshim_options {
    int32_t n_threads;
    int32_t translate;
    int32_t token_timestamps;
    int32_t no_timestamps;
    float temperature;
    /** 0 disables the temperature fallback; whisper.cpp's default is 0.2. */
    float temperature_inc;
    int32_t best_of;
    int32_t beam_size;
} wshim_options;

/** Size of wshim_options, so the caller can check its layout. */
WSHIM_API int wshim_options_size(void) {
    return (int) sizeof(wshim_options);
}

/**
 * Runs whisper_full_with_state on `state` (one per concurrent request). `language` NULL or "auto" detects it,
 * `prompt` NULL for none. Returns whisper's result code (0 ok); 1 when the job was aborted.
 */
WSHIM_API int wshim_full(struct whisper_context * ctx, struct whisper_state * state, wshim_job * job,
                         const wshim_options * o, const char * language, const char * prompt,
                         const float * samples, int n_samples) {
    const enum whisper_sampling_strategy strategy =
        o->beam_size > 1 ? WHISPER_SAMPLING_BEAM_SEARCH : WHISPER_SAMPLING_GREEDY;
    struct whisper_full_params p = whisper_full_default_params(strategy);
    p.n_threads = o->n_threads > 0 ? o->n_threads : 1;
    p.translate = o->translate != 0;
    p.no_context = true;
    p.no_timestamps = o->no_timestamps != 0;
    p.token_timestamps = o->token_timestamps != 0;
    p.print_special = false;
    p.print_progress = false;
    p.print_realtime = false;
    p.print_timestamps = false;
    p.temperature = o->temperature;
    p.temperature_inc = o->temperature_inc;
    if (o->best_of > 0) p.greedy.best_of = o->best_of;
    if (o->beam_size > 1) p.beam_search.beam_size = o->beam_size;
    p.language = language;
    p.detect_language = false;
    p.initial_prompt = prompt;
    p.new_segment_callback = on_new_segment;
    p.new_segment_callback_user_data = job;
    p.encoder_begin_callback = on_encoder_begin;
    p.encoder_begin_callback_user_data = job;
    p.logits_filter_callback = on_logits;
    p.logits_filter_callback_user_data = job;
    job->temperature = o->temperature;
    job->temperature_inc = o->temperature_inc;
    p.abort_callback = on_abort;
    p.abort_callback_user_data = job;
    const int rc = whisper_full_with_state(ctx, state, p, samples, n_samples);
    return on_abort(job) ? 1 : rc;
}

/**
 * Token j of segment i as eight doubles: id, tid, p, plog, pt, ptsum, t0, t1 (times in centiseconds, valid with
 * token timestamps). Saves the caller from mirroring whisper_token_data's by-value layout.
 */
WSHIM_API void wshim_token(struct whisper_state * state, int i, int j, double * out) {
    const whisper_token_data d = whisper_full_get_token_data_from_state(state, i, j);
    out[0] = d.id;
    out[1] = d.tid;
    out[2] = d.p;
    out[3] = d.plog;
    out[4] = d.pt;
    out[5] = d.ptsum;
    out[6] = (double) d.t0;
    out[7] = (double) d.t1;
}

// ---------------------------------------------------------------- voice activity detection

WSHIM_API struct whisper_vad_context * wshim_vad_init(const char * path, int n_threads, double * bytes) {
    struct whisper_vad_context_params cp = whisper_vad_default_context_params();
    cp.n_threads = n_threads > 0 ? n_threads : 1;
    cp.use_gpu = false;
    capture_begin();
    struct whisper_vad_context * vctx = whisper_vad_init_from_file_with_params(path, cp);
    capture_end(bytes);
    return vctx;
}

/**
 * Speech segments of `samples` (16 kHz mono) as start/end pairs in seconds, written to out (room for 2*cap
 * floats). Negative `threshold` etc. keep whisper.cpp's defaults. Returns the number of segments (may exceed cap:
 * call again with more room), or -1 on failure.
 */
WSHIM_API int wshim_vad_segments(struct whisper_vad_context * vctx, const float * samples, int n_samples,
                                 float threshold, int min_speech_ms, int min_silence_ms, int speech_pad_ms,
                                 float * out, int cap) {
    struct whisper_vad_params vp = whisper_vad_default_params();
    if (threshold >= 0) vp.threshold = threshold;
    if (min_speech_ms >= 0) vp.min_speech_duration_ms = min_speech_ms;
    if (min_silence_ms >= 0) vp.min_silence_duration_ms = min_silence_ms;
    if (speech_pad_ms >= 0) vp.speech_pad_ms = speech_pad_ms;
    struct whisper_vad_segments * segs = whisper_vad_segments_from_samples(vctx, vp, samples, n_samples);
    if (!segs) return -1;
    const int n = whisper_vad_segments_n_segments(segs);
    for (int i = 0; i < n && i < cap; i++) {
        // whisper.cpp reports centiseconds here despite the float type.
        out[2 * i] = whisper_vad_segments_get_segment_t0(segs, i) / 100.0f;
        out[2 * i + 1] = whisper_vad_segments_get_segment_t1(segs, i) / 100.0f;
    }
    whisper_vad_free_segments(segs);
    return n;
}

/*
 * Copies a C string the library owns into the caller's buffer (NUL-terminated, truncated to cap - 1 bytes) and
 * returns its full length, -1 for NULL. Reading it through Deno's pointer API instead would need unscoped
 * --allow-ffi; a buffer parameter keeps the server runnable with FFI scoped to this library.
 */
WSHIM_API int wshim_copy_cstr(const char * s, char * out, int cap) {
    if (!s) return -1;
    const int n = (int) strlen(s);
    if (cap > 0) {
        const int k = n < cap - 1 ? n : cap - 1;
        memcpy(out, s, (size_t) k);
        out[k] = 0;
    }
    return n;
}
