// Owns where a GGUF model's weights live in its runner: mapped from the file (llama.cpp's default) or read into
// the runner's own memory, and the glibc tunable that gives that memory transparent huge pages. A token's
// decode streams every weight once, and on 4 KiB pages the CPU spends part of that walking page tables: with
// huge pages llama.cpp decodes faster (SmolLM2-135M shape, 2 threads, llama-bench tg64 at depth 250, three
// alternating rounds of three reps each: Q8_0 read into huge pages 129-144 tok/s against 118-125 mapped, Q4_0
// 190-216 against 180-181; mapped Q8_0 with the tunable gained nothing, as a mapped file's pages stay small,
// while Q4_0 gained either way: llama.cpp repacks it into memory of its own). llama-server maps by default.
// The copy costs what the mapping would have used in the page cache, and a model larger than memory can only
// be mapped: `options.mmap: true` keeps the mapping for such a model.

/** The host's transparent huge pages setting ("none": not Linux, or not readable). */
export type HugePages = "always" | "madvise" | "never" | "none";

/**
 * The glibc tunable that makes malloc ask for huge pages (madvise MADV_HUGEPAGE) for the memory it maps, which
 * is where ggml's CPU buffers (weights read in or repacked, KV cache, compute buffers) come from. Under the
 * common "madvise" setting nothing else gets them huge pages; other C libraries ignore it.
 */
export const HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1";

/** The host's setting from lshim_huge_pages' code (3 always, 2 madvise, 1 never; else, or no such call, none). */
export function hugePagesOf(code: number | null | undefined): HugePages {
  return code === 3 ? "always" : code === 2 ? "madvise" : code === 1 ? "never" : "none";
}

/**
 * Whether to map the file rather than read it in: as asked (`options.mmap`), else map only where reading in buys
 * nothing, i.e. every layer goes to a GPU (the weights left on the host are a few embedding rows a token), or
 * the host gives no huge pages.
 */
export function mapsWeights(asked: unknown, allOnGpu: boolean, thp: HugePages): boolean {
  if (typeof asked === "boolean") return asked;
  return allOnGpu || thp === "never" || thp === "none";
}
