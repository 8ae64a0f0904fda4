// Owns API-key checks: `Authorization: Bearer <key>` against the configured keys, compared in constant time
// (keys are hashed first so lengths leak nothing either). No keys configured = open server.
import { ApiError } from "./errors.ts";

const encoder = new TextEncoder();

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export class ApiKeys {
  readonly #digests: Promise<Uint8Array[]>;
  readonly enabled: boolean;

  constructor(keys: string[]) {
    this.enabled = keys.length > 0;
    this.#digests = Promise.all(keys.map(digest));
  }

  /**
   * Throws 401 `invalid_api_key` unless the request carries a configured key: `Authorization: Bearer` (OpenAI's
   * clients) or `x-api-key` (Anthropic's).
   */
  async check(req: Request): Promise<void> {
    if (!this.enabled) return;
    const header = req.headers.get("authorization") ?? "";
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    const key = m?.[1].trim() || req.headers.get("x-api-key")?.trim();
    if (!key) {
      throw new ApiError({
        status: 401,
        message: "You didn't provide an API key. Provide it in an Authorization header (Bearer auth) " +
          "or an x-api-key header.",
        code: "invalid_api_key",
      });
    }
    const given = await digest(key);
    let ok = false;
    // Compare against every key without stopping early, so timing says nothing about which matched.
    for (const d of await this.#digests) ok = equalBytes(given, d) || ok;
    if (!ok) {
      throw new ApiError({
        status: 401,
        message: "Incorrect API key provided.",
        code: "invalid_api_key",
      });
    }
  }
}
