import assert from "node:assert/strict";
import { ApiError } from "../http/errors.ts";
import type { Transcript } from "../engines/types.ts";
import {
  clock,
  compressionRatio,
  formToObject,
  parseAudioForm,
  toSrt,
  toVerboseJson,
  toVtt,
  usageOf,
} from "./transcriptions.ts";

function form(fields: Record<string, string | string[]>, file = true): FormData {
  const f = new FormData();
  if (file) f.append("file", new Blob([new Uint8Array(4)]), "a.wav");
  for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) f.append(k, x);
  return f;
}

function err(
  fields: Record<string, string | string[]>,
  task: "transcribe" | "translate" = "transcribe",
  file = true,
) {
  try {
    parseAudioForm(form(fields, file), task);
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.status, 400);
    return e;
  }
  throw new Error(`accepted ${JSON.stringify(fields)}`);
}

Deno.test("audio form: defaults, strings parsed to numbers and booleans, both spellings of list fields", () => {
  const d = parseAudioForm(form({ model: "whisper-1" }), "transcribe");
  assert.equal(d.responseFormat, "json");
  assert.equal(d.temperature, 0);
  assert.equal(d.stream, false);
  assert.equal(d.words, false);
  assert.equal(d.vad, undefined);
  const full = parseAudioForm(
    form({
      model: "m",
      language: "de",
      prompt: "Hallo",
      response_format: "verbose_json",
      temperature: "0.4",
      "timestamp_granularities[]": ["segment", "word"],
      stream: "true",
      vad: "false",
      include: "logprobs",
    }),
    "transcribe",
  );
  assert.deepEqual(
    [full.language, full.prompt, full.temperature, full.words, full.stream, full.vad],
    ["de", "Hallo", 0.4, true, true, false],
  );
  const bare = parseAudioForm(
    form({ model: "m", response_format: "verbose_json", timestamp_granularities: "word" }),
    "transcribe",
  );
  assert.equal(bare.words, true);
  assert.deepEqual(formToObject(form({ a: ["1", "2"], "b[]": "x" }, false)), { a: "1", b: ["x"] });
});

Deno.test("audio form: each mistake is a 400 naming its param", () => {
  assert.equal(err({ model: "m" }, "transcribe", false).param, "file");
  assert.equal(err({ model: "m" }, "transcribe", false).code, "missing_required_parameter");
  assert.equal(err({}).param, "model");
  assert.equal(err({ model: "m", temperature: "warm" }).param, "temperature");
  assert.equal(err({ model: "m", temperature: "-0.1" }).param, "temperature");
  assert.equal(err({ model: "m", temperature: "" }).param, "temperature");
  assert.equal(err({ model: "m", stream: "yes please" }).param, "stream");
  assert.equal(err({ model: "m", vad: "2" }).param, "vad");
  assert.equal(err({ model: "m", response_format: "xml" }).param, "response_format");
  assert.equal(err({ model: "m", language: "English" }).param, "language");
  const words = err({ model: "m", "timestamp_granularities[]": "word" });
  assert.equal(words.param, "timestamp_granularities");
  assert.match(words.message, /verbose_json/);
  assert.equal(err({ model: "m", "timestamp_granularities[]": "char" }).param, "timestamp_granularities[0]");
  for (const k of ["language", "timestamp_granularities", "stream"]) {
    assert.equal(err({ model: "m", [k]: k === "stream" ? "true" : "en" }, "translate").param, k);
  }
  const f = new FormData();
  f.append("file", "a string, not a file");
  f.append("model", "m");
  assert.throws(() => parseAudioForm(f, "transcribe"), (e: ApiError) => e.param === "file");
});

const T: Transcript = {
  language: "en",
  duration: 4.2,
  text: "Hello there. General Kenobi!",
  segments: [
    {
      start: 0,
      end: 1.5,
      text: " Hello there.",
      tokens: [50363, 15496, 612, 13, 50438],
      avgLogprob: -0.2,
      noSpeechProb: 0.01,
      temperature: 0,
    },
    {
      start: 62.25,
      end: 3725.5,
      text: " General\n\nKenobi! -->",
      tokens: [1],
      avgLogprob: -0.3,
      noSpeechProb: 0.02,
      temperature: 0,
    },
  ],
  words: [{ word: "Hello", start: 0, end: 0.5 }],
};

Deno.test("subtitles: srt and vtt cues with their clocks, text made safe for cues", () => {
  assert.equal(clock(3725.5, ","), "01:02:05,500");
  assert.equal(clock(0.0004, "."), "00:00:00.000");
  assert.equal(
    toSrt(T),
    "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n00:01:02,250 --> 01:02:05,500\nGeneral\nKenobi! ->\n",
  );
  assert.equal(
    toVtt(T),
    "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n00:01:02.250 --> 01:02:05.500\nGeneral\nKenobi! ->\n",
  );
  assert.equal(toVtt({ ...T, segments: [] }), "WEBVTT\n");
});

Deno.test("verbose_json: OpenAI's fields, usage in whole seconds", () => {
  const v = toVerboseJson(T, "transcribe", "english");
  assert.equal(v.task, "transcribe");
  assert.equal(v.language, "english");
  assert.deepEqual(Object.keys(v.segments[0]), [
    "id",
    "seek",
    "start",
    "end",
    "text",
    "tokens",
    "temperature",
    "avg_logprob",
    "compression_ratio",
    "no_speech_prob",
  ]);
  assert.equal(v.segments[1].seek, 6000);
  assert.deepEqual(v.words, [{ word: "Hello", start: 0, end: 0.5 }]);
  assert.deepEqual(usageOf(T), { type: "duration", seconds: 5 });
  assert.equal(toVerboseJson({ ...T, words: undefined }, "translate", "english").words, undefined);
  assert.ok(compressionRatio("la ".repeat(100)) > 5);
  assert.ok(compressionRatio("The quick brown fox.") < 1.5);
  assert.equal(compressionRatio(""), 0);
});
