// Owns reading back how much memory ggml-based libraries allocate: llama.cpp and whisper.cpp report each
// buffer they allocate (weights, KV caches, compute buffers) in an INFO log line and offer no call that returns
// those sizes. A shim's log callback passes every line here; while a call of the same thread is being
// measured (capture_begin .. capture_end), the sizes in those lines are summed. Thread-local, so models
// loading at once in other threads never mix. Included by shim.c and llama_shim.c (one copy each).
#ifndef OAI_BUFFER_SIZES_H
#define OAI_BUFFER_SIZES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local int t_capturing = 0;
static _Thread_local double t_captured = 0;
/** The part of t_captured in a GPU's own memory (buffers named after a device, not CPU* nor *_Host). */
static _Thread_local double t_captured_device = 0;
/** llama.cpp's "offloaded N/M layers to GPU" line: N and M, or -1 when it printed none. */
static _Thread_local int t_offloaded = -1;
static _Thread_local int t_layers = -1;

/** Whether the buffer named just before `at` (e.g. "Vulkan0 model buffer size") lives in a device's memory. */
static int device_buffer(const char * line, const char * at, int skip_kind) {
    // llama.cpp: the buffer type's name is the word before "model"/"KV"/"compute"/"output"/"RS" (skip_kind);
    // whisper.cpp: the word right before "total size".
    const char * end = at;
    while (end > line && end[-1] == ' ') end--;
    if (skip_kind) {
        while (end > line && end[-1] != ' ') end--;
        while (end > line && end[-1] == ' ') end--;
    }
    const char * start = end;
    while (start > line && start[-1] != ' ' && start[-1] != ':' && start[-1] != '\t') start--;
    size_t n = (size_t) (end - start);
    if (n == 0) return 0;
    if (n >= 3 && strncmp(start, "CPU", 3) == 0) return 0;
    if (n >= 5 && strncmp(end - 5, "_Host", 5) == 0) return 0;
    return 1;
}

/** Lines that report an allocation, and only those: a line reporting a total of others is not among them. */
static const char * const CAPTURED_KEYS[] = {
    "buffer size =",    // llama.cpp: model, KV, compute and output buffers ("CPU KV buffer size = 2.00 MiB")
    "total size =",     // whisper.cpp: each weights buffer ("CPU total size = 77.11 MB")
    "kv self size",     // whisper.cpp: a state's caches
    "kv cross size",
    "kv pad  size",
    "compute buffer (", // whisper.cpp: a state's (or a VAD context's) compute buffers
};

static void capture_line(const char * text) {
    if (!t_capturing || !text) return;
    const char * off = strstr(text, "offloaded ");
    if (off && strstr(off, "layers to GPU")) {
        int a = -1, b = -1;
        if (sscanf(off, "offloaded %d/%d", &a, &b) == 2) {
            t_offloaded = a;
            t_layers = b;
        }
        return;
    }
    for (size_t k = 0; k < sizeof(CAPTURED_KEYS) / sizeof(CAPTURED_KEYS[0]); k++) {
        const char * at = strstr(text, CAPTURED_KEYS[k]);
        if (!at) continue;
        const char * eq = strchr(at, '=');
        if (!eq) return;
        char * end = NULL;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1) return;
        while (*end == ' ') end++;
        if (strncmp(end, "MiB", 3) == 0) v *= 1048576.0;
        else if (strncmp(end, "MB", 2) == 0) v *= 1e6;
        else if (strncmp(end, "KiB", 3) == 0) v *= 1024.0;
        else if (strncmp(end, "kB", 2) == 0) v *= 1e3;
        else if (*end != 'B') return;
        t_captured += v;
        if (k <= 1 && device_buffer(text, at, k == 0)) t_captured_device += v;
        return;
    }
}

static void capture_begin(void) {
    t_capturing = 1;
    t_captured = 0;
    t_captured_device = 0;
    t_offloaded = -1;
    t_layers = -1;
}

/** The bytes reported since capture_begin on this thread; writes them to `out` when given. */
static double capture_end(double * out) {
    t_capturing = 0;
    if (out) *out = t_captured;
    return t_captured;
}

#endif
