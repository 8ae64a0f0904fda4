// Owns writing GGUF files (llama.cpp's model format, version 3): typed metadata, tensor infos and 32-byte
// aligned data, with F32, F16, Q8_0 and Q4_0 tensors quantized exactly as ggml's reference quantizers do; and
// the two model kinds the project generates: a Llama/Qwen2 decoder (from the same DecoderWeights the ONNX
// graphs are built from) and a BERT encoder, each with the byte-level BPE or WordPiece tokenizer of its folder.
import type { BertShape } from "./bert_graph.ts";
import type { DecoderShape, DecoderWeights } from "./decoder_graph.ts";

const enum Kv {
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

export type GgmlType = "F32" | "F16" | "Q8_0" | "Q4_0";
const TYPE_ID: Record<GgmlType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 };

export type MetaValue =
  | { u32: number }
  | { i32: number }
  | { f32: number }
  | { bool: boolean }
  | string
  | { strings: string[] }
  | { i32s: ArrayLike<number> }
  | { f32s: ArrayLike<number> };

export interface GgufTensor {
  name: string;
  /** ggml order: ne[0] is the innermost (contiguous) dimension. */
  ne: number[];
  type: GgmlType;
  /** Row-major values, ne[0] fastest. */
  data: Float32Array;
}

const ALIGN = 32;
const enc = new TextEncoder();

class Bytes {
  #buf = new Uint8Array(1 << 16);
  #view = new DataView(this.#buf.buffer);
  length = 0;
  #room(n: number) {
    if (this.length + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.length));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }
  u8(v: number) {
    this.#room(1);
    this.#buf[this.length++] = v;
  }
  u32(v: number) {
    this.#room(4);
    this.#view.setUint32(this.length, v, true);
    this.length += 4;
  }
  i32(v: number) {
    this.#room(4);
    this.#view.setInt32(this.length, v, true);
    this.length += 4;
  }
  u64(v: number) {
    this.#room(8);
    this.#view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  f32(v: number) {
    this.#room(4);
    this.#view.setFloat32(this.length, v, true);
    this.length += 4;
  }
  str(s: string) {
    const b = enc.encode(s);
    this.u64(b.length);
    this.raw(b);
  }
  raw(b: Uint8Array) {
    this.#room(b.length);
    this.#buf.set(b, this.length);
    this.length += b.length;
  }
  pad() {
    while (this.length % ALIGN) this.u8(0);
  }
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.length);
  }
}

/** IEEE half from a float, round to nearest even (as ggml's FP32_TO_FP16 does on x86 with F16C). */
export function toHalf(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa rounds up into the exponent, as IEEE rounding does.
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  return sign | half;
}

function encodeTensor(t: GgufTensor): Uint8Array {
  const x = t.data;
  const b = new Bytes();
  if (t.type === "F32") {
    for (const v of x) b.f32(v);
  } else if (t.type === "F16") {
    for (const v of x) {
      const h = toHalf(v);
      b.u8(h & 0xff);
      b.u8(h >>> 8);
    }
  } else {
    if (x.length % 32) throw new Error(`${t.name}: ${t.type} needs a multiple of 32 values`);
    for (let i = 0; i < x.length; i += 32) {
      const blk = x.subarray(i, i + 32);
      if (t.type === "Q8_0") {
        let amax = 0;
        for (const v of blk) amax = Math.max(amax, Math.abs(v));
        const d = amax / 127;
        const id = d ? 1 / d : 0;
        const h = toHalf(d);
        b.u8(h & 0xff);
        b.u8(h >>> 8);
        // roundf: halves away from zero.
        for (const v of blk) b.u8((Math.sign(v) * Math.round(Math.abs(v * id))) & 0xff);
      } else {
        let amax = 0;
        let max = 0;
        for (const v of blk) {
          if (Math.abs(v) > amax) amax = Math.abs(v), max = v;
        }
        const d = max / -8;
        const id = d ? 1 / d : 0;
        const h = toHalf(d);
        b.u8(h & 0xff);
        b.u8(h >>> 8);
        const q = (v: number) => Math.min(15, Math.trunc(v * id + 8.5));
        for (let j = 0; j < 16; j++) b.u8(q(blk[j]) | (q(blk[j + 16]) << 4));
      }
    }
  }
  return b.bytes().slice();
}

function writeValue(b: Bytes, v: MetaValue) {
  if (typeof v === "string") return b.u32(Kv.STRING), b.str(v);
  if ("u32" in v) return b.u32(Kv.U32), b.u32(v.u32);
  if ("i32" in v) return b.u32(Kv.I32), b.i32(v.i32);
  if ("f32" in v) return b.u32(Kv.F32), b.f32(v.f32);
  if ("bool" in v) return b.u32(Kv.BOOL), b.u8(v.bool ? 1 : 0);
  b.u32(Kv.ARRAY);
  if ("strings" in v) {
    b.u32(Kv.STRING), b.u64(v.strings.length);
    for (const s of v.strings) b.str(s);
  } else if ("i32s" in v) {
    b.u32(Kv.I32), b.u64(v.i32s.length);
    for (let i = 0; i < v.i32s.length; i++) b.i32(v.i32s[i]);
  } else {
    b.u32(Kv.F32), b.u64(v.f32s.length);
    for (let i = 0; i < v.f32s.length; i++) b.f32(v.f32s[i]);
  }
}

/** A tensor's entry in the header: its name, shape (ggml order), type and the bytes of its data. */
export interface GgufTensorInfo {
  name: string;
  ne: number[];
  type: GgmlType;
  size: number;
}

/**
 * The header of a GGUF file (metadata and tensor infos), padded to the alignment: the tensors' data follows,
 * each padded to the alignment too. For writers that stream tensors too large to hold at once.
 */
export function ggufHeader(meta: Record<string, MetaValue>, tensors: GgufTensorInfo[]): Uint8Array {
  const head = new Bytes();
  head.raw(enc.encode("GGUF"));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(Object.keys(meta).length);
  for (const [k, v] of Object.entries(meta)) head.str(k), writeValue(head, v);
  let offset = 0;
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.ne.length);
    for (const n of t.ne) head.u64(n);
    head.u32(TYPE_ID[t.type]);
    head.u64(offset);
    offset += t.size;
    offset = Math.ceil(offset / ALIGN) * ALIGN;
  }
  head.pad();
  return head.bytes();
}

/** Serializes a whole GGUF file. */
export function encodeGguf(meta: Record<string, MetaValue>, tensors: GgufTensor[]): Uint8Array {
  const blobs = tensors.map(encodeTensor);
  const head = new Bytes();
  head.raw(
    ggufHeader(
      meta,
      tensors.map((t, i) => ({ name: t.name, ne: t.ne, type: t.type, size: blobs[i].length })),
    ),
  );
  for (const blob of blobs) head.raw(blob), head.pad();
  return head.bytes();
}

/** Row-major [rows, cols] (x @ W layout) -> [cols, rows]: the [out, in] rows ggml multiplies with. */
function rowsOut(m: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c];
  return t;
}

/**
 * llama.cpp's Llama graph rotates interleaved pairs (2i, 2i+1); HF's rotates (i, i + hd/2). The converter
 * reorders each head's q/k output rows so both compute the same thing; so does this.
 */
function interleaveHeads(w: Float32Array, heads: number, hd: number, inDim: number): Float32Array {
  const out = new Float32Array(w.length);
  const half = hd / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = h * hd + j * half + i;
        const to = h * hd + 2 * i + j;
        out.set(w.subarray(from * inDim, (from + 1) * inDim), to * inDim);
      }
    }
  }
  return out;
}

export interface TokenizerMeta {
  tokens: string[];
  types: number[];
  merges: string[];
}

/** GGUF tokenizer arrays from a byte-level BPE tokenizer.json (token_type: 1 normal, 3 control, 4 user). */
export function bpeTokenizerMeta(json: {
  model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
  added_tokens?: { id: number; content: string; special: boolean }[];
}): TokenizerMeta {
  let size = 0;
  for (const id of Object.values(json.model.vocab)) size = Math.max(size, id + 1);
  for (const t of json.added_tokens ?? []) size = Math.max(size, t.id + 1);
  const tokens = new Array<string>(size).fill("");
  const types = new Array<number>(size).fill(1);
  for (const [t, id] of Object.entries(json.model.vocab)) tokens[id] = t;
  for (const t of json.added_tokens ?? []) tokens[t.id] = t.content, types[t.id] = t.special ? 3 : 4;
  const merges = json.model.merges.map((m) => Array.isArray(m) ? m.join(" ") : m);
  return { tokens, types, merges };
}

export interface DecoderGgufSpec {
  arch: "llama" | "qwen2";
  name: string;
  shape: DecoderShape;
  weights: DecoderWeights;
  /** Matrices' type; norms and biases stay F32 as llama.cpp's converter keeps them. */
  type: GgmlType;
  contextLength: number;
  tokenizer: TokenizerMeta;
  bosId: number;
  eosId: number;
  padId: number;
  chatTemplate: string;
  /** Default sampling temperature (general.sampling.temp), as a generation_config would give it. */
  temperature?: number;
}

export function decoderGguf(s: DecoderGgufSpec): Uint8Array {
  const { shape: d, weights: w } = s;
  const D = d.hiddenSize;
  const qDim = d.numHeads * d.headDim;
  const kvDim = d.numKvHeads * d.headDim;
  const a = s.arch;
  const meta: Record<string, MetaValue> = {
    "general.architecture": a,
    "general.name": s.name,
    "general.file_type": { u32: { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 }[s.type] },
    [`${a}.context_length`]: { u32: s.contextLength },
    [`${a}.embedding_length`]: { u32: D },
    [`${a}.block_count`]: { u32: d.numLayers },
    [`${a}.feed_forward_length`]: { u32: d.intermediateSize },
    [`${a}.attention.head_count`]: { u32: d.numHeads },
    [`${a}.attention.head_count_kv`]: { u32: d.numKvHeads },
    [`${a}.rope.freq_base`]: { f32: d.ropeTheta },
    [`${a}.attention.layer_norm_rms_epsilon`]: { f32: d.rmsNormEps },
    [`${a}.rope.dimension_count`]: { u32: d.headDim },
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "qwen2",
    "tokenizer.ggml.tokens": { strings: s.tokenizer.tokens },
    "tokenizer.ggml.token_type": { i32s: s.tokenizer.types },
    "tokenizer.ggml.merges": { strings: s.tokenizer.merges },
    "tokenizer.ggml.bos_token_id": { u32: s.bosId },
    "tokenizer.ggml.eos_token_id": { u32: s.eosId },
    "tokenizer.ggml.padding_token_id": { u32: s.padId },
    "tokenizer.ggml.add_bos_token": { bool: false },
    "tokenizer.chat_template": s.chatTemplate,
  };
  if (a === "llama") meta[`${a}.vocab_size`] = { u32: d.vocabSize };
  if (s.temperature !== undefined) meta["general.sampling.temp"] = { f32: s.temperature };
  const mat = (name: string, m: Float32Array, inDim: number, outDim: number): GgufTensor => ({
    name,
    ne: [inDim, outDim],
    type: s.type,
    data: rowsOut(m, inDim, outDim),
  });
  const vec = (name: string, v: Float32Array): GgufTensor => ({ name, ne: [v.length], type: "F32", data: v });
  // The embedding table is read by row lookup; ggml quantizes it like any matrix.
  const tensors: GgufTensor[] = [{
    name: "token_embd.weight",
    ne: [D, d.vocabSize],
    type: s.type,
    data: w.embed,
  }];
  w.layers.forEach((l, i) => {
    const p = `blk.${i}`;
    let q = mat(`${p}.attn_q.weight`, l.q, D, qDim);
    let k = mat(`${p}.attn_k.weight`, l.k, D, kvDim);
    if (a === "llama") {
      q = { ...q, data: interleaveHeads(q.data, d.numHeads, d.headDim, D) };
      k = { ...k, data: interleaveHeads(k.data, d.numKvHeads, d.headDim, D) };
    }
    tensors.push(vec(`${p}.attn_norm.weight`, l.inputNorm), q, k, mat(`${p}.attn_v.weight`, l.v, D, kvDim));
    if (l.qBias) tensors.push(vec(`${p}.attn_q.bias`, l.qBias));
    if (l.kBias) tensors.push(vec(`${p}.attn_k.bias`, l.kBias));
    if (l.vBias) tensors.push(vec(`${p}.attn_v.bias`, l.vBias));
    tensors.push(
      mat(`${p}.attn_output.weight`, l.o, qDim, D),
      vec(`${p}.ffn_norm.weight`, l.postNorm),
      mat(`${p}.ffn_gate.weight`, l.gate, D, d.intermediateSize),
      mat(`${p}.ffn_up.weight`, l.up, D, d.intermediateSize),
      mat(`${p}.ffn_down.weight`, l.down, d.intermediateSize, D),
    );
  });
  tensors.push(vec("output_norm.weight", w.finalNorm));
  if (w.lmHead) tensors.push(mat("output.weight", w.lmHead, D, d.vocabSize));
  return encodeGguf(meta, tensors);
}

export interface BertGgufSpec {
  name: string;
  shape: BertShape;
  /** The fp32 weights by their ONNX initializer names (HF BertModel names; matrices [in, out]). */
  weight: (name: string) => Float32Array;
  /** Matrices' type; embeddings of positions and token types, norms and biases stay F32. */
  type: GgmlType;
  /** The WordPiece vocabulary in id order ("##" marks a continuation) and which ids are special. */
  vocab: string[];
  special: { pad: number; unk: number; cls: number; sep: number; mask: number };
  /** llama_pooling_type: 1 mean, 2 CLS. */
  pooling: number;
}

/**
 * A BERT encoder as llama.cpp's converter writes one: "bert" architecture, WordPiece vocabulary in its
 * "phantom space" spelling (a word start gets U+2581, a "##" continuation loses its marks), [CLS] .. [SEP]
 * added around every input, and the pooling type the sentence-transformers config declares.
 */
export function bertGguf(s: BertGgufSpec): Uint8Array {
  const d = s.shape;
  const H = d.hiddenSize;
  const specials = new Set(Object.values(s.special));
  const meta: Record<string, MetaValue> = {
    "general.architecture": "bert",
    "general.name": s.name,
    "general.file_type": { u32: { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 }[s.type] },
    "bert.context_length": { u32: d.maxPositions },
    "bert.embedding_length": { u32: H },
    "bert.feed_forward_length": { u32: d.intermediateSize },
    "bert.block_count": { u32: d.numLayers },
    "bert.attention.head_count": { u32: d.numHeads },
    "bert.attention.layer_norm_epsilon": { f32: d.layerNormEps },
    "bert.attention.causal": { bool: false },
    "bert.pooling_type": { u32: s.pooling },
    "tokenizer.ggml.model": "bert",
    "tokenizer.ggml.pre": "default",
    "tokenizer.ggml.tokens": {
      strings: s.vocab.map((t, id) => specials.has(id) ? t : t.startsWith("##") ? t.slice(2) : "\u2581" + t),
    },
    "tokenizer.ggml.token_type": { i32s: s.vocab.map((_, id) => specials.has(id) ? 3 : 1) },
    "tokenizer.ggml.token_type_count": { u32: d.typeVocabSize },
    "tokenizer.ggml.bos_token_id": { u32: s.special.cls },
    "tokenizer.ggml.cls_token_id": { u32: s.special.cls },
    "tokenizer.ggml.seperator_token_id": { u32: s.special.sep },
    "tokenizer.ggml.unknown_token_id": { u32: s.special.unk },
    "tokenizer.ggml.padding_token_id": { u32: s.special.pad },
    "tokenizer.ggml.mask_token_id": { u32: s.special.mask },
    "tokenizer.ggml.add_bos_token": { bool: true },
    "tokenizer.ggml.add_sep_token": { bool: true },
    "tokenizer.ggml.add_eos_token": { bool: false },
  };
  const table = (name: string, from: string, rows: number, type: GgmlType): GgufTensor => ({
    name,
    ne: [H, rows],
    type,
    data: s.weight(from),
  });
  const mat = (name: string, from: string, inDim: number, outDim: number): GgufTensor => ({
    name,
    ne: [inDim, outDim],
    type: s.type,
    data: rowsOut(s.weight(from), inDim, outDim),
  });
  const vec = (name: string, from: string): GgufTensor => {
    const v = s.weight(from);
    return { name, ne: [v.length], type: "F32", data: v };
  };
  const tensors: GgufTensor[] = [
    table("token_embd.weight", "embeddings.word_embeddings.weight", d.vocabSize, s.type),
    table("token_types.weight", "embeddings.token_type_embeddings.weight", d.typeVocabSize, "F32"),
    table("position_embd.weight", "embeddings.position_embeddings.weight", d.maxPositions, "F32"),
    vec("token_embd_norm.weight", "embeddings.LayerNorm.weight"),
    vec("token_embd_norm.bias", "embeddings.LayerNorm.bias"),
  ];
  for (let l = 0; l < d.numLayers; l++) {
    const p = `encoder.layer.${l}`;
    const b = `blk.${l}`;
    for (const [to, from] of [["attn_q", "query"], ["attn_k", "key"], ["attn_v", "value"]]) {
      tensors.push(
        mat(`${b}.${to}.weight`, `${p}.attention.self.${from}.weight`, H, H),
        vec(`${b}.${to}.bias`, `${p}.attention.self.${from}.bias`),
      );
    }
    tensors.push(
      mat(`${b}.attn_output.weight`, `${p}.attention.output.dense.weight`, H, H),
      vec(`${b}.attn_output.bias`, `${p}.attention.output.dense.bias`),
      vec(`${b}.attn_output_norm.weight`, `${p}.attention.output.LayerNorm.weight`),
      vec(`${b}.attn_output_norm.bias`, `${p}.attention.output.LayerNorm.bias`),
      mat(`${b}.ffn_up.weight`, `${p}.intermediate.dense.weight`, H, d.intermediateSize),
      vec(`${b}.ffn_up.bias`, `${p}.intermediate.dense.bias`),
      mat(`${b}.ffn_down.weight`, `${p}.output.dense.weight`, d.intermediateSize, H),
      vec(`${b}.ffn_down.bias`, `${p}.output.dense.bias`),
      vec(`${b}.layer_output_norm.weight`, `${p}.output.LayerNorm.weight`),
      vec(`${b}.layer_output_norm.bias`, `${p}.output.LayerNorm.bias`),
    );
  }
  return encodeGguf(meta, tensors);
}
