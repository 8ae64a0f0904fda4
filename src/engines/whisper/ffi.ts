// Owns the native boundary to whisper.cpp: finding the one library built by native/build.ts (shim, whisper and
// a hidden, static ggml), its Deno.dlopen, the symbol table, and the helpers for C strings. whisper_full and VAD run as nonblocking calls
// (on a thread of Deno's pool) so the event loop keeps serving while they work. Loaded once per process.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Layout of wshim_options in native/shim.c (checked against wshim_options_size at load). */
export const OPTIONS_SIZE = 32;

const SHIM = {
  wshim_log_level: { parameters: ["i32"], result: "void" },
  wshim_init: { parameters: ["buffer", "i32", "i32", "i32", "buffer"], result: "pointer", nonblocking: true },
  wshim_init_state: { parameters: ["pointer", "buffer"], result: "pointer", nonblocking: true },
  wshim_device: { parameters: ["i32", "i32", "buffer", "i32"], result: "i32" },
  wshim_job_new: { parameters: [], result: "pointer" },
  wshim_job_free: { parameters: ["pointer"], result: "void" },
  wshim_job_abort: { parameters: ["pointer"], result: "void" },
  wshim_job_n_segments: { parameters: ["pointer"], result: "i32" },
  wshim_job_segment: { parameters: ["pointer", "i32", "buffer", "i32", "buffer"], result: "i32" },
  wshim_job_segment_meta: { parameters: ["pointer", "i32", "buffer"], result: "i32" },
  wshim_options_size: { parameters: [], result: "i32" },
  wshim_full: {
    parameters: ["pointer", "pointer", "pointer", "buffer", "buffer", "buffer", "buffer", "i32"],
    result: "i32",
    nonblocking: true,
  },
  wshim_token: { parameters: ["pointer", "i32", "i32", "buffer"], result: "void" },
  wshim_copy_cstr: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  wshim_vad_init: { parameters: ["buffer", "i32", "buffer"], result: "pointer", nonblocking: true },
  wshim_vad_segments: {
    parameters: ["pointer", "buffer", "i32", "f32", "i32", "i32", "i32", "buffer", "i32"],
    result: "i32",
    nonblocking: true,
  },
} as const satisfies Deno.ForeignLibraryInterface;

const WHISPER = {
  whisper_free_state: { parameters: ["pointer"], result: "void" },
  whisper_free: { parameters: ["pointer"], result: "void" },
  whisper_vad_free: { parameters: ["pointer"], result: "void" },
  whisper_is_multilingual: { parameters: ["pointer"], result: "i32" },
  whisper_model_type_readable: { parameters: ["pointer"], result: "pointer" },
  whisper_lang_max_id: { parameters: [], result: "i32" },
  whisper_model_n_vocab: { parameters: ["pointer"], result: "i32" },
  whisper_lang_str: { parameters: ["i32"], result: "pointer" },
  whisper_lang_str_full: { parameters: ["i32"], result: "pointer" },
  whisper_token_eot: { parameters: ["pointer"], result: "i32" },
  whisper_full_lang_id_from_state: { parameters: ["pointer"], result: "i32" },
  whisper_full_n_segments_from_state: { parameters: ["pointer"], result: "i32" },
  whisper_full_get_segment_t0_from_state: { parameters: ["pointer", "i32"], result: "i64" },
  whisper_full_get_segment_t1_from_state: { parameters: ["pointer", "i32"], result: "i64" },
  whisper_full_get_segment_text_from_state: { parameters: ["pointer", "i32"], result: "pointer" },
  whisper_full_get_segment_no_speech_prob_from_state: { parameters: ["pointer", "i32"], result: "f32" },
  whisper_full_n_tokens_from_state: { parameters: ["pointer", "i32"], result: "i32" },
  whisper_full_get_token_text_from_state: {
    parameters: ["pointer", "pointer", "i32", "i32"],
    result: "pointer",
  },
  whisper_print_system_info: { parameters: [], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

export type ShimSymbols = Deno.DynamicLibrary<typeof SHIM>["symbols"];
export type WhisperSymbols = Deno.DynamicLibrary<typeof WHISPER>["symbols"];

export interface WhisperLib {
  shim: ShimSymbols;
  whisper: WhisperSymbols;
  /** The shim library's path, for messages. */
  path: string;
}

/** File name of a shared library on this OS. */
export function libFile(base: string, os: typeof Deno.build.os = Deno.build.os): string {
  if (os === "windows") return `${base}.dll`;
  if (os === "darwin") return `lib${base}.dylib`;
  return `lib${base}.so`;
}

/** The repository's default build output, next to this source tree (absent inside a compiled binary). */
export function defaultLibDir(): string | undefined {
  try {
    return fileURLToPath(new URL("../../../native/build/lib/", import.meta.url));
  } catch {
    return undefined;
  }
}

/** Raised when the libraries are not where the config says; the message says how to build them. */
export class WhisperLibraryMissing extends Error {
  override name = "WhisperLibraryMissing";
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await Deno.stat(p)).isFile;
  } catch {
    return false;
  }
}

/**
 * Resolves the shim from a folder or a file path (the --whisper-lib flag); without one, from this checkout's
 * native/build/lib. whisper_* and wshim_* both live in it.
 */
export async function findLibrary(configured?: string): Promise<{ shim: string }> {
  // Not configured: this checkout's build output, then lib/ beside a compiled server binary.
  const candidates = configured ? [configured] : [defaultLibDir(), join(dirname(Deno.execPath()), "lib")];
  let shim: string | undefined;
  for (const where of candidates) {
    if (!where) continue;
    shim = /\.(so|dylib|dll)$/.test(where) ? where : join(where, libFile("whisper_shim"));
    if (await isFile(shim)) return { shim };
  }
  throw new WhisperLibraryMissing(
    `the whisper.cpp library is not built (looked for ${shim ?? libFile("whisper_shim")}). Build it with ` +
      "`deno task native:build` (or `deno run -A native/build.ts --if-missing`), or point --whisper-lib / " +
      "OAI_WHISPER_LIB at the folder holding it.",
  );
}

let loaded: { key: string; lib: WhisperLib } | undefined;

const LOG_LEVELS: Record<string, number> = { debug: 1, info: 2, warn: 3, error: 4, none: 5 };

/** Opens the libraries once per process; later calls get the same handles. */
export async function openWhisper(configured?: string): Promise<WhisperLib> {
  const paths = await findLibrary(configured);
  if (loaded) {
    if (loaded.key !== paths.shim) {
      throw new Error(`whisper.cpp is already loaded from ${loaded.key}; one library per process`);
    }
    return loaded.lib;
  }
  // One file, two symbol tables: whisper.cpp's own API and the shim's.
  const whisper = Deno.dlopen(paths.shim, WHISPER).symbols;
  const shim = Deno.dlopen(paths.shim, SHIM).symbols;
  if (shim.wshim_options_size() !== OPTIONS_SIZE) {
    throw new Error(`${paths.shim} does not match this server (options layout); rebuild with native:build`);
  }
  shim.wshim_log_level(LOG_LEVELS[(Deno.env.get("OAI_WHISPER_LOG") ?? "warn").toLowerCase()] ?? 3);
  loaded = { key: paths.shim, lib: { shim, whisper, path: paths.shim } };
  return loaded.lib;
}

const encoder = new TextEncoder();

/** A NUL-terminated UTF-8 copy of `s` for a `buffer` parameter; null stays null. */
export function cstr(s: string | null | undefined): Uint8Array<ArrayBuffer> | null {
  if (s === null || s === undefined) return null;
  const bytes = encoder.encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

const decoder = new TextDecoder();
const strBuf = new Uint8Array(4096);

/**
 * Reads a C string the library owns; "" for NULL. The shim copies it into a buffer because Deno's pointer
 * views need unscoped --allow-ffi, and the server runs with FFI scoped to this library.
 */
export function readCstr(p: Deno.PointerValue): string {
  if (p === null || !loaded) return "";
  const shim = loaded.lib.shim;
  const n = shim.wshim_copy_cstr(p, strBuf, strBuf.length);
  if (n < 0) return "";
  if (n < strBuf.length) return decoder.decode(strBuf.subarray(0, n));
  const big = new Uint8Array(n + 1);
  shim.wshim_copy_cstr(p, big, big.length);
  return decoder.decode(big.subarray(0, n));
}

export type WhisperVariant = "auto" | "cpu" | "vulkan" | "cuda" | "metal";
const BUILD_DIR = fileURLToPath(new URL("../../../native/build/", import.meta.url));

/**
 * The folder of the whisper.cpp build the server should load: the named GPU build (native/build/lib-<gpu>/,
 * `native/build.ts --gpu <gpu>`) or the CPU one (lib/); for "auto", the GPU API setup chose for llama.cpp on
 * this host (native/build/llama/variant.json) when whisper.cpp was built for it too, else the CPU build
 * (undefined: the loader's default).
 */
export function whisperLibFor(variant: WhisperVariant, buildDir = BUILD_DIR): string | undefined {
  let v: string = variant;
  if (v === "auto") {
    try {
      v = JSON.parse(Deno.readTextFileSync(join(buildDir, "llama", "variant.json"))).default;
    } catch {
      return undefined;
    }
    if (v === "cpu") return undefined;
    try {
      Deno.statSync(join(buildDir, `lib-${v}`, "libwhisper_shim.so"));
    } catch {
      return undefined;
    }
  }
  return v === "cpu" ? join(buildDir, "lib") : join(buildDir, `lib-${v}`);
}
