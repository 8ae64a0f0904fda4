// Generates the multilingual whisper test model: the real multilingual tiny header (hparams, mel filters and
// the 99-language vocabulary) from ../shared/data/whisper/for-tests-ggml-tiny.bin, with the decoder wired (see
// whisper_tiny.ts) so that, whatever the audio:
// - language detection picks German (after <|startoftranscript|> the German language token ranks first);
// - the transcribe task writes GERMAN_SCRIPT, or PROMPTED_SCRIPT when a prompt precedes it (a prompt moves the
//   task token past position 2, and the wiring reads the position);
// - the translate task writes ENGLISH_SCRIPT, after a fallback to temperature 0.2 (FALLBACK_TEMPERATURE).
// So language detection, `language`, `prompt` and translation are testable end to end with exact outputs.
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import {
  chainOf,
  languageToken,
  MODEL_FILE,
  MULTI,
  readHeader,
  type ScriptSegment,
  scriptTokens,
  writeLinked,
} from "./whisper_tiny.ts";

export const VERSION = "whisper-tiny-multi-test-1";
export { MODEL_FILE };

export const MULTI_HEADER_PATH = fileURLToPath(
  new URL("../../../shared/data/whisper/for-tests-ggml-tiny.bin", import.meta.url),
);

/** whisper.cpp's id of the language detection finds (its table: 0 en, 1 zh, 2 de, ...). */
export const DETECTED_LANGUAGE = { id: 2, code: "de", name: "german" } as const;

/** Transcribed without a prompt. Tokens may not repeat across the three scripts (see Link). */
export const GERMAN_SCRIPT: ScriptSegment[] = [{ t0: 0, t1: 2, text: " Guten Morgen, wie geht es?" }];
/** Transcribed when the request has a prompt. */
export const PROMPTED_SCRIPT: ScriptSegment[] = [{ t0: 0.02, t1: 2.02, text: " Hallo zusammen!" }];
/** Translated. */
export const ENGLISH_SCRIPT: ScriptSegment[] = [{ t0: 0.04, t1: 2.04, text: " Good morning to you." }];

/**
 * Translation's links are weak (see Link.gain): at temperature 0 the decode fails whisper's log-probability
 * check, so whisper falls back to 0.2, which verbose_json reports.
 */
export const FALLBACK_TEMPERATURE = 0.2;
const DECOYS = 8;
const DECOY_WEIGHT = 0.9;

/** Plain word-piece ids away from the scripts' tokens, distinct per target. */
function decoysFor(to: number) {
  return {
    ids: Array.from({ length: DECOYS }, (_, i) => 1000 + ((to * 7 + i * 613) % 20000)),
    weight: DECOY_WEIGHT,
  };
}

/** Contract of tools/ensure_models.ts. */
export async function generate(outDir: string): Promise<void> {
  const header = await readHeader(MULTI_HEADER_PATH);
  const seq = (s: ScriptSegment[]) => scriptTokens(header.vocab, s, MULTI);
  const links = [
    { from: MULTI.sot, to: languageToken(DETECTED_LANGUAGE.id) },
    ...chainOf(MULTI.transcribe, seq(GERMAN_SCRIPT), "task"),
    ...chainOf(MULTI.transcribe, seq(PROMPTED_SCRIPT), "later"),
    ...chainOf(MULTI.translate, seq(ENGLISH_SCRIPT), undefined, decoysFor),
  ];
  await writeLinked(join(outDir, MODEL_FILE), header, links);
}

if (import.meta.main) {
  const out = Deno.args[0] ?? "models/generated/whisper-multi-test";
  await Deno.mkdir(out, { recursive: true });
  await generate(out);
  console.log(join(out, MODEL_FILE));
}
