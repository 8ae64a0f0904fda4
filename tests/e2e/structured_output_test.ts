// End to end: response_format on the real server with the generated chat-tiny model (CPU), through the
// official `openai` client and raw fetch. chat-tiny's weights are crafted for other replies ("Hello from
// chat-tiny!", a weather tool call), so whatever comes out as JSON is the constraint's doing: json_object
// output always parses to an object, generated schemas (nested objects, enums, arrays, anyOf, $ref, recursion)
// always validate (ajv), streamed and not, parse() with zodResponseFormat returns a parsed object; a
// document the model would not close is closed within max_tokens (finish_reason "length", still valid).
// Also: min_tokens/ignore_eos never break a complete document, n > 1, and every bad schema is a 400.
import assert from "node:assert/strict";
import { z } from "zod";
import { zodResponseFormat } from "openai/helpers/zod";
import { LengthFinishReasonError } from "openai/core/error";
import { expectChatBadRequest, postRaw, startTestServer, type TestServer } from "../helpers.ts";
import { prng } from "../support/synthetic_vocab.ts";
import { randomSchema, validate } from "../support/constrain_support.ts";

const MODEL = "chat-tiny";
type Json = Record<string, unknown>;
type Msg = { role: "user" | "system"; content: string };

const PROMPTS: Msg[][] = [
  [{ role: "user", content: "Hi there!" }],
  [{ role: "user", content: "Count forever" }],
  [{ role: "user", content: "Say something in unicode" }],
  [{ role: "user", content: "What's the weather in Paris?" }],
];

async function post(s: TestServer, body: Json) {
  return await postRaw(`${s.url}/v1/chat/completions`, JSON.stringify({ model: MODEL, ...body }));
}

/** A streamed request's content and finish reason, reassembled from raw SSE. */
async function streamed(s: TestServer, body: Json): Promise<{ content: string; finish: string }> {
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  let content = "";
  let finish = "";
  for (const frame of (await res.text()).split("\n\n").filter(Boolean)) {
    const data = frame.slice(6);
    if (data === "[DONE]") continue;
    const choice = (JSON.parse(data).choices as Json[])[0];
    if (!choice) continue;
    content += ((choice.delta as Json).content as string | undefined) ?? "";
    if (choice.finish_reason) finish = String(choice.finish_reason);
  }
  return { content, finish };
}

function badRequest(s: TestServer, body: Json, param: string, message?: RegExp): Promise<void> {
  return expectChatBadRequest(s.url, { model: MODEL, ...body }, param, message);
}

const jsonSchema = (schema: unknown, extra: Json = {}) => ({
  type: "json_schema",
  json_schema: { name: "out", schema, ...extra },
});

Deno.test("structured output e2e", async (t) => {
  const s = await startTestServer();
  const c = s.client;
  try {
    await t.step("parse() with zodResponseFormat returns a parsed object that validates", async () => {
      const Weather = z.object({
        sky: z.enum(["sunny", "cloudy", "rainy"]),
        temperature: z.number().int().min(-40).max(50),
        windy: z.boolean(),
        alerts: z.array(z.enum(["storm", "heat", "frost"])).max(2),
        station: z.object({ id: z.number().int(), indoor: z.boolean().nullable() }),
        note: z.union([z.literal("none"), z.number()]),
      });
      for (const messages of PROMPTS) {
        const res = await c.chat.completions.parse({
          model: MODEL,
          messages,
          response_format: zodResponseFormat(Weather, "weather_report"),
          max_tokens: 200,
        });
        const choice = res.choices[0];
        assert.equal(choice.finish_reason, "stop", choice.message.content ?? "");
        const parsed = choice.message.parsed;
        assert.ok(parsed, choice.message.content ?? "");
        assert.deepEqual(Weather.parse(parsed), parsed);
        assert.deepEqual(JSON.parse(choice.message.content!), parsed);
      }
    });

    await t.step("a document the model would not close is closed within max_tokens", async () => {
      // chat-tiny never ends a free string by itself: the budget closes it, and says so.
      const Person = z.object({ name: z.string(), age: z.number().int() });
      const format = zodResponseFormat(Person, "person");
      const raw = await c.chat.completions.create({
        model: MODEL,
        messages: PROMPTS[0],
        response_format: format,
        max_tokens: 40,
      });
      const choice = raw.choices[0];
      assert.equal(choice.finish_reason, "length");
      assert.ok(raw.usage!.completion_tokens <= 40);
      const value = JSON.parse(choice.message.content!);
      assert.deepEqual(Person.parse(value), value);
      // The SDK refuses a cut answer, as it does OpenAI's.
      await assert.rejects(
        c.chat.completions.parse({
          model: MODEL,
          messages: PROMPTS[0],
          response_format: format,
          max_tokens: 40,
        }),
        LengthFinishReasonError,
      );
    });

    await t.step("json_object output always parses to an object, streamed and not", async () => {
      for (const [i, messages] of PROMPTS.entries()) {
        for (const max_tokens of [12, 60]) {
          const body = { messages, response_format: { type: "json_object" }, max_tokens };
          const res = await post(s, body);
          assert.equal(res.status, 200, JSON.stringify(res.json));
          const choice = (res.json.choices as Json[])[0];
          const content = String((choice.message as Json).content);
          const value = JSON.parse(content);
          assert.ok(value !== null && typeof value === "object" && !Array.isArray(value), content);
          const st = await streamed(s, body);
          assert.equal(st.content, content, `prompt ${i}: greedy, so the same text streamed`);
          assert.equal(st.finish, choice.finish_reason);
        }
      }
    });

    await t.step("generated schemas: every output validates (ajv), streamed and not", async () => {
      const rand = prng(2025);
      const finishes: Record<string, number> = {};
      const started = performance.now();
      for (let i = 0; i < 30; i++) {
        let schema = randomSchema(rand);
        while (JSON.stringify(schema).length > 2000) schema = randomSchema(rand);
        const body = {
          messages: PROMPTS[i % PROMPTS.length],
          response_format: jsonSchema(schema, { strict: i % 2 === 0 }),
          max_tokens: 200,
          ...(i % 3 === 0 ? { temperature: 1, seed: i } : {}),
        };
        let content: string, finish: string;
        if (i % 2 === 1) ({ content, finish } = await streamed(s, body));
        else {
          const res = await post(s, body);
          assert.equal(res.status, 200, JSON.stringify(res.json));
          const choice = (res.json.choices as Json[])[0];
          content = String((choice.message as Json).content);
          finish = String(choice.finish_reason);
        }
        finishes[finish] = (finishes[finish] ?? 0) + 1;
        assert.ok(finish === "stop" || finish === "length", finish);
        let value: unknown;
        try {
          value = JSON.parse(content);
        } catch (e) {
          assert.fail(`schema ${i}: not JSON (${finish}): ${content}\n${JSON.stringify(schema)}\n${e}`);
        }
        assert.equal(validate(schema, value), null, `schema ${i}: ${content}\n${JSON.stringify(schema)}`);
      }
      assert.equal((finishes.stop ?? 0) + (finishes.length ?? 0), 30, JSON.stringify(finishes));
      assert.ok(performance.now() - started < 60_000);
    });

    await t.step("$ref/$defs, recursion and anyOf from hand-written schemas", async () => {
      const schema = {
        type: "object",
        properties: {
          root: { $ref: "#/$defs/node" },
          kind: { anyOf: [{ type: "integer", minimum: 1, maximum: 9 }, { enum: ["leaf", "branch"] }] },
          tags: { type: "array", items: { $ref: "#/$defs/tag" }, minItems: 1, maxItems: 3 },
        },
        required: ["root", "kind", "tags"],
        additionalProperties: false,
        $defs: {
          tag: { enum: ["a", "b", "c"] },
          node: {
            type: "object",
            properties: {
              value: { type: "integer" },
              children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 },
            },
            required: ["value", "children"],
            additionalProperties: false,
          },
        },
      };
      for (const messages of PROMPTS) {
        const res = await c.chat.completions.create({
          model: MODEL,
          messages,
          response_format: jsonSchema(schema, { strict: true }) as never,
          max_tokens: 150,
        });
        const content = res.choices[0].message.content!;
        assert.equal(validate(schema, JSON.parse(content)), null, content);
      }
    });

    await t.step("n > 1, min_tokens and ignore_eos never break a complete document", async () => {
      const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
      const res = await post(s, {
        messages: PROMPTS[0],
        response_format: jsonSchema(schema),
        n: 3,
        temperature: 1,
        seed: 5,
        min_tokens: 100,
        max_tokens: 150,
      });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      for (const choice of res.json.choices as Json[]) {
        const content = String((choice.message as Json).content);
        assert.equal(typeof JSON.parse(content).ok, "boolean", content);
        assert.equal(choice.finish_reason, "stop");
      }
      const eos = await post(s, {
        messages: PROMPTS[0],
        response_format: jsonSchema({ enum: ["yes", "no"] }),
        ignore_eos: true,
        max_tokens: 50,
      });
      const choice = (eos.json.choices as Json[])[0];
      assert.ok(["yes", "no"].includes(JSON.parse(String((choice.message as Json).content))));
      assert.ok((eos.json.usage as Json).completion_tokens as number < 50);
      // text is no constraint at all.
      const text = await c.chat.completions.create({
        model: MODEL,
        messages: PROMPTS[0],
        response_format: { type: "text" },
      });
      assert.equal(text.choices[0].message.content, "Hello from chat-tiny!");
    });

    await t.step("bad response_format gives 400 naming the parameter, never 500", async () => {
      const hi = PROMPTS[0];
      const schemaParam = "response_format.json_schema.schema";
      await badRequest(
        s,
        {
          messages: hi,
          response_format: jsonSchema({
            type: "object",
            properties: { a: { type: "string", pattern: "^x" } },
          }, { strict: true }),
        },
        schemaParam,
        /'pattern'.*#\/properties\/a/,
      );
      // Not strict: the same schema runs, the keyword ignored.
      const loose = await post(s, {
        messages: hi,
        response_format: jsonSchema({ type: "object", properties: { a: { type: "string", pattern: "^x" } } }),
        max_tokens: 30,
      });
      assert.equal(loose.status, 200);
      // Misplaced schema: beside json_schema instead of inside it.
      await badRequest(s, {
        messages: hi,
        response_format: { type: "json_schema", schema: { type: "object" } },
      }, "response_format.json_schema");
      await badRequest(s, {
        messages: hi,
        response_format: { type: "json_schema", json_schema: { name: "x" } },
      }, schemaParam);
      await badRequest(s, {
        messages: hi,
        response_format: { type: "json_schema", json_schema: { schema: {} } },
      }, "response_format.json_schema.name");
      await badRequest(s, {
        messages: hi,
        response_format: { type: "json_schema", json_schema: { name: "a b", schema: {} } },
      }, "response_format.json_schema.name");
      await badRequest(s, {
        messages: hi,
        response_format: { type: "json_schema", json_schema: { name: "x".repeat(65), schema: {} } },
      }, "response_format.json_schema.name");
      await badRequest(s, { messages: hi, response_format: jsonSchema("object") }, schemaParam);
      await badRequest(s, { messages: hi, response_format: jsonSchema([{ type: "object" }]) }, schemaParam);
      await badRequest(s, { messages: hi, response_format: { type: "yaml" } }, "response_format.type");
      await badRequest(s, { messages: hi, response_format: "json" }, "response_format");
      for (
        const schema of [
          { type: 5 },
          { type: "objekt" },
          { $ref: "#/$defs/missing" },
          { $ref: "https://example.com/schema.json" },
          { enum: [] },
          { type: "array", minItems: -1 },
          { type: "integer", minimum: 3, maximum: 1 },
          {
            type: "object",
            properties: { a: { type: "string" } },
            required: ["a", "b"],
            additionalProperties: false,
          },
          { anyOf: "x" },
          { $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" },
        ]
      ) {
        await badRequest(s, { messages: hi, response_format: jsonSchema(schema) }, schemaParam);
      }
      const ok = await c.chat.completions.create({ model: MODEL, messages: hi });
      assert.equal(ok.choices[0].message.content, "Hello from chat-tiny!");
    });
  } finally {
    await s.close();
  }
});
