// Owns reading one tool-call object `{"name": ..., "arguments": ...}` a character at a time, so the name is
// known as soon as its string closes and the arguments can be passed on while they are still arriving.
// Lenient: members in any order, "parameters" for "arguments", arguments given as a JSON-encoded string,
// extra members ignored. Only the object's own structure is checked; the arguments text is passed through
// as the model wrote it (the constrained grammar is what guarantees it is valid).

const enum P {
  Start,
  Member,
  Key,
  Colon,
  ValueStart,
  Value,
  After,
}

const WS = (c: string) => c === " " || c === "\n" || c === "\t" || c === "\r";

export type ScanResult = "more" | "done" | "error";

export class CallScanner {
  /** The call's name, once its string has closed. */
  name: string | null = null;
  /** The key of the first member (lets a caller decide early whether an object is a call at all). */
  firstKey: string | null = null;
  /** An arguments member has begun. */
  argsBegun = false;
  /** The arguments value is complete. */
  argsDone = false;

  #p = P.Start;
  #keyBuf = "";
  #key = "";
  #val = "";
  #kind: "nest" | "string" | "scalar" = "scalar";
  #depth = 0;
  #inStr = false;
  #esc = false;
  #isArgs = false;
  /** Arguments text produced since the last take(). */
  #out = "";

  constructor(
    readonly argsKeys: readonly string[] = ["arguments", "parameters"],
    readonly nameKeys: readonly string[] = ["name"],
  ) {}

  /** Arguments text that became available since the last call. */
  take(): string {
    const s = this.#out;
    this.#out = "";
    return s;
  }

  feed(c: string): ScanResult {
    switch (this.#p) {
      case P.Start:
        if (WS(c)) return "more";
        if (c !== "{") return "error";
        this.#p = P.Member;
        return "more";
      case P.Member:
        if (WS(c) || c === ",") return "more";
        if (c === "}") return "done";
        if (c !== '"') return "error";
        this.#keyBuf = c;
        this.#esc = false;
        this.#p = P.Key;
        return "more";
      case P.Key:
        this.#keyBuf += c;
        if (this.#esc) this.#esc = false;
        else if (c === "\\") this.#esc = true;
        else if (c === '"') {
          try {
            this.#key = JSON.parse(this.#keyBuf);
          } catch {
            return "error";
          }
          this.firstKey ??= this.#key;
          this.#p = P.Colon;
        }
        return "more";
      case P.Colon:
        if (WS(c)) return "more";
        if (c !== ":") return "error";
        this.#p = P.ValueStart;
        return "more";
      case P.ValueStart:
        if (WS(c)) return "more";
        this.#isArgs = this.argsKeys.includes(this.#key) && !this.argsBegun;
        if (this.#isArgs) this.argsBegun = true;
        this.#val = c;
        this.#inStr = false;
        this.#esc = false;
        this.#p = P.Value;
        if (c === "{" || c === "[") {
          this.#kind = "nest";
          this.#depth = 1;
          if (this.#isArgs) this.#out += c;
          return "more";
        }
        if (c === '"') {
          this.#kind = "string";
          return "more";
        }
        if (c === "}" || c === "," || c === "]") return "error";
        this.#kind = "scalar";
        return "more";
      case P.Value:
        return this.#value(c);
      case P.After:
        if (WS(c)) return "more";
        if (c === ",") {
          this.#p = P.Member;
          return "more";
        }
        if (c === "}") return "done";
        return "error";
    }
  }

  #value(c: string): ScanResult {
    if (this.#kind === "scalar") {
      if (WS(c) || c === "," || c === "}") {
        this.#endValue();
        this.#p = P.After;
        return this.feed(c);
      }
      this.#val += c;
      return "more";
    }
    this.#val += c;
    if (this.#kind === "nest" && this.#isArgs) this.#out += c;
    if (this.#inStr || this.#kind === "string") {
      if (this.#esc) this.#esc = false;
      else if (c === "\\") this.#esc = true;
      else if (c === '"') {
        if (this.#kind === "string") {
          this.#endValue();
          this.#p = P.After;
        } else this.#inStr = false;
      }
      return "more";
    }
    if (c === '"') this.#inStr = true;
    else if (c === "{" || c === "[") this.#depth++;
    else if (c === "}" || c === "]") {
      if (--this.#depth === 0) {
        this.#endValue();
        this.#p = P.After;
      }
    }
    return "more";
  }

  #endValue(): void {
    if (this.nameKeys.includes(this.#key) && this.name === null) {
      if (this.#kind === "string") {
        try {
          this.name = String(JSON.parse(this.#val));
        } catch {
          this.name = this.#val.slice(1, -1);
        }
      } else this.name = this.#val;
    }
    if (!this.#isArgs) return;
    this.argsDone = true;
    if (this.#kind === "string") {
      // Arguments as a JSON-encoded string: pass on the JSON inside it.
      let inner: unknown;
      try {
        inner = JSON.parse(this.#val);
      } catch {
        inner = this.#val.slice(1, -1);
      }
      const s = String(inner);
      let json = true;
      try {
        JSON.parse(s);
      } catch {
        json = false;
      }
      this.#out += s.trim() === "" ? "{}" : json ? s : JSON.stringify(s);
    } else if (this.#kind === "scalar") this.#out += this.#val === "null" ? "{}" : this.#val;
  }
}
