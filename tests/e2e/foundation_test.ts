// End to end: the real server on port 0, driven by the official `openai` client and raw fetch: models,
// the error envelope for every client mistake, auth, CORS, request ids, and graceful shutdown.
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  errorOf,
  GENERATED_MODELS,
  MODELS_DIR,
  postRaw,
  REPO_ROOT,
  spawnServer,
  startTestServer,
} from "../helpers.ts";

const MANIFEST = {
  ...GENERATED_MODELS,
  models: {
    ...GENERATED_MODELS.models,
    "missing-embed": { task: "embedding" as const, path: "generated/does-not-exist", device: "cpu" as const },
  },
};

Deno.test("models: list and retrieve with the openai client, aliases resolve, unknown is model_not_found", async () => {
  const t = await startTestServer({ manifest: MANIFEST });
  try {
    const list = await t.client.models.list();
    const ids = list.data.map((m) => m.id).sort();
    assert.deepEqual(ids, [
      "chat-tiny",
      "embed-tiny",
      "missing-embed",
      "whisper-multi-test",
      "whisper-tiny-test",
    ]);
    for (const m of list.data) {
      assert.equal(m.object, "model");
      assert.equal(typeof m.created, "number");
      assert.equal(typeof m.owned_by, "string");
    }
    const raw = await (await fetch(`${t.url}/v1/models`)).json();
    assert.equal(raw.object, "list");

    const one = await t.client.models.retrieve("chat-tiny");
    assert.equal(one.id, "chat-tiny");
    const alias = await t.client.models.retrieve("gpt-4o-mini");
    assert.equal(alias.id, "gpt-4o-mini");
    assert.equal((alias as unknown as { alias_for: string }).alias_for, "chat-tiny");

    await assert.rejects(t.client.models.retrieve("no/such-model"), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError);
      assert.equal(e.code, "model_not_found");
      assert.equal(e.param, "model");
      return true;
    });
  } finally {
    await t.close();
  }
});

Deno.test("errors: every client mistake is a 4xx in the OpenAI envelope", async () => {
  const t = await startTestServer({ manifest: MANIFEST, flags: ["--max-json-body=2KB"] });
  try {
    const chat = `${t.url}/v1/chat/completions`;
    const ok = { model: "chat-tiny", messages: [{ role: "user", content: "hi" }] };

    let r = await postRaw(chat, "{not json");
    assert.equal(r.status, 400);
    assert.equal(errorOf(r.json).type, "invalid_request_error");

    r = await postRaw(chat, JSON.stringify({ ...ok, messages: [{ role: "wizard", content: "x" }] }));
    assert.equal(r.status, 400);
    assert.equal(errorOf(r.json).param, "messages[0].role");

    r = await postRaw(chat, JSON.stringify({ ...ok, model: "gpt-17" }));
    assert.equal(r.status, 404);
    assert.equal(errorOf(r.json).code, "model_not_found");

    r = await postRaw(chat, JSON.stringify({ ...ok, pad: "x".repeat(4000) }));
    assert.equal(r.status, 413);
    errorOf(r.json);

    r = await postRaw(chat, JSON.stringify(ok), { "content-type": "text/xml" });
    assert.equal(r.status, 415);
    errorOf(r.json);

    let res = await fetch(`${t.url}/v2/everything`);
    assert.equal(res.status, 404);
    errorOf(await res.json());

    res = await fetch(chat);
    assert.equal(res.status, 405);
    assert.match(res.headers.get("allow")!, /POST/);
    errorOf(await res.json());

    // A model whose files are missing: 503 naming what is missing; the rest keeps serving.
    r = await postRaw(`${t.url}/v1/embeddings`, JSON.stringify({ model: "missing-embed", input: "x" }));
    assert.equal(r.status, 503);
    const missing = errorOf(r.json).message;
    assert.match(missing, /missing-embed/);
    // Which file, not where: the server's paths stay in its log, under the request id the message names.
    assert.ok(!missing.includes(REPO_ROOT.replace(/\/$/, "")), missing);
    const rid = /request id (req_[0-9a-f]{32})/.exec(missing)?.[1];
    assert.ok(rid && r.headers.get("x-request-id") === rid, missing);
    assert.ok(t.logs.some((l) => l.includes(rid) && l.includes(MODELS_DIR)), "the log has the whole cause");
    res = await fetch(`${t.url}/health`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    res = await fetch(`${t.url}/health/ready`);
    assert.equal(res.status, 503, "a failed model makes the server not ready");
    assert.equal((await res.json()).models["missing-embed"], "failed");

    assert.ok(t.records.every((rec) => rec.status < 500 || rec.status === 503), JSON.stringify(t.records));
  } finally {
    await t.close();
  }
});

Deno.test("auth: keys required everywhere but /health; the client sees AuthenticationError", async () => {
  const t = await startTestServer({ flags: ["--api-key=sk-right"], apiKey: "sk-wrong" });
  try {
    await assert.rejects(t.client.models.list(), (e: unknown) => {
      assert.ok(e instanceof OpenAI.AuthenticationError);
      assert.equal(e.code, "invalid_api_key");
      return true;
    });
    const good = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "sk-right", maxRetries: 0 });
    assert.ok((await good.models.list()).data.length > 0);
    let res = await fetch(`${t.url}/v1/models`);
    assert.equal(res.status, 401);
    assert.equal(errorOf(await res.json()).code, "invalid_api_key");
    res = await fetch(`${t.url}/health`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await t.close();
  }
  // And without keys configured, any or no key works.
  const open = await startTestServer();
  try {
    const res = await fetch(`${open.url}/v1/models`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
  } finally {
    await open.close();
  }
});

Deno.test("cors and request ids", async () => {
  const t = await startTestServer({ flags: ["--cors-origin=http://localhost:5173"] });
  try {
    let res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "http://localhost:5173", "access-control-request-method": "POST" },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), "http://localhost:5173");
    await res.body?.cancel();
    res = await fetch(`${t.url}/v1/models`, { headers: { "x-request-id": "trace-42" } });
    assert.equal(res.headers.get("x-request-id"), "trace-42");
    assert.equal(res.headers.get("access-control-allow-origin"), null);
    await res.body?.cancel();
    res = await fetch(`${t.url}/nothing`);
    assert.match(res.headers.get("x-request-id")!, /^req_/);
    await res.body?.cancel();
    const line = t.logs.map((l) => JSON.parse(l)).find((l) =>
      l.msg === "request" && l.requestId === "trace-42"
    );
    assert.ok(line, "one structured log line per request");
    assert.equal(line.status, 200);
    assert.equal(line.method, "GET");
    assert.equal(typeof line.seconds, "number");
  } finally {
    await t.close();
  }
});

Deno.test("graceful shutdown: SIGTERM lets an in-flight request finish, then exits 0", async () => {
  const server = await spawnServer({ manifest: MANIFEST });
  // An upload that is still arriving when SIGTERM comes.
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(enc.encode('{"model": "embed-tiny", '));
      await new Promise((r) => setTimeout(r, 400));
      server.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 400));
      c.enqueue(enc.encode('"input": 5}'));
      c.close();
    },
  });
  const res = await fetch(`${server.url}/v1/embeddings`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
    duplex: "half",
  } as RequestInit);
  assert.equal(res.status, 400, "the in-flight request was served to the end");
  errorOf(await res.json());
  const status = await server.stop();
  assert.equal(status.code, 0);
  assert.match(server.log(), /"msg":"stopped"/);
  // Once stopped, nothing listens any more.
  await assert.rejects(fetch(`${server.url}/health`));
});
