// Runs inside the Claude Code test's own network namespace (only loopback exists there, so Claude Code can
// reach nothing but this server): starts the real server with agent-tiny, runs Claude Code's CLI in print
// mode for two prompts (one answered in text, one where the model calls Claude Code's Read tool, Claude Code
// runs it and the model answers), and prints what happened as one JSON line for claude_code_test.ts.
import { GENERATED_MODELS, startTestServer } from "../helpers.ts";
import { AGENT_FILE } from "../../tools/models/agent_tiny.ts";
import { dirname } from "node:path";

const claude = Deno.args[0];
const s = await startTestServer({
  manifest: {
    ...GENERATED_MODELS,
    models: {
      ...GENERATED_MODELS.models,
      "agent-tiny": {
        task: "chat",
        path: "generated/agent-tiny/gguf/agent-tiny-F32.gguf",
        options: { context_length: 32768 },
      },
    },
  },
  apiKey: "sk-claude-code",
  flags: ["--api-key=sk-claude-code"],
});
const home = await Deno.makeTempDir({ prefix: "oai-claude-home-" });
await Deno.mkdir(dirname(AGENT_FILE), { recursive: true });
await Deno.writeTextFile(AGENT_FILE, "Paris: sunny, 22 degrees\n");
const runs = [];
try {
  for (const prompt of ["Hi there!", "What's the weather in Paris?"]) {
    const before = s.records.length;
    const out = await new Deno.Command(claude, {
      args: ["-p", prompt, "--model", "agent-tiny", "--output-format", "stream-json", "--verbose"],
      cwd: dirname(AGENT_FILE),
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        ANTHROPIC_BASE_URL: s.url,
        ANTHROPIC_API_KEY: "sk-claude-code",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith("{"));
    runs.push({
      prompt,
      code: out.code,
      stderr: new TextDecoder().decode(out.stderr).slice(-2000),
      messages: lines.map((l) => JSON.parse(l)),
      requests: s.records.slice(before).map((r) => ({
        path: r.path,
        status: r.status,
        promptTokens: r.promptTokens,
      })),
    });
  }
} finally {
  await s.close();
  await Deno.remove(home, { recursive: true }).catch(() => {});
  await Deno.remove(dirname(AGENT_FILE), { recursive: true }).catch(() => {});
}
console.log(JSON.stringify(runs));
