// Owns the GPU benchmark's models: real model shapes at full size (Qwen2.5-0.5B-Instruct, Qwen2.5-7B-Instruct:
// architecture qwen2, their layer counts, widths, heads, vocabulary sizes and q/k/v biases) with seeded random
// weights, written as F16 GGUF by streaming one tensor at a time (a 7B model is 15 GB: never held at once).
// llama.cpp's llama-quantize then makes the Q4_K_M and Q8_0 files a benchmark compares (bench/gpu.sh). The
// vocabulary is synthetic byte-level BPE of the real size with the ChatML template; output is gibberish by
// design. Usage: deno run -A tools/models/bench_gguf_shapes.ts --shape qwen2.5-0.5b --out FILE.gguf
import { parseArgs } from "node:util";
import { BYTE_TOKENS } from "./bpe_tokenizer.ts";
import { ggufHeader, type GgufTensorInfo, type MetaValue } from "./gguf_writer.ts";

export interface Shape {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  ffn: number;
  tied: boolean;
  context: number;
}

export const SHAPES: Record<string, Shape> = {
  "qwen2.5-0.5b": {
    vocab: 151936,
    hidden: 896,
    layers: 24,
    heads: 14,
    kvHeads: 2,
    ffn: 4864,
    tied: true,
    context: 32768,
  },
  "qwen2.5-7b": {
    vocab: 152064,
    hidden: 3584,
    layers: 28,
    heads: 28,
    kvHeads: 4,
    ffn: 18944,
    tied: false,
    context: 32768,
  },
  // Qwen's vocabulary on a body too small to matter: a token costs little more than the output row and the
  // sampler over 151936 logits, so a server's own per-token work (which a GPU leaves exposed) shows on a CPU.
  "qwen-vocab-tiny": {
    vocab: 151936,
    hidden: 64,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    ffn: 256,
    tied: true,
    context: 4096,
  },
};

const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + " +
  "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/** Byte tokens, then two-letter and longer synthetic merges up to `size`, then the specials (as Qwen's). */
function vocabulary(size: number): { tokens: string[]; types: number[]; merges: string[] } {
  const tokens = [...BYTE_TOKENS];
  const merges: string[] = [];
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const seen = new Set(tokens);
  for (let i = 0; tokens.length < size - SPECIALS.length; i++) {
    const base = tokens[i];
    if (!/^Ġ?[a-z]+$|^Ġ$/.test(base)) continue;
    for (const c of letters) {
      if (tokens.length >= size - SPECIALS.length) break;
      if (!seen.has(base + c)) seen.add(base + c), tokens.push(base + c), merges.push(`${base} ${c}`);
    }
  }
  const types = tokens.map(() => 1);
  for (const s of SPECIALS) tokens.push(s), types.push(3);
  return { tokens, types, merges };
}

/** ggml half-precision random values in [-0.02, 0.02] (a table of them indexed by a fast generator). */
function halfTable(): Uint16Array {
  const t = new Uint16Array(1 << 16);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  let x = 0x9e3779b9;
  for (let i = 0; i < t.length; i++) {
    x ^= x << 13, x ^= x >>> 17, x ^= x << 5;
    f[0] = ((x >>> 0) / 2 ** 32 - 0.5) * 0.04;
    const bits = u[0];
    const e = ((bits >>> 23) & 0xff) - 127 + 15;
    const m = (bits >>> 13) & 0x3ff;
    t[i] = ((bits >>> 16) & 0x8000) | (e <= 0 ? 0 : (e << 10) | m);
  }
  return t;
}

export async function writeShape(name: string, out: string): Promise<void> {
  const s = SHAPES[name];
  if (!s) throw new Error(`unknown shape ${name} (${Object.keys(SHAPES).join(", ")})`);
  const hd = s.hidden / s.heads;
  const kv = s.kvHeads * hd;
  const v = vocabulary(s.vocab);
  const meta: Record<string, MetaValue> = {
    "general.architecture": "qwen2",
    "general.name": `${name} (random weights)`,
    "general.file_type": { u32: 1 },
    "qwen2.context_length": { u32: s.context },
    "qwen2.embedding_length": { u32: s.hidden },
    "qwen2.block_count": { u32: s.layers },
    "qwen2.feed_forward_length": { u32: s.ffn },
    "qwen2.attention.head_count": { u32: s.heads },
    "qwen2.attention.head_count_kv": { u32: s.kvHeads },
    "qwen2.rope.freq_base": { f32: 1000000 },
    "qwen2.attention.layer_norm_rms_epsilon": { f32: 1e-6 },
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "qwen2",
    "tokenizer.ggml.tokens": { strings: v.tokens },
    "tokenizer.ggml.token_type": { i32s: v.types },
    "tokenizer.ggml.merges": { strings: v.merges },
    "tokenizer.ggml.bos_token_id": { u32: v.tokens.length - 3 },
    "tokenizer.ggml.eos_token_id": { u32: v.tokens.length - 1 },
    "tokenizer.ggml.padding_token_id": { u32: v.tokens.length - 3 },
    "tokenizer.ggml.add_bos_token": { bool: false },
    "tokenizer.chat_template": CHATML,
  };
  // [name, ne (ggml order), F16 matrix or F32 vector]
  const list: [string, number[], "F16" | "F32", "rand" | "ones" | "zeros"][] = [
    ["token_embd.weight", [s.hidden, s.vocab], "F16", "rand"],
  ];
  for (let i = 0; i < s.layers; i++) {
    const b = `blk.${i}.`;
    list.push(
      [`${b}attn_norm.weight`, [s.hidden], "F32", "ones"],
      [`${b}attn_q.weight`, [s.hidden, s.hidden], "F16", "rand"],
      [`${b}attn_q.bias`, [s.hidden], "F32", "zeros"],
      [`${b}attn_k.weight`, [s.hidden, kv], "F16", "rand"],
      [`${b}attn_k.bias`, [kv], "F32", "zeros"],
      [`${b}attn_v.weight`, [s.hidden, kv], "F16", "rand"],
      [`${b}attn_v.bias`, [kv], "F32", "zeros"],
      [`${b}attn_output.weight`, [s.hidden, s.hidden], "F16", "rand"],
      [`${b}ffn_norm.weight`, [s.hidden], "F32", "ones"],
      [`${b}ffn_gate.weight`, [s.hidden, s.ffn], "F16", "rand"],
      [`${b}ffn_up.weight`, [s.hidden, s.ffn], "F16", "rand"],
      [`${b}ffn_down.weight`, [s.ffn, s.hidden], "F16", "rand"],
    );
  }
  list.push(["output_norm.weight", [s.hidden], "F32", "ones"]);
  if (!s.tied) list.push(["output.weight", [s.hidden, s.vocab], "F16", "rand"]);
  const infos: GgufTensorInfo[] = list.map(([name, ne, type]) => ({
    name,
    ne,
    type,
    size: ne.reduce((a, b) => a * b, 1) * (type === "F16" ? 2 : 4),
  }));
  const file = await Deno.open(out, { write: true, create: true, truncate: true });
  try {
    const head = ggufHeader(meta, infos);
    await file.write(head);
    let written = head.length;
    const table = halfTable();
    let x = 0x12345678;
    const CHUNK = 1 << 24;
    const buf = new Uint8Array(CHUNK);
    const halves = new Uint16Array(buf.buffer);
    const floats = new Float32Array(buf.buffer);
    for (const [i, [, , type, fill]] of list.entries()) {
      let left = infos[i].size;
      while (left > 0) {
        const n = Math.min(left, CHUNK);
        if (type === "F16") {
          for (let k = 0; k < n / 2; k++) {
            x ^= x << 13, x ^= x >>> 17, x ^= x << 5;
            halves[k] = table[x & 0xffff];
          }
        } else floats.fill(fill === "ones" ? 1 : 0, 0, n / 4);
        await writeAll(file, buf.subarray(0, n));
        left -= n;
        written += n;
      }
      const pad = (32 - written % 32) % 32;
      if (pad) await writeAll(file, new Uint8Array(pad)), written += pad;
    }
  } finally {
    file.close();
  }
}

async function writeAll(f: Deno.FsFile, b: Uint8Array): Promise<void> {
  for (let at = 0; at < b.length;) at += await f.write(b.subarray(at));
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { shape: { type: "string" }, out: { type: "string" } },
  });
  if (!values.shape || !values.out) throw new Error("usage: --shape qwen2.5-0.5b|qwen2.5-7b --out FILE.gguf");
  const t0 = performance.now();
  await writeShape(values.shape, values.out);
  console.log(`wrote ${values.out} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
