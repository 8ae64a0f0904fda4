import assert from "node:assert/strict";
import { z } from "zod";
import { ApiError } from "../http/errors.ts";
import { paramPath, parseRequest } from "./validate.ts";

const Schema = z.object({
  model: z.string(),
  temperature: z.number().min(0).max(2).optional(),
  n: z.number().int().min(1).max(128).optional(),
  stop: z.array(z.string()).max(4).optional(),
  messages: z.array(z.object({ role: z.enum(["system", "user"]), content: z.string() })).min(1),
});

function err(body: unknown): ApiError {
  try {
    parseRequest(Schema, body);
  } catch (e) {
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, 400);
    return e;
  }
  throw new Error("accepted");
}

const ok = { model: "m", messages: [{ role: "user", content: "hi" }] };

Deno.test("validate: param paths as OpenAI writes them", () => {
  assert.equal(paramPath(["messages", 0, "role"]), "messages[0].role");
  assert.equal(paramPath(["input", 3]), "input[3]");
  assert.equal(paramPath([]), "");
});

Deno.test("validate: each failure names its parameter and code", () => {
  assert.deepEqual(parseRequest(Schema, ok), ok);
  let e = err({ messages: ok.messages });
  assert.equal(e.param, "model");
  assert.equal(e.code, "missing_required_parameter");
  e = err({ ...ok, temperature: 2.5 });
  assert.equal(e.param, "temperature");
  assert.equal(e.code, "decimal_above_max_value");
  e = err({ ...ok, n: 0 });
  assert.equal(e.param, "n");
  assert.equal(e.code, "decimal_below_min_value");
  e = err({ ...ok, stop: ["a", "b", "c", "d", "e"] });
  assert.equal(e.param, "stop");
  assert.equal(e.code, "array_above_max_length");
  e = err({ ...ok, messages: [{ role: "wizard", content: "x" }] });
  assert.equal(e.param, "messages[0].role");
  assert.equal(e.code, "invalid_value");
  e = err({ ...ok, messages: [] });
  assert.equal(e.param, "messages");
  e = err({ ...ok, temperature: "hot" });
  assert.equal(e.param, "temperature");
  assert.equal(e.code, "invalid_type");
  assert.match(e.message, /got a string/);
  e = err([1, 2]);
  assert.equal(e.param, null);
});
