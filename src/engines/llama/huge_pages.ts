// Owns where a GGUF model's weights live in its runner and on what pages: mapped from the file (llama.cpp's
// default) or read into memory of the process's own, and that memory advised to transparent huge pages by the
// shim (lshim_huge_begin/_end around the model's load and its contexts' creation). A token's decode streams
// every weight once, and on 4 KiB pages the CPU spends part of that walking page tables: with the weights on
// huge pages llama.cpp decodes faster (SmolLM2-135M shape, 2 threads, llama-bench tg64 at depth 250,
// alternating rounds: Q8_0 read in on huge pages 129-144 tok/s against 118-125 mapped; Q4_0, which llama.cpp
// repacks into memory of its own, 190-216 against 180-181). On Q8_0 the weights are what count: mapped, with only
// the KV cache and compute buffers on huge pages, it decoded at 120-132, no faster. A mapped file's pages stay
// 4 KiB whatever is advised, hence the weights are read in where the CPU computes with them; llama-server maps
// them.
// glibc's malloc tunable (glibc.malloc.hugetlb=1 in a runner's environment) was tried first: some runners
// started with it read the host's setting and then went on without huge pages (unexplained), so the shim does
// it. The copy costs what the mapping would have used in the page cache, and a model larger than memory can
// only be mapped: `options.mmap: true` keeps the mapping for such a model.

/** The host's transparent huge pages setting ("none": not Linux, or not readable). */
export type HugePages = "always" | "madvise" | "never" | "none";

/** The shim's calls this needs (null: a --llama-lib shim built before them lacks them). */
export interface HugePageCalls {
  lshim_huge_pages: (() => number) | null;
  lshim_huge_begin: (() => void) | null;
  lshim_huge_end: ((minBytes: number) => void) | null;
}

/** The smallest new mapping advised: two huge pages (smaller ones are not ggml's buffers of a real model). */
export const HUGE_MIN_BYTES = 4 * 2 ** 20;

/** The host's setting from lshim_huge_pages' code (3 always, 2 madvise, 1 never; else, or no such call, none). */
export function hugePagesOf(code: number | null | undefined): HugePages {
  return code === 3 ? "always" : code === 2 ? "madvise" : code === 1 ? "never" : "none";
}

/** Whether memory advised to huge pages gets them here (the setting is "always" or "madvise"). */
export function hugePagesOn(sym: HugePageCalls): boolean {
  const thp = hugePagesOf(sym.lshim_huge_pages?.());
  return (thp === "always" || thp === "madvise") && !!sym.lshim_huge_begin && !!sym.lshim_huge_end;
}

/**
 * Whether to map the file rather than read it in: as asked (`options.mmap`), else map where reading in buys
 * nothing: every layer goes to a GPU (the weights left on the host are a few embedding rows a token), or the
 * memory read into would not be on huge pages.
 */
export function mapsWeights(asked: unknown, allOnGpu: boolean, huge: boolean): boolean {
  if (typeof asked === "boolean") return asked;
  return allOnGpu || !huge;
}

/**
 * Runs `make` (a model's load, a context's creation) and, when `huge`, advises the mappings it made to huge
 * pages (the shim collapses their pages at once on Linux 6.1 and later).
 */
export function onHugePages<T>(sym: HugePageCalls, huge: boolean, make: () => T): T {
  if (!huge) return make();
  sym.lshim_huge_begin!();
  try {
    return make();
  } finally {
    sym.lshim_huge_end!(HUGE_MIN_BYTES);
  }
}
