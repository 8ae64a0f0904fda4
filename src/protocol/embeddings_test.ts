import assert from "node:assert/strict";
import { ApiError } from "../http/errors.ts";
import { CreateEmbeddingRequest, MAX_EMBEDDING_INPUTS } from "./embeddings.ts";
import { parseRequest } from "./validate.ts";

const parse = (body: Record<string, unknown>) =>
  parseRequest(CreateEmbeddingRequest, { model: "m", ...body });

function err(body: Record<string, unknown>): ApiError {
  try {
    parse(body);
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.status, 400);
    return e;
  }
  throw new Error(`accepted ${JSON.stringify(body).slice(0, 80)}`);
}

Deno.test("embeddings schema: every input form normalizes to texts or token lists", () => {
  assert.deepEqual(parse({ input: "hi" }).input, { kind: "text", texts: ["hi"], single: true });
  assert.deepEqual(parse({ input: ["a", "b"] }).input, { kind: "text", texts: ["a", "b"], single: false });
  assert.deepEqual(parse({ input: [5, 6, 7] }).input, { kind: "tokens", ids: [[5, 6, 7]], single: true });
  assert.deepEqual(parse({ input: [[1], [2, 3]] }).input, {
    kind: "tokens",
    ids: [[1], [2, 3]],
    single: false,
  });
  const full = parse({ input: "x", encoding_format: "base64", dimensions: 8, user: "u" });
  assert.equal(full.encoding_format, "base64");
  assert.equal(full.dimensions, 8);
  // Clients that send explicit nulls for unset options are accepted.
  assert.equal(parse({ input: "x", encoding_format: null, dimensions: null, user: null }).dimensions, null);
});

Deno.test("embeddings schema: each bad input names the item", () => {
  const cases: [unknown, string][] = [
    ["", "input"],
    [[], "input"],
    [["a", "b", "c", ""], "input[3]"],
    [["a", 3], "input[1]"],
    [[1, 2, -3], "input[2]"],
    [[1, 2.5], "input[1]"],
    [[1, "2"], "input[1]"],
    [[[1, 2], []], "input[1]"],
    [[[1, 2], [3, 1.5]], "input[1][1]"],
    [[[1], 2], "input[1]"],
    [[{}], "input[0]"],
    [[null], "input[0]"],
    [{ text: "a" }, "input"],
    [42, "input"],
    [null, "input"],
  ];
  for (const [input, param] of cases) {
    const e = err({ input });
    assert.equal(e.param, param, `${JSON.stringify(input)} -> ${e.param}: ${e.message}`);
    assert.match(e.message, new RegExp(param.replace(/[[\]]/g, "\\$&")));
  }
});

Deno.test("embeddings schema: limits and options", () => {
  parse({ input: Array(MAX_EMBEDDING_INPUTS).fill("a") });
  let e = err({ input: Array(MAX_EMBEDDING_INPUTS + 1).fill("a") });
  assert.equal(e.param, "input");
  assert.equal(e.code, "array_above_max_length");
  e = err({});
  assert.equal(e.param, "input");
  assert.equal(e.code, "missing_required_parameter");
  e = parseFail({ input: "a" });
  assert.equal(e.param, "model");
  e = err({ input: "a", encoding_format: "int8" });
  assert.equal(e.param, "encoding_format");
  for (const dimensions of [0, -1, 1.5, "8"]) {
    assert.equal(err({ input: "a", dimensions }).param, "dimensions");
  }
  assert.equal(err({ input: "a", user: 5 }).param, "user");
  e = err({ input: "a", temperature: 1 });
  assert.equal(e.param, "temperature");
  assert.equal(e.code, "unknown_parameter");
});

function parseFail(body: Record<string, unknown>): ApiError {
  try {
    parseRequest(CreateEmbeddingRequest, body);
  } catch (e) {
    assert.ok(e instanceof ApiError);
    return e;
  }
  throw new Error("accepted");
}
