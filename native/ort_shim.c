// The ONNX backend's native boundary: onnxruntime's C API (the OrtApi table of the libonnxruntime that
// onnxruntime-node ships) behind plain functions that take buffers and 64-bit handles only. Deno refuses
// pointer arithmetic, pointer reads and calls through function pointers under a path-scoped --allow-ffi; with
// this shim the ONNX backend needs nothing but dlopen of it, as the llama.cpp and whisper.cpp shims do.
//
// No onnxruntime headers: the table is read by position. Its order never changes between releases (new
// functions are appended), and every function used here exists since API version 5; version 16 is asked for.
// Handles (sessions, tensors) cross to JS as uint64 values; errors come back as text in the caller's buffer.
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void Status;

enum {
  GET_ERROR_MESSAGE = 2,
  CREATE_ENV = 3,
  CREATE_SESSION = 7,
  RUN = 9,
  CREATE_SESSION_OPTIONS = 10,
  SET_INTRA_OP_NUM_THREADS = 24,
  SET_INTER_OP_NUM_THREADS = 25,
  SESSION_GET_INPUT_COUNT = 30,
  SESSION_GET_OUTPUT_COUNT = 31,
  SESSION_GET_INPUT_TYPE_INFO = 33,
  SESSION_GET_OUTPUT_TYPE_INFO = 34,
  SESSION_GET_INPUT_NAME = 36,
  SESSION_GET_OUTPUT_NAME = 37,
  CREATE_TENSOR_WITH_DATA_AS_ORT_VALUE = 49,
  CAST_TYPE_INFO_TO_TENSOR_INFO = 55,
  GET_TENSOR_ELEMENT_TYPE = 60,
  GET_DIMENSIONS_COUNT = 61,
  GET_DIMENSIONS = 62,
  CREATE_CPU_MEMORY_INFO = 69,
  ALLOCATOR_FREE = 76,
  GET_ALLOCATOR_WITH_DEFAULT_OPTIONS = 78,
  RELEASE_STATUS = 93,
  RELEASE_SESSION = 95,
  RELEASE_VALUE = 96,
  RELEASE_TYPE_INFO = 98,
  RELEASE_SESSION_OPTIONS = 100,
  ADD_SESSION_CONFIG_ENTRY = 130,
};
#define API_VERSION 16
/** Most names one run passes (a decoder's inputs: ids, mask, positions and a past per layer and head). */
#define MAX_NAMES 1024

static void *const *api;
static void *env, *cpu_info, *allocator;
/** Set once every global above is; each model's worker thread opens the shim, so opening is serialized. */
static int ready;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

#define CALL(i, type, ...) ((type)api[i])(__VA_ARGS__)

/** 0, or -1 with the status's message in err (the status is freed). */
static int fail(Status *s, char *err, int err_len) {
  if (!s) return 0;
  const char *msg = CALL(GET_ERROR_MESSAGE, const char *(*)(Status *), s);
  snprintf(err, (size_t)err_len, "%s", msg ? msg : "onnxruntime failed");
  CALL(RELEASE_STATUS, void (*)(Status *), s);
  return -1;
}

#define CHECK(expr)                                       \
  do {                                                    \
    if (fail((expr), err, err_len)) return -1;            \
  } while (0)

static int open_locked(const char *library, char *err, int err_len) {
  void *lib = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    snprintf(err, (size_t)err_len, "%s", dlerror());
    return -1;
  }
  typedef struct {
    void *const *(*GetApi)(uint32_t version);
  } ApiBase;
  ApiBase *(*get_base)(void) = (ApiBase * (*)(void)) dlsym(lib, "OrtGetApiBase");
  if (!get_base) {
    snprintf(err, (size_t)err_len, "%s has no OrtGetApiBase", library);
    return -1;
  }
  api = get_base()->GetApi(API_VERSION);
  if (!api) {
    snprintf(err, (size_t)err_len, "this onnxruntime has no C API version %d", API_VERSION);
    return -1;
  }
  // One environment per process: onnxruntime hands back the one onnxruntime-node already made.
  CHECK(CALL(CREATE_ENV, Status * (*)(int, const char *, void **), 3, "oai", &env));
  CHECK(CALL(CREATE_CPU_MEMORY_INFO, Status * (*)(int, int, void **), 0, 0, &cpu_info));
  CHECK(CALL(GET_ALLOCATOR_WITH_DEFAULT_OPTIONS, Status * (*)(void **), &allocator));
  return 0;
}

/** Opens onnxruntime's C API from `library` (once per process; later calls return at once). 0 or -1. */
int oshim_open(const char *library, char *err, int err_len) {
  pthread_mutex_lock(&open_lock);
  int rc = ready ? 0 : open_locked(library, err, err_len);
  if (rc == 0) ready = 1;
  pthread_mutex_unlock(&open_lock);
  return rc;
}

/** A session over `path`; `config` holds key\0value\0 pairs ended by an empty key. */
int oshim_session(const char *path, int threads, const char *config, uint64_t *out, char *err, int err_len) {
  void *so = NULL;
  CHECK(CALL(CREATE_SESSION_OPTIONS, Status * (*)(void **), &so));
  Status *s = CALL(SET_INTRA_OP_NUM_THREADS, Status * (*)(void *, int), so, threads);
  if (!s) s = CALL(SET_INTER_OP_NUM_THREADS, Status * (*)(void *, int), so, 1);
  for (const char *k = config; !s && *k;) {
    const char *v = k + strlen(k) + 1;
    s = CALL(ADD_SESSION_CONFIG_ENTRY, Status * (*)(void *, const char *, const char *), so, k, v);
    k = v + strlen(v) + 1;
  }
  void *session = NULL;
  if (!s) s = CALL(CREATE_SESSION, Status * (*)(void *, const char *, void *, void **), env, path, so, &session);
  CALL(RELEASE_SESSION_OPTIONS, void (*)(void *), so);
  CHECK(s);
  *out = (uint64_t)(uintptr_t)session;
  return 0;
}

/** Appends one "I|O<TAB>name<TAB>element type<TAB>dims,comma,separated\n" line per input or output. */
static int describe(void *session, int output, char *out, int out_len, int *at, char *err, int err_len) {
  size_t count = 0;
  CHECK(CALL(output ? SESSION_GET_OUTPUT_COUNT : SESSION_GET_INPUT_COUNT, Status * (*)(void *, size_t *),
             session, &count));
  for (size_t i = 0; i < count; i++) {
    char *name = NULL;
    CHECK(CALL(output ? SESSION_GET_OUTPUT_NAME : SESSION_GET_INPUT_NAME,
               Status * (*)(void *, size_t, void *, char **), session, i, allocator, &name));
    int n = snprintf(out + *at, (size_t)(out_len - *at), "%c\t%s\t", output ? 'O' : 'I', name);
    CALL(ALLOCATOR_FREE, Status * (*)(void *, void *), allocator, name);
    if (n < 0 || *at + n >= out_len) goto full;
    *at += n;
    void *type_info = NULL;
    CHECK(CALL(output ? SESSION_GET_OUTPUT_TYPE_INFO : SESSION_GET_INPUT_TYPE_INFO,
               Status * (*)(void *, size_t, void **), session, i, &type_info));
    const void *tensor = NULL;
    Status *s = CALL(CAST_TYPE_INFO_TO_TENSOR_INFO, Status * (*)(void *, const void **), type_info, &tensor);
    int elem = 0;
    size_t ndims = 0;
    int64_t dims[16];
    if (!s && tensor) {
      s = CALL(GET_TENSOR_ELEMENT_TYPE, Status * (*)(const void *, int *), tensor, &elem);
      if (!s) s = CALL(GET_DIMENSIONS_COUNT, Status * (*)(const void *, size_t *), tensor, &ndims);
      if (!s && ndims > 16) ndims = 16;
      if (!s) s = CALL(GET_DIMENSIONS, Status * (*)(const void *, int64_t *, size_t), tensor, dims, ndims);
    }
    CALL(RELEASE_TYPE_INFO, void (*)(void *), type_info);
    CHECK(s);
    n = snprintf(out + *at, (size_t)(out_len - *at), "%d\t", elem);
    if (n < 0 || *at + n >= out_len) goto full;
    *at += n;
    for (size_t d = 0; d < ndims; d++) {
      n = snprintf(out + *at, (size_t)(out_len - *at), d ? ",%lld" : "%lld", (long long)dims[d]);
      if (n < 0 || *at + n >= out_len) goto full;
      *at += n;
    }
    if (*at + 1 >= out_len) goto full;
    out[(*at)++] = '\n';
  }
  out[*at] = 0;
  return 0;
full:
  snprintf(err, (size_t)err_len, "session description longer than %d bytes", out_len);
  return -1;
}

/** The session's inputs then outputs, as describe() writes them; 0 or -1. */
int oshim_describe(uint64_t session, char *out, int out_len, char *err, int err_len) {
  int at = 0;
  if (describe((void *)(uintptr_t)session, 0, out, out_len, &at, err, err_len)) return -1;
  return describe((void *)(uintptr_t)session, 1, out, out_len, &at, err, err_len);
}

/** A tensor over the caller's memory (which must outlive it and stay where it is). */
int oshim_tensor(void *data, uint64_t bytes, const int64_t *dims, uint64_t ndims, int type, uint64_t *out,
                 char *err, int err_len) {
  void *value = NULL;
  CHECK(CALL(CREATE_TENSOR_WITH_DATA_AS_ORT_VALUE,
             Status * (*)(void *, void *, size_t, const int64_t *, size_t, int, void **), cpu_info, data,
             (size_t)bytes, dims, (size_t)ndims, type, &value));
  *out = (uint64_t)(uintptr_t)value;
  return 0;
}

void oshim_release_value(uint64_t value) { CALL(RELEASE_VALUE, void (*)(void *), (void *)(uintptr_t)value); }

void oshim_release_session(uint64_t session) {
  CALL(RELEASE_SESSION, void (*)(void *), (void *)(uintptr_t)session);
}

/** Splits n NUL-separated names into `out`. */
static int split(const char *names, uint64_t n, const char **out) {
  if (n > MAX_NAMES) return -1;
  for (uint64_t i = 0; i < n; i++) out[i] = names, names += strlen(names) + 1;
  return 0;
}

/**
 * One run writing into the caller's output tensors (bound, so onnxruntime allocates none). Names are
 * NUL-separated lists; values are tensor handles. Called off the JS thread (a nonblocking FFI call).
 */
int oshim_run(uint64_t session, const char *in_names, const uint64_t *in_values, uint64_t n_in,
              const char *out_names, const uint64_t *out_values, uint64_t n_out, char *err, int err_len) {
  const char *ins[MAX_NAMES], *outs[MAX_NAMES];
  if (split(in_names, n_in, ins) || split(out_names, n_out, outs)) {
    snprintf(err, (size_t)err_len, "more than %d inputs or outputs", MAX_NAMES);
    return -1;
  }
  void *in_vals[MAX_NAMES], *out_vals[MAX_NAMES];
  for (uint64_t i = 0; i < n_in; i++) in_vals[i] = (void *)(uintptr_t)in_values[i];
  for (uint64_t i = 0; i < n_out; i++) out_vals[i] = (void *)(uintptr_t)out_values[i];
  CHECK(CALL(RUN,
             Status * (*)(void *, const void *, const char *const *, void *const *, size_t, const char *const *,
                          size_t, void **),
             (void *)(uintptr_t)session, NULL, ins, in_vals, (size_t)n_in, outs, (size_t)n_out, out_vals));
  return 0;
}
