// End to end: /metrics answers Prometheus text that parses, counts requests by route and status, and
// reports model states; it sits behind the API key like every route but /health.
import assert from "node:assert/strict";
import { join } from "node:path";
import { MODELS_DIR, startTestServer } from "../helpers.ts";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict parser of the Prometheus text exposition format (what a scraper does). */
function parseProm(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
      assert.ok(m, `bad comment line: ${line}`);
      if (m[1] === "TYPE") types.set(m[2], m[3]);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    assert.ok(m, `bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const part of (m[3] ?? "").match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
      const eq = part.indexOf("=");
      labels[part.slice(0, eq)] = JSON.parse(part.slice(eq + 1));
    }
    samples.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return { samples, types };
}

Deno.test("metrics: Prometheus text that parses, with request counts, latencies and model states", async () => {
  const t = await startTestServer({ flags: ["--api-key=sk-m"], apiKey: "sk-m" });
  try {
    const auth = { authorization: "Bearer sk-m" };
    for (let i = 0; i < 3; i++) await (await fetch(`${t.url}/v1/models`, { headers: auth })).body?.cancel();
    await (await fetch(`${t.url}/v1/nothing`, { headers: auth })).body?.cancel();
    await Promise.all(
      [["a", "b"], ["c"]].map((input) => t.client.embeddings.create({ model: "embed-tiny", input })),
    );
    await t.client.embeddings.create({ model: "embed-tiny", input: "d" });

    const denied = await fetch(`${t.url}/metrics`);
    assert.equal(denied.status, 401);
    await denied.body?.cancel();

    const res = await fetch(`${t.url}/metrics`, { headers: auth });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
    const { samples, types } = parseProm(await res.text());
    assert.equal(types.get("oai_requests_total"), "counter");
    assert.equal(types.get("oai_request_duration_seconds"), "histogram");
    assert.equal(types.get("oai_time_to_first_token_seconds"), "histogram");
    assert.equal(types.get("oai_queue_depth"), "gauge");

    const count = (route: string, status: string) =>
      samples.find((s) =>
        s.name === "oai_requests_total" && s.labels.route === route && s.labels.status === status
      )?.value;
    assert.equal(count("/v1/models", "200"), 3);
    assert.equal(count("unmatched", "404"), 1);

    const buckets = samples.filter((s) =>
      s.name === "oai_request_duration_seconds_bucket" && s.labels.route === "/v1/models"
    );
    assert.ok(buckets.length > 3);
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(buckets[i].value >= buckets[i - 1].value, "cumulative");
    }
    assert.equal(buckets.at(-1)!.labels.le, "+Inf");
    assert.equal(buckets.at(-1)!.value, 3);

    const loaded = samples.filter((s) => s.name === "oai_model_loaded");
    assert.deepEqual(loaded.map((s) => s.labels.model).sort(), [
      "chat-tiny",
      "embed-tiny",
      "whisper-multi-test",
      "whisper-tiny-test",
    ]);
    const state = (m: string) => loaded.find((s) => s.labels.model === m)!;
    assert.equal(state("embed-tiny").labels.state, "ready");
    assert.equal(state("embed-tiny").value, 1);
    assert.equal(state("chat-tiny").labels.state, "available");
    assert.equal(state("chat-tiny").value, 0);
    // What a loaded model holds: embed-tiny's fp32 graph (its int8 one beside it is not loaded); nothing is
    // reported for a model not loaded.
    const memory = samples.filter((s) => s.name === "oai_model_memory_bytes");
    assert.deepEqual(memory.map((s) => [s.labels.model, s.value]), [
      ["embed-tiny", Deno.statSync(join(MODELS_DIR, "generated/embed-tiny/onnx/model.onnx")).size],
    ]);

    // Embedding batches: 4 inputs over 2 or 3 model calls (the two concurrent requests may share one).
    assert.equal(types.get("oai_batches_total"), "counter");
    const metric = (name: string) =>
      samples.find((s) => s.name === name && s.labels.model === "embed-tiny")?.value;
    assert.equal(metric("oai_batch_inputs_total"), 4);
    assert.ok([2, 3].includes(metric("oai_batches_total")!));
    assert.equal(
      samples.find((s) => s.name === "oai_tokens_total" && s.labels.model === "embed-tiny")?.labels.kind,
      "prompt",
    );
  } finally {
    await t.close();
  }
});
