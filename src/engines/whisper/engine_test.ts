// Runs the real whisper.cpp (native/build) on the generated test model: needs
// `deno run -A native/build.ts --if-missing` and `deno run -A tools/ensure_models.ts` first.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ModelFilesMissing } from "../../errors.ts";
import type { LoadContext, ModelEntry, PartialSegment, TranscriptionEngine } from "../types.ts";
import { findLibrary, WhisperLibraryMissing } from "./ffi.ts";
import { whisperLoader } from "./mod.ts";

const MODEL_DIR = fileURLToPath(new URL("../../../models/generated/whisper-tiny-test/", import.meta.url));
const silentLog = { debug() {}, info() {}, warn() {}, error() {} };
const LOAD: LoadContext = { modelsDir: MODEL_DIR, threads: 2, allowRemote: false, log: silentLog };

function entry(path = MODEL_DIR, options: Record<string, unknown> = { file: "ggml-model.bin" }): ModelEntry {
  return {
    id: "w",
    task: "transcription",
    engine: "whisper.cpp",
    path,
    device: "cpu",
    options,
    created: 0,
    ownedBy: "local",
  };
}

/** Speech-like noise; the generated model's transcript does not depend on what is said. */
function audio(seconds: number): Float32Array {
  let s = 1;
  return Float32Array.from(
    { length: seconds * 16000 },
    () => ((s = (s * 48271) % 2147483647) / 2147483647 - 0.5) * 0.2,
  );
}

const BASE = { translate: false, temperature: 0, wordTimestamps: false };

const MULTI_DIR = fileURLToPath(new URL("../../../models/generated/whisper-multi-test/", import.meta.url));

Deno.test("engine: a multilingual model takes the languages its vocabulary has and detects one", async () => {
  const engine = await whisperLoader()(entry(MULTI_DIR), LOAD) as TranscriptionEngine;
  try {
    assert.equal(engine.multilingual, true);
    // tiny has 99 language tokens; whisper.cpp's table has a 100th (yue, from large-v3) this model lacks.
    assert.equal(engine.languages.size, 99);
    assert.equal(engine.languages.get("de"), "german");
    assert.equal(engine.languages.has("yue"), false);
    const t = await engine.transcribe(audio(3), BASE);
    assert.equal(t.language, "de");
    assert.deepEqual(t.segments.map((s) => [s.seek, s.temperature]), [[0, 0]]);
  } finally {
    await engine.dispose();
  }
});

Deno.test("engine: transcribes, streams segments in order, reports languages", async () => {
  const engine = await whisperLoader({ concurrency: 2 })(entry(), LOAD) as TranscriptionEngine;
  try {
    assert.equal(engine.multilingual, false);
    assert.equal(engine.languages.get("en"), "english");
    assert.deepEqual([...engine.languages.keys()], ["en"], "an English-only model takes English only");
    assert.match(engine.backend, /whisper\.cpp tiny\.en/);
    const seen: PartialSegment[] = [];
    const [a, b] = await Promise.all([
      engine.transcribe(audio(3), BASE, undefined, (s) => seen.push(s)),
      engine.transcribe(audio(3), { ...BASE, wordTimestamps: true, prompt: "Foxes and dogs." }),
    ]);
    assert.equal(a.text, "The quick brown fox jumps over the lazy dog.");
    assert.equal(b.text, a.text);
    assert.deepEqual(seen.map((s) => [s.index, s.start, s.end]), [[0, 0, 1], [1, 1.2, 2]]);
    assert.equal(a.language, "en");
    assert.equal(a.duration, 3);
    assert.equal(a.words, undefined);
    assert.equal(b.words?.length, 9);
    assert.ok(a.segments.every((s) => s.avgLogprob <= 0 && s.noSpeechProb >= 0 && s.tokens.length > 2));
  } finally {
    await engine.dispose();
  }
});

Deno.test("engine: an abort stops whisper_full early and leaves the state usable; dispose waits", async () => {
  const engine = await whisperLoader({ concurrency: 1 })(entry(), LOAD) as TranscriptionEngine;
  try {
    const full = performance.now();
    await engine.transcribe(audio(2), BASE);
    const oneWindow = performance.now() - full;
    const ac = new AbortController();
    const t0 = performance.now();
    const long = engine.transcribe(audio(95), BASE, ac.signal); // four 30 s windows
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(long, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    assert.ok(performance.now() - t0 < 2 * oneWindow + 1000, "aborted within about one window");
    const after = await engine.transcribe(audio(2), BASE);
    assert.equal(after.segments.length, 2);
    const running = engine.transcribe(audio(2), BASE);
    await engine.dispose();
    assert.equal((await running).segments.length, 2, "dispose let the running transcription finish");
  } finally {
    await engine.dispose();
  }
});

const VAD_MODEL = fileURLToPath(
  new URL("../../../../shared/data/whisper/for-tests-silero-v6.2.0-ggml.bin", import.meta.url),
);

Deno.test("engine: memoryBytes counts the weights as loaded and each state and VAD context made", async () => {
  const engine = await whisperLoader({ concurrency: 2 })(entry(), LOAD) as TranscriptionEngine;
  try {
    const file = Deno.statSync(`${MODEL_DIR}ggml-model.bin`).size;
    const weights = engine.memoryBytes!();
    // The weights' buffers as whisper.cpp allocated them: the file less its header, vocabulary and mel filters.
    assert.ok(weights > 0.98 * file && weights <= file, `${weights} of ${file}`);
    await Promise.all([engine.transcribe(audio(2), BASE), engine.transcribe(audio(2), BASE)]);
    const twoStates = engine.memoryBytes!() - weights;
    // tiny: a state's self-attention KV alone is 4 layers x 512 positions x 384 x (K, V) x 2 bytes (f16), its
    // cross-attention KV 4 x 1500 x 384 x 2 x 2; its compute buffers come on top.
    const kv = 4 * 512 * 384 * 2 * 2 + 4 * 1500 * 384 * 2 * 2;
    assert.ok(twoStates > 2 * kv, `two states hold ${twoStates}`);
    assert.ok(twoStates < 2 * 200e6, `two states hold ${twoStates}`);
    // A third transcription reuses a state: nothing new is held.
    await engine.transcribe(audio(2), BASE);
    assert.equal(engine.memoryBytes!(), weights + twoStates);
    await engine.detectSpeech(audio(2), VAD_MODEL);
    assert.ok(engine.memoryBytes!() > weights + twoStates, "the VAD context counts");
  } finally {
    await engine.dispose();
  }
});

Deno.test("loader: missing model files and a missing library give errors that say what to do", async () => {
  await assert.rejects(
    whisperLoader()(entry(MODEL_DIR + "nope/"), LOAD),
    (e: unknown) => e instanceof ModelFilesMissing,
  );
  await assert.rejects(
    whisperLoader()(entry(MODEL_DIR, { file: "other.bin" }), LOAD),
    (e: unknown) => e instanceof ModelFilesMissing,
  );
  await assert.rejects(
    findLibrary("/nonexistent/lib"),
    (e: unknown) => e instanceof WhisperLibraryMissing && /native:build/.test(e.message),
  );
});
