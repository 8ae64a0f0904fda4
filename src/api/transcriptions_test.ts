// The endpoints through the real app pipeline with an in-memory TranscriptionEngine (this test's double, so the
// handler logic is checked without the native library; the real engine is covered by tests/e2e).
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import { parseConfig } from "../config.ts";
import { parseManifest } from "../engines/manifest.ts";
import { Registry } from "../engines/registry.ts";
import type {
  ModelEntry,
  PartialSegment,
  SpeechSpan,
  TranscribeOptions,
  Transcript,
  TranscriptionEngine,
} from "../engines/types.ts";
import { memoryLogger } from "../log.ts";
import { handleTranscriptions, handleTranslations } from "./transcriptions.ts";

class FakeEngine implements TranscriptionEngine {
  readonly backend = "fake";
  readonly multilingual = true;
  readonly languages = new Map([["en", "english"], ["de", "german"]]);
  calls: { samples: number; opts: TranscribeOptions }[] = [];
  aborted = 0;
  constructor(readonly entry: ModelEntry, readonly delayMs = 0) {}

  async transcribe(
    audio: Float32Array,
    opts: TranscribeOptions,
    signal?: AbortSignal,
    onSegment?: (s: PartialSegment) => void,
  ): Promise<Transcript> {
    this.calls.push({ samples: audio.length, opts });
    const segments = [
      {
        start: 0,
        end: 0.8,
        text: " Guten Tag.",
        tokens: [1, 2],
        avgLogprob: -0.1,
        noSpeechProb: 0,
        seek: 0,
        temperature: 0,
      },
      {
        start: 0.9,
        end: 1.4,
        text: " Wie geht's?",
        tokens: [3],
        avgLogprob: -0.2,
        noSpeechProb: 0,
        seek: 0,
        temperature: 0,
      },
    ];
    for (const [index, s] of segments.entries()) {
      await new Promise((r) => setTimeout(r, this.delayMs));
      if (signal?.aborted) {
        this.aborted++;
        throw signal.reason;
      }
      onSegment?.({ index, start: s.start, end: s.end, text: s.text });
    }
    return {
      language: opts.language ?? "de",
      duration: audio.length / 16000,
      text: "Guten Tag. Wie geht's?",
      segments,
      ...(opts.wordTimestamps ? { words: [{ word: "Guten", start: 0, end: 0.3 }] } : {}),
    };
  }

  detectSpeech(): Promise<SpeechSpan[]> {
    return Promise.resolve([]);
  }

  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

function setup(flags: string[] = [], delayMs = 0) {
  const config = parseConfig(flags, {}, "/").config!;
  const log = memoryLogger();
  let engine: FakeEngine | undefined;
  const manifest = parseManifest(
    {
      defaults: { transcription: "fake" },
      aliases: { "whisper-1": "@transcription" },
      models: { fake: { task: "transcription", path: "fake" } },
    },
    "/m",
    "cpu",
  );
  const registry = new Registry(
    manifest,
    {
      "whisper.cpp": { transcription: (entry) => Promise.resolve(engine = new FakeEngine(entry, delayMs)) },
    },
    { modelsDir: "/m", threads: 1, allowRemote: false, log },
    { loadWaitMs: 1000, queueSize: 4 },
  );
  const handler = createApp({
    config,
    registry,
    log,
    routes: [
      { method: "POST", path: "/v1/audio/transcriptions", handler: handleTranscriptions },
      { method: "POST", path: "/v1/audio/translations", handler: handleTranslations },
    ],
  });
  return { handler, engine: () => engine! };
}

/** One second of 16 kHz 16-bit mono silence-ish WAV. */
function wav(seconds = 1): Blob {
  const n = 16000 * seconds;
  const dv = new DataView(new ArrayBuffer(44 + 2 * n));
  const ascii = (o: number, s: string) => [...s].forEach((c, i) => dv.setUint8(o + i, c.charCodeAt(0)));
  ascii(0, "RIFF");
  dv.setUint32(4, 36 + 2 * n, true);
  ascii(8, "WAVEfmt ");
  [16, 0x00010001, 16000, 32000, 0x00100002].forEach((v, i) => dv.setUint32(16 + 4 * i, v, true));
  ascii(36, "data");
  dv.setUint32(40, 2 * n, true);
  for (let i = 0; i < n; i++) dv.setInt16(44 + 2 * i, (i % 50) * 10, true);
  return new Blob([dv.buffer]);
}

function post(
  handler: (r: Request) => Promise<Response>,
  fields: Record<string, string | Blob>,
  path = "transcriptions",
) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (v instanceof Blob) form.append(k, v, "a.wav");
    else form.append(k, v);
  }
  return handler(new Request(`http://x/v1/audio/${path}`, { method: "POST", body: form }));
}

Deno.test("transcriptions api: each response_format with its content type", async () => {
  const { handler } = setup();
  const json = await post(handler, { file: wav(), model: "whisper-1" });
  assert.equal(json.status, 200);
  assert.deepEqual(await json.json(), {
    text: "Guten Tag. Wie geht's?",
    usage: { type: "duration", seconds: 1 },
  });
  const text = await post(handler, { file: wav(), model: "whisper-1", response_format: "text" });
  assert.match(text.headers.get("content-type")!, /^text\/plain/);
  assert.equal(await text.text(), "Guten Tag. Wie geht's?\n");
  const srt = await post(handler, { file: wav(), model: "whisper-1", response_format: "srt" });
  assert.equal(
    await srt.text(),
    "1\n00:00:00,000 --> 00:00:00,800\nGuten Tag.\n\n2\n00:00:00,900 --> 00:00:01,400\nWie geht's?\n",
  );
  const vtt = await post(handler, { file: wav(), model: "whisper-1", response_format: "vtt" });
  assert.ok((await vtt.text()).startsWith("WEBVTT\n\n00:00:00.000 --> 00:00:00.800\n"));
  const verbose = await post(handler, {
    file: wav(),
    model: "whisper-1",
    response_format: "verbose_json",
    "timestamp_granularities[]": "word",
  });
  const v = await verbose.json();
  assert.equal(v.task, "transcribe");
  assert.equal(v.language, "german");
  assert.equal(v.duration, 1);
  assert.equal(v.segments.length, 2);
  assert.deepEqual(v.words, [{ word: "Guten", start: 0, end: 0.3 }]);
});

Deno.test("transcriptions api: form fields reach the engine as options; translations translate", async () => {
  const { handler, engine } = setup(["--vad", "--vad-model=/models/silero.bin"]);
  await (await post(handler, {
    file: wav(),
    model: "whisper-1",
    language: "de",
    prompt: "Grüße",
    temperature: "0.3",
    response_format: "verbose_json",
    "timestamp_granularities[]": "word",
  })).body?.cancel();
  assert.deepEqual(engine().calls[0].opts, {
    language: "de",
    translate: false,
    prompt: "Grüße",
    temperature: 0.3,
    wordTimestamps: true,
    vad: { model: "/models/silero.bin" },
  });
  assert.equal(engine().calls[0].samples, 16000);
  await (await post(handler, { file: wav(), model: "whisper-1", vad: "false" }, "translations")).body
    ?.cancel();
  assert.equal(engine().calls[1].opts.translate, true);
  assert.equal(engine().calls[1].opts.vad, undefined);
  const v = await (await post(
    handler,
    { file: wav(), model: "whisper-1", response_format: "verbose_json" },
    "translations",
  )).json();
  assert.equal(v.task, "translate");
});

Deno.test("transcriptions api: model-dependent and config-dependent 400s, 413 over the audio limit", async () => {
  const { handler } = setup(["--max-audio-body=10KB"]);
  let r = await post(handler, { file: wav(0.1), model: "whisper-1", language: "fr" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.param, "language");
  r = await post(handler, { file: wav(0.1), model: "whisper-1", vad: "true" });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.param, "vad");
  r = await post(handler, { file: wav(1), model: "whisper-1" });
  assert.equal(r.status, 413);
  await r.body?.cancel();
});

Deno.test("transcriptions api: stream sends deltas then done; a client that leaves stops the engine", async () => {
  const { handler, engine } = setup([], 30);
  const r = await post(handler, { file: wav(), model: "whisper-1", stream: "true" });
  assert.match(r.headers.get("content-type")!, /^text\/event-stream/);
  const events = (await r.text()).trim().split("\n\n").map((f) => JSON.parse(f.replace(/^data: /, "")));
  assert.deepEqual(events, [
    { type: "transcript.text.delta", delta: "Guten Tag." },
    { type: "transcript.text.delta", delta: " Wie geht's?" },
    { type: "transcript.text.done", text: "Guten Tag. Wie geht's?", usage: { type: "duration", seconds: 1 } },
  ]);
  const { handler: slow, engine: slowEngine } = setup([], 300);
  const s = await post(slow, { file: wav(), model: "whisper-1", stream: "true" });
  const reader = s.body!.getReader();
  await reader.read(); // the first delta
  await reader.cancel();
  await new Promise((res) => setTimeout(res, 400));
  assert.equal(slowEngine().aborted, 1);
  assert.equal(engine().aborted, 0);
});
