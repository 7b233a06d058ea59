#include "runtime/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace ggdiff {

void advise_huge_pages(ggml_backend_buffer_t buffer) {
#ifdef MADV_HUGEPAGE
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    if (!buffer || !ggml_backend_buffer_is_host(buffer)) return;
    const size_t size = ggml_backend_buffer_get_size(buffer);
    if (size < 2 * kHuge) return;
    // Only whole huge pages inside the buffer: madvise wants a page-aligned start.
    const uintptr_t base = reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(buffer));
    const uintptr_t begin = (base + kHuge - 1) / kHuge * kHuge;
    const uintptr_t end = (base + size) / kHuge * kHuge;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)buffer;
#endif
}

}  // namespace ggdiff
