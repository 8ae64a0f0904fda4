// Unit tests of the request pipeline with fake routes: error boundary, request ids, CORS, auth, log records.
import assert from "node:assert/strict";
import { createApp, type RequestRecord } from "./app.ts";
import { parseConfig } from "./config.ts";
import { parseManifest } from "./engines/manifest.ts";
import { Registry } from "./engines/registry.ts";
import { memoryLogger } from "./log.ts";
import { ApiError } from "./http/errors.ts";
import { ModelFilesMissing } from "./errors.ts";
import { readJson } from "./http/body.ts";
import type { Handler } from "./api/context.ts";

function app(flags: string[] = []) {
  const config = parseConfig(flags, {}, "/").config!;
  const log = memoryLogger();
  const registry = new Registry(parseManifest({ models: {} }, "/m", "cpu"), {}, {
    modelsDir: "/m",
    threads: 1,
    allowRemote: false,
    log,
  }, { loadWaitMs: 10, queueSize: 1 });
  const records: RequestRecord[] = [];
  const signals: AbortSignal[] = [];
  const made: Response[] = [];
  const routes: { method: string; path: string; handler: Handler; open?: boolean }[] = [
    {
      method: "GET",
      path: "/ok",
      handler: (_r, ctx) => (ctx.note({ model: "m" }), Response.json({ ok: 1 })),
    },
    { method: "GET", path: "/boom", handler: () => Promise.reject(new Error("db password is hunter2")) },
    {
      method: "GET",
      path: "/missing",
      handler: () => {
        throw new ModelFilesMissing("model `m`: /srv/secret/models/m/onnx/model.onnx is missing");
      },
    },
    { method: "GET", path: "/teapot", handler: () => Promise.reject(ApiError.badRequest("no", "x", "y")) },
    {
      method: "POST",
      path: "/echo",
      handler: async (r, ctx) => Response.json(await readJson(r, ctx.jsonLimits)),
    },
    { method: "GET", path: "/health", handler: () => Response.json({ status: "ok" }), open: true },
    { method: "GET", path: "/made", handler: () => (made.push(Response.json({ a: 1 })), made.at(-1)!) },
    {
      method: "GET",
      path: "/signal",
      handler: (_r, ctx) => (signals.push(ctx.signal), Response.json({ ok: 1 })),
    },
    {
      method: "GET",
      path: "/slow",
      handler: async (_r, ctx) => {
        await new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
        );
        return Response.json({ ok: 1 });
      },
    },
  ];
  const handler = createApp({ config, registry, log, routes, onRequestDone: (r) => records.push(r) });
  return { handler, log, records, signals, made };
}

const req = (path: string, init?: RequestInit) => new Request(`http://x${path}`, init);

Deno.test("app: unexpected errors are a 500 envelope, logged with the cause, never echoed", async () => {
  const { handler, log } = app();
  const res = await handler(req("/boom"));
  assert.equal(res.status, 500);
  const text = await res.text();
  assert.ok(!text.includes("hunter2"));
  assert.equal(JSON.parse(text).error.type, "server_error");
  assert.ok(log.lines.some((l) => l.includes("hunter2")), "cause is in the log");
});

Deno.test("app: request ids are echoed or generated, on errors too", async () => {
  const { handler } = app();
  let res = await handler(req("/ok", { headers: { "x-request-id": "abc-123" } }));
  assert.equal(res.headers.get("x-request-id"), "abc-123");
  await res.body?.cancel();
  res = await handler(req("/teapot"));
  assert.match(res.headers.get("x-request-id")!, /^req_[0-9a-f]{32}$/);
  const body = await res.json();
  assert.deepEqual(body.error, { message: "no", type: "invalid_request_error", param: "x", code: "y" });
});

Deno.test("app: one record per request with method, path, status, duration, model", async () => {
  const { handler, records } = app();
  const res = await handler(req("/ok"));
  await res.text();
  assert.equal(records.length, 1);
  const r = records[0];
  assert.equal(r.method, "GET");
  assert.equal(r.path, "/ok");
  assert.equal(r.status, 200);
  assert.equal(r.model, "m");
  assert.equal(typeof r.seconds, "number");
});

Deno.test("app: a whole body goes out as the handler made it; /health probes log at debug only", async () => {
  const { handler, log, records, made } = app(["--cors-origin=https://app.example"]);
  const res = await handler(req("/made", { headers: { origin: "https://app.example" } }));
  // The same Response (not its body re-streamed through a wrapper), with the pipeline's headers added.
  assert.equal(res, made[0]);
  assert.match(res.headers.get("x-request-id") ?? "", /^req_/);
  assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
  assert.deepEqual(await res.json(), { a: 1 });
  // Its line is logged once the response is made.
  const line = (path: string) => log.lines.map((l) => JSON.parse(l)).find((l) => l.path === path);
  assert.equal(line("/made")?.level, "info");
  await (await handler(req("/health"))).text();
  assert.equal(line("/health")?.level, "debug");
  assert.deepEqual(records.map((r) => r.path), ["/made", "/health"], "both still recorded (metrics)");
});

Deno.test("app: body limits and content types", async () => {
  const { handler } = app(["--max-json-body=16"]);
  const json = { "content-type": "application/json" };
  let res = await handler(
    req("/echo", { method: "POST", body: JSON.stringify({ a: "x".repeat(64) }), headers: json }),
  );
  assert.equal(res.status, 413);
  await res.body?.cancel();
  res = await handler(
    req("/echo", { method: "POST", body: "{}", headers: { "content-type": "text/plain" } }),
  );
  assert.equal(res.status, 415);
  await res.body?.cancel();
  res = await handler(req("/echo", { method: "POST", body: "{nope", headers: json }));
  assert.equal(res.status, 400);
  await res.body?.cancel();
  // A body streamed without content-length is cut off as soon as it passes the limit.
  const stream = new ReadableStream({
    pull(c) {
      c.enqueue(new TextEncoder().encode("x".repeat(10)));
    },
  });
  res = await handler(
    req("/echo", { method: "POST", body: stream, headers: json, duplex: "half" } as RequestInit),
  );
  assert.equal(res.status, 413);
  await res.body?.cancel();
});

Deno.test("app: API keys guard all but open routes", async () => {
  const { handler } = app(["--api-key=sk-a,sk-b"]);
  const cases: [string, Record<string, string>, number][] = [
    ["/ok", {}, 401],
    ["/ok", { authorization: "Bearer sk-wrong" }, 401],
    ["/ok", { authorization: "Basic sk-a" }, 401],
    ["/ok", { authorization: "Bearer sk-b" }, 200],
    ["/health", {}, 200],
    ["/nowhere", { authorization: "Bearer sk-a" }, 404],
  ];
  for (const [path, headers, status] of cases) {
    const res = await handler(req(path, { headers }));
    assert.equal(res.status, status, `${path} ${JSON.stringify(headers)}`);
    const body = await res.json();
    if (status === 401) assert.equal(body.error.code, "invalid_api_key");
  }
});

Deno.test("app: CORS preflight and response headers for allowed origins only", async () => {
  const { handler } = app(["--cors-origin=https://app.example"]);
  let res = await handler(req("/echo", {
    method: "OPTIONS",
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    },
  }));
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
  assert.match(res.headers.get("access-control-allow-methods")!, /POST/);
  assert.equal(res.headers.get("access-control-allow-headers"), "authorization, content-type");
  res = await handler(req("/echo", {
    method: "OPTIONS",
    headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
  }));
  assert.equal(res.status, 403);
  res = await handler(req("/ok", { headers: { origin: "https://app.example" } }));
  assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example");
  await res.body?.cancel();
  res = await handler(req("/ok", { headers: { origin: "https://evil.example" } }));
  assert.equal(res.headers.get("access-control-allow-origin"), null);
  await res.body?.cancel();
});

Deno.test("app: a model's missing files answer 503 without server paths, naming the request id the log has", async () => {
  const { handler, log } = app();
  const res = await handler(req("/missing", { headers: { "x-request-id": "rid-7" } }));
  assert.equal(res.status, 503);
  const { error } = await res.json();
  assert.equal(
    error.message,
    "model `m`: …/model.onnx is missing (request id rid-7; the server log has the details)",
  );
  const line = log.lines.find((l) => l.includes("request failed"))!;
  assert.ok(line.includes("rid-7") && line.includes("/srv/secret/models/m/onnx/model.onnx"), line);
});

Deno.test("app: the wall-clock limit answers 408, and ends with the request (no timer left behind)", async () => {
  const { handler, signals } = app(["--request-timeout-ms=60"]);
  // The limit's timer does not hold the process open (a server's listener does): this test's does.
  const alive = setInterval(() => {}, 10);
  const slow = await handler(req("/slow")).finally(() => clearInterval(alive));
  assert.equal(slow.status, 408);
  assert.equal((await slow.json()).error.code, "request_timeout");
  const res = await handler(req("/signal"));
  await res.json();
  await new Promise((r) => setTimeout(r, 120));
  // AbortSignal.timeout's timer outlived the request (a /health probe's requests piled up for 10 minutes).
  assert.equal(signals[0].aborted, false);
});
