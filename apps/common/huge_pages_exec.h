// Start-up of the ggdiff programs: where the kernel gives transparent huge pages only to
// memory that asks for them (THP "madvise", the common default), the program restarts itself
// once with glibc's malloc set to ask (GLIBC_TUNABLES glibc.malloc.hugetlb=1). ggml's host
// buffers (weights, compute buffers, a worker's tensors) are malloc'd, and without huge pages
// every 4 KiB of them costs a page fault when first written: loading a 3 GB model over two
// RPC workers, or converting it with --type, went about twice as fast with them.
// GGDIFF_HUGE_PAGES=0 turns this off; the restarted process carries GGDIFF_HUGE_PAGES=1.
#pragma once

namespace ggdiff::app {

// Returns only when no restart happens (or it failed); call first thing in main().
void restart_with_huge_pages(char** argv);

}  // namespace ggdiff::app
