import assert from "node:assert/strict";
import { ApiError, errorResponse, redactPaths, toApiError } from "./errors.ts";

Deno.test("errors: ApiError maps to the full envelope with its status and headers", async () => {
  const res = errorResponse(ApiError.overloaded(3, "Model `m`"));
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "3");
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(body.error.type, "rate_limit_error");
});

Deno.test("errors: unknown errors become a 500 that does not echo the cause", async () => {
  const res = errorResponse(new TypeError("secret /etc/passwd at line 3"));
  assert.equal(res.status, 500);
  const body = await res.json();
  assert.equal(body.error.type, "server_error");
  assert.ok(!JSON.stringify(body).includes("passwd"));
  assert.equal(body.error.param, null);
  assert.equal(body.error.code, null);
});

Deno.test("errors: model_not_found names the model param", () => {
  const e = toApiError(ApiError.modelNotFound("gpt-9"));
  assert.equal(e.status, 404);
  assert.equal(e.code, "model_not_found");
  assert.equal(e.param, "model");
  assert.equal(e.type, "invalid_request_error");
});

Deno.test("errors: redactPaths keeps a path's last segment only; URLs and relative names are left alone", () => {
  assert.equal(
    redactPaths("cannot open /home/u/models/x/ggml.bin: denied"),
    "cannot open …/ggml.bin: denied",
  );
  assert.equal(
    redactPaths("see https://hf.co/a/b/c and models/x/y"),
    "see https://hf.co/a/b/c and models/x/y",
  );
  assert.equal(redactPaths("a (/tmp/x.onnx)"), "a (…/x.onnx)");
});
