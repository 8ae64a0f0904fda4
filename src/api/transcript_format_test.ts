// Tests transcript rendering: SRT and WebVTT cues with their clocks, verbose_json with OpenAI's fields.
import assert from "node:assert/strict";
import type { Transcript } from "../engines/types.ts";
import { clock, compressionRatio, toSrt, toVerboseJson, toVtt, usageOf } from "./transcript_format.ts";

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
      seek: 0,
      temperature: 0,
    },
    {
      start: 62.25,
      end: 3725.5,
      text: " General\n\nKenobi! -->",
      tokens: [1],
      avgLogprob: -0.3,
      noSpeechProb: 0.02,
      seek: 5987,
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
  assert.equal(v.segments[1].seek, 5987, "the engine's window start, not one derived from the start time");
  assert.deepEqual(v.words, [{ word: "Hello", start: 0, end: 0.5 }]);
  assert.deepEqual(usageOf(T), { type: "duration", seconds: 5 });
  assert.equal(toVerboseJson({ ...T, words: undefined }, "translate", "english").words, undefined);
  assert.ok(compressionRatio("la ".repeat(100)) > 5);
  assert.ok(compressionRatio("The quick brown fox.") < 1.5);
  assert.equal(compressionRatio(""), 0);
});
