// Owns one loaded whisper.cpp model: the context (loaded once), a pool of whisper states (one per concurrent
// transcription, bounded by config), and the run of one transcription: optional VAD, whisper_full as a
// nonblocking FFI call while the buffered segments are polled for streaming and the AbortSignal is relayed to
// whisper's abort callback, then the results read back from the state (with each segment's window start and
// decode temperature, which the shim records from whisper's callbacks).
import type {
  ModelEntry,
  PartialSegment,
  SpeechSpan,
  TranscribeOptions,
  Transcript,
  TranscriptionEngine,
  TranscriptSegment,
} from "../types.ts";
import { type Placement, TRANSCRIPTION_SAMPLE_RATE as RATE } from "../types.ts";
import { cstr, OPTIONS_SIZE, readCstr, type WhisperLib } from "./ffi.ts";
import { Pool } from "./pool.ts";
import { joinSpeech, type Piece, toOriginal } from "./vad_map.ts";
import { type TimedToken, tokensToWords } from "./words.ts";

interface Slot {
  state: Deno.PointerObject;
  /** What whisper.cpp allocated for the state (KV caches, compute buffers). */
  bytes: number;
  vad?: { model: string; ctx: Deno.PointerObject; bytes: number };
}

export interface WhisperEngineOptions {
  threads: number;
  /** What whisper.cpp allocated for the weights (wshim_init reports it). */
  weightsBytes?: number;
  /** The part of weightsBytes in GPU memory. */
  weightsGpuBytes?: number;
  /** Where it computes: "CPU", or the GPU ("Vulkan0 (llvmpipe ...)"); its states live there too. */
  device?: string;
  /** Transcriptions at once (whisper states). */
  concurrency: number;
  /** Beam search width; 0 or 1 decodes greedily (the default, as fast as whisper.cpp gets). */
  beamSize?: number;
  /** Candidates sampled when a decode falls back to a higher temperature; 0 keeps whisper.cpp's 5. */
  bestOf?: number;
  /** How often streamed segments are looked for while whisper_full runs. */
  pollMs?: number;
}

/** whisper.cpp reports times in centiseconds. */
const CS = 0.01;
/** whisper.cpp's own temperature step when a decode fails its thresholds. */
const TEMPERATURE_INC = 0.2;

export class WhisperEngine implements TranscriptionEngine {
  readonly multilingual: boolean;
  readonly languages: ReadonlyMap<string, string>;
  readonly backend: string;
  readonly #pool: Pool<Slot>;
  readonly #eot: number;
  #disposed = false;
  /** Bytes of the pool's states and their VAD contexts. */
  #slotBytes = 0;
  /** The VAD contexts' part of #slotBytes (they run on the CPU). */
  #vadBytes = 0;

  constructor(
    readonly entry: ModelEntry,
    readonly lib: WhisperLib,
    readonly ctx: Deno.PointerObject,
    readonly options: WhisperEngineOptions,
  ) {
    const w = lib.whisper;
    this.multilingual = w.whisper_is_multilingual(ctx) !== 0;
    this.languages = languagesOf(lib, ctx, this.multilingual);
    this.#eot = w.whisper_token_eot(ctx);
    const type = readCstr(w.whisper_model_type_readable(ctx));
    const where = options.device && options.device !== "CPU" ? `, ${options.device}` : "";
    this.backend = `whisper.cpp ${type}${this.multilingual ? "" : ".en"}${where}, ${options.threads} threads`;
    this.#pool = new Pool<Slot>(options.concurrency, async () => {
      const bytes = new Float64Array(2);
      const state = await lib.shim.wshim_init_state(ctx, bytes);
      if (!state) throw new Error("whisper_init_state failed (out of memory?)");
      const held = Math.round(bytes[0]);
      this.#slotBytes += held;
      return { state, bytes: held };
    }, (slot) => {
      this.#freeVad(slot);
      w.whisper_free_state(slot.state);
      this.#slotBytes -= slot.bytes;
    });
  }

  async transcribe(
    audio: Float32Array,
    opts: TranscribeOptions,
    signal?: AbortSignal,
    onSegment?: (segment: PartialSegment) => void,
  ): Promise<Transcript> {
    const slot = await this.#pool.acquire(signal);
    try {
      const duration = audio.length / RATE;
      let input = audio;
      let pieces: Piece[] | undefined;
      if (opts.vad) {
        const spans = await this.#speech(slot, audio, opts.vad.model, signal);
        const joined = joinSpeech(audio, spans, RATE);
        if (!joined.pieces.length) {
          return { language: this.#language(opts), duration, text: "", segments: [] };
        }
        input = joined.audio;
        pieces = joined.pieces;
      }
      const at = (cs: number) => {
        const t = pieces ? toOriginal(cs * CS, pieces) : cs * CS;
        return round2(Math.min(duration, Math.max(0, t)));
      };
      const windows = await this.#run(slot, input, opts, at, signal, onSegment);
      return this.#read(slot, opts, duration, at, windows);
    } finally {
      this.#pool.release(slot);
    }
  }

  async detectSpeech(audio: Float32Array, vadModel: string, signal?: AbortSignal): Promise<SpeechSpan[]> {
    const slot = await this.#pool.acquire(signal);
    try {
      return await this.#speech(slot, audio, vadModel, signal);
    } finally {
      this.#pool.release(slot);
    }
  }

  /**
   * Host memory: the weights plus every state made so far (states are made on demand, up to `concurrency`, and
   * kept), less what is on the GPU (placement()).
   */
  memoryBytes(): number {
    return (this.options.weightsBytes ?? 0) + this.#slotBytes - this.#gpuBytes();
  }

  /** On a GPU, the states' KV caches and compute buffers are there too (whisper's log lines don't say where). */
  #gpuBytes(): number {
    if (!this.options.device || this.options.device === "CPU") return 0;
    return (this.options.weightsGpuBytes ?? 0) + this.#slotBytes - this.#vadBytes;
  }

  placement(): Placement {
    return { device: this.options.device ?? "CPU", gpuLayers: 0, layers: 0, gpuBytes: this.#gpuBytes() };
  }

  #freeVad(slot: Slot): void {
    if (!slot.vad) return;
    this.lib.whisper.whisper_vad_free(slot.vad.ctx);
    this.#slotBytes -= slot.vad.bytes;
    this.#vadBytes -= slot.vad.bytes;
    slot.vad = undefined;
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.#pool.close();
    this.lib.whisper.whisper_free(this.ctx);
  }

  #language(opts: TranscribeOptions): string {
    return this.multilingual ? (opts.language ?? "en") : "en";
  }

  async #speech(slot: Slot, audio: Float32Array, model: string, signal?: AbortSignal): Promise<SpeechSpan[]> {
    signal?.throwIfAborted();
    if (slot.vad?.model !== model) {
      this.#freeVad(slot);
      const bytes = new Float64Array(1);
      const ctx = await this.lib.shim.wshim_vad_init(cstr(model), this.options.threads, bytes);
      if (!ctx) throw new Error(`cannot load the VAD model ${model}`);
      slot.vad = { model, ctx, bytes: Math.round(bytes[0]) };
      this.#slotBytes += slot.vad.bytes;
      this.#vadBytes += slot.vad.bytes;
    }
    let cap = 64;
    for (;;) {
      const out = new Float32Array(2 * cap);
      // -1 keeps whisper.cpp's defaults (threshold 0.5, 250 ms speech, 100 ms silence, 30 ms padding).
      const n = await this.lib.shim.wshim_vad_segments(
        slot.vad.ctx,
        audio,
        audio.length,
        -1,
        -1,
        -1,
        -1,
        out,
        cap,
      );
      if (n < 0) throw new Error("voice activity detection failed");
      if (n > cap) {
        cap = n;
        continue;
      }
      signal?.throwIfAborted();
      const spans: SpeechSpan[] = [];
      for (let i = 0; i < n; i++) spans.push({ start: round2(out[2 * i]), end: round2(out[2 * i + 1]) });
      return spans;
    }
  }

  async #run(
    slot: Slot,
    audio: Float32Array,
    opts: TranscribeOptions,
    at: (cs: number) => number,
    signal: AbortSignal | undefined,
    onSegment: ((s: PartialSegment) => void) | undefined,
  ): Promise<WindowOf[]> {
    signal?.throwIfAborted();
    const { shim } = this.lib;
    const o = new DataView(new ArrayBuffer(OPTIONS_SIZE));
    o.setInt32(0, this.options.threads, true);
    o.setInt32(4, opts.translate && this.multilingual ? 1 : 0, true);
    o.setInt32(8, opts.wordTimestamps ? 1 : 0, true);
    o.setInt32(12, 0, true); // timestamps on: segments need them
    o.setFloat32(16, opts.temperature, true);
    o.setFloat32(20, TEMPERATURE_INC, true);
    o.setInt32(24, this.options.bestOf ?? 0, true);
    o.setInt32(28, this.options.beamSize ?? 0, true);
    const language = cstr(this.multilingual ? (opts.language ?? "auto") : "en");
    const prompt = opts.prompt ? cstr(opts.prompt) : null;
    const job = shim.wshim_job_new();
    if (!job) throw new Error("out of memory");
    const abort = () => shim.wshim_job_abort(job);
    signal?.addEventListener("abort", abort, { once: true });
    let sent = 0;
    const text = new Uint8Array(4096);
    const times = new BigInt64Array(2);
    const flush = () => {
      const n = shim.wshim_job_n_segments(job);
      for (; sent < n; sent++) {
        const len = shim.wshim_job_segment(job, sent, text, text.length, times);
        if (len < 0) break;
        const s = len < text.length ? text.subarray(0, len) : text.subarray(0, text.length - 1);
        onSegment?.({
          index: sent,
          start: at(Number(times[0])),
          end: at(Number(times[1])),
          text: new TextDecoder().decode(s),
        });
      }
    };
    try {
      const running = shim.wshim_full(this.ctx, slot.state, job, o, language, prompt, audio, audio.length);
      if (onSegment) {
        let finished = false;
        running.finally(() => finished = true).catch(() => {});
        while (!finished) {
          await new Promise((r) => setTimeout(r, this.options.pollMs ?? 25));
          flush();
        }
      }
      const rc = await running;
      if (rc === 1 || signal?.aborted) {
        throw signal?.reason ?? new DOMException("The transcription was aborted.", "AbortError");
      }
      if (rc !== 0) throw new Error(`whisper_full failed with code ${rc}`);
      flush();
      const windows: WindowOf[] = [];
      const meta = new Float64Array(2);
      for (let i = 0; shim.wshim_job_segment_meta(job, i, meta) === 0; i++) {
        windows.push({ seek: meta[0], temperature: round2(meta[1]) });
      }
      return windows;
    } finally {
      signal?.removeEventListener("abort", abort);
      shim.wshim_job_free(job);
    }
  }

  #read(
    slot: Slot,
    opts: TranscribeOptions,
    duration: number,
    at: (cs: number) => number,
    windows: WindowOf[],
  ): Transcript {
    const { whisper: w, shim } = this.lib;
    const state = slot.state;
    const n = w.whisper_full_n_segments_from_state(state);
    const segments: TranscriptSegment[] = [];
    const timed: TimedToken[] = [];
    const td = new Float64Array(8);
    for (let i = 0; i < n; i++) {
      const tokens: number[] = [];
      let logprob = 0, textTokens = 0;
      const nt = w.whisper_full_n_tokens_from_state(state, i);
      for (let j = 0; j < nt; j++) {
        shim.wshim_token(state, i, j, td);
        const id = td[0];
        tokens.push(id);
        // The text's own tokens: timestamps and other special tokens (ids from <|endoftext|> up) say nothing
        // about how sure whisper was of the words.
        if (id < this.#eot) [logprob, textTokens] = [logprob + td[3], textTokens + 1];
        if (opts.wordTimestamps && id < this.#eot) {
          const text = readCstr(w.whisper_full_get_token_text_from_state(this.ctx, state, i, j));
          timed.push({ text, start: at(td[6]), end: at(td[7]) });
        }
      }
      segments.push({
        start: at(Number(w.whisper_full_get_segment_t0_from_state(state, i))),
        end: at(Number(w.whisper_full_get_segment_t1_from_state(state, i))),
        text: readCstr(w.whisper_full_get_segment_text_from_state(state, i)),
        tokens,
        avgLogprob: textTokens ? logprob / textTokens : 0,
        noSpeechProb: w.whisper_full_get_segment_no_speech_prob_from_state(state, i),
        // What whisper used: the window's start (seconds, mapped back like the times) and the temperature of
        // the decode it kept; the requested ones only if the shim missed the segment (out of memory).
        // Times map back like the segments' (VAD), so a window of joined speech seeks into the original.
        seek: Math.round(100 * at(windows[i]?.seek ?? 0)),
        temperature: windows[i]?.temperature ?? opts.temperature,
      });
    }
    let language = this.#language(opts);
    if (this.multilingual && !opts.language) {
      const id = w.whisper_full_lang_id_from_state(state);
      language = [...this.languages.keys()][id] ?? language;
    }
    return {
      language,
      duration,
      text: segments.map((s) => s.text).join("").trim(),
      segments,
      ...(opts.wordTimestamps ? { words: tokensToWords(timed) } : {}),
    };
  }
}

/** Where a segment's 30 s window started (centiseconds) and the temperature its decode used. */
interface WindowOf {
  seek: number;
  temperature: number;
}

/**
 * code -> name of the languages the model can be told to speak: English alone for a .en model; otherwise
 * whisper.cpp's table cut to the language tokens the vocabulary has (99 before large-v3, 100 from it).
 */
function languagesOf(lib: WhisperLib, ctx: Deno.PointerObject, multilingual: boolean): Map<string, string> {
  const w = lib.whisper;
  if (!multilingual) return new Map([["en", "english"]]);
  const tokens = w.whisper_model_n_vocab(ctx) - 51765 - 1;
  const langs = new Map<string, string>();
  for (let id = 0; id <= Math.min(w.whisper_lang_max_id(), tokens - 1); id++) {
    langs.set(readCstr(w.whisper_lang_str(id)), readCstr(w.whisper_lang_str_full(id)));
  }
  return langs;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
