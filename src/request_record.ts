// Owns what one request reports when it is done: the fields handlers note as they go (model, tokens, time to
// first token) and the record the app builds from them for its log line and the metrics. Imports nothing, so
// the app, the API context and the metrics all depend on it rather than on each other.

export interface RequestNote {
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
  /** Seconds to the first generated token (streaming chat). */
  ttft?: number;
  [k: string]: unknown;
}

/** What a finished request reports (log line, metrics). */
export interface RequestRecord extends RequestNote {
  method: string;
  path: string;
  route: string;
  status: number;
  seconds: number;
  requestId: string;
}
