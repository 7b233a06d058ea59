// Large host buffers (weights converted at load, streamed segments) asked to be backed by
// transparent huge pages: where the kernel leaves THP to madvise (the common default), each
// 4 KiB page of a fresh buffer is otherwise a page fault of its own, and loading a 3 GB
// model spends most of its time in them. A hint only: nothing changes where the kernel says
// no, or for buffers that are not host memory.
#pragma once

#include <ggml-backend.h>

namespace ggdiff {

void advise_huge_pages(ggml_backend_buffer_t buffer);

}  // namespace ggdiff
