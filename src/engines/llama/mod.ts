// Owns loading GGUF models on llama.cpp: where the file is (a manifest `path` to the file, or a folder / hub
// repo plus `options.file`), downloading it through the hub's one download path when missing, and building
// the chat backend (LlamaChat) or the embedding engine (LlamaEmbedding) on this thread (a model's worker).
import { ModelFilesMissing } from "../../errors.ts";
import { fetchRepoFiles } from "../../hub/fetch_files.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { LlamaChat } from "./chat.ts";
import { LlamaEmbedding } from "./embedding.ts";
import { blockCount, readGgufMeta } from "./gguf_meta.ts";
import { ggufFile } from "./files.ts";
import { listDevices, LlamaContext, LlamaLoadError, LlamaModel, openLlama } from "./ffi.ts";
import { hugePagesOn, mapsWeights } from "./huge_pages.ts";
import { coreCount, gpuLayersOf, gpus, layersThatFit, placementOf, runAheadPays } from "./placement.ts";

export { LlamaChat, LlamaEmbedding };
export { ggufFile };

/** Default context per sequence when the manifest sets none (the model's own may be far larger). */
const DEFAULT_CONTEXT = 4096;
/** Tokens of one micro-batch (n_ubatch): what llama.cpp computes at once (llama-server's default). */
const BATCH = 512;
/**
 * The micro-batch of a model on the CPU with several slots, whose bursts' prompts share micro-batches
 * (batch.ts PROMPT_ROWS, PROMPT_READERS): 1024 reads them faster than 512 (8 prompts of ~290 tokens: their
 * first tokens 0.93-0.99x as late, 2-4% more tokens a second in all; SmolLM2-135M shape, 2 CPU threads, ours
 * against ours; the peer benchmark's burst rows with it: README). It costs a larger compute buffer (llama.cpp
 * sizes it for a micro-batch's logits, n_vocab x 4 bytes a row: +107 MB on that 49k vocabulary, +311 MB on
 * Qwen's 152k; counted in the model's memory). A prompt read alone keeps to 512-token rounds (batch.ts
 * LONE_PROMPT_ROWS): llama-bench reads one sequence 2-5% faster in micro-batches of 512 than of 1024.
 */
const BURST_BATCH = 1024;
/**
 * Tokens one round's llama_decode takes at most (prompt chunks plus every stream's next token; the manifest's
 * `batch_size`), computed in micro-batches of BATCH or BURST_BATCH: a burst's prompts are read in one call, as
 * with llama-server's n_batch (2048). Rounds of 512 read a 32-prompt burst ~1.3x slower to its median first token.
 */
const ROUND = 2048;

async function ensureFile(entry: ModelEntry, ctx: LoadContext): Promise<string> {
  const path = ggufFile(entry);
  if (await Deno.stat(path).then((s) => s.isFile, () => false)) return path;
  const file = String(entry.options.file ?? "");
  if (!entry.repo || !ctx.allowRemote) {
    throw new ModelFilesMissing(
      `model \`${entry.id}\`: the GGUF file ${file || path.split("/").pop()} is missing` +
        (entry.repo
          ? `: run \`deno task pull ${entry.id}\`, or start without --offline to download it from ${entry.repo}`
          : ""),
    );
  }
  ctx.log.info("downloading model files", { model: entry.id, repo: entry.repo });
  try {
    await fetchRepoFiles({
      repo: entry.repo,
      dir: entry.path,
      required: [file],
      hub: ctx.hub,
      log: (line) => ctx.log.info(line, { model: entry.id }),
    });
  } catch (e) {
    throw new ModelFilesMissing(`model \`${entry.id}\`: could not download ${file}: ${(e as Error).message}`);
  }
  return path;
}

function loadModel(entry: ModelEntry, path: string, ctx: LoadContext): LlamaModel {
  const sym = openLlama(ctx.llamaLib);
  let gpuLayers = gpuLayersOf(entry, ctx);
  const cpuOnly = entry.device === "cpu" || gpuLayers === 0;
  const devices = gpus(listDevices(sym));
  if (!cpuOnly && gpuLayers === -1 && devices.length > 0) {
    const blocks = blockCount(readGgufMeta(path));
    const free = devices.reduce((n, d) => n + d.freeBytes, 0);
    gpuLayers = layersThatFit(Deno.statSync(path).size, blocks + 1, free);
    if (gpuLayers >= 0) {
      ctx.log.warn("the model does not fit in GPU memory: part of it stays on the CPU", {
        model: entry.id,
        gpuLayers,
        layers: blocks + 1,
        freeBytes: free,
      });
    }
  }
  // Every layer on a GPU: asked for all (-1) on a host with a GPU, and all of them fit.
  const allOnGpu = !cpuOnly && devices.length > 0 && gpuLayers === -1;
  const huge = hugePagesOn(sym);
  const mmap = mapsWeights(entry.options.mmap, allOnGpu, huge);
  try {
    return new LlamaModel(sym, path, { gpuLayers: cpuOnly ? 0 : gpuLayers, cpuOnly, mmap, huge });
  } catch (e) {
    if (e instanceof LlamaLoadError) {
      throw new LlamaLoadError(
        `llama.cpp could not load ${path.split("/").pop()}: the file is corrupt, truncated, or of an ` +
          "architecture this llama.cpp does not support",
      );
    }
    throw e;
  }
}

export async function loadLlamaChat(entry: ModelEntry, ctx: LoadContext): Promise<LlamaChat> {
  const path = await ensureFile(entry, ctx);
  const model = loadModel(entry, path, ctx);
  try {
    const parallel = Math.max(1, ctx.parallel ?? 1);
    const wanted = Number(entry.options.context_length ?? DEFAULT_CONTEXT);
    const contextLength = Math.min(model.info.nCtxTrain || wanted, wanted);
    // A KV stream per slot, each of the full context (llama-server's layout: sequences decoded together don't
    // attend over each other's cells). A request's n choices share its slot (see LlamaChat.fork).
    const round = Number(entry.options.batch_size ?? ROUND);
    const cpuOnly = model.offload === undefined || model.offload.layers === 0;
    const llamaCtx = new LlamaContext(model, {
      nCtx: contextLength * parallel,
      nBatch: round,
      // On a GPU the larger buffer would come out of the margin placement.ts leaves, and the gain is unmeasured.
      uBatch: Math.min(parallel > 1 && cpuOnly ? BURST_BATCH : BATCH, round),
      nSeqMax: parallel,
      unified: false,
      threads: ctx.threads,
      embeddings: false,
      pooling: -1,
      cpuOnly,
    });
    const placement = placementOf(model, llamaCtx);
    const chat = new LlamaChat(entry, model, llamaCtx, {
      contextLength,
      nBatch: round,
      parallel,
      description: `llama.cpp ${placement.device} ${fileType(model)}`,
      placement,
      runAhead: runAheadPays(ctx.threads, coreCount(), placement),
    });
    chat.batcher.beforePromptRound = ctx.beforeLongWork;
    ctx.log.info("chat model ready", {
      model: entry.id,
      backend: chat.backend,
      contextLength,
      parallel,
      vocab: chat.vocabSize,
      gpuLayers: `${placement.gpuLayers}/${placement.layers}`,
      gpuBytes: placement.gpuBytes,
      weights: `${model.mapped ? "mapped" : "read in"}${model.huge ? ", huge pages" : ""}`,
    });
    return chat;
  } catch (e) {
    model.free();
    throw e;
  }
}

export async function loadLlamaEmbedding(entry: ModelEntry, ctx: LoadContext): Promise<LlamaEmbedding> {
  const path = await ensureFile(entry, ctx);
  const model = loadModel(entry, path, ctx);
  try {
    return new LlamaEmbedding(entry, model, ctx.threads);
  } catch (e) {
    model.free();
    throw e;
  }
}

/** GGUF general.file_type names (llama_ftype) for the backend description. */
const FTYPES: Record<string, string> = {
  "0": "F32",
  "1": "F16",
  "2": "Q4_0",
  "3": "Q4_1",
  "7": "Q8_0",
  "8": "Q5_0",
  "9": "Q5_1",
  "10": "Q2_K",
  "12": "Q3_K_M",
  "14": "Q4_K_S",
  "15": "Q4_K_M",
  "16": "Q5_K_S",
  "17": "Q5_K_M",
  "18": "Q6_K",
  "32": "BF16",
};

function fileType(model: LlamaModel): string {
  const t = model.meta("general.file_type");
  return t === undefined ? "gguf" : FTYPES[t] ?? `ftype ${t}`;
}
