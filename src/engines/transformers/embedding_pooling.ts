// Owns how token states become one sentence vector: reading the model's own pooling definition
// (sentence-transformers `modules.json` + `1_Pooling/config.json`), the pooling math over a padded batch, and
// L2 normalization / Matryoshka-style truncation. Pure functions over typed arrays; no model, no I/O.

/** The pooling modes sentence-transformers defines, in the order it concatenates them. */
export type PoolingMode = "cls" | "max" | "mean" | "mean_sqrt_len" | "weightedmean" | "lasttoken";

export interface PoolingSpec {
  /** One or more modes; several are concatenated (as sentence-transformers does). */
  modes: PoolingMode[];
  /** Whether the model's pipeline ends in an L2 normalization. */
  normalize: boolean;
  /** Where the spec came from, for the load log line. */
  source: string;
}

/** Used when the model ships no sentence-transformers config. */
export const DEFAULT_POOLING: PoolingSpec = { modes: ["mean"], normalize: true, source: "default" };

const MODE_KEYS: [string, PoolingMode][] = [
  ["pooling_mode_cls_token", "cls"],
  ["pooling_mode_max_tokens", "max"],
  ["pooling_mode_mean_tokens", "mean"],
  ["pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"],
  ["pooling_mode_weightedmean_tokens", "weightedmean"],
  ["pooling_mode_lasttoken", "lasttoken"],
];

/** The newer single-string form (`"pooling_mode": "mean"`) and its aliases. */
const MODE_NAMES: Record<string, PoolingMode> = {
  cls: "cls",
  max: "max",
  mean: "mean",
  mean_sqrt_len_tokens: "mean_sqrt_len",
  mean_sqrt_len: "mean_sqrt_len",
  weightedmean: "weightedmean",
  lasttoken: "lasttoken",
};

export interface StModule {
  idx?: number;
  name?: string;
  path?: string;
  type?: string;
}

/** Thrown when the model's sentence-transformers pipeline has a step this engine cannot run. */
export class UnsupportedPooling extends Error {
  override name = "UnsupportedPooling";
}

/**
 * The pooling spec from `modules.json` (list of modules) and the Pooling module's config. `readPooling`
 * returns the parsed `config.json` of the Pooling module's folder (or undefined when absent).
 */
export function poolingFromModules(
  modules: StModule[],
  readPooling: (folder: string) => Record<string, unknown> | undefined,
): PoolingSpec {
  let modes: PoolingMode[] | undefined;
  let normalize = false;
  for (const m of modules) {
    const type = m.type ?? "";
    const kind = type.split(".").pop() ?? "";
    if (kind === "Transformer" || kind === "Normalize") {
      if (kind === "Normalize") normalize = true;
      continue;
    }
    if (kind === "Pooling") {
      const cfg = readPooling(m.path ?? "");
      if (!cfg) {
        throw new UnsupportedPooling(
          `modules.json lists a Pooling module but ${m.path}/config.json is missing`,
        );
      }
      modes = poolingModes(cfg);
      continue;
    }
    // Dense, LayerNorm, ... change the vector with weights that are not part of the ONNX graph.
    throw new UnsupportedPooling(`sentence-transformers module ${type || m.name} is not supported`);
  }
  return { modes: modes ?? ["mean"], normalize, source: modes ? "sentence-transformers" : "modules.json" };
}

/** The modes enabled in a Pooling `config.json`. */
export function poolingModes(cfg: Record<string, unknown>): PoolingMode[] {
  if (typeof cfg.pooling_mode === "string") {
    const mode = MODE_NAMES[cfg.pooling_mode];
    if (!mode) throw new UnsupportedPooling(`pooling mode ${cfg.pooling_mode} is not supported`);
    return [mode];
  }
  const modes = MODE_KEYS.filter(([key]) => cfg[key] === true).map(([, mode]) => mode);
  if (modes.length === 0) throw new UnsupportedPooling("the Pooling config enables no pooling mode");
  return modes;
}

/** Output width of a spec for a hidden size. */
export function pooledWidth(spec: PoolingSpec, hidden: number): number {
  return spec.modes.length * hidden;
}

/**
 * Pools a padded batch: `states` is [batch, seq, hidden] row-major, `lengths[b]` the real (unpadded) length of
 * row b, which occupies positions 0..length-1 (right padding). Returns one vector per row.
 */
export function pool(
  states: Float32Array,
  batch: number,
  seq: number,
  hidden: number,
  lengths: readonly number[],
  spec: PoolingSpec,
): Float32Array[] {
  const out: Float32Array[] = [];
  for (let b = 0; b < batch; b++) {
    const n = Math.max(1, Math.min(lengths[b], seq));
    const base = b * seq * hidden;
    const vec = new Float32Array(spec.modes.length * hidden);
    spec.modes.forEach((mode, k) => poolOne(states, base, n, hidden, mode, vec.subarray(k * hidden)));
    if (spec.normalize) normalizeInPlace(vec);
    out.push(vec);
  }
  return out;
}

function poolOne(
  s: Float32Array,
  base: number,
  n: number,
  hidden: number,
  mode: PoolingMode,
  into: Float32Array,
): void {
  switch (mode) {
    case "cls":
      into.set(s.subarray(base, base + hidden));
      return;
    case "lasttoken":
      into.set(s.subarray(base + (n - 1) * hidden, base + n * hidden));
      return;
    case "max": {
      into.set(s.subarray(base, base + hidden));
      for (let t = 1; t < n; t++) {
        const off = base + t * hidden;
        for (let h = 0; h < hidden; h++) if (s[off + h] > into[h]) into[h] = s[off + h];
      }
      return;
    }
    default: {
      // mean, mean_sqrt_len, weightedmean: a weighted sum, accumulated in float64 for stable averages.
      const acc = new Float64Array(hidden);
      let total = 0;
      for (let t = 0; t < n; t++) {
        const w = mode === "weightedmean" ? t + 1 : 1;
        total += w;
        const off = base + t * hidden;
        for (let h = 0; h < hidden; h++) acc[h] += s[off + h] * w;
      }
      const div = mode === "mean_sqrt_len" ? Math.sqrt(n) : total;
      for (let h = 0; h < hidden; h++) into[h] = acc[h] / div;
    }
  }
}

/** L2-normalizes in place (a zero vector stays zero). */
export function normalizeInPlace(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) { for (let i = 0; i < v.length; i++) v[i] /= norm; }
  return v;
}

/** The first `dims` components, L2-normalized (OpenAI's `dimensions`): a new array, the input is untouched. */
export function truncateAndNormalize(v: Float32Array, dims: number): Float32Array {
  return normalizeInPlace(v.slice(0, dims));
}
