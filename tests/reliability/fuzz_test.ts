// Property-based fuzzing of every route with fast-check: random JSON, mutations of valid requests, random
// bytes and truncated uploads. Every answer must be a success or a 4xx in the OpenAI envelope (never a 5xx,
// never a dropped connection), and a valid request afterwards must still succeed. Bounded in count and time.
import assert from "node:assert/strict";
import fc from "fast-check";
import { errorOf, startTestServer } from "../helpers.ts";

const RUNS = Number(Deno.env.get("FUZZ_RUNS") ?? 1500);

const chatValid = {
  model: "chat-tiny",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 4,
};
const embedValid = { model: "embed-tiny", input: ["hello world", "fuzz"] };
const completionValid = { model: "chat-tiny", prompt: "Hello", max_tokens: 4, echo: true, logprobs: 1 };
const responseValid = {
  model: "chat-tiny",
  input: [{ role: "user", content: "hi" }],
  instructions: "Be brief.",
  max_output_tokens: 4,
};

/** Arbitrary JSON-ish values, biased towards the shapes the schemas look at. */
const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -1e6, max: 1e6 }),
  fc.double({ noNaN: false }),
  fc.string({ maxLength: 40 }),
  fc.constantFrom("user", "system", "assistant", "tool", "developer", "float", "base64", "", "\u0000", "😀"),
  fc.array(fc.integer({ min: -5, max: 70000 }), { maxLength: 6 }),
  fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

/** A valid body with one field replaced, added or removed (possibly deep inside arrays). */
function mutated(valid: Record<string, unknown>) {
  const keys = [
    ...Object.keys(valid),
    "messages",
    "input",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "max_completion_tokens",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "presence_penalty",
    "stream",
    "stream_options",
    "response_format",
    "tools",
    "tool_choice",
    "dimensions",
    "encoding_format",
    "user",
    "prompt",
    "echo",
    "suffix",
    "best_of",
    "instructions",
    "previous_response_id",
    "max_output_tokens",
    "text",
    "reasoning",
    "reasoning_effort",
    "store",
    "metadata",
    "include",
  ];
  return fc.record({
    key: fc.constantFrom(...keys),
    value: anyValue,
    drop: fc.boolean(),
    deep: fc.boolean(),
  }).map(({ key, value, drop, deep }) => {
    const body: Record<string, unknown> = structuredClone(valid);
    if (deep && Array.isArray(body[key])) (body[key] as unknown[])[0] = value;
    else if (drop) delete body[key];
    else body[key] = value;
    return JSON.stringify(body);
  });
}

const rawBodies = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => new TextDecoder().decode(b)),
);

async function expectNo5xx(res: Response, what: string): Promise<void> {
  const text = await res.text();
  assert.ok(res.status < 500, `${what} -> ${res.status} ${text.slice(0, 300)}`);
  if (res.status >= 400) errorOf(JSON.parse(text));
}

Deno.test({
  name: "fuzz: JSON routes answer every random or mutated body with success or a 4xx envelope",
  sanitizeResources: false,
  fn: async () => {
    const t = await startTestServer({ flags: ["--queue-size=256"] });
    try {
      for (
        const [path, valid] of [
          ["/v1/chat/completions", chatValid],
          ["/v1/embeddings", embedValid],
          ["/v1/completions", completionValid],
          ["/v1/responses", responseValid],
          ["/v1/responses/input_tokens", responseValid],
        ] as const
      ) {
        const url = `${t.url}${path}`;
        const post = (body: string) =>
          fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } });
        await fc.assert(
          fc.asyncProperty(fc.oneof(mutated(valid), rawBodies), async (body) => {
            await expectNo5xx(await post(body), `${path} ${body.slice(0, 200)}`);
          }),
          { numRuns: RUNS, seed: 42 },
        );
        const after = await post(JSON.stringify(valid));
        assert.equal(after.status, 200, await after.text());
      }
    } finally {
      await t.close();
    }
  },
});

Deno.test({
  name: "fuzz: the transcription route answers random bytes and truncated files with a 4xx envelope",
  sanitizeResources: false,
  fn: async () => {
    const t = await startTestServer();
    try {
      const wav = await Deno.readFile(new URL("../../../shared/data/whisper/jfk.wav", import.meta.url));
      const url = `${t.url}/v1/audio/transcriptions`;
      const send = (bytes: Uint8Array<ArrayBuffer>, fields: Record<string, string>) => {
        const form = new FormData();
        form.set("file", new Blob([bytes]), "audio.wav");
        for (const [k, v] of Object.entries(fields)) form.set(k, v);
        return fetch(url, { method: "POST", body: form });
      };
      const bytesArb = fc.oneof(
        fc.uint8Array({ maxLength: 4096 }),
        fc.integer({ min: 0, max: 4000 }).map((n) => wav.slice(0, n)),
        fc.tuple(fc.integer({ min: 0, max: wav.length - 1 }), fc.integer({ min: 0, max: 255 })).map(
          ([i, b]) => {
            const copy = wav.slice(0, 8192);
            copy[i % 8192] = b;
            copy[(i * 7) % 44] = b; // hit the header too
            return copy;
          },
        ),
      );
      const fieldsArb = fc.dictionary(
        fc.constantFrom("model", "response_format", "temperature", "language", "timestamp_granularities[]"),
        fc.oneof(
          fc.string({ maxLength: 12 }),
          fc.constantFrom("whisper-1", "json", "srt", "verbose_json", "2"),
        ),
      ).map((f) => ({ model: "whisper-1", ...f }));
      await fc.assert(
        fc.asyncProperty(bytesArb, fieldsArb, async (bytes, fields) => {
          await expectNo5xx(await send(bytes, fields), `transcription ${JSON.stringify(fields)}`);
        }),
        { numRuns: Math.ceil(RUNS / 3), seed: 7 },
      );
      const ok = await send(wav, { model: "whisper-1" });
      assert.equal(ok.status, 200, await ok.text());
    } finally {
      await t.close();
    }
  },
});
