// Generates ggml whisper models that whisper.cpp 1.9.1 loads and runs: a real header (tiny.en here, hparams, mel
// filters, vocab) from ../shared/data/whisper/for-tests-ggml-tiny.en.bin plus every tensor the loader in
// whisper.cpp's src/whisper.cpp expects, with its name, shape and type. Weights are seeded random, except that the
// decoder is wired so greedy decoding emits a fixed script (see README "Generated whisper models"): the first MLP
// of the decoder maps each script token's embedding to the embedding of the token after it, so the transcript is
// known in advance whatever the audio, and decoding stops after a handful of tokens. Links may also read the
// position (the prompt test) or come with decoys (a real temperature fallback): see whisper_multi.ts.
// `generate(outDir)` makes the English-only test model; `--bench tiny.en,base.en` makes full-size benchmark variants.
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const VERSION = "whisper-tiny-test-1";
export const MODEL_FILE = "ggml-model.bin";

export const HEADER_PATH = fileURLToPath(
  new URL("../../../shared/data/whisper/for-tests-ggml-tiny.en.bin", import.meta.url),
);
export const BENCH_DIR = fileURLToPath(new URL("../../models/generated/bench/", import.meta.url));

/** One segment of the script: times in seconds (multiples of 0.02), text as it should be transcribed. */
export interface ScriptSegment {
  t0: number;
  t1: number;
  text: string;
}

/** What the test model transcribes, for any audio at least 2 s long. */
export const TEST_SCRIPT: ScriptSegment[] = [
  { t0: 0, t1: 1, text: " The quick brown fox" },
  { t0: 1.2, t1: 2, text: " jumps over the lazy dog." },
];

/** What the benchmark models transcribe: about as many tokens as whisper tiny.en decodes for jfk.wav. */
export const BENCH_SCRIPT: ScriptSegment[] = [
  { t0: 0, t1: 5, text: " And so my fellow Americans, ask not what your country can do for you" },
  { t0: 5.4, t1: 10.6, text: " Together we shall build a better tomorrow." },
];

export interface Hparams {
  nVocab: number;
  nAudioCtx: number;
  nAudioState: number;
  nAudioHead: number;
  nAudioLayer: number;
  nTextCtx: number;
  nTextState: number;
  nTextHead: number;
  nTextLayer: number;
  nMels: number;
  ftype: number;
}

export interface Header {
  hparams: Hparams;
  /** Mel filter bank as stored (n_mel, n_fft, floats). */
  filters: Uint8Array;
  /** Vocabulary as stored: byte strings by id. */
  vocab: Uint8Array[];
}

const MAGIC = 0x67676d6c; // "ggml"
const HPARAM_KEYS: (keyof Hparams)[] = [
  "nVocab",
  "nAudioCtx",
  "nAudioState",
  "nAudioHead",
  "nAudioLayer",
  "nTextCtx",
  "nTextState",
  "nTextHead",
  "nTextLayer",
  "nMels",
  "ftype",
];

export function parseHeader(bytes: Uint8Array): Header {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dv.getUint32(0, true) !== MAGIC) throw new Error("not a ggml whisper file (bad magic)");
  const hparams = {} as Hparams;
  HPARAM_KEYS.forEach((k, i) => hparams[k] = dv.getInt32(4 + 4 * i, true));
  let off = 4 + 4 * HPARAM_KEYS.length;
  const nMel = dv.getInt32(off, true), nFft = dv.getInt32(off + 4, true);
  const filtersEnd = off + 8 + 4 * nMel * nFft;
  const filters = bytes.slice(off, filtersEnd);
  off = filtersEnd;
  const nWords = dv.getInt32(off, true);
  off += 4;
  const vocab: Uint8Array[] = [];
  for (let i = 0; i < nWords; i++) {
    const len = dv.getUint32(off, true);
    vocab.push(bytes.slice(off + 4, off + 4 + len));
    off += 4 + len;
  }
  return { hparams, filters, vocab };
}

/** Special token ids of a vocabulary (whisper.cpp's whisper_vocab). */
export interface Specials {
  eot: number;
  sot: number;
  translate: number;
  transcribe: number;
  prev: number;
  nosp: number;
  not: number;
  beg: number;
}

/** English-only ids (whisper.cpp's defaults). */
export const EN: Specials = {
  eot: 50256,
  sot: 50257,
  translate: 50357,
  transcribe: 50358,
  prev: 50360,
  nosp: 50361,
  not: 50362,
  beg: 50363,
};

/** Multilingual ids: every special token moves up by one (the 99 languages sit between sot and translate). */
export const MULTI: Specials = {
  eot: EN.eot + 1,
  sot: EN.sot + 1,
  translate: EN.translate + 1,
  transcribe: EN.transcribe + 1,
  prev: EN.prev + 1,
  nosp: EN.nosp + 1,
  not: EN.not + 1,
  beg: EN.beg + 1,
};

/** The language token of whisper.cpp's language id (0 en, 1 zh, 2 de, ...) in a multilingual vocabulary. */
export function languageToken(langId: number): number {
  return MULTI.sot + 1 + langId;
}

export function specialsOf(hp: Hparams): Specials {
  if (hp.nVocab === 51864) return EN;
  if (hp.nVocab === 51865) return MULTI;
  throw new Error(`unsupported vocabulary size ${hp.nVocab} (tiny/base/small-style 51864 or 51865 only)`);
}

export function timestampToken(seconds: number, sp: Specials = EN): number {
  const steps = Math.round(seconds / 0.02);
  if (Math.abs(steps * 0.02 - seconds) > 1e-6 || steps < 0 || steps > 1500) {
    throw new Error(`timestamp ${seconds} s is not a multiple of 20 ms within 30 s`);
  }
  return sp.beg + steps;
}

/** Greedy longest-match tokenization over the byte vocabulary; enough for scripts of common words. */
export function tokenize(vocab: Uint8Array[], text: string): number[] {
  const byText = new Map<string, number>();
  const dec = new TextDecoder("utf-8", { fatal: false });
  let longest = 0;
  for (let id = 0; id < Math.min(vocab.length, EN.eot); id++) {
    const s = dec.decode(vocab[id]);
    if (!byText.has(s)) byText.set(s, id);
    longest = Math.max(longest, s.length);
  }
  const out: number[] = [];
  for (let i = 0; i < text.length;) {
    let found = -1, len = 0;
    for (let l = Math.min(longest, text.length - i); l > 0; l--) {
      const id = byText.get(text.slice(i, i + l));
      if (id !== undefined) [found, len] = [id, l];
      if (found >= 0) break;
    }
    if (found < 0) throw new Error(`cannot tokenize ${JSON.stringify(text.slice(i))}`);
    out.push(found);
    i += len;
  }
  return out;
}

/** The token sequence greedy decoding should produce after the prompt, ending with <|endoftext|>. */
export function scriptTokens(vocab: Uint8Array[], script: ScriptSegment[], sp: Specials = EN): number[] {
  const seq: number[] = [];
  for (const seg of script) {
    seq.push(timestampToken(seg.t0, sp), ...tokenize(vocab, seg.text), timestampToken(seg.t1, sp));
  }
  seq.push(sp.eot);
  const seen = new Set([sp.sot, ...seq]);
  // Each token picks its successor, so none may appear twice (nor be <|startoftranscript|>).
  if (seen.size !== seq.length + 1) throw new Error("script tokens must be unique");
  return seq;
}

/**
 * One rule of the decoder's wiring: when the current token is `from` (at the task token's position when
 * `at` is "task", after it when "later", anywhere when unset), the next token is `to`.
 */
export interface Link {
  from: number;
  to: number;
  at?: "task" | "later";
  /**
   * Tokens whose logits are made `weight` times `to`'s (exactly, before the other layers' small noise): `to`
   * stays first but with a low probability, so a decode at temperature 0 fails whisper's average
   * log-probability check (-1) and whisper retries at 0.2, where the scaled logits make `to` near certain.
   */
  decoys?: { ids: number[]; weight: number };
}

/** The links that make greedy decoding follow `seq` once `first` is the current token. */
export function chainOf(
  first: number,
  seq: number[],
  at?: Link["at"],
  decoys?: (to: number) => Link["decoys"],
): Link[] {
  const link = (from: number, to: number): Link => ({ from, to, ...(decoys ? { decoys: decoys(to) } : {}) });
  const links: Link[] = [{ ...link(first, seq[0]), ...(at ? { at } : {}) }];
  for (let i = 1; i < seq.length; i++) links.push(link(seq[i - 1], seq[i]));
  return links;
}

function checkLinks(links: Link[]): void {
  const keys = new Set(links.map((l) => `${l.from}@${l.at ?? "any"}`));
  if (keys.size !== links.length) throw new Error("each token may lead to one successor only (per position)");
  for (const l of links) {
    if (l.at && links.some((o) => o.from === l.from && !o.at)) {
      throw new Error(`token ${l.from} has both a positional and an unconditional successor`);
    }
  }
}

/** xorshift32: tiny, fast and identical everywhere, so generated files are byte-for-byte reproducible. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000 * 2 - 1; // uniform in [-1, 1)
  };
}

function seedOf(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Uniform values with standard deviation `std`, seeded by the tensor name. */
function random(name: string, n: number, std: number): Float32Array {
  const next = rng(seedOf(name));
  const a = new Float32Array(n);
  const scale = std * Math.sqrt(3);
  for (let i = 0; i < n; i++) a[i] = next() * scale;
  return a;
}

const F32 = 0, F16 = 1;

interface Tensor {
  name: string;
  /** ggml order: ne[0] is the contiguous dimension. */
  ne: number[];
  type: typeof F32 | typeof F16;
  data: Float32Array;
}

function encodeTensor(t: Tensor): Uint8Array[] {
  const name = new TextEncoder().encode(t.name);
  const head = new DataView(new ArrayBuffer(12 + 4 * t.ne.length));
  head.setInt32(0, t.ne.length, true);
  head.setInt32(4, name.length, true);
  head.setInt32(8, t.type, true);
  t.ne.forEach((n, i) => head.setInt32(12 + 4 * i, n, true));
  const data = t.type === F16 ? Float16Array.from(t.data) : t.data;
  return [new Uint8Array(head.buffer), name, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)];
}

function headerBytes(h: Header): Uint8Array {
  const parts: Uint8Array[] = [];
  const hp = new DataView(new ArrayBuffer(4 + 4 * HPARAM_KEYS.length));
  hp.setUint32(0, MAGIC, true);
  HPARAM_KEYS.forEach((k, i) => hp.setInt32(4 + 4 * i, h.hparams[k], true));
  parts.push(new Uint8Array(hp.buffer), h.filters);
  const n = new DataView(new ArrayBuffer(4));
  n.setInt32(0, h.vocab.length, true);
  parts.push(new Uint8Array(n.buffer));
  for (const w of h.vocab) {
    const len = new DataView(new ArrayBuffer(4));
    len.setUint32(0, w.length, true);
    parts.push(new Uint8Array(len.buffer), w);
  }
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let off = 0;
  for (const p of parts) out.set(p, (off += p.length) - p.length);
  return out;
}

/** Scale of the next-token embedding written into the residual stream; dwarfs every random contribution. */
const GAIN = 20;
const EMBED_STD = 0.1;
const WEIGHT_STD = 0.02;
/** Decoder projections back into the residual stream stay quiet so they never blur the token embeddings. */
const QUIET_STD = 0.002;

/** Every tensor in the loader's order, produced lazily so only one is in memory at a time. */
function* tensors(hp: Hparams, links: Link[]): Generator<Tensor> {
  const a = hp.nAudioState, t = hp.nTextState, mels = hp.nMels;
  const w = (name: string, ne: number[], std = WEIGHT_STD): Tensor => ({
    name,
    ne,
    type: F16,
    data: random(name, ne.reduce((x, y) => x * y), std),
  });
  const v = (name: string, ne: number[], fill?: number): Tensor => ({
    name,
    ne,
    type: F32,
    data: fill === undefined
      ? random(name, ne.reduce((x, y) => x * y), WEIGHT_STD)
      : new Float32Array(ne.reduce((x, y) => x * y)).fill(fill),
  });

  yield v("encoder.positional_embedding", [a, hp.nAudioCtx]);
  yield w("encoder.conv1.weight", [3, mels, a]);
  yield v("encoder.conv1.bias", [1, a]);
  yield w("encoder.conv2.weight", [3, a, a]);
  yield v("encoder.conv2.bias", [1, a]);
  yield v("encoder.ln_post.weight", [a], 1);
  yield v("encoder.ln_post.bias", [a], 0);
  for (let i = 0; i < hp.nAudioLayer; i++) yield* block(`encoder.blocks.${i}`, a, false);

  const pos = v("decoder.positional_embedding", [t, hp.nTextCtx]);
  if (links.some((l) => l.at)) markTaskPosition(pos.data, t);
  yield pos;
  const te = random("decoder.token_embedding.weight", t * hp.nVocab, EMBED_STD);
  // The MLP reads the F16-rounded embeddings, so detect with exactly those.
  const teRounded = new Float32Array(Float16Array.from(te));
  yield { name: "decoder.token_embedding.weight", ne: [t, hp.nVocab], type: F16, data: te };
  yield v("decoder.ln.weight", [t], 1);
  yield v("decoder.ln.bias", [t], 0);
  for (let i = 0; i < hp.nTextLayer; i++) {
    const p = `decoder.blocks.${i}`;
    for (const x of block(p, t, true)) {
      if (i === 0 && x.name.endsWith("mlp.0.weight")) yield chainIn(x, teRounded, links, t);
      else if (i === 0 && x.name.endsWith("mlp.0.bias")) yield chainBias(x, links);
      else if (i === 0 && x.name.endsWith("mlp.2.weight")) yield chainOut(x, teRounded, links, t);
      else yield x;
    }
  }

  function* block(p: string, n: number, decoder: boolean): Generator<Tensor> {
    // Layer order of the loader: mlp_ln, mlp.0, mlp.2, attn_ln, attn.{query,key,value,out}, then cross_attn.
    const outStd = decoder ? QUIET_STD : WEIGHT_STD;
    yield v(`${p}.mlp_ln.weight`, [n], 1);
    yield v(`${p}.mlp_ln.bias`, [n], 0);
    yield w(`${p}.mlp.0.weight`, [n, 4 * n]);
    yield v(`${p}.mlp.0.bias`, [4 * n]);
    yield w(`${p}.mlp.2.weight`, [4 * n, n], outStd);
    yield v(`${p}.mlp.2.bias`, [n]);
    for (const kind of decoder ? ["attn", "cross_attn"] : ["attn"]) {
      yield v(`${p}.${kind}_ln.weight`, [n], 1);
      yield v(`${p}.${kind}_ln.bias`, [n], 0);
      yield w(`${p}.${kind}.query.weight`, [n, n]);
      yield v(`${p}.${kind}.query.bias`, [n]);
      yield w(`${p}.${kind}.key.weight`, [n, n]);
      yield w(`${p}.${kind}.value.weight`, [n, n]);
      yield v(`${p}.${kind}.value.bias`, [n]);
      yield w(`${p}.${kind}.out.weight`, [n, n], outStd);
      yield v(`${p}.${kind}.out.bias`, [n]);
    }
  }
}

// Hidden unit k of the first decoder MLP fires only on links[k].from: its input weights are that token's
// unit embedding (after the layer norm, the dot product is about sqrt(n) for it and near 0 for any other token)
// and its bias sits halfway. Its output weights add GAIN x the embedding of links[k].to and remove the input's,
// so the final layer norm and the tied output projection rank links[k].to first by a wide margin.
const DETECT_HALF = 0.5;

// Position-dependent links (the prompt test: the task token sits at position 2 without a prompt and later with
// one) read a direction D that the positional embedding adds at TASK_POSITION and subtracts after it. Their
// units weigh the token's embedding plus or minus D and fire only above POSITIONAL_THRESHOLD, which needs both.
const TASK_POSITION = 2;
/** Length of D in the residual stream, about 0.6x a token embedding's. */
const POSITION_GAIN = 1.2;
const POSITIONAL_THRESHOLD = 1.0;
/** A positional unit's activation (in sqrt(n)) when both its token and its position are present. */
const POSITIONAL_ACTIVE = 0.37;

function direction(n: number): Float32Array {
  const d = random("decoder.task_position_direction", n, 1);
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const norm = Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0));
  return d.map((x) => (x - mean) / norm);
}

function markTaskPosition(pos: Float32Array, n: number): void {
  const d = direction(n);
  for (let p = TASK_POSITION; p < pos.length / n; p++) {
    const sign = p === TASK_POSITION ? 1 : -1;
    for (let i = 0; i < n; i++) pos[p * n + i] += sign * POSITION_GAIN * d[i];
  }
}

function unit(te: Float32Array, id: number, n: number): Float32Array {
  const row = te.slice(id * n, (id + 1) * n);
  const mean = row.reduce((s, x) => s + x, 0) / n;
  let norm = 0;
  for (let i = 0; i < n; i++) norm += (row[i] -= mean) ** 2;
  norm = Math.sqrt(norm);
  return row.map((x) => x / norm);
}

function chainIn(x: Tensor, te: Float32Array, links: Link[], n: number): Tensor {
  const data = new Float32Array(x.data.length); // other units stay silent
  const d = links.some((l) => l.at) ? direction(n) : undefined;
  links.forEach(({ from, at }, k) => {
    const w = unit(te, from, n);
    if (at && d) {
      const sign = at === "task" ? 1 : -1;
      for (let i = 0; i < n; i++) w[i] += sign * d[i];
    }
    data.set(w, k * n);
  });
  return { ...x, data };
}

function chainBias(x: Tensor, links: Link[]): Tensor {
  const n = x.data.length / 4;
  const data = new Float32Array(x.data.length).fill(-1);
  links.forEach(({ at }, k) => data[k] = -(at ? POSITIONAL_THRESHOLD : DETECT_HALF) * Math.sqrt(n));
  return { ...x, data };
}

function chainOut(x: Tensor, te: Float32Array, links: Link[], n: number): Tensor {
  const hidden = 4 * n;
  const data = new Float32Array(x.data.length);
  links.forEach(({ from, to, at, decoys }, k) => {
    // the unit's activation when its token (and position) is the input
    const active = (at ? POSITIONAL_ACTIVE : 1 - DETECT_HALF) * Math.sqrt(n);
    const target = decoys ? decoyTarget(te, to, decoys, n) : te.subarray(to * n, (to + 1) * n);
    for (let i = 0; i < n; i++) data[i * hidden + k] = (GAIN * target[i] - te[from * n + i]) / active;
  });
  return { ...x, data };
}

/** An English-only model that transcribes `script` whatever the audio. */
/**
 * The direction whose dot product with each decoy's embedding is `weight` times its dot product with `to`'s:
 * the least-norm solution of E t = b (E: the embeddings as rows, b = (1, weight, ...)), scaled to the length
 * of `to`'s embedding so it drives the logits like a plain link.
 */
function decoyTarget(
  te: Float32Array,
  to: number,
  decoys: NonNullable<Link["decoys"]>,
  n: number,
): Float32Array {
  const ids = [to, ...decoys.ids];
  const rows = ids.map((id) => Float64Array.from(te.subarray(id * n, (id + 1) * n)));
  // Gram system G y = b, then t = E^T y; G is small (m x m) and well conditioned (random embeddings).
  const g = rows.map((a) => rows.map((b) => a.reduce((s, x, i) => s + x * b[i], 0)));
  const y = solve(g, ids.map((_, i) => (i === 0 ? 1 : decoys.weight)));
  const t = new Float64Array(n);
  rows.forEach((r, j) => r.forEach((x, i) => t[i] += y[j] * x));
  const scale = Math.hypot(...rows[0]) / Math.hypot(...t);
  return Float32Array.from(t, (x) => x * scale);
}

/** Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const m = b.length, x = a.map((r, i) => [...r, b[i]]);
  for (let c = 0; c < m; c++) {
    const p = x.reduce((best, r, i) => (i >= c && Math.abs(r[c]) > Math.abs(x[best][c]) ? i : best), c);
    [x[c], x[p]] = [x[p], x[c]];
    for (let r = 0; r < m; r++) {
      if (r === c) continue;
      const f = x[r][c] / x[c][c];
      for (let k = c; k <= m; k++) x[r][k] -= f * x[c][k];
    }
  }
  return x.map((r, i) => r[m] / r[i]);
}

export async function writeModel(path: string, header: Header, script: ScriptSegment[]): Promise<void> {
  if (header.hparams.nVocab !== 51864) {
    throw new Error("writeModel takes an English-only (tiny.en-style) header");
  }
  await writeLinked(path, header, chainOf(EN.sot, scriptTokens(header.vocab, script)));
}

/** A model whose decoder follows `links` (see Link). */
export async function writeLinked(path: string, header: Header, links: Link[]): Promise<void> {
  const hp = header.hparams;
  specialsOf(hp);
  checkLinks(links);
  if (links.length > 4 * hp.nTextState) throw new Error("script too long for the decoder MLP");
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    await writeAll(file, headerBytes(header));
    for (const t of tensors(hp, links)) for (const part of encodeTensor(t)) await writeAll(file, part);
  } finally {
    file.close();
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) off += await file.write(bytes.subarray(off));
}

export async function readHeader(path = HEADER_PATH): Promise<Header> {
  return parseHeader(await Deno.readFile(path));
}

/** Contract of tools/ensure_models.ts: the tiny.en-shaped test model. */
export async function generate(outDir: string): Promise<void> {
  await writeModel(join(outDir, MODEL_FILE), await readHeader(), TEST_SCRIPT);
}

export type BenchShape = "tiny.en" | "base.en";

/** tiny.en keeps the header's hparams; base.en widens them the way OpenAI's base.en is shaped. */
export function benchHparams(shape: BenchShape, base: Hparams): Hparams {
  if (shape === "tiny.en") return base;
  return {
    ...base,
    nAudioState: 512,
    nAudioHead: 8,
    nAudioLayer: 6,
    nTextState: 512,
    nTextHead: 8,
    nTextLayer: 6,
  };
}

/** Writes models/generated/bench/whisper-<shape>/ggml-model.bin unless current; returns its path. */
export async function generateBench(shape: BenchShape, dir = BENCH_DIR): Promise<string> {
  const out = join(dir, `whisper-${shape}`);
  const path = join(out, MODEL_FILE);
  const marker = join(out, ".generated");
  const stamp = `${VERSION}-bench-${shape}`;
  if ((await Deno.readTextFile(marker).catch(() => "")).trim() === stamp) return path;
  await Deno.mkdir(out, { recursive: true });
  const header = await readHeader();
  await writeModel(path, { ...header, hparams: benchHparams(shape, header.hparams) }, BENCH_SCRIPT);
  await Deno.writeTextFile(marker, stamp + "\n");
  return path;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { bench: { type: "string" }, out: { type: "string" } },
  });
  if (values.bench) {
    for (const shape of values.bench.split(",") as BenchShape[]) console.log(await generateBench(shape));
  } else {
    const out = values.out ?? "models/generated/whisper-tiny-test";
    await Deno.mkdir(out, { recursive: true });
    await generate(out);
    console.log(join(out, MODEL_FILE));
  }
}
