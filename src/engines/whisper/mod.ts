// Owns the transcription engine's loader: finds the ggml model file of a manifest entry, opens the whisper.cpp
// library (a clear error naming the build command when it is missing, which the registry turns into a 503 for
// this model only), loads the model once and wraps it in a WhisperEngine.
import { join } from "node:path";
import { ModelFilesMissing } from "../registry.ts";
import type { EngineLoader, LoadContext, ModelEntry } from "../types.ts";
import { cstr, openWhisper } from "./ffi.ts";
import { WhisperEngine } from "./engine.ts";

export { WhisperEngine } from "./engine.ts";
export { findLibrary, WhisperLibraryMissing } from "./ffi.ts";

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

async function exists(p: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.stat(p);
  } catch {
    return undefined;
  }
}

/** The model file of an entry: its path when that is a file, else `options.file` (or the only .bin) inside. */
export async function modelFile(entry: ModelEntry): Promise<string> {
  const info = await exists(entry.path);
  if (!info) {
    throw new ModelFilesMissing(
      `model file ${entry.path} is missing (generate the test model with \`deno task models:test\`, or put a ` +
        "ggml whisper model there)",
    );
  }
  if (info.isFile) return entry.path;
  const named = typeof entry.options.file === "string" ? entry.options.file : undefined;
  if (named) {
    const p = join(entry.path, named);
    if (await exists(p)) return p;
    throw new ModelFilesMissing(`model file ${p} is missing`);
  }
  const bins: string[] = [];
  for await (const e of Deno.readDir(entry.path)) if (e.isFile && e.name.endsWith(".bin")) bins.push(e.name);
  if (bins.length !== 1) {
    throw new ModelFilesMissing(
      `${entry.path} holds ${bins.length} .bin files; name the model with options.file in the manifest`,
    );
  }
  return join(entry.path, bins[0]);
}

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

/** A loader with explicit settings (the server passes its config here). */
export function whisperLoader(settings: WhisperSettings = {}): EngineLoader {
  return async (entry, loadCtx) => {
    const ctx = loadCtx as WhisperLoadContext;
    const file = await modelFile(entry);
    const lib = await openWhisper(settings.lib ?? ctx.whisperLib ?? Deno.env.get("OAI_WHISPER_LIB"));
    const useGpu = entry.device === "cpu" ? 0 : -1;
    const handle = await lib.shim.wshim_init(cstr(file), useGpu, -1, -1);
    if (!handle) throw new Error(`whisper.cpp could not load ${file} (not a ggml whisper model?)`);
    const engine = new WhisperEngine(entry, lib, handle, {
      threads: settings.threads ?? ctx.threads,
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
