// Owns the public surface of tool-call output parsing (issue 7). The chat engine plugs
// `new ToolOutputParser(detectToolFormat(chatTemplate))` in as its ChatOutputParser: fed the visible text,
// it yields content deltas (never tool-call markup) and tool-call deltas in OpenAI's streaming shape (first
// delta of a call: index, id "call_...", name, arguments ""; then argument fragments), and sets
// finishReason "tool_calls" when any call was made. `parseToolCalls(text, format)` does the same on a whole
// text. The format also drives the forced-call grammar (constrain/tool_grammar.ts).
export { detectToolFormat, HERMES, LLAMA3, MISTRAL, type ToolCallFormat } from "./formats.ts";
export {
  collect,
  newCallId,
  type ParsedToolCall,
  parseToolCalls,
  ToolCallStreamParser,
  type ToolEvent,
  ToolOutputParser,
} from "./tool_parser.ts";
