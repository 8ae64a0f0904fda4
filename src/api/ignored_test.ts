import assert from "node:assert/strict";
import { ignoredParams, only } from "./ignored.ts";
import { CHAT_FIELDS } from "./chat.ts";
import { RESPONSE_FIELDS } from "./responses.ts";

Deno.test("ignoredParams: fields the route does not act on, in body order, nulls left out", () => {
  const body = {
    model: "m",
    service_tier: "flex",
    messages: [],
    user: "u",
    metadata: null,
    prediction: { type: "content", content: "x" },
    my_extension: 1,
  };
  assert.deepEqual(ignoredParams(body, CHAT_FIELDS), ["service_tier", "user", "prediction", "my_extension"]);
});

Deno.test("ignoredParams: values that ask for what the server does anyway count as honoured", () => {
  assert.deepEqual(ignoredParams({ modalities: ["text"], store: false }, CHAT_FIELDS), []);
  assert.deepEqual(ignoredParams({ modalities: ["text", "audio"], store: true }, CHAT_FIELDS), [
    "modalities",
    "store",
  ]);
  assert.equal(only.textModalities("text"), false);
});

Deno.test("ignoredParams: Responses' nested fields (text.verbosity, include values, reasoning extras)", () => {
  const body = {
    model: "m",
    input: "x",
    text: { format: { type: "text" }, verbosity: "low" },
    reasoning: { effort: "low", summary: "auto", generate_summary: "auto" },
    include: ["message.output_text.logprobs", "reasoning.encrypted_content"],
    truncation: "auto",
    background: false,
  };
  assert.deepEqual(ignoredParams(body, RESPONSE_FIELDS), [
    "truncation",
    "text.verbosity",
    "reasoning.generate_summary",
    "include[1]",
  ]);
  assert.deepEqual(
    ignoredParams({ text: { verbosity: "medium" }, truncation: "disabled" }, RESPONSE_FIELDS),
    [],
  );
});
