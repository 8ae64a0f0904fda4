// Owns the one error type of model downloads: its message is a single line meant for the terminal, and
// `retryable` tells the downloader whether trying again (resuming) can help.
export class HubError extends Error {
  override name = "HubError";
  constructor(message: string, readonly retryable = false) {
    super(message);
  }
}
