// Owns the seeded random numbers behind every generated weight: the same seed gives the same bytes on every
// run (no Math.random, no time), which is what makes generated model folders byte-identical.

/** sfc32: small, fast, good-quality 32-bit generator; state seeded from a string via a simple hash. */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string) {
    // FNV-1a over the seed string spread into four words, then warmed up.
    let h = 0x811c9dc5;
    const words: number[] = [];
    for (let w = 0; w < 4; w++) {
      for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
      h = Math.imul(h ^ (w + 1), 0x01000193);
      words.push(h >>> 0);
    }
    [this.a, this.b, this.c, this.d] = words;
    for (let i = 0; i < 16; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Standard normal via Box-Muller (one value per call keeps the stream simple). */
  normal(): number {
    const u = 1 - this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** Normal(0, std) values. */
  normals(count: number, std: number): Float32Array {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = this.normal() * std;
    return out;
  }

  /** Uniform values with the given standard deviation: cheaper than normals for benchmark-sized tensors. */
  uniforms(count: number, std: number): Float32Array {
    const out = new Float32Array(count);
    const half = std * Math.sqrt(3);
    for (let i = 0; i < count; i++) out[i] = (this.nextU32() / 2147483648 - 1) * half;
    return out;
  }
}
