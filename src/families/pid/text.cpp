#include "families/pid/text.h"

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

const char* const kPidInstruction =
    "Given a user prompt, generate an \"Enhanced prompt\" that provides detailed visual "
    "descriptions suitable for image generation. Evaluate the level of detail in the user "
    "prompt:\n"
    "- If the prompt is simple, focus on adding specifics about colors, shapes, sizes, textures, "
    "and spatial relationships to create vivid and concrete scenes.\n"
    "- If the prompt is already detailed, refine and enhance the existing details slightly "
    "without overcomplicating.\n"
    "Here are examples of how to transform or refine prompts:\n"
    "- User Prompt: A cat sleeping -> Enhanced: A small, fluffy white cat curled up in a round "
    "shape, sleeping peacefully on a warm sunny windowsill, surrounded by pots of blooming red "
    "flowers.\n"
    "- User Prompt: A busy city street -> Enhanced: A bustling city street scene at dusk, "
    "featuring glowing street lamps, a diverse crowd of people in colorful clothing, and a "
    "double-decker bus passing by towering glass skyscrapers.\n"
    "Please generate only the enhanced description for the prompt below and avoid including any "
    "additional commentary or evaluations:\n"
    "User Prompt: ";

namespace {

std::vector<int32_t> positions(int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return p;
}

}  // namespace

Result<std::unique_ptr<PidText>> PidText::create(const FamilyContext& ctx,
                                                 const ModuleDevices& where,
                                                 const models::GemmaConfig& cfg,
                                                 std::shared_ptr<const GemmaTokenizer> tok,
                                                 int64_t text_max) {
    auto t = std::unique_ptr<PidText>(new PidText());
    t->index_ = &ctx.index;
    t->cfg_ = cfg;
    t->tok_ = std::move(tok);
    t->text_max_ = text_max;
    const int64_t instruction = static_cast<int64_t>(t->tok_->encode(kPidInstruction).size()) + 1;
    t->length_ = instruction + text_max - 2;
    GGDIFF_LOG_DEBUG("PiD: the instruction is %lld tokens; the LLM reads %lld",
                     (long long)instruction, (long long)t->length_);
    auto runner = make_module(ctx, where, "Gemma 2", [&cfg](GraphBuilder& gb) {
        const int64_t n = 8;
        ggml_tensor* x = gb.input(HostTensor({cfg.hidden, n, 1}));
        ggml_tensor* pos = gb.input_i32(positions(n), {n});
        return std::vector<ggml_tensor*>{models::build_gemma(gb.nn(), cfg, x, pos, 1)};
    });
    if (!runner.ok()) return runner.status();
    t->runner_ = std::move(*runner);
    return t;
}

Result<Conditioning> PidText::encode(const TextRequest& r) {
    std::vector<int> ids = {tok_->bos_id()};
    std::vector<float> weights = {1.0f};
    for (const auto& [text, weight] : parse_prompt_attention(" " + r.prompt)) {
        if (is_break_marker({text, weight})) continue;
        const std::vector<int> part = tok_->encode(text);
        ids.insert(ids.end(), part.begin(), part.end());
        weights.insert(weights.end(), part.size(), weight);
    }
    int64_t padding = 0;
    if (static_cast<int64_t>(ids.size()) > length_) {
        GGDIFF_LOG_WARN("PiD: the prompt's %zu tokens are cut to %lld", ids.size() - 1,
                        (long long)(length_ - 1));
    } else {
        padding = length_ - static_cast<int64_t>(ids.size());
    }
    ids.resize(static_cast<size_t>(length_), tok_->pad_id());
    weights.resize(ids.size(), 1.0f);
    auto embeds = models::gemma_embed(*index_, cfg_, ids);
    if (!embeds.ok()) return embeds.status();
    const std::vector<int32_t> pos = positions(length_);
    auto out = runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* x = gb.input(*embeds);
        ggml_tensor* p = gb.input_i32(pos, {length_});
        return std::vector<ggml_tensor*>{models::build_gemma(gb.nn(), cfg_, x, p, padding)};
    });
    if (!out.ok()) return out.status();
    HostTensor& h = (*out)[0];
    apply_token_weights(h.data.data(), cfg_.hidden, length_, weights.data());
    Conditioning c;
    if (length_ <= text_max_) {
        c.context = std::move(h);
        c.context.ne = {cfg_.hidden, length_, 1};
        return c;
    }
    // <bos> and the last text_max - 1 states.
    c.context = HostTensor({cfg_.hidden, text_max_, 1});
    std::copy(h.data.begin(), h.data.begin() + cfg_.hidden, c.context.data.begin());
    std::copy(h.data.end() - (text_max_ - 1) * cfg_.hidden, h.data.end(),
              c.context.data.begin() + cfg_.hidden);
    return c;
}

}  // namespace ggdiff
