// Owns number grammar arithmetic: digit caps, and minimum/maximum/exclusive bounds checked exactly.
// A number being typed is (sign, integer digits, fraction digits). Values are compared in "grid units"
// (value × 10^fracDigits, a BigInt), so no float rounding creeps in. Validators compare the *parsed double*
// with the bound, so a bound is turned into the exact set of decimals that parse to a double within it:
// parse(x) <= max exactly when x lies below the midpoint between max and the next double up (on the midpoint,
// round-half-even decides); an exclusive bound is the inclusive one at the neighbouring double. So "0.3"
// passes `maximum: 0.3` although 0.3 is a hair above the double 0.3.

/** Phases of a number being typed. */
export const N_START = 0, N_SIGN = 1, N_ZERO = 2, N_INT = 3, N_DOT = 4, N_FRAC = 5;

export interface NumSpec {
  readonly integer: boolean;
  /** Most integer digits. */
  readonly intDigits: number;
  /** Most fraction digits (0 for integers); also the grid's scale. */
  readonly fracDigits: number;
  /** Inclusive bounds in grid units; null when unbounded (or when the bound is wider than the caps). */
  readonly lo: bigint | null;
  readonly hi: bigint | null;
}

export interface NumBounds {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

const POW10: bigint[] = [];
for (let i = 0, p = 1n; i <= 40; i++, p *= 10n) POW10.push(p);

export function numSpec(integer: boolean, bounds: NumBounds, intDigits = 15, fracDigits = 6): NumSpec {
  const frac = integer ? 0 : fracDigits;
  const g = POW10[frac];
  const maxMag = POW10[intDigits] * g - 1n;
  let lo: bigint | null = null, hi: bigint | null = null;
  const lower = (x: number) => {
    const v = lowestAtLeast(x, frac);
    if (lo === null || v > lo) lo = v;
  };
  const upper = (x: number) => {
    const v = highestAtMost(x, frac);
    if (hi === null || v < hi) hi = v;
  };
  if (bounds.minimum !== undefined) lower(bounds.minimum);
  if (bounds.exclusiveMinimum !== undefined) lower(nextUp(bounds.exclusiveMinimum));
  if (bounds.maximum !== undefined) upper(bounds.maximum);
  if (bounds.exclusiveMaximum !== undefined) upper(nextDown(bounds.exclusiveMaximum));
  // Bounds the caps already imply cost nothing to drop (zod's integers carry ±MAX_SAFE_INTEGER).
  if (lo !== null && lo <= -maxMag) lo = null;
  if (hi !== null && hi >= maxMag) hi = null;
  return { integer, intDigits, fracDigits: frac, lo, hi };
}

/** Whether some completion of this prefix (itself included) is a number within the bounds and caps. */
export function numFeasible(
  s: NumSpec,
  ph: number,
  neg: boolean,
  iv: number,
  ic: number,
  fv: number,
  fc: number,
): boolean {
  if (s.lo === null && s.hi === null) return true;
  const g = POW10[s.fracDigits];
  switch (ph) {
    case N_START: {
      const m = POW10[s.intDigits] * g - 1n;
      return meets(s, -m, m);
    }
    case N_SIGN:
      return meets(s, -(POW10[s.intDigits] * g - 1n), 0n);
    case N_ZERO:
      return signed(s, neg, 0n, s.integer ? 0n : g - 1n);
    case N_INT: {
      const v = BigInt(iv);
      for (let j = 0; j <= s.intDigits - ic; j++) {
        const a = v * POW10[j] * g, b = (v + 1n) * POW10[j] * g - (s.integer ? g : 1n);
        if (signed(s, neg, a, b)) return true;
      }
      return false;
    }
    case N_DOT: {
      const a = BigInt(iv) * g;
      return signed(s, neg, a, a + g - 1n);
    }
    case N_FRAC: {
      const step = POW10[s.fracDigits - fc];
      const a = BigInt(iv) * g + BigInt(fv) * step;
      return signed(s, neg, a, a + step - 1n);
    }
  }
  return false;
}

/** Whether the number typed so far may end here (a complete number within the bounds). */
export function numCanEnd(s: NumSpec, ph: number, neg: boolean, iv: number, fv: number, fc: number): boolean {
  if (ph !== N_ZERO && ph !== N_INT && ph !== N_FRAC) return false;
  if (s.lo === null && s.hi === null) return true;
  const g = POW10[s.fracDigits];
  let v = ph === N_ZERO ? 0n : BigInt(iv) * g;
  if (ph === N_FRAC) v += BigInt(fv) * POW10[s.fracDigits - fc];
  if (neg) v = -v;
  return (s.lo === null || v >= s.lo) && (s.hi === null || v <= s.hi);
}

/** The shortest number text within the spec, or null when its range is empty. */
export function shortestNumber(s: NumSpec): string | null {
  const g = POW10[s.fracDigits];
  const m = POW10[s.intDigits] * g - 1n;
  const lo = s.lo ?? -m, hi = s.hi ?? m;
  const l = lo < -m ? -m : lo, h = hi > m ? m : hi;
  if (l > h) return null;
  if (l <= 0n && h >= 0n) return "0";
  // The smallest magnitude in range has the fewest digits; search it on the positive side.
  const neg = h < 0n;
  const a = neg ? -h : l, b = neg ? -l : h;
  // An integer beats any decimal with the same or a larger integer part.
  for (let k = 0; k <= s.fracDigits; k++) {
    const unit = POW10[s.fracDigits - k];
    const v = ((a + unit - 1n) / unit) * unit;
    if (v <= b) return (neg ? "-" : "") + formatGrid(v, s.fracDigits);
  }
  return null;
}

function formatGrid(v: bigint, frac: number): string {
  const g = POW10[frac];
  const int = (v / g).toString();
  const f = (v % g).toString().padStart(frac, "0").replace(/0+$/, "");
  return f ? `${int}.${f}` : int;
}

function meets(s: NumSpec, a: bigint, b: bigint): boolean {
  return (s.lo === null || b >= s.lo) && (s.hi === null || a <= s.hi);
}

/** [a, b] is a magnitude interval; a negative number spans [-b, -a]. */
function signed(s: NumSpec, neg: boolean, a: bigint, b: bigint): boolean {
  return neg ? meets(s, -b, -a) : meets(s, a, b);
}

/** ceil(x × 10^frac), exactly. */
export function ceilScaled(x: number, frac: number): bigint {
  const [num, den] = exact(x);
  const n = num * POW10[frac];
  const q = n / den;
  return n % den !== 0n && n > 0n ? q + 1n : q;
}

/** floor(x × 10^frac), exactly. */
export function floorScaled(x: number, frac: number): bigint {
  const [num, den] = exact(x);
  const n = num * POW10[frac];
  const q = n / den;
  return n % den !== 0n && n < 0n ? q - 1n : q;
}

/** The largest grid value (units of 10^-frac) whose decimal parses to a double <= x. */
export function highestAtMost(x: number, frac: number): bigint {
  const up = nextUp(x);
  if (!Number.isFinite(up)) return floorScaled(x, frac);
  const [n, d] = midpoint(x, up);
  const num = n * POW10[frac];
  const q = floorDiv(num, d);
  // Exactly on the midpoint: round-half-even sends it to x only when x's significand is even.
  return num % d === 0n && !isEven(x) ? q - 1n : q;
}

/** The smallest grid value whose decimal parses to a double >= x. */
export function lowestAtLeast(x: number, frac: number): bigint {
  const down = nextDown(x);
  if (!Number.isFinite(down)) return ceilScaled(x, frac);
  const [n, d] = midpoint(down, x);
  const num = n * POW10[frac];
  const q = -floorDiv(-num, d);
  return num % d === 0n && !isEven(x) ? q + 1n : q;
}

function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n < 0n ? q - 1n : q;
}

/** (a + b) / 2 as an exact fraction. */
function midpoint(a: number, b: number): [bigint, bigint] {
  const [na, da] = exact(a), [nb, db] = exact(b);
  return [na * db + nb * da, 2n * da * db];
}

function isEven(x: number): boolean {
  f64[0] = x;
  return (u64[0] & 1n) === 0n;
}

/** A finite double as an exact fraction num/2^k. */
function exact(x: number): [bigint, bigint] {
  let k = 0n;
  while (!Number.isInteger(x)) {
    x *= 2; // exact: doubling a finite non-integer double never rounds
    k++;
  }
  return [BigInt(x), 1n << k];
}

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** The smallest double above x. */
export function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Infinity) return x;
  if (x === 0) return Number.MIN_VALUE;
  f64[0] = x;
  u64[0] += x > 0 ? 1n : -1n;
  return f64[0];
}

/** The largest double below x. */
export function nextDown(x: number): number {
  return -nextUp(-x);
}
