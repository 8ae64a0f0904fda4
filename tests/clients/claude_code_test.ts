// Client matrix, Claude Code (`@anthropic-ai/claude-code`, the CLI installed by .ci/run into .tools/) in print
// mode against the Messages API on agent-tiny, with its network limited to the server: the test runs
// claude_code_driver.ts in a network namespace of its own (`unshare -n`, loopback only), which starts the server
// and runs `claude -p` twice. One turn is answered in text; in the other the model calls Claude Code's Read
// tool, Claude Code reads the file and sends the result back, and the model answers. Every request Claude
// Code makes must succeed (no 4xx it would have to work around). Skipped where the CLI is not installed,
// except on CI.
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../helpers.ts";
import { AGENT_FILE, AGENT_REPLIES } from "../../tools/models/agent_tiny.ts";

const CLAUDE = Deno.env.get("CLAUDE_CODE_BIN") ??
  join(REPO_ROOT, ".tools", "claude-code", "node_modules", ".bin", "claude");
const installed = await Deno.stat(CLAUDE).then(() => true, () => false);

interface Run {
  prompt: string;
  code: number;
  stderr: string;
  messages: Record<string, unknown>[];
  requests: { path: string; status: number; promptTokens?: number }[];
}

Deno.test({
  name: "client matrix: Claude Code CLI (claude -p) against /v1/messages",
  ignore: !installed && Deno.env.get("CI") !== "true",
  async fn() {
    assert.ok(installed, `Claude Code's CLI is missing at ${CLAUDE} (.ci/run installs it)`);
    const out = await new Deno.Command("unshare", {
      args: [
        "-n",
        "sh",
        "-c",
        'ip link set lo up && exec "$0" run -A tests/clients/claude_code_driver.ts "$1"',
        Deno.execPath(),
        CLAUDE,
      ],
      cwd: REPO_ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, `driver failed: ${new TextDecoder().decode(out.stderr).slice(-3000)}`);
    const runs: Run[] = JSON.parse(stdout.trim().split("\n").at(-1)!);
    const [hi, tool] = runs;

    for (const run of runs) {
      assert.equal(run.code, 0, `${run.prompt}: ${run.stderr}`);
      assert.ok(run.requests.length > 0);
      for (const r of run.requests) {
        assert.equal(r.path, "/v1/messages");
        assert.equal(r.status, 200, `${run.prompt}: a request answered ${r.status}`);
      }
    }
    // Claude Code's own request is long: its system prompt and a dozen tools.
    assert.ok(hi.requests[0].promptTokens! > 10_000, `${hi.requests[0].promptTokens} prompt tokens`);
    const result = (run: Run) => run.messages.find((m) => m.type === "result")!;
    assert.equal(result(hi).result, AGENT_REPLIES.default);
    assert.equal(result(hi).is_error, false);

    // The tool turn: a tool_use of Read, Claude Code's tool_result with the file's text, then the answer.
    const content = (
      m: Record<string, unknown>,
    ) => ((m.message as { content?: Record<string, unknown>[] } | undefined)?.content ?? []);
    const uses = tool.messages.filter((m) => m.type === "assistant").flatMap(content)
      .filter((b) => b.type === "tool_use");
    assert.equal(uses.length, 1);
    assert.equal(uses[0].name, "Read");
    assert.deepEqual(uses[0].input, { file_path: AGENT_FILE });
    const results = tool.messages.filter((m) => m.type === "user").flatMap(content)
      .filter((b) => b.type === "tool_result");
    assert.equal(results.length, 1);
    assert.match(JSON.stringify(results[0].content), /Paris: sunny, 22 degrees/);
    assert.equal(result(tool).result, AGENT_REPLIES.tool_result);
    assert.equal(tool.requests.length, 2, "the call, then the answer");
  },
});
