// Owns chat-tiny's crafted weights. The residual stream has named feature dimensions:
//   const (1 for every token) | marker[m] | mode[m] | state[t] (one per reply token) | out[t] (one per target)
//   | noise (everything else; small random values and the destination of every random sub-layer)
// Layer 0 attention, head 0, is the "mode head": its query is a constant (q bias) on the lowest-frequency
// RoPE pair, whose rotation is ~0 at these lengths, and marker tokens have a large key there, so every
// position attends to the marker words anywhere before it (higher score = higher precedence) and copies
// their mode into mode[m]; with no marker, attention spreads over zero values and no mode is set.
// Layer 1 MLP is the "successor map": a SwiGLU unit per (mode, current token) fires when silu(gate) sees the
// mode and `up` sees the token, and writes out[next token]; a "start" unit per mode fires on any token that
// is not part of that mode's reply. The final RMSNorm turns the dominant out[t] into ~sqrt(hidden) = 11.3,
// and lm_head reads out[t] into logit t, over small random logits elsewhere: a ~10 logit margin.
// All other weights are small random numbers that only write into noise dimensions.
import type { DecoderLayerWeights, DecoderShape, DecoderWeights } from "./decoder_graph.ts";
import type { Prng } from "./prng.ts";

export interface CraftSpec {
  /** token ids that set each mode, by mode index (precedence = order of `scores`). */
  markerIds: number[][];
  /** attention score of each mode's markers (higher wins). */
  scores: number[];
  /** reply chains by mode index; the last entry is the default (no marker) reply. */
  chains: { ids: number[]; loopTo?: number }[];
  eosId: number;
}

const RANDOM_STD = 0.02;
const EMBED_NOISE_STD = 0.05;
/** Mode-head constant query on the low-frequency RoPE dimension. */
const MODE_QUERY = 4;
/** SwiGLU unit gains: gate +-GATE/2 (in normalized units), up UP per token feature, down DOWN into out[t]. */
const GATE = 3;
const UP = 1;
const DOWN = 0.6;
/** lm_head gain from out[t] to logit t, and the random logit noise. */
const LOGIT_GAIN = 1;
const LOGIT_NOISE_STD = 0.03;

export function craftChatTinyWeights(s: DecoderShape, spec: CraftSpec, rng: Prng): DecoderWeights {
  const D = s.hiddenSize;
  const hd = s.headDim;
  const numModes = spec.scores.length;
  const stateIds = [...new Set(spec.chains.flatMap((c) => c.ids))];
  const targetIds = [...new Set([...stateIds, spec.eosId])];
  // Feature layout.
  const CONST = 0;
  const MARKER = 1;
  const MODE = MARKER + numModes;
  const STATE = MODE + numModes;
  const OUT = STATE + stateIds.length;
  const NOISE = OUT + targetIds.length;
  if (NOISE + 8 > D) throw new Error(`chat-tiny: ${NOISE} feature dims do not fit hidden size ${D}`);
  const stateDim = new Map(stateIds.map((t, i) => [t, STATE + i]));
  const outDim = new Map(targetIds.map((t, i) => [t, OUT + i]));
  const noiseDims = Array.from({ length: D - NOISE }, (_, i) => NOISE + i);

  const random = (n: number) => rng.normals(n, RANDOM_STD);
  const ones = () => new Float32Array(D).fill(1);
  /** [rows, cols] random matrix whose outputs land in noise dimensions only (cols = D). */
  const toNoise = (rows: number) => {
    const m = new Float32Array(rows * D);
    for (let r = 0; r < rows; r++) for (const c of noiseDims) m[r * D + c] = rng.normal() * RANDOM_STD;
    return m;
  };

  // Embeddings.
  const embed = new Float32Array(s.vocabSize * D);
  for (let t = 0; t < s.vocabSize; t++) {
    embed[t * D + CONST] = 1;
    for (const c of noiseDims) embed[t * D + c] = rng.normal() * EMBED_NOISE_STD;
    const sd = stateDim.get(t);
    if (sd !== undefined) embed[t * D + sd] = 1;
  }
  spec.markerIds.forEach((ids, m) => ids.forEach((t) => (embed[t * D + MARKER + m] = 1)));
  // What a marker feature reads after the input RMSNorm (1 / rms of the marker token's embedding).
  const markerTokens = spec.markerIds.flat();
  const markerNorm = markerTokens.reduce((a, t) => a + 1 / rms(embed.subarray(t * D, (t + 1) * D)), 0) /
    markerTokens.length;

  // Layer 0: mode head (q head 0 / kv head 0) + random heads; random MLP.
  const qDim = s.numHeads * hd;
  const kvDim = s.numKvHeads * hd;
  const low = hd / 2 - 1; // lowest-frequency rotary pair is (low, hd - 1)
  const q0 = random(D * qDim);
  const q0Bias = random(qDim);
  const k0 = random(D * kvDim);
  const k0Bias = random(kvDim);
  const v0 = random(D * kvDim);
  const v0Bias = random(kvDim);
  for (let r = 0; r < D; r++) {
    for (let c = 0; c < hd; c++) q0[r * qDim + c] = k0[r * kvDim + c] = v0[r * kvDim + c] = 0;
  }
  for (let c = 0; c < hd; c++) q0Bias[c] = k0Bias[c] = v0Bias[c] = 0;
  q0Bias[low] = MODE_QUERY;
  for (let m = 0; m < numModes; m++) {
    // score = MODE_QUERY * key / sqrt(hd), key = kappa * markerNorm
    k0[(MARKER + m) * kvDim + low] = (spec.scores[m] * Math.sqrt(hd)) / (MODE_QUERY * markerNorm);
    v0[(MARKER + m) * kvDim + m] = 1;
  }
  const o0 = toNoise(qDim);
  for (let r = 0; r < hd; r++) o0.fill(0, r * D, (r + 1) * D); // head 0 writes only the mode dims
  for (let m = 0; m < numModes; m++) o0[m * D + MODE + m] = 1 / markerNorm;
  const layer0: DecoderLayerWeights = {
    inputNorm: ones(),
    q: q0,
    qBias: q0Bias,
    k: k0,
    kBias: k0Bias,
    v: v0,
    vBias: v0Bias,
    o: o0,
    postNorm: ones(),
    gate: random(D * s.intermediateSize),
    up: random(D * s.intermediateSize),
    down: toNoise(s.intermediateSize),
  };

  // Layer 1: random attention into noise; MLP = successor map.
  const I = s.intermediateSize;
  const gate = random(D * I);
  const up = random(D * I);
  const down = toNoise(I);
  let unit = 0;
  const addUnit = (mode: number, upFeatures: [number, number][], next: number) => {
    if (unit >= I) throw new Error("chat-tiny: intermediate size too small for the reply table");
    for (let r = 0; r < D; r++) gate[r * I + unit] = up[r * I + unit] = 0;
    down.fill(0, unit * D, (unit + 1) * D);
    if (mode < numModes) {
      gate[(MODE + mode) * I + unit] = GATE;
      gate[CONST * I + unit] = -GATE / 2;
    } else {
      // default reply: only when no mode is set
      gate[CONST * I + unit] = GATE / 2;
      for (let m = 0; m < numModes; m++) gate[(MODE + m) * I + unit] = -GATE;
    }
    for (const [dim, w] of upFeatures) up[dim * I + unit] = w;
    down[unit * D + outDim.get(next)!] = DOWN;
    unit++;
  };
  spec.chains.forEach((chain, mode) => {
    const ids = chain.ids;
    // start: any token outside this reply -> first reply token
    addUnit(mode, [[CONST, UP], ...ids.map((t): [number, number] => [stateDim.get(t)!, -UP])], ids[0]);
    ids.forEach((t, i) => {
      const next = i + 1 < ids.length
        ? ids[i + 1]
        : chain.loopTo !== undefined
        ? ids[chain.loopTo]
        : spec.eosId;
      addUnit(mode, [[stateDim.get(t)!, UP]], next);
    });
  });
  const layer1: DecoderLayerWeights = {
    inputNorm: ones(),
    q: random(D * qDim),
    qBias: random(qDim),
    k: random(D * kvDim),
    kBias: random(kvDim),
    v: random(D * kvDim),
    vBias: random(kvDim),
    o: toNoise(qDim),
    postNorm: ones(),
    gate,
    up,
    down,
  };

  const lmHead = rng.normals(D * s.vocabSize, LOGIT_NOISE_STD);
  for (const [t, dim] of outDim) lmHead[dim * s.vocabSize + t] = LOGIT_GAIN;
  return { embed, layers: [layer0, layer1], finalNorm: ones(), lmHead };
}

function rms(v: Float32Array): number {
  let sum = 0;
  for (const x of v) sum += x * x;
  return Math.sqrt(sum / v.length);
}
