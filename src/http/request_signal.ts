// Owns a request's abort signal: the client going away, the server's forced shutdown and the request's
// wall-clock limit in one, composed only when a handler asks for it (/health never does), the limit's timer
// cleared when the request ends. AbortSignal.timeout's timer cannot be cleared: one a request lived for the
// whole limit (10 minutes by default) after the request was done, keeping its signals with it (a /health
// probe every 20 ms left some 30,000 of them alive).

/** The limit's abort reason: the error mapper answers it with 408, as AbortSignal.timeout's. */
export const timeoutReason = () =>
  new DOMException("The request took longer than its time limit", "TimeoutError");

export class RequestSignal {
  #signal: AbortSignal | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #ended = false;
  readonly #started = performance.now();

  /** `timeoutMs`: the wall-clock limit from now (0: none). */
  constructor(private readonly sources: readonly AbortSignal[], private readonly timeoutMs: number) {}

  get signal(): AbortSignal {
    if (this.#signal) return this.#signal;
    const sources = [...this.sources];
    if (this.timeoutMs > 0) {
      const limit = new AbortController();
      const left = this.timeoutMs - (performance.now() - this.#started);
      if (left <= 0) limit.abort(timeoutReason());
      else if (!this.#ended) {
        const timer = setTimeout(() => limit.abort(timeoutReason()), left);
        // A request still running never keeps the process from exiting on its own account.
        Deno.unrefTimer(timer);
        this.#timer = timer;
      }
      sources.push(limit.signal);
    }
    return (this.#signal = AbortSignal.any(sources));
  }

  /** The request is over (its body sent, or its client gone): the limit's timer goes. */
  end(): void {
    this.#ended = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
