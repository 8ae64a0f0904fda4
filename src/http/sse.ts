// Owns Server-Sent Events framing: `data: <json>\n\n` per event, `data: [DONE]` at the end, one error frame
// then [DONE] when the source fails after the first byte, and stopping the source (so generation stops) when
// the client goes away. Errors before the first event surface as real HTTP statuses because the first event
// is pulled before the response exists.
import { errorBody, toApiError } from "./errors.ts";
import type { Logger } from "../log.ts";

const encoder = new TextEncoder();

export interface SseOptions {
  /** Append `data: [DONE]` (chat streams do; transcription and Responses streams don't). */
  done?: boolean;
  /** Write an `event: <type>` line before each event's data (the Responses API's framing). */
  named?: boolean;
  log?: Logger;
  headers?: Record<string, string>;
  /** The frame for a failure after the first byte (default: OpenAI's envelope, or Responses' error event). */
  errorFrame?: (err: unknown) => unknown;
}

/** A stream made by sseResponse: whether it has ended, and who to tell when it does. */
interface Ending {
  ended: boolean;
  listeners: (() => void)[];
}
const endings = new WeakMap<ReadableStream<Uint8Array>, Ending>();

/**
 * Runs `fn` once `body`, a stream sseResponse made, has ended: its last event enqueued, an error frame after
 * the first byte, or the client gone (at once if it already has). False for any other body: the caller wraps
 * that one in a stream of its own to learn when it ends (a layer that cost ~30 µs of the HTTP thread per
 * streamed token, which SSE bodies, the only long ones, are spared).
 */
export function onStreamEnd(body: ReadableStream<Uint8Array>, fn: () => void): boolean {
  const ending = endings.get(body);
  if (!ending) return false;
  if (ending.ended) fn();
  else ending.listeners.push(fn);
  return true;
}

export function frame(data: unknown, named = false): Uint8Array {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  const type = named && typeof data === "object" && data !== null
    ? (data as { type?: unknown }).type
    : undefined;
  return encoder.encode(typeof type === "string" ? `event: ${type}\ndata: ${json}\n\n` : `data: ${json}\n\n`);
}

/**
 * Pulls the first event (errors thrown here become the HTTP status), then streams the rest.
 * The iterator's `return()` is called when the client disconnects, which is how engines learn to stop.
 */
export async function sseResponse(source: AsyncIterable<unknown>, opts: SseOptions = {}): Promise<Response> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  const done = opts.done ?? true;
  const ending: Ending = { ended: false, listeners: [] };
  const end = () => {
    if (ending.ended) return;
    ending.ended = true;
    for (const fn of ending.listeners.splice(0)) fn();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (!first.done) controller.enqueue(frame(first.value, opts.named));
      else {
        if (done) controller.enqueue(frame("[DONE]"));
        controller.close();
        end();
      }
    },
    async pull(controller) {
      try {
        const next = await it.next();
        if (next.done) {
          if (done) controller.enqueue(frame("[DONE]"));
          controller.close();
          end();
          return;
        }
        controller.enqueue(frame(next.value, opts.named));
      } catch (err) {
        const api = toApiError(err);
        if (api.status >= 500) opts.log?.error("stream failed", { error: String(err) });
        controller.enqueue(
          frame(
            opts.errorFrame
              ? opts.errorFrame(err)
              : opts.named
              ? { type: "error", code: api.code, message: api.message, param: api.param }
              : errorBody(api),
            opts.named,
          ),
        );
        if (done) controller.enqueue(frame("[DONE]"));
        controller.close();
        end();
      }
    },
    async cancel() {
      try {
        // A source that ended on its own needs no stopping.
        if (!ending.ended) await it.return?.();
      } finally {
        end();
      }
    },
  });
  endings.set(body, ending);
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      ...opts.headers,
    },
  });
}
