// Owns the transcription engine's loader: finds the ggml model file of a manifest entry, opens the whisper.cpp
// library (a clear error naming the build command when it is missing, which the registry turns into a 503 for
// this model only), loads the model once and wraps it in a WhisperEngine.
import { ModelFilesMissing } from "../../errors.ts";
import type { EngineLoader, LoadContext, ModelEntry } from "../types.ts";
import { cstr, openWhisper } from "./ffi.ts";
import { WhisperEngine } from "./engine.ts";
import { modelFile } from "./files.ts";
import { HubClient, hubOptionsFromEnv } from "../../hub/client.ts";
import { pullModel } from "../../hub/pull.ts";
import { WHISPER_FORMAT } from "../../hub/select.ts";
import { terminalProgress } from "../../hub/progress.ts";

export { WhisperEngine } from "./engine.ts";
export { findLibrary, WhisperLibraryMissing } from "./ffi.ts";
export { modelFile };

export interface WhisperSettings {
  /** Folder (or file) of libwhisper_shim; default: OAI_WHISPER_LIB, then native/build/lib of this checkout. */
  lib?: string;
  /** Transcriptions at once per model; default OAI_TRANSCRIPTION_CONCURRENCY, else 1. */
  concurrency?: number;
  /** CPU threads per transcription; default the load context's. */
  threads?: number;
}

/** Settings the server may pass through its load context (see the lead's LoadContext). */
type WhisperLoadContext = LoadContext & { whisperLib?: string; transcriptionConcurrency?: number };

function envInt(name: string): number | undefined {
  const v = Number(Deno.env.get(name));
  return Number.isInteger(v) && v > 0 ? v : undefined;
}

/** A small non-negative integer from the manifest entry's options, e.g. `"beam_size": 5`. */
function optionInt(entry: ModelEntry, key: string): number | undefined {
  const v = entry.options[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 8) {
    throw new Error(
      `manifest options.${key} of ${entry.id} must be an integer from 0 to 8 (whisper.cpp runs at most 8 decoders)`,
    );
  }
  return v;
}

/**
 * A hub model whose file is not on disk yet: downloaded on first use (with the pull command's progress, resume
 * and hash checks) when remote loading is allowed; otherwise the missing-file error says how to get it.
 */
async function fetchFromHub(entry: ModelEntry, ctx: LoadContext, missing: unknown): Promise<string> {
  if (!(missing instanceof ModelFilesMissing) || !entry.repo) throw missing;
  const file = typeof entry.options.file === "string" ? entry.options.file : undefined;
  if (!ctx.allowRemote) {
    throw new ModelFilesMissing(
      `${entry.repo}${
        file ? `/${file}` : ""
      } is not in the models folder and downloads are off (--offline): ` +
        `run \`deno task pull ${entry.id}\` where the hub is reachable, or copy the file to ${entry.path}`,
    );
  }
  ctx.log.info("downloading model", { model: entry.id, repo: entry.repo, file });
  try {
    await pullModel(new HubClient(hubOptionsFromEnv()), {
      repo: entry.repo,
      task: "transcription",
      file,
      modelsDir: ctx.modelsDir,
      formats: [WHISPER_FORMAT],
    }, { progress: terminalProgress() });
  } catch (e) {
    throw new ModelFilesMissing(
      `could not download ${entry.repo}${file ? `/${file}` : ""} from the hub (${(e as Error).message}): ` +
        `run \`deno task pull ${entry.id}\` where the hub is reachable, or copy the file to ${entry.path}`,
    );
  }
  return await modelFile(entry);
}

/** A loader with explicit settings (the server passes its config here). */
export function whisperLoader(settings: WhisperSettings = {}): EngineLoader {
  return async (entry, loadCtx) => {
    const ctx = loadCtx as WhisperLoadContext;
    const file = await modelFile(entry).catch((e) => fetchFromHub(entry, ctx, e));
    const lib = await openWhisper(settings.lib ?? ctx.whisperLib ?? Deno.env.get("OAI_WHISPER_LIB"));
    const useGpu = entry.device === "cpu" ? 0 : -1;
    const weights = new Float64Array(2);
    const handle = await lib.shim.wshim_init(cstr(file), useGpu, -1, -1, weights);
    if (!handle) throw new Error(`whisper.cpp could not load ${file} (not a ggml whisper model?)`);
    const name = new Uint8Array(512);
    const n = lib.shim.wshim_device(useGpu, -1, name, name.length);
    const device = new TextDecoder().decode(name.subarray(0, Math.min(n, name.length - 1)));
    const engine = new WhisperEngine(entry, lib, handle, {
      threads: settings.threads ?? ctx.threads,
      weightsBytes: Math.round(weights[0]),
      weightsGpuBytes: Math.round(weights[1]),
      device,
      concurrency: settings.concurrency ?? ctx.transcriptionConcurrency ??
        envInt("OAI_TRANSCRIPTION_CONCURRENCY") ?? 1,
      beamSize: optionInt(entry, "beam_size"),
      bestOf: optionInt(entry, "best_of"),
    });
    return engine;
  };
}

/** The loader for the `transcription` task, configured from the load context and environment. */
export const loadWhisper: EngineLoader = (entry, ctx) => whisperLoader()(entry, ctx);
