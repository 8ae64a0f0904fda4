// Owns which files of a hub repo a model needs: for transformers.js repos the config/tokenizer files and the
// ONNX weights of one dtype (with their external `_data` files), for whisper.cpp repos one `ggml-*.bin`, for
// GGUF repos (llama.cpp) one `.gguf` file.
// Also owns the task a repo serves and the dtype chosen when none is asked for. Each layout is a PullFormat
// that a backend's descriptor names (src/engines/*/descriptor.ts); planPull takes them in the order given.
import type { EngineKind, Task } from "../model_kinds.ts";
import { HubError } from "./errors.ts";
import type { HubFile, RepoInfo } from "./client.ts";
import { DTYPE_SUFFIX } from "./dtypes.ts";

export { DTYPE_SUFFIX };

/** Preferred dtypes when none is asked for: small weights for generation, full precision for embeddings. */
const DEFAULT_ORDER: Record<"chat" | "embedding", string[]> = {
  chat: ["q4", "q4f16", "q8", "int8", "uint8", "fp16", "fp32", "bnb4"],
  embedding: ["fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"],
};

/** Hub pipeline tags mapped to the task this server serves with them. */
const PIPELINE_TASK: Record<string, Task> = {
  "text-generation": "chat",
  "text2text-generation": "chat",
  "image-text-to-text": "chat",
  "feature-extraction": "embedding",
  "sentence-similarity": "embedding",
  "automatic-speech-recognition": "transcription",
};

const GGML = /^ggml-[^/]+\.bin$/;
const GGUF = /\.gguf$/i;
/** GGUF quants preferred when none is named: the usual size/quality balance first. */
const GGUF_ORDER = ["q4_k_m", "q4_k_s", "q5_k_m", "q4_0", "q8_0", "q6_k", "f16"];
/** Small files transformers.js and the engines read besides the weights. */
const SIDE_FILE = /\.(json|txt|jinja|model|tiktoken)$/;
/** Folders of sentence-transformers modules (1_Pooling/config.json) sit beside the weights. */
const MODULE_DIR = /^\d+_[A-Za-z]+$/;

export interface PullWish {
  task?: Task;
  dtype?: string;
  /** The ggml file of a whisper.cpp repo, or the .gguf file of a GGUF repo. */
  file?: string;
}

export interface PullPlan {
  /** The repo layout chosen (its format's name). */
  kind: "transformers" | "whisper" | "gguf";
  /** The backend that reads it. */
  engine: EngineKind;
  task: Task;
  /** transformers repos: the weight type chosen. */
  dtype?: string;
  /** whisper and GGUF repos: the one file chosen. */
  file?: string;
  files: HubFile[];
}

/** Splits `onnx/<base><suffix>.onnx` into base name and dtype; undefined for other files. */
export function onnxWeight(path: string): { base: string; dtype: string } | undefined {
  const m = /^onnx\/([^/]+)\.onnx$/.exec(path);
  if (!m) return undefined;
  const stem = m[1];
  // Longest suffix first, so `_q4f16` is not read as `_q4` plus "f16".
  const byLength = Object.entries(DTYPE_SUFFIX).filter(([, s]) => s).sort((a, b) =>
    b[1].length - a[1].length
  );
  for (const [dtype, suffix] of byLength) {
    if (stem.endsWith(suffix) && stem.length > suffix.length) {
      return { base: stem.slice(0, -suffix.length), dtype };
    }
  }
  return { base: stem, dtype: "fp32" };
}

/** The dtypes a repo offers for its main `model` weights (any base name when there is no `model`). */
export function availableDtypes(files: HubFile[]): string[] {
  const weights = files.map((f) => onnxWeight(f.path)).filter((w) => w !== undefined);
  const main = weights.some((w) => w.base === "model") ? weights.filter((w) => w.base === "model") : weights;
  const set = new Set(main.map((w) => w.dtype));
  return Object.keys(DTYPE_SUFFIX).filter((d) => set.has(d));
}

export function taskOfPipeline(tag: string | undefined): Task | undefined {
  return tag ? PIPELINE_TASK[tag] : undefined;
}

function isSideFile(path: string): boolean {
  const parts = path.split("/");
  if (!SIDE_FILE.test(path)) return false;
  return parts.length === 1 || (parts.length === 2 && MODULE_DIR.test(parts[0]));
}

function externalData(files: HubFile[], weight: string): HubFile[] {
  return files.filter((f) =>
    f.path.startsWith(`${weight}_data`) && /^_data(_\d+)?$/.test(f.path.slice(weight.length))
  );
}

/** A repo layout one backend reads: whether a repo (and what was asked) is in it, and what to take from it. */
export interface PullFormat {
  name: PullPlan["kind"];
  engine: EngineKind;
  /** Whether this layout is the one to take from `info` (the first format that says yes is used). */
  applies(info: RepoInfo, wish: PullWish): boolean;
  plan(info: RepoInfo, wish: PullWish): PullPlan;
}

const hasOnnx = (info: RepoInfo) => info.files.some((f) => onnxWeight(f.path));

/** whisper.cpp's ggml files, taken when asked for (task or file) or when the repo has no ONNX weights. */
export const WHISPER_FORMAT: PullFormat = {
  name: "whisper",
  engine: "whisper.cpp",
  applies: (info, wish) => {
    const wants = wish.task === "transcription" || (wish.file !== undefined && GGML.test(wish.file));
    return info.files.some((f) => GGML.test(f.path)) && (wants || !hasOnnx(info));
  },
  plan: (info, wish) => planWhisper(info, info.files.filter((f) => GGML.test(f.path)), wish),
};

/** One GGUF file (llama.cpp), taken when the repo has no ONNX weights or a .gguf file is asked for. */
export const GGUF_FORMAT: PullFormat = {
  name: "gguf",
  engine: "llama.cpp",
  applies: (info, wish) =>
    info.files.some((f) => GGUF.test(f.path)) &&
    (!hasOnnx(info) || (wish.file !== undefined && GGUF.test(wish.file))),
  plan: (info, wish) => planGguf(info, info.files.filter((f) => GGUF.test(f.path)), wish),
};

/** transformers.js: config, tokenizer and the ONNX weights of one dtype. */
export const ONNX_FORMAT: PullFormat = {
  name: "transformers",
  engine: "transformers",
  applies: (info) => hasOnnx(info),
  plan: (info, wish) => planTransformers(info, wish),
};

/**
 * Decides what to download for `info` given what the user asked for, in the first of `formats` (the
 * backends' layouts, in their order) that applies; errors say what is available.
 */
export function planPull(info: RepoInfo, wish: PullWish, formats: readonly PullFormat[]): PullPlan {
  const format = formats.find((f) => f.applies(info, wish));
  if (!format) {
    throw new HubError(
      `${info.repo} has neither ONNX weights under onnx/ nor ggml-*.bin files: not a model this server runs`,
    );
  }
  return format.plan(info, wish);
}

function planWhisper(info: RepoInfo, ggml: HubFile[], wish: PullWish): PullPlan {
  if (wish.task && wish.task !== "transcription") {
    throw new HubError(`${info.repo} holds whisper.cpp ggml files: a transcription model, not ${wish.task}`);
  }
  let chosen: HubFile | undefined;
  if (wish.file) {
    chosen = ggml.find((f) => f.path === wish.file);
    if (!chosen) {
      throw new HubError(`${info.repo} has no ${wish.file}; it has ${listSome(ggml.map((f) => f.path))}`);
    }
  } else if (ggml.length === 1) {
    chosen = ggml[0];
  } else {
    throw new HubError(
      `${info.repo} has ${ggml.length} ggml files: choose one with --file (${
        listSome(ggml.map((f) => f.path))
      })`,
    );
  }
  return {
    kind: "whisper",
    engine: "whisper.cpp",
    task: "transcription",
    file: chosen.path,
    files: [chosen],
  };
}

function planGguf(info: RepoInfo, gguf: HubFile[], wish: PullWish): PullPlan {
  const task = wish.task ?? taskOfPipeline(info.pipelineTag) ?? "chat";
  if (task === "transcription") {
    throw new HubError(`${info.repo} holds GGUF files: not a transcription model`);
  }
  let chosen: HubFile | undefined;
  if (wish.file) {
    chosen = gguf.find((f) => f.path === wish.file);
    if (!chosen) {
      throw new HubError(`${info.repo} has no ${wish.file}; it has ${listSome(gguf.map((f) => f.path))}`);
    }
  } else {
    // Split files (-00001-of-00003) are not served; a single file in the preferred quant is.
    const whole = gguf.filter((f) => !/-\d{5}-of-\d{5}\.gguf$/i.test(f.path));
    const rank = (f: HubFile) => {
      const i = GGUF_ORDER.findIndex((q) => f.path.toLowerCase().includes(q));
      return i < 0 ? GGUF_ORDER.length : i;
    };
    chosen = whole.length === 1 ? whole[0] : whole.sort((a, b) => rank(a) - rank(b))[0];
    if (!chosen || (whole.length > 1 && rank(chosen) === GGUF_ORDER.length)) {
      throw new HubError(
        `${info.repo} has ${gguf.length} GGUF files: choose one with --file (${
          listSome(gguf.map((f) => f.path))
        })`,
      );
    }
  }
  return { kind: "gguf", engine: "llama.cpp", task, file: chosen.path, files: [chosen] };
}

function planTransformers(info: RepoInfo, wish: PullWish): PullPlan {
  const task = wish.task ?? taskOfPipeline(info.pipelineTag);
  if (!task) {
    throw new HubError(
      `cannot tell what ${info.repo} is for (hub pipeline tag: ${
        info.pipelineTag ?? "none"
      }): pass --task chat or --task embedding`,
    );
  }
  if (task === "transcription") {
    throw new HubError(`${info.repo} is an ONNX repo; transcription here uses whisper.cpp ggml files`);
  }
  const available = availableDtypes(info.files);
  let dtype = wish.dtype;
  if (dtype !== undefined) {
    if (!(dtype in DTYPE_SUFFIX)) {
      throw new HubError(`unknown dtype "${dtype}" (one of ${Object.keys(DTYPE_SUFFIX).join(", ")})`);
    }
    if (!available.includes(dtype)) {
      throw new HubError(`${info.repo} has no ${dtype} weights; available: ${available.join(", ")}`);
    }
  } else {
    dtype = DEFAULT_ORDER[task].find((d) => available.includes(d)) ?? available[0];
  }
  const weights = info.files.filter((f) => onnxWeight(f.path)?.dtype === dtype);
  const main = weights.filter((f) => onnxWeight(f.path)!.base === "model");
  // Encoder-decoder repos have several sessions (encoder_model, decoder_model_merged, ...): take them all.
  const chosen = main.length > 0 ? main : weights;
  const files = [
    ...info.files.filter((f) => isSideFile(f.path)),
    ...chosen.flatMap((w) => [w, ...externalData(info.files, w.path)]),
  ];
  if (!files.some((f) => f.path === "config.json")) {
    throw new HubError(`${info.repo} has no config.json: not a transformers.js repo`);
  }
  return { kind: "transformers", engine: "transformers", task, dtype, files };
}

function listSome(names: string[]): string {
  return names.length <= 8
    ? names.join(", ")
    : `${names.slice(0, 8).join(", ")}, ... (${names.length} in all)`;
}
