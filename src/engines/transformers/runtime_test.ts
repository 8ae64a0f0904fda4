// Tests the CPU runtime's session options: onnxruntime's threads spin within runs by default (and stop when a
// run returns), the manifest's ort_spinning picks the other modes, and a value it doesn't know is refused.
import assert from "node:assert/strict";
import { memoryLogger } from "../../log.ts";
import { spinConfig, spinEntries, spinOf, transformersRuntime } from "./runtime.ts";

Deno.test("runtime: threads spin within runs by default; ort_spinning picks always or never; typos are refused", () => {
  assert.deepEqual(spinConfig(spinOf(undefined)), {
    intra_op: { allow_spinning: "1" },
    force_spinning_stop: "1",
  });
  assert.deepEqual(spinConfig(spinOf(true)), { intra_op: { allow_spinning: "1" } });
  assert.deepEqual(spinConfig(spinOf("always")), { intra_op: { allow_spinning: "1" } });
  assert.deepEqual(spinConfig(spinOf(false)), { intra_op: { allow_spinning: "0" } });
  assert.equal(spinOf("never"), "never");
  assert.equal(spinOf("run"), "run");
  assert.throws(() => spinOf("sometimes"), /options\.ort_spinning must be/);
  assert.throws(() => spinOf(1), /options\.ort_spinning must be/);
});

Deno.test("runtime: the CPU session options carry the spin config and the thread count", async () => {
  const rt = await transformersRuntime("cpu", memoryLogger());
  assert.equal(rt.kind, "cpu");
  assert.deepEqual(rt.sessionOptions("cpu", 2), {
    executionProviders: ["cpu"],
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    extra: { session: { intra_op: { allow_spinning: "1" }, force_spinning_stop: "1" } },
  });
  const never = rt.sessionOptions("cpu", 1, false, "never") as { extra: unknown };
  assert.deepEqual(never.extra, { session: { intra_op: { allow_spinning: "0" } } });
});

Deno.test("runtime: the C API's session config entries say the same as onnxruntime-node's options", () => {
  assert.deepEqual(spinEntries("run"), {
    "session.intra_op.allow_spinning": "1",
    "session.force_spinning_stop": "1",
  });
  assert.deepEqual(spinEntries("always"), { "session.intra_op.allow_spinning": "1" });
  assert.deepEqual(spinEntries("never"), { "session.intra_op.allow_spinning": "0" });
});
