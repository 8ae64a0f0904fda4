import assert from "node:assert/strict";
import { ConfigError, helpText, OPTIONS, parseBytes, parseConfig } from "./config.ts";

Deno.test("config: defaults, then env, then flags win", () => {
  const base = parseConfig([], {}, "/srv").config!;
  assert.equal(base.port, 8080);
  assert.equal(base.host, "127.0.0.1");
  assert.equal(base.modelsDir, "/srv/models");
  assert.equal(base.manifest, "/srv/models/manifest.json");
  assert.equal(base.audioBodyBytes, 25_000_000);
  assert.deepEqual(base.apiKeys, []);
  const env = parseConfig([], { OAI_PORT: "9000", OAI_DEVICE: "cpu" }, "/srv").config!;
  assert.equal(env.port, 9000);
  assert.equal(env.device, "cpu");
  const flags = parseConfig(["--port", "9100"], { OAI_PORT: "9000" }, "/srv").config!;
  assert.equal(flags.port, 9100);
});

Deno.test("config: api keys repeat, comma-separate and read files", () => {
  const files: Record<string, string> = { "/k.txt": "# comment\nsk-file-1\n\nsk-file-2\n" };
  const c = parseConfig(
    ["--api-key", "a,b", "--api-key", "@/k.txt"],
    {},
    "/",
    (p) => files[p],
  ).config!;
  assert.deepEqual(c.apiKeys, ["a", "b", "sk-file-1", "sk-file-2"]);
  const fromEnv = parseConfig([], { OAI_API_KEYS: "x, y" }, "/").config!;
  assert.deepEqual(fromEnv.apiKeys, ["x", "y"]);
});

Deno.test("config: a bad value names its flag in one line", () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--port", "abc"], {}, /^--port: expected an integer/],
    [["--port", "70000"], {}, /^--port: must be at most 65535/],
    [["--runner-nice", "20"], {}, /^--runner-nice: must be at most 19/],
    [[], { OAI_RUNNER_NICE: "-1" }, /^--runner-nice: must be at least 0/],
    [["--runner-nice=3", "--isolation=thread"], {}, /^--runner-nice: applies to runner processes/],
    [["--isolation=thread"], { OAI_RUNNER_NICE: "5" }, /^--runner-nice: applies to runner processes/],
    [["--device", "tpu"], {}, /^--device: expected one of auto, webgpu, cpu/],
    [[], { OAI_THREADS: "0" }, /^--threads: must be at least 1/],
    [["--max-audio-body", "lots"], {}, /^--max-audio-body: expected a size/],
    [["--offline=maybe"], {}, /^--offline: expected true or false/],
    [["--vad"], {}, /^--vad: needs --vad-model/],
    [["--no-such-flag"], {}, /no-such-flag/],
    [["--gpu-layers=-2"], {}, /^--gpu-layers: must be at least -1/],
    [["--llama-variant", "rocm"], {}, /^--llama-variant: expected one of auto, cpu, vulkan, cuda, metal/],
    [[], { OAI_GPU_MEMORY_BUDGET: "lots" }, /^--gpu-memory-budget: expected a size/],
  ];
  for (const [args, env, re] of cases) {
    assert.throws(() => parseConfig(args, env, "/"), (e: unknown) => {
      assert.ok(e instanceof ConfigError, `${args}: ${e}`);
      assert.match(e.message, re);
      assert.ok(!e.message.includes("\n"));
      return true;
    });
  }
});

Deno.test("config: --isolation=thread takes the runners' default priority, or an explicit 0", () => {
  assert.equal(parseConfig(["--isolation=thread"], {}, "/").config!.isolation, "thread");
  assert.equal(parseConfig(["--isolation=thread", "--runner-nice=0"], {}, "/").config!.runnerNice, 0);
});

Deno.test("config: boolean flags stand alone, take values, or are negated", () => {
  assert.equal(parseConfig(["--offline"], {}, "/").config!.offline, true);
  assert.equal(parseConfig(["--offline=false"], {}, "/").config!.offline, false);
  assert.equal(parseConfig(["--no-preload"], {}, "/").config!.preload, false);
  assert.equal(parseConfig([], { OAI_PRELOAD: "0" }, "/").config!.preload, false);
});

Deno.test("config: --help lists every flag with its env twin", () => {
  const help = parseConfig(["--help"], {}, "/").help!;
  assert.equal(help, helpText());
  for (const o of OPTIONS) {
    assert.ok(help.includes(`--${o.flag}`), o.flag);
    assert.ok(help.includes(o.env), o.env);
  }
});

Deno.test("config: sizes", () => {
  assert.equal(parseBytes("25MB"), 25_000_000);
  assert.equal(parseBytes("1KiB"), 1024);
  assert.equal(parseBytes("12"), 12);
  assert.equal(parseBytes("x"), undefined);
});

Deno.test("config: GPU placement flags and their env twins", () => {
  const c = parseConfig(["--gpu-layers=12", "--gpu-memory-budget=6GB"], { OAI_LLAMA_VARIANT: "vulkan" }, "/")
    .config!;
  assert.equal(c.gpuLayers, 12);
  assert.equal(c.gpuMemoryBudgetBytes, 6e9);
  assert.equal(c.llamaVariant, "vulkan");
  const d = parseConfig([], {}, "/").config!;
  assert.equal(d.gpuLayers, -1, "all that fit");
  assert.equal(d.llamaVariant, "auto");
});
