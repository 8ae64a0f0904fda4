// Owns the public surface of constrained decoding (issue 7): output that is always a valid prefix of a JSON
// object (json_object), of a document valid against a JSON Schema (json_schema), or of a forced tool call.
//
// Per request (compiled grammars are memoized by schema, so a repeated schema reuses its mask cache):
//   const grammar = compileJsonSchema(schema, { strict })        // throws SchemaError -> 400 naming keyword+path
//                 | jsonObjectGrammar()
//                 | toolCallGrammar(tools, { parallel, format })  // SchemaError.tool = index of the bad tool
//                 | toolCallGrammar(tools, opts, { schema })     // calls, or a document (tool_choice auto)
// Per tokenizer (built once, ~0.1 s for 49k tokens; kept while the key object lives):
//   const index = VocabIndex.cached(tokenizer, () => ({
//     tokens: tokenBytesFromTokenizerJson(tokenizer._tokenizerJSON),   // id -> bytes, null = never allowed
//     eos: [...eosIds],
//   }));
// Per generated sequence, as the chat engine's ChatLogitsProcessor:
//   const p = new ConstrainedLogits(grammar, index);   // or grammar.matcher(index) for finer control
//   each step: p.process(logitsRow)  // disallowed logits -> -Infinity (EOS allowed only once complete)
//              token = sample(logitsRow); p.accept(token)
// Matcher: mask() -> TokenMask (Uint32Array bitset, cached, read-only), accept(id) -> boolean,
// acceptBytes(bytes), isComplete(), finished (EOS accepted), completion() (shortest bytes that close the
// document, e.g. to finish it at a token limit), clone().
export {
  applyMask,
  ConstrainedLogits,
  Grammar,
  maskCount,
  maskHas,
  maskIds,
  Matcher,
  type TokenMask,
} from "./matcher.ts";
export { compileJsonSchema, type CompileOptions, jsonObjectGrammar, SchemaError } from "./schema.ts";
export {
  type DocumentAlternative,
  toolCallGrammar,
  type ToolGrammarOptions,
  type ToolSpec,
} from "./tool_grammar.ts";
export { byteLevelBytes, sentencePieceBytes, tokenBytesFromTokenizerJson } from "./token_bytes.ts";
export { VocabIndex } from "./vocab.ts";
