// Owns running one native chat job for an endpoint (chat completions, completions, responses): the model's
// FIFO queue slot held for the whole generation, the request's figures noted as they come (model, tokens,
// time to first token), and the serving fingerprint. The pipeline's `prompt` event goes to the caller's
// callback, so endpoints iterate the choices' events only, and the first event they pull comes after the
// prompt was accepted: errors before it keep their real status.
import type { ChatEngine, ChatEvent, ChatJob, ModelEntry } from "../engines/types.ts";
import { randomSeed } from "../chat/sampler.ts";
import type { ApiContext } from "./context.ts";
import { reportFields } from "./ignored.ts";

/** The events of the choices (the prompt event goes to the callback). */
export type ChoiceEvent = Exclude<ChatEvent, { type: "prompt" }>;
export type PromptEvent = Extract<ChatEvent, { type: "prompt" }>;

export interface JobRun {
  ctx: ApiContext;
  entry: ModelEntry;
  engine: ChatEngine;
  /** performance.now() when the request arrived (for its time to first token). */
  started: number;
  job: ChatJob;
  /**
   * Told the job fields the model could not act on (the prompt event's `unused`), before any choice event, so
   * the route can report them (X-Ignored-Params, or a 400 under --strict) under its own field names.
   */
  unused?: (fields: string[]) => void;
}

/**
 * A run whose unused effort level is reported under the route's own name for it (`reasoning_effort`,
 * `reasoning.effort`, `output_config.effort`).
 */
export function jobRun(req: Request, run: Omit<JobRun, "unused">, effortParam: string): JobRun {
  return { ...run, unused: () => reportFields(req, run.ctx, [effortParam]) };
}

export async function* admitted(
  run: JobRun,
  onPrompt: (ev: Omit<PromptEvent, "type">) => void,
): AsyncGenerator<ChoiceEvent> {
  // As many run at once as the engine decodes together (--parallel); the rest wait in order.
  const queue = run.ctx.registry.admission.queue(run.entry.id, run.engine.parallel ?? 1);
  const permit = await queue.acquire(run.ctx.signal);
  const admittedAt = performance.now();
  const { ctx } = run;
  let finished = 0;
  let first = true;
  try {
    for await (const ev of run.engine.chat(run.job, ctx.signal)) {
      if (ev.type === "prompt") {
        const { type: _, ...figures } = ev;
        if (ev.unused?.length) run.unused?.(ev.unused);
        onPrompt(figures);
        // Noted as generation goes, so a request cut short by its client is logged with what it did produce.
        ctx.note({ model: run.entry.id, promptTokens: ev.promptTokens, completionTokens: 0 });
        continue;
      }
      if (ev.type === "delta") {
        if (first) {
          first = false;
          ctx.note({ ttft: (performance.now() - run.started) / 1000 });
        }
        ctx.note({ completionTokens: finished + ev.tokens });
      } else if (ev.type === "finish") {
        finished += ev.completionTokens;
        ctx.note({ completionTokens: finished });
      }
      yield ev;
    }
  } finally {
    permit.release();
    queue.observe((performance.now() - admittedAt) / 1000);
  }
}

/** The sampling fields chat and legacy completions share, as they arrive on the wire. */
export interface WireSampling {
  min_tokens?: number | null;
  ignore_eos?: boolean | null;
  stop?: string | string[] | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  seed?: number | null;
}

/** Those fields as the job's: unset sampling fields take the model's defaults; no seed draws one. */
export function samplingOf(
  body: WireSampling,
): Pick<ChatJob, "minTokens" | "ignoreEos" | "stop" | "sampling" | "seed"> {
  return {
    minTokens: body.min_tokens ?? 0,
    ignoreEos: body.ignore_eos ?? false,
    stop: body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop,
    sampling: {
      ...(body.temperature != null ? { temperature: body.temperature } : {}),
      ...(body.top_p != null ? { topP: body.top_p } : {}),
      ...(body.top_k != null ? { topK: body.top_k } : {}),
      presencePenalty: body.presence_penalty ?? 0,
      frequencyPenalty: body.frequency_penalty ?? 0,
      logitBias: body.logit_bias ?? {},
    },
    seed: body.seed == null ? randomSeed() : BigInt(body.seed),
  };
}

/**
 * `none`/`minimal` effort turns thinking off (the template's `enable_thinking`); another level goes to the
 * template as `reasoning_effort` (gpt-oss's knob), and is reported by the route when the template has none.
 */
export function thinkingOf(
  effort: string | null | undefined,
): { thinking?: boolean; reasoningEffort?: string } {
  if (effort == null) return {};
  return effort === "none" || effort === "minimal" ? { thinking: false } : { reasoningEffort: effort };
}

const fingerprints = new WeakMap<ChatEngine, string>();

/** Stable per loaded model and backend, as OpenAI's identifies a serving configuration. */
export function fingerprintOf(engine: ChatEngine): string {
  let fp = fingerprints.get(engine);
  if (!fp) {
    let h = 0x811c9dc5;
    for (const ch of `${engine.entry.id}|${engine.backend}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
    fp = `fp_${(h >>> 0).toString(16).padStart(8, "0")}`;
    fingerprints.set(engine, fp);
  }
  return fp;
}
