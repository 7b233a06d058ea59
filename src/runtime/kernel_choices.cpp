#include "runtime/kernel_choices.h"

namespace ggdiff {
namespace {
thread_local const ggml_context* t_ctx = nullptr;
thread_local KernelChoices t_choices;
}  // namespace

KernelChoiceScope::KernelChoiceScope(const ggml_context* ctx, const KernelChoices& choices)
    : previous_ctx_(t_ctx), previous_(t_choices) {
    t_ctx = ctx;
    t_choices = choices;
}

KernelChoiceScope::~KernelChoiceScope() {
    t_ctx = previous_ctx_;
    t_choices = previous_;
}

KernelChoices kernel_choices(const ggml_context* ctx) {
    return ctx && ctx == t_ctx ? t_choices : KernelChoices{};
}

}  // namespace ggdiff
