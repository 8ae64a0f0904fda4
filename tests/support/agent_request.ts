// Owns Claude-Code-shaped Messages requests for the prompt-cache tests: what Claude Code 2.1 sends (seen on a
// stand-in server): a first system block that is a billing header whose version suffix changes every request,
// two long system blocks with `cache_control`, a dozen tools with long descriptions and JSON Schemas, a user
// turn of two text blocks (a system reminder, then the question), then a `system` role message with the
// environment. The text is English words drawn from a seeded PRNG, so the prompt is long (several thousand
// tokens) and the same in every run.
import { ENGLISH_WORDS } from "../../tools/models/english_words.ts";
import { Prng } from "../../tools/models/prng.ts";

/** The word list without the generated models' marker words (they would change which reply they give). */
const WORDS = ENGLISH_WORDS.filter((w) => !/weather|unicode|forever/i.test(w));

function words(rng: Prng, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[rng.nextU32() % WORDS.length]);
  return out.join(" ");
}

const TOOL_NAMES = [
  "Agent",
  "Bash",
  "Edit",
  "Glob",
  "Grep",
  "Read",
  "Skill",
  "Task",
  "TodoWrite",
  "Web",
  "Write",
  "Notebook",
];

export interface AgentTurn {
  /** Changes the billing header, as every Claude Code request does. */
  turn: number;
  /** Earlier turns of the conversation after the first question (assistant and user messages). */
  history?: { role: "user" | "assistant"; content: string }[];
  /** Put `cache_control` breakpoints on the system blocks and the last tool (Claude Code does). */
  cacheControl?: boolean;
  question?: string;
}

/** A request body for POST /v1/messages (stream: true). */
export function agentRequest(model: string, t: AgentTurn): Record<string, unknown> {
  const rng = new Prng("agent-request");
  const cc = t.cacheControl === false ? {} : { cache_control: { type: "ephemeral" } };
  const tools = TOOL_NAMES.map((name, i) => ({
    name,
    description: words(rng, 250),
    input_schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        path: { description: words(rng, 12), type: "string" },
        limit: { description: words(rng, 8), type: "integer", minimum: 0, maximum: 9007199254740991 },
      },
      required: ["path"],
      additionalProperties: false,
    },
    ...(i === TOOL_NAMES.length - 1 ? cc : {}),
  }));
  return {
    model,
    max_tokens: 32000,
    stream: true,
    system: [
      {
        type: "text",
        text: `x-anthropic-billing-header: cc_version=2.1.328.${t.turn.toString(16)}; cc_entrypoint=cli;`,
      },
      { type: "text", text: "You are an agent for a local model server's tests.", ...cc },
      { type: "text", text: words(rng, 1000), ...cc },
    ],
    tools,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: `<system-reminder>\n${words(rng, 60)}\n</system-reminder>\n` },
          { type: "text", text: t.question ?? "Hi there!" },
        ],
      },
      { role: "system", content: [{ type: "text", text: `# Environment\n${words(rng, 200)}` }] },
      ...(t.history ?? []),
    ],
    metadata: { user_id: "tests" },
    thinking: { type: "adaptive", display: "omitted" },
  };
}
