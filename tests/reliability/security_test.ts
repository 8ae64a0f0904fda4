// Security: model ids and uploaded file names can't reach outside their folders, no URL in a request is ever
// fetched, and API keys cover every route but the health checks.
import assert from "node:assert/strict";
import { errorOf, GENERATED_MODELS, postRaw, startTestServer } from "../helpers.ts";

Deno.test("security: hostile model ids are only ever looked up, never used as paths", async () => {
  const t = await startTestServer();
  try {
    for (
      const id of ["../../etc/passwd", "/etc/passwd", "generated/chat-tiny", "..%2F..%2Fetc", "hub/../../x"]
    ) {
      const chat = await postRaw(
        `${t.url}/v1/chat/completions`,
        JSON.stringify({ model: id, messages: [{ role: "user", content: "hi" }] }),
      );
      assert.equal(chat.status, 404, id);
      assert.equal(errorOf(chat.json).code, "model_not_found");
      const res = await fetch(`${t.url}/v1/models/${id}`);
      assert.equal(res.status, 404, id);
      await res.body?.cancel();
    }
  } finally {
    await t.close();
  }
});

Deno.test("security: URLs in requests are refused, never fetched", async () => {
  let hits = 0;
  const bait = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    hits++;
    return new Response("x");
  });
  // The bait is also the hub endpoint of a model that must be downloaded, with downloads on: the control at
  // the end shows this server process does reach the bait when a code path fetches, so zero hits from the
  // request URLs means they were never fetched (not that nothing could be).
  const endpoint = Deno.env.get("HF_ENDPOINT");
  Deno.env.set("HF_ENDPOINT", `http://127.0.0.1:${bait.addr.port}`);
  const manifest = {
    ...GENERATED_MODELS,
    models: { ...GENERATED_MODELS.models, "bait-remote": { task: "embedding" as const, repo: "bait/never" } },
  };
  const t = await startTestServer({ manifest, flags: ["--offline=false"] });
  try {
    const url = `http://127.0.0.1:${bait.addr.port}/image.png`;
    const parts = [
      { type: "image_url", image_url: { url } },
      { type: "input_audio", input_audio: { data: url, format: "wav" } },
      { type: "file", file: { file_data: url } },
    ];
    for (const part of parts) {
      const r = await postRaw(
        `${t.url}/v1/chat/completions`,
        JSON.stringify({ model: "chat-tiny", messages: [{ role: "user", content: [part] }] }),
      );
      assert.equal(r.status, 400, JSON.stringify(part));
      assert.match(errorOf(r.json).param ?? "", /^messages\[0\]\.content\[0\]/);
    }
    // A transcription "file" given as a URL string is a form field, not a file: refused.
    const form = new FormData();
    form.set("file", url);
    form.set("model", "whisper-1");
    const res = await fetch(`${t.url}/v1/audio/transcriptions`, { method: "POST", body: form });
    assert.equal(res.status, 400);
    assert.equal(errorOf(await res.json()).param, "file");
    // A hostile upload name is only a label.
    const upload = new FormData();
    upload.set("file", new Blob([new Uint8Array(10)]), "../../../../tmp/owned.wav");
    upload.set("model", "whisper-1");
    const up = await fetch(`${t.url}/v1/audio/transcriptions`, { method: "POST", body: upload });
    assert.equal(up.status, 400);
    await up.body?.cancel();
    await assert.rejects(Deno.stat("/tmp/owned.wav"));
    assert.equal(hits, 0, "the server fetched a URL from a request");
    // Control: a model download does reach the bait (and fails there, a 503 for that model only).
    const control = await postRaw(
      `${t.url}/v1/embeddings`,
      JSON.stringify({ model: "bait-remote", input: "x" }),
    );
    assert.equal(control.status, 503, JSON.stringify(control.json));
    assert.ok(hits > 0, "the control download reached the bait");
  } finally {
    await t.close();
    await bait.shutdown();
    if (endpoint === undefined) Deno.env.delete("HF_ENDPOINT");
    else Deno.env.set("HF_ENDPOINT", endpoint);
  }
});

Deno.test("security: with keys set, every route but the health checks needs one", async () => {
  const t = await startTestServer({ flags: ["--api-key=sk-only"] });
  try {
    const routes: [string, string][] = [
      ["POST", "/v1/chat/completions"],
      ["POST", "/v1/embeddings"],
      ["POST", "/v1/audio/transcriptions"],
      ["POST", "/v1/audio/translations"],
      ["GET", "/v1/models"],
      ["GET", "/v1/models/chat-tiny"],
      ["GET", "/metrics"],
    ];
    for (const [method, path] of routes) {
      const res = await fetch(`${t.url}${path}`, { method, body: method === "POST" ? "{}" : undefined });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(errorOf(await res.json()).code, "invalid_api_key");
    }
    for (const path of ["/health", "/health/ready"]) {
      const res = await fetch(`${t.url}${path}`);
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
  } finally {
    await t.close();
  }
});
