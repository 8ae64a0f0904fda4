import assert from "node:assert/strict";
import { runnerCommand, runnerEnv } from "./runner_command.ts";
import { crashReason, stripPaths } from "./transport.ts";
import type { LoadRequest } from "./protocol.ts";
import type { ModelEntry } from "../engines/types.ts";

function request(engine: ModelEntry["engine"], more: Partial<LoadRequest> = {}): LoadRequest {
  return {
    t: "load",
    task: engine === "whisper.cpp" ? "transcription" : "chat",
    entry: { id: "m", engine, task: "chat", path: "/models/m" } as ModelEntry,
    modelsDir: "/models",
    threads: 2,
    allowRemote: false,
    debug: false,
    ...more,
  };
}

const flag = (args: string[], name: string) => args.find((a) => a.startsWith(`--${name}`));

Deno.test("runner command: each runner gets only its engine's libraries; no net or writes when offline", () => {
  const llama = runnerCommand(request("llama.cpp", { llamaLib: "/opt/llama/lib" })).args;
  assert.ok(!llama.includes("-A") && !llama.some((a) => a.startsWith("--allow-all")));
  assert.match(flag(llama, "allow-ffi")!, /native\/build/);
  assert.match(flag(llama, "allow-ffi")!, /\/opt\/llama\/lib/);
  assert.doesNotMatch(flag(llama, "allow-ffi")!, /onnxruntime|sharp/);
  assert.equal(flag(llama, "allow-net"), undefined);
  assert.equal(flag(llama, "allow-write"), undefined);
  assert.equal(flag(llama, "allow-run"), undefined);
  assert.match(flag(llama, "allow-read")!, /\/models/);
  // --llama-lib outside the checkout is read too (the shim is looked for there before it is opened).
  assert.match(flag(llama, "allow-read")!, /\/opt\/llama\/lib/);

  const onnx = runnerCommand(request("transformers")).args;
  assert.match(flag(onnx, "allow-ffi")!, /native\/build\/ort/);
  assert.doesNotMatch(flag(onnx, "allow-ffi")!, /llama/);

  const whisper = runnerCommand(request("whisper.cpp", { whisper: { vadModel: "/data/vad.bin" } })).args;
  assert.match(flag(whisper, "allow-read")!, /\/data\/vad\.bin/);
  assert.doesNotMatch(flag(whisper, "allow-ffi")!, /onnxruntime|sharp/);

  // Downloads on: the hub's hosts (and a configured endpoint) and the models folder, nothing else.
  const online =
    runnerCommand(request("llama.cpp", { allowRemote: true, hub: { endpoint: "http://127.0.0.1:9/" } }))
      .args;
  assert.match(flag(online, "allow-net")!, /huggingface\.co/);
  assert.match(flag(online, "allow-net")!, /127\.0\.0\.1:9/);
  assert.equal(flag(online, "allow-write"), "--allow-write=/models");
});

Deno.test("crash reason: the signal in words and the assert line, with no server path", () => {
  const tail = [
    "llama_context: n_ctx = 4096",
    "/home/u/src/llama.cpp/src/llama-graph.cpp:1234: GGML_ASSERT(n_embd_head == n_rot) failed",
    "[New LWP 1234]",
    "#2  0x00007fa32c01df42 in ggml_abort () from libggml-base.so",
  ];
  const why = crashReason({ success: false, code: 134, signal: "SIGABRT" }, tail);
  assert.equal(why, "its runner aborted: llama-graph.cpp:1234: GGML_ASSERT(n_embd_head == n_rot) failed");
  assert.equal(
    crashReason({ success: false, code: 139, signal: "SIGSEGV" }, []),
    "its runner crashed (segmentation fault)",
  );
  assert.equal(
    crashReason({ success: false, code: 3, signal: null }, ["bye"]),
    "its runner exited with code 3",
  );
  assert.equal(stripPaths("at /a/b/c.ts:1:2 and C:\\x\\y.dll"), "at c.ts:1:2 and y.dll");
});

Deno.test("runner command: a nice increment is passed on with the one permission it needs, else neither", () => {
  const niced = runnerCommand(request("llama.cpp", { nice: 5 })).args;
  assert.match(flag(niced, "allow-sys")!, /setPriority/);
  assert.equal(niced.at(-1), "--nice=5");
  const plain = runnerCommand(request("llama.cpp", { nice: 0 })).args;
  assert.doesNotMatch(flag(plain, "allow-sys")!, /setPriority/);
  assert.ok(!plain.some((a) => a.startsWith("--nice")));
});

Deno.test("runner command: OpenMP's workers sleep between graphs in a runner unless the server was given a policy", () => {
  assert.deepEqual(runnerEnv(() => undefined), { OMP_WAIT_POLICY: "passive" });
  assert.deepEqual(runnerEnv((name) => (name === "OMP_WAIT_POLICY" ? "active" : undefined)), {});
});
