// End to end: the real server on port 0 with the real whisper.cpp engine (native/build) on the generated
// whisper-tiny-test model, driven by the official `openai` client and raw fetch: every response_format with its
// content type and shape, streaming events, translations, the audio fixtures of every container, VAD on jfk.wav,
// serving other requests while transcribing, and the 400s for client mistakes.
// Needs `deno run -A native/build.ts --if-missing` and `deno run -A tools/ensure_models.ts` first.
import assert from "node:assert/strict";
import { join } from "node:path";
import { toFile } from "openai";
import { errorOf, REPO_ROOT, SHARED_DIR, startTestServer, type TestServer } from "../helpers.ts";
import {
  ENGLISH_SCRIPT,
  FALLBACK_TEMPERATURE,
  GERMAN_SCRIPT,
  PROMPTED_SCRIPT,
} from "../../tools/models/whisper_multi.ts";

const FIXTURES = join(REPO_ROOT, "tests", "fixtures", "audio");
const JFK = join(SHARED_DIR, "data", "whisper", "jfk.wav");
const VAD_MODEL = join(SHARED_DIR, "data", "whisper", "for-tests-silero-v6.2.0-ggml.bin");
/** What the generated model says for any audio of at least 2 s (tools/models/whisper_tiny.ts TEST_SCRIPT). */
const SENTENCE = "The quick brown fox jumps over the lazy dog.";
/** The multilingual test model and what it writes (tools/models/whisper_multi.ts). */
const MULTI = "whisper-multi-test";
const GERMAN = GERMAN_SCRIPT.map((x) => x.text).join("").trim();
const PROMPTED = PROMPTED_SCRIPT.map((x) => x.text).join("").trim();
const ENGLISH = ENGLISH_SCRIPT.map((x) => x.text).join("").trim();
/** Length of the fixtures' speech. */
const FIXTURE_SECONDS = 2.9085;

const fixture = (ext: string) => Deno.readFile(join(FIXTURES, `speech.${ext}`));

function start(flags: string[] = []): Promise<TestServer> {
  return startTestServer({ flags });
}

/** POSTs a multipart form with raw fetch. */
async function post(
  url: string,
  fields: Record<string, string | string[] | Blob>,
  path = "/v1/audio/transcriptions",
): Promise<Response> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (Array.isArray(v)) v.forEach((x) => form.append(k, x));
    else if (v instanceof Blob) form.append(k, v, "speech.wav");
    else form.append(k, v);
  }
  return await fetch(url + path, { method: "POST", body: form });
}

/** Parses SRT or WebVTT into cues; throws on anything malformed. */
function parseCues(text: string, kind: "srt" | "vtt"): { start: number; end: number; text: string }[] {
  const sep = kind === "srt" ? "," : "\\.";
  const time = new RegExp(
    `^(\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3}) --> (\\d{2}):(\\d{2}):(\\d{2})${sep}(\\d{3})$`,
  );
  let blocks = text.replace(/\r\n/g, "\n").trim().split(/\n\n+/);
  if (kind === "vtt") {
    assert.equal(blocks[0], "WEBVTT", "a WebVTT file starts with WEBVTT");
    blocks = blocks.slice(1);
  }
  return blocks.map((block, i) => {
    const lines = block.split("\n");
    if (kind === "srt") assert.equal(lines.shift(), String(i + 1), "srt cues are numbered from 1");
    const m = time.exec(lines.shift() ?? "");
    assert.ok(m, `cue ${i + 1} has a valid timing line`);
    const secs = (o: number) => +m[o] * 3600 + +m[o + 1] * 60 + +m[o + 2] + +m[o + 3] / 1000;
    assert.ok(lines.length > 0 && lines.every((l) => l.trim().length > 0), "cue text is present");
    return { start: secs(1), end: secs(5), text: lines.join("\n") };
  });
}

Deno.test("transcriptions: every response_format through the openai client and raw fetch", async (t) => {
  const s = await start();
  try {
    const wav = await fixture("wav");
    const file = () => toFile(wav, "speech.wav", { type: "audio/wav" });

    await t.step("json (default) with usage, also under the whisper-1 alias", async () => {
      const r = await s.client.audio.transcriptions.create({
        file: await file(),
        model: "whisper-tiny-test",
      });
      assert.equal(r.text, SENTENCE);
      assert.deepEqual((r as unknown as { usage: unknown }).usage, { type: "duration", seconds: 3 });
      const alias = await s.client.audio.transcriptions.create({ file: await file(), model: "whisper-1" });
      assert.equal(alias.text, SENTENCE);
      const raw = await post(s.url, { file: new Blob([wav]), model: "whisper-1" });
      assert.equal(raw.status, 200);
      assert.match(raw.headers.get("content-type") ?? "", /^application\/json/);
    });

    await t.step("text", async () => {
      const r = await s.client.audio.transcriptions.create({
        file: await file(),
        model: "whisper-1",
        response_format: "text",
      });
      assert.equal(String(r).trim(), SENTENCE);
      const raw = await post(s.url, { file: new Blob([wav]), model: "whisper-1", response_format: "text" });
      assert.match(raw.headers.get("content-type") ?? "", /^text\/plain/);
      assert.equal((await raw.text()).trim(), SENTENCE);
    });

    for (const kind of ["srt", "vtt"] as const) {
      await t.step(`${kind} parses as subtitles inside the audio`, async () => {
        const r = await s.client.audio.transcriptions.create({
          file: await file(),
          model: "whisper-1",
          response_format: kind,
        });
        const cues = parseCues(String(r), kind);
        assert.equal(cues.length, 2);
        assert.equal(cues.map((c) => c.text).join(" "), SENTENCE);
        let last = 0;
        for (const c of cues) {
          assert.ok(c.start >= last && c.end > c.start && c.end <= FIXTURE_SECONDS, JSON.stringify(c));
          last = c.end;
        }
        const raw = await post(s.url, { file: new Blob([wav]), model: "whisper-1", response_format: kind });
        assert.match(raw.headers.get("content-type") ?? "", /^text\/plain/);
        await raw.body?.cancel();
      });
    }

    await t.step("verbose_json with segments and words", async () => {
      const r = await s.client.audio.transcriptions.create({
        file: await file(),
        model: "whisper-1",
        response_format: "verbose_json",
        timestamp_granularities: ["word", "segment"],
      });
      const v = r as unknown as Record<string, unknown> & {
        segments: Record<string, unknown>[];
        words: { word: string; start: number; end: number }[];
      };
      assert.equal(v.task, "transcribe");
      assert.equal(v.language, "english");
      assert.ok(Math.abs((v.duration as number) - FIXTURE_SECONDS) < 0.01);
      assert.equal(v.text, SENTENCE);
      assert.deepEqual(v.usage, { type: "duration", seconds: 3 });
      assert.equal(v.segments.length, 2);
      v.segments.forEach((seg, i) => {
        assert.equal(seg.id, i);
        for (
          const k of [
            "seek",
            "start",
            "end",
            "temperature",
            "avg_logprob",
            "compression_ratio",
            "no_speech_prob",
          ]
        ) {
          assert.equal(typeof seg[k], "number", k);
        }
        assert.ok(Array.isArray(seg.tokens) && (seg.tokens as number[]).every(Number.isInteger));
        assert.equal(typeof seg.text, "string");
        // Both segments come from the one 30 s window at 0, decoded at the requested temperature.
        assert.equal(seg.seek, 0);
        assert.equal(seg.temperature, 0);
      });
      assert.deepEqual(v.words.map((w) => w.word).join(" "), SENTENCE);
      for (const w of v.words) assert.ok(w.start >= 0 && w.end >= w.start && w.end <= FIXTURE_SECONDS);
      // Without word granularity there are no words.
      const plain = await post(s.url, {
        file: new Blob([wav]),
        model: "whisper-1",
        response_format: "verbose_json",
      });
      assert.equal((await plain.json()).words, undefined);
      // Both spellings of the field are accepted.
      const bare = await post(s.url, {
        file: new Blob([wav]),
        model: "whisper-1",
        response_format: "verbose_json",
        timestamp_granularities: "word",
      });
      assert.equal((await bare.json()).words.length, 9);
    });
  } finally {
    await s.close();
  }
});

Deno.test("transcriptions: stream=true sends a delta per segment, then done", async () => {
  const s = await start();
  try {
    const stream = await s.client.audio.transcriptions.create({
      file: await toFile(await fixture("mp3"), "speech.mp3"),
      model: "whisper-1",
      stream: true,
    });
    const events: { type: string; delta?: string; text?: string; usage?: unknown }[] = [];
    for await (const e of stream) events.push(e as never);
    assert.deepEqual(events.map((e) => e.type), [
      "transcript.text.delta",
      "transcript.text.delta",
      "transcript.text.done",
    ]);
    assert.equal(events.slice(0, -1).map((e) => e.delta).join(""), SENTENCE);
    assert.equal(events.at(-1)!.text, SENTENCE);
    assert.deepEqual(events.at(-1)!.usage, { type: "duration", seconds: 3 });

    const raw = await post(s.url, {
      file: new Blob([await fixture("wav")]),
      model: "whisper-1",
      stream: "true",
    });
    assert.match(raw.headers.get("content-type") ?? "", /^text\/event-stream/);
    const body = await raw.text();
    assert.ok(body.startsWith('data: {"type":"transcript.text.delta"'), body);
    assert.ok(!body.includes("[DONE]"));
    // What a stream cannot carry is refused by name, not dropped.
    for (const [field, value] of [["response_format", "srt"], ["timestamp_granularities[]", "segment"]]) {
      const refused = await post(s.url, {
        file: new Blob([await fixture("wav")]),
        model: "whisper-1",
        stream: "true",
        [field]: value,
      });
      assert.equal(refused.status, 400);
      assert.equal((await refused.json()).error.param, field.replace("[]", ""));
    }
  } finally {
    await s.close();
  }
});

Deno.test("translations: json, text and verbose_json with task translate", async () => {
  const s = await start();
  try {
    const file = await toFile(await fixture("flac"), "speech.flac");
    const r = await s.client.audio.translations.create({ file, model: MULTI });
    assert.equal(r.text, ENGLISH);
    const text = await s.client.audio.translations.create({ file, model: MULTI, response_format: "text" });
    assert.equal(String(text).trim(), ENGLISH);
    const v = await s.client.audio.translations.create({
      file,
      model: MULTI,
      response_format: "verbose_json",
    }) as unknown as Verbose;
    assert.equal(v.task, "translate");
    assert.equal(v.language, "english", "a translation's language is its output's");
    assert.equal(v.text, ENGLISH);
    const bad = await post(s.url, {
      file: new Blob([await fixture("wav")]),
      model: MULTI,
      language: "en",
    }, "/v1/audio/translations");
    assert.equal(bad.status, 400);
    assert.equal(errorOf(await bad.json()).param, "language");
  } finally {
    await s.close();
  }
});

interface Verbose {
  task: string;
  language: string;
  text: string;
  segments: { seek: number; start: number; end: number; temperature: number; avg_logprob: number }[];
}

Deno.test("multilingual model: detection, language, prompt and translate give their planted outputs", async (t) => {
  const s = await start();
  try {
    const wav = await fixture("wav");
    const file = () => toFile(wav, "speech.wav", { type: "audio/wav" });
    const verbose = async (extra: Record<string, unknown>, path: "transcriptions" | "translations") =>
      await s.client.audio[path].create({
        file: await file(),
        model: MULTI,
        response_format: "verbose_json",
        ...extra,
      } as never) as unknown as Verbose;

    await t.step("no language: whisper detects German and transcribes the German sentence", async () => {
      const v = await verbose({}, "transcriptions");
      assert.equal(v.language, "german");
      assert.equal(v.text, GERMAN);
      assert.deepEqual(v.segments.map((x) => [x.seek, x.start, x.end, x.temperature]), [[0, 0, 2, 0]]);
    });

    await t.step("language is used as given (detection skipped) and named in verbose_json", async () => {
      const v = await verbose({ language: "fr" }, "transcriptions");
      assert.equal(v.language, "french");
      assert.equal(v.text, GERMAN);
      const de = await s.client.audio.transcriptions.create({
        file: await file(),
        model: MULTI,
        language: "de",
      });
      assert.equal(de.text, GERMAN);
    });

    await t.step("a prompt reaches the decoder and changes what it writes", async () => {
      const v = await verbose({ prompt: "Grüß Gott." }, "transcriptions");
      assert.equal(v.text, PROMPTED);
      assert.deepEqual(v.segments.map((x) => [x.seek, x.start, x.end]), [[0, 0.02, 2.02]]);
    });

    await t.step(
      "translate writes the English sentence after whisper's real temperature fallback",
      async () => {
        const v = await verbose({}, "translations");
        assert.equal(v.text, ENGLISH);
        // At temperature 0 the decode fails whisper's log-probability check; the kept decode is the 0.2 one.
        assert.deepEqual(v.segments.map((x) => x.temperature), [FALLBACK_TEMPERATURE]);
        // avg_logprob is the kept decode's, over its text tokens: about -0.01. Averaged over the closing timestamp
        // too (log-probability about -0.4 in this decode) it would be about -0.08.
        const avg = v.segments[0].avg_logprob;
        assert.ok(avg > -0.04 && avg < 0, `avg_logprob of the kept decode's text tokens: ${avg}`);
        const warm = await verbose({ temperature: 0.4 }, "translations");
        assert.equal(warm.text, ENGLISH);
        assert.deepEqual(
          warm.segments.map((x) => x.temperature),
          [0.4],
          "a decode that passes keeps its own",
        );
      },
    );
  } finally {
    await s.close();
  }
});

Deno.test("English-only model: translation and other languages are 400s, not English passed off", async () => {
  const s = await start();
  try {
    const wav = new Blob([await fixture("wav")]);
    const translated = await post(s.url, { file: wav, model: "whisper-tiny-test" }, "/v1/audio/translations");
    assert.equal(translated.status, 400);
    const e = errorOf(await translated.json());
    assert.equal(e.param, "model");
    assert.match(e.message, /English-only/);
    const german = await post(s.url, { file: wav, model: "whisper-tiny-test", language: "de" });
    assert.equal(german.status, 400);
    assert.equal(errorOf(await german.json()).param, "language");
    const english = await post(s.url, { file: wav, model: "whisper-tiny-test", language: "en" });
    assert.equal(english.status, 200);
    assert.equal((await english.json()).text, SENTENCE);
  } finally {
    await s.close();
  }
});

Deno.test("audio: wav, mp3, flac, ogg vorbis, ogg opus, webm and m4a decode to the same duration", async () => {
  const s = await start();
  try {
    const durations: Record<string, number> = {};
    for (const ext of ["wav", "mp3", "flac", "ogg", "opus", "webm", "m4a"]) {
      const r = await s.client.audio.transcriptions.create({
        file: await toFile(await fixture(ext), `speech.${ext}`),
        model: "whisper-1",
        response_format: "verbose_json",
      });
      durations[ext] = (r as unknown as { duration: number }).duration;
      assert.equal(r.text, SENTENCE, ext);
    }
    for (const [ext, d] of Object.entries(durations)) {
      assert.ok(Math.abs(d - FIXTURE_SECONDS) <= 0.02, `${ext}: ${d} s vs ${FIXTURE_SECONDS} s`);
    }
  } finally {
    await s.close();
  }
});

Deno.test("VAD: finds the speech in jfk.wav where whisper.cpp's test does, and maps segments into it", async () => {
  const s = await start([`--vad-model=${VAD_MODEL}`]);
  try {
    const jfk = await Deno.readFile(JFK);
    // The engine's own view: four stretches of speech.
    const entry = s.server.registry.resolve("whisper-tiny-test", "transcription");
    const engine = await s.server.registry.engine<import("../../src/engines/types.ts").TranscriptionEngine>(
      entry,
    );
    const { decodeAudio } = await import("../../src/audio/decode.ts");
    const spans = await engine.detectSpeech(await decodeAudio(jfk), VAD_MODEL);
    const expected = [[0.3, 2.3], [3.3, 4.4], [5.4, 7.7], [8.2, 10.6]];
    assert.equal(spans.length, expected.length, JSON.stringify(spans));
    spans.forEach((sp, i) => {
      assert.ok(
        Math.abs(sp.start - expected[i][0]) < 0.15 && Math.abs(sp.end - expected[i][1]) < 0.15,
        JSON.stringify(sp),
      );
    });
    // Through the API: segments start where speech starts, not at 0.
    const r = await post(s.url, {
      file: new Blob([jfk]),
      model: "whisper-1",
      response_format: "verbose_json",
      vad: "true",
    });
    const v = await r.json();
    assert.equal(r.status, 200, JSON.stringify(v));
    assert.equal(v.text, SENTENCE);
    assert.ok(v.segments[0].start >= 0.25, JSON.stringify(v.segments));
    assert.ok(v.duration > 10.9 && v.duration < 11.1);
  } finally {
    await s.close();
  }
});

Deno.test("serving: /health and /v1/models answer at once while a transcription runs", async () => {
  const s = await start();
  try {
    // Three jfk.wav back to back: two 30 s windows of encoding keep whisper busy for a while.
    const jfk = await Deno.readFile(JFK);
    const { decodeAudio } = await import("../../src/audio/decode.ts");
    const pcm = await decodeAudio(jfk);
    const long = new Float32Array(pcm.length * 3);
    for (let i = 0; i < 3; i++) long.set(pcm, i * pcm.length);
    const wav = wavBytes(long);
    let done = false;
    const running = post(s.url, { file: new Blob([wav]), model: "whisper-1" }).then(async (r) => {
      done = true;
      return [r.status, await r.json()] as const;
    });
    await new Promise((r) => setTimeout(r, 700)); // decoded and inside whisper_full by now
    for (const path of ["/health", "/v1/models"]) {
      const t0 = performance.now();
      const r = await fetch(s.url + path);
      await r.body?.cancel();
      const ms = performance.now() - t0;
      assert.equal(r.status, 200, path);
      assert.ok(ms < 250, `${path} took ${ms.toFixed(0)} ms`);
    }
    assert.equal(done, false, "the transcription should still be running");
    const [status, body] = await running;
    assert.equal(status, 200);
    assert.equal(body.text, SENTENCE + " " + SENTENCE);
  } finally {
    await s.close();
  }
});

Deno.test("errors: client mistakes are 400s in the OpenAI envelope naming the param", async () => {
  const s = await start();
  try {
    const wav = new Blob([await fixture("wav")]);
    const cases: [Record<string, string | string[] | Blob>, string][] = [
      [{ file: new Blob([crypto.getRandomValues(new Uint8Array(4000))]), model: "whisper-1" }, "file"],
      [{ file: new Blob([]), model: "whisper-1" }, "file"],
      [
        { file: new Blob([new TextEncoder().encode("RIFF....WAVEfmt not really")]), model: "whisper-1" },
        "file",
      ],
      [{ model: "whisper-1" }, "file"],
      [{ file: "not a file", model: "whisper-1" }, "file"],
      [{ file: wav }, "model"],
      [{ file: wav, model: "whisper-1", temperature: "hot" }, "temperature"],
      [{ file: wav, model: "whisper-1", temperature: "1.5" }, "temperature"],
      [{ file: wav, model: "whisper-1", stream: "maybe" }, "stream"],
      [{ file: wav, model: "whisper-1", response_format: "xml" }, "response_format"],
      [{ file: wav, model: "whisper-1", language: "english" }, "language"],
      [{ file: wav, model: "whisper-1", language: "zz" }, "language"],
      [{ file: wav, model: "whisper-1", "timestamp_granularities[]": "word" }, "timestamp_granularities"],
      [{ file: wav, model: "whisper-1", "timestamp_granularities[]": "char" }, "timestamp_granularities[0]"],
      [{ file: wav, model: "whisper-1", vad: "true" }, "vad"],
    ];
    for (const [fields, param] of cases) {
      const r = await post(s.url, fields);
      const json = await r.json();
      assert.equal(r.status, 400, `${JSON.stringify(Object.keys(fields))} -> ${JSON.stringify(json)}`);
      const err = errorOf(json);
      assert.equal(err.type, "invalid_request_error");
      assert.equal(err.param, param, JSON.stringify(json));
    }
    const unknown = await post(s.url, { file: wav, model: "no-such-model" });
    assert.equal(unknown.status, 404);
    assert.equal(errorOf(await unknown.json()).code, "model_not_found");
  } finally {
    await s.close();
  }
});

Deno.test("library missing: transcription models answer 503 saying how to build, the rest keeps working", async () => {
  // The real flag, pointing nowhere: only transcription is affected.
  const s = await startTestServer({ flags: ["--whisper-lib=/nonexistent/whisper"] });
  try {
    const r = await post(s.url, { file: new Blob([await fixture("wav")]), model: "whisper-1" });
    const json = await r.json();
    assert.equal(r.status, 503);
    assert.match(errorOf(json).message, /native:build/);
    const models = await fetch(`${s.url}/v1/models`);
    assert.equal(models.status, 200);
    await models.body?.cancel();
  } finally {
    await s.close();
  }
});

/** 16-bit mono 16 kHz WAV bytes of float samples. */
function wavBytes(pcm: Float32Array): Uint8Array<ArrayBuffer> {
  const out = new DataView(new ArrayBuffer(44 + pcm.length * 2));
  const ascii = (o: number, s: string) => [...s].forEach((c, i) => out.setUint8(o + i, c.charCodeAt(0)));
  ascii(0, "RIFF");
  out.setUint32(4, 36 + pcm.length * 2, true);
  ascii(8, "WAVEfmt ");
  out.setUint32(16, 16, true);
  out.setUint16(20, 1, true);
  out.setUint16(22, 1, true);
  out.setUint32(24, 16000, true);
  out.setUint32(28, 32000, true);
  out.setUint16(32, 2, true);
  out.setUint16(34, 16, true);
  ascii(36, "data");
  out.setUint32(40, pcm.length * 2, true);
  pcm.forEach((x, i) => out.setInt16(44 + i * 2, Math.max(-1, Math.min(1, x)) * 32767, true));
  return new Uint8Array(out.buffer);
}
