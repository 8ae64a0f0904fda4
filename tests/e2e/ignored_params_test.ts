// End to end: no request field is dropped silently. Fields a route accepts but does not act on come back in
// `X-Ignored-Params` on every route (JSON, SSE and multipart); `X-Strict: true` (or a server started with
// --strict) refuses them with a 400 naming the field; `X-Strict: false` lets a strict server answer anyway;
// ordinary SDK requests carry no such field and get no header.
import assert from "node:assert/strict";
import { join } from "node:path";
import { errorOf, REPO_ROOT, startTestServer, type TestServer } from "../helpers.ts";

const HI = [{ role: "user", content: "Hi there!" }];

/** One request per route, each with fields that route ignores, and the header it must answer with. */
const CASES: { path: string; body: Record<string, unknown>; ignored: string }[] = [
  {
    path: "/v1/chat/completions",
    body: {
      model: "chat-tiny",
      messages: HI,
      service_tier: "flex",
      prediction: { type: "content", content: "x" },
    },
    ignored: "service_tier, prediction",
  },
  {
    path: "/v1/chat/completions",
    body: { model: "chat-tiny", messages: HI, stream: true, user: "u1", web_search_options: {} },
    ignored: "user, web_search_options",
  },
  { path: "/v1/completions", body: { model: "chat-tiny", prompt: "Hello", user: "u1" }, ignored: "user" },
  {
    path: "/v1/responses",
    body: {
      model: "chat-tiny",
      input: "Hi",
      text: { verbosity: "low" },
      include: ["reasoning.encrypted_content"],
    },
    ignored: "text.verbosity, include[0]",
  },
  {
    path: "/v1/responses/input_tokens",
    body: { model: "chat-tiny", input: "Hi", truncation: "auto" },
    ignored: "truncation",
  },
  { path: "/v1/embeddings", body: { model: "embed-tiny", input: "hello", user: "u1" }, ignored: "user" },
];

async function post(
  s: TestServer,
  path: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${s.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, ignored: res.headers.get("x-ignored-params"), text: await res.text() };
}

async function transcribe(
  s: TestServer,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const form = new FormData();
  const wav = await Deno.readFile(join(REPO_ROOT, "tests", "fixtures", "audio", "speech.wav"));
  form.append("file", new Blob([wav], { type: "audio/wav" }), "speech.wav");
  form.append("model", "whisper-1");
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const res = await fetch(`${s.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers });
  return { status: res.status, ignored: res.headers.get("x-ignored-params"), text: await res.text() };
}

Deno.test("ignored params: reported by default, refused when strict", async (t) => {
  const s = await startTestServer();
  try {
    for (const c of CASES) {
      await t.step(`${c.path}: ${c.ignored} are listed, the request is served`, async () => {
        const r = await post(s, c.path, c.body);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.ignored, c.ignored);
      });
      await t.step(`${c.path}: X-Strict: true refuses the first of them`, async () => {
        const r = await post(s, c.path, c.body, { "x-strict": "true" });
        assert.equal(r.status, 400);
        const err = errorOf(JSON.parse(r.text));
        assert.equal(err.param, c.ignored.split(", ")[0]);
        assert.equal(err.code, "unsupported_parameter");
      });
    }

    await t.step(
      "multipart: a transcription's chunking_strategy is listed, refused when strict",
      async () => {
        const r = await transcribe(s, { chunking_strategy: "auto" });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.ignored, "chunking_strategy");
        const strict = await transcribe(s, { chunking_strategy: "auto" }, { "x-strict": "true" });
        assert.equal(strict.status, 400);
        assert.equal(errorOf(JSON.parse(strict.text)).param, "chunking_strategy");
      },
    );

    await t.step(
      "what the route acts on is never listed, nor a null, nor a value asking for the default",
      async () => {
        const r = await post(s, "/v1/chat/completions", {
          model: "chat-tiny",
          messages: HI,
          temperature: 0,
          max_tokens: 8,
          seed: 1,
          metadata: null,
          modalities: ["text"],
          store: false,
        }, { "x-strict": "true" });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.ignored, null);
        const sdk = await s.client.chat.completions.create({
          model: "chat-tiny",
          messages: [{ role: "user", content: "Hi" }],
        })
          .withResponse();
        assert.equal(sdk.response.headers.get("x-ignored-params"), null);
      },
    );
  } finally {
    await s.close();
  }
});

Deno.test("ignored params: --strict refuses them server-wide; X-Strict: false opts a request out", async () => {
  const s = await startTestServer({ flags: ["--strict", "--cors-origin=http://app.example"] });
  try {
    const body = { model: "chat-tiny", messages: HI, service_tier: "flex" };
    const refused = await post(s, "/v1/chat/completions", body);
    assert.equal(refused.status, 400);
    assert.equal(errorOf(JSON.parse(refused.text)).param, "service_tier");
    const allowed = await post(s, "/v1/chat/completions", body, { "x-strict": "false" });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.ignored, "service_tier");
    // Browsers may send the header and read the answer's (CORS allows and exposes them).
    const preflight = await fetch(`${s.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "http://app.example", "access-control-request-method": "POST" },
    });
    await preflight.body?.cancel();
    assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /x-strict/);
    const cors = await fetch(`${s.url}/v1/chat/completions`, {
      method: "POST",
      headers: { origin: "http://app.example", "content-type": "application/json", "x-strict": "false" },
      body: JSON.stringify(body),
    });
    await cors.body?.cancel();
    assert.match(cors.headers.get("access-control-expose-headers") ?? "", /x-ignored-params/);
    const clean = await s.client.chat.completions.create({
      model: "chat-tiny",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(clean.choices[0].message.content, "Hello from chat-tiny!");
  } finally {
    await s.close();
  }
});
