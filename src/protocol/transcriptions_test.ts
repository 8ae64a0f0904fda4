import assert from "node:assert/strict";
import { ApiError } from "../http/errors.ts";
import { formToObject, parseAudioForm } from "./transcriptions.ts";

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
      stream: "false",
      vad: "false",
      include: "logprobs",
    }),
    "transcribe",
  );
  assert.deepEqual(
    [full.language, full.prompt, full.temperature, full.words, full.stream, full.vad],
    ["de", "Hallo", 0.4, true, false, false],
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
  // A stream is text events: formats and timestamps it cannot carry are refused, not dropped.
  for (const format of ["srt", "vtt", "verbose_json"]) {
    const e = err({ model: "m", stream: "true", response_format: format });
    assert.equal(e.param, "response_format");
    assert.match(e.message, /cannot be streamed/);
  }
  assert.equal(
    err({ model: "m", stream: "true", "timestamp_granularities[]": "segment" }).param,
    "timestamp_granularities",
  );
  assert.equal(
    parseAudioForm(form({ model: "m", stream: "true", response_format: "text" }), "transcribe").stream,
    true,
  );
  for (const k of ["language", "timestamp_granularities", "stream"]) {
    assert.equal(err({ model: "m", [k]: k === "stream" ? "true" : "en" }, "translate").param, k);
  }
  const f = new FormData();
  f.append("file", "a string, not a file");
  f.append("model", "m");
  assert.throws(() => parseAudioForm(f, "transcribe"), (e: ApiError) => e.param === "file");
});
