// Node pinning for layer-split modules (see GraphRunner::set_pinning).
#include "runtime/graph_runner.h"

namespace ggdiff {
namespace {

bool is_view_op(ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE || op == GGML_OP_NONE;
}

}  // namespace

void GraphRunner::pin_nodes(ggml_cgraph* gf) {
    ggml_backend_t current = nullptr;
    const int n = ggml_graph_n_nodes(gf);
    for (int i = 0; i < n; ++i) {
        ggml_tensor* node = ggml_graph_node(gf, i);
        for (int s = 0; s < GGML_MAX_SRC && node->src[s]; ++s) {
            const ggml_tensor* src = node->src[s];
            while (src->view_src) src = src->view_src;  // a reshaped weight is still that weight
            if (ggml_backend_t b = pin_(src)) current = b;
        }
        if (current && !is_view_op(node->op)) {
            ggml_backend_sched_set_tensor_backend(sched_, node, current);
        }
    }
}

}  // namespace ggdiff
