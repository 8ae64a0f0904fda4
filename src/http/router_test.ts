import assert from "node:assert/strict";
import { ApiError } from "./errors.ts";
import { Router } from "./router.ts";

const router = new Router([
  { method: "GET", path: "/v1/models", handler: "list" },
  { method: "GET", path: "/v1/models/{id...}", handler: "get" },
  { method: "POST", path: "/v1/chat/completions", handler: "chat" },
]);

function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiError);
    return e;
  }
  throw new Error("did not throw");
}

Deno.test("router: exact paths, trailing slash, and ids with slashes", () => {
  assert.equal(router.match("GET", "/v1/models").route.handler, "list");
  assert.equal(router.match("GET", "/v1/models/").route.handler, "list");
  const m = router.match("GET", "/v1/models/onnx-community/Qwen2.5-0.5B-Instruct");
  assert.equal(m.route.handler, "get");
  assert.equal(m.params.id, "onnx-community/Qwen2.5-0.5B-Instruct");
  assert.equal(router.match("GET", "/v1/models/a%2Fb").params.id, "a/b");
  assert.equal(router.match("HEAD", "/v1/models").route.handler, "list");
});

Deno.test("router: unknown path is 404, wrong method 405 with Allow", () => {
  const nf = thrown(() => router.match("GET", "/v2/nothing"));
  assert.equal(nf.status, 404);
  const na = thrown(() => router.match("GET", "/v1/chat/completions"));
  assert.equal(na.status, 405);
  assert.equal(na.headers.allow, "POST, OPTIONS");
  assert.equal(thrown(() => router.match("GET", "/v1/models/%E0%A4%A")).status, 400);
  assert.deepEqual(router.methodsFor("/v1/chat/completions"), ["POST"]);
});
