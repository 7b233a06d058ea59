#include "families/flux2/mistral_text.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "pipeline/parts/token_weights.h"
#include "tokenizers/find_tokenizer.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

namespace {

std::vector<int32_t> position_ids(int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return p;
}

// The states of the layers FLUX.2 dev reads, concatenated on the feature axis:
// [3 * hidden, T, 1].
ggml_tensor* text_states(nn::Ctx& c, const models::QwenLlmConfig& cfg, ggml_tensor* x,
                         ggml_tensor* pos) {
    ggml_tensor* y = nullptr;
    for (int layer : flux2_dev_text_layers()) {
        ggml_tensor* o = models::build_qwen_llm(c, cfg, x, pos, layer);
        y = y ? ggml_concat(c.ctx, y, o, 0) : o;
    }
    return y;
}

class Flux2DevConditioner : public TextConditioner {
  public:
    Flux2DevConditioner(const TensorIndex& index, const models::QwenLlmConfig& cfg,
                        std::shared_ptr<const MistralTokenizer> tok,
                        std::unique_ptr<ModuleRunner> runner)
        : index_(index), cfg_(cfg), tok_(std::move(tok)), runner_(std::move(runner)) {}

    Result<Conditioning> encode(const TextRequest& request) override {
        std::vector<int> ids;
        std::vector<float> weights;
        flux2_dev_tokens(*tok_, request.prompt, &ids, &weights);
        const int64_t n = static_cast<int64_t>(ids.size());
        auto embeds = models::qwen_llm_embed(index_, cfg_, ids);
        if (!embeds.ok()) return embeds.status();
        const std::vector<int32_t> pos = position_ids(n);
        auto r = runner_->run([&](GraphBuilder& gb) {
            return std::vector<ggml_tensor*>{
                text_states(gb.nn(), cfg_, gb.input(*embeds), gb.input_i32(pos, {n}))};
        });
        if (!r.ok()) return r.status();
        HostTensor& h = (*r)[0];
        const int64_t width = 3 * cfg_.hidden;
        if (std::any_of(weights.begin(), weights.end(), [](float w) { return w != 1.0f; })) {
            apply_token_weights(h.data.data(), width, n, weights.data());
        }
        Conditioning c;
        c.context = HostTensor({width, std::max(n, kFlux2DevTextRows), 1});
        std::copy(h.data.begin(), h.data.begin() + width * n, c.context.data.begin());
        return c;
    }

    void end_phase() override { runner_->end_phase(); }

  private:
    const TensorIndex& index_;
    models::QwenLlmConfig cfg_;
    std::shared_ptr<const MistralTokenizer> tok_;
    std::unique_ptr<ModuleRunner> runner_;
};

}  // namespace

const std::string& flux2_dev_prompt_prefix() {
    static const std::string s =
        "<s>[SYSTEM_PROMPT]You are an AI that reasons about image descriptions. You give "
        "structured responses focusing on object relationships, object\nattribution and actions "
        "without speculation.[/SYSTEM_PROMPT][INST]";
    return s;
}

const std::string& flux2_dev_prompt_suffix() {
    static const std::string s = "[/INST]";
    return s;
}

void flux2_dev_tokens(const MistralTokenizer& tok, const std::string& prompt, std::vector<int>* ids,
                      std::vector<float>* weights) {
    *ids = tok.encode(flux2_dev_prompt_prefix());
    weights->assign(ids->size(), 1.0f);
    for (const auto& [text, weight] : parse_prompt_attention(prompt)) {
        if (is_break_marker({text, weight})) continue;
        const std::vector<int> part = tok.encode(text);
        ids->insert(ids->end(), part.begin(), part.end());
        weights->insert(weights->end(), part.size(), weight);
    }
    const std::vector<int> suffix = tok.encode(flux2_dev_prompt_suffix());
    ids->insert(ids->end(), suffix.begin(), suffix.end());
    weights->insert(weights->end(), suffix.size(), 1.0f);
}

Result<std::shared_ptr<const MistralTokenizer>> load_mistral_tokenizer(
    const FamilyContext& ctx, const std::string& llm_prefix) {
    const std::string& flag = ctx.options.llm_tokenizer;
    Result<MistralTokenizer> tok = Status::Error("no tokenizer");
    std::string source;
    if (flag.empty() && ctx.index.has(llm_prefix + "tekken_model")) {
        const TensorInfo* t = ctx.index.find(llm_prefix + "tekken_model");
        const uint8_t* bytes = ctx.index.raw(*t);
        source = "the tekken.json in the --llm file (" + t->source_name + ")";
        if (!bytes) return Status::Error("cannot read " + source);
        tok = MistralTokenizer::from_tekken_text(
            std::string(reinterpret_cast<const char*>(bytes), static_cast<size_t>(t->nbytes)),
            source);
    } else {
        auto path = find_mistral_tokenizer({ctx.options.llm, ctx.main_file}, flag);
        if (!path.ok()) return path.status();
        source = *path;
        tok = MistralTokenizer::from_path(*path);
        if (!tok.ok()) {
            return tok.status().with_context(flag.empty() ? "Mistral tokenizer"
                                                          : "--llm-tokenizer " + flag);
        }
    }
    if (!tok.ok()) return tok.status();
    GGDIFF_LOG_DEBUG("Mistral tokenizer: %s (%zu tokens, %zu special)", source.c_str(),
                     tok->vocab_size(), tok->special_count());
    return std::make_shared<const MistralTokenizer>(std::move(*tok));
}

Result<std::unique_ptr<TextConditioner>> make_flux2_dev_conditioner(
    const FamilyContext& ctx, const models::QwenLlmConfig& llm,
    std::shared_ptr<const MistralTokenizer> tokenizer) {
    const int needed = flux2_dev_text_layers().back() + 1;
    if (llm.layers < needed) {
        return Status::Error(string_format(
            "the Mistral text encoder has %lld layers; FLUX.2 dev reads the states after layers "
            "10, 20 and 30",
            (long long)llm.layers));
    }
    for (const char* special : {"[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[INST]", "[/INST]"}) {
        if (tokenizer->token_to_id(special) < 0) {
            return Status::Error(std::string("the Mistral tokenizer has no ") + special +
                                 " token: not Mistral Small 3.1 / 3.2's");
        }
    }
    if (tokenizer->vocab_size() > static_cast<size_t>(llm.vocab)) {
        GGDIFF_LOG_WARN("the Mistral tokenizer has %zu tokens, the text encoder's embedding %lld",
                        tokenizer->vocab_size(), (long long)llm.vocab);
    }
    auto runner = make_module(ctx, ctx.placement.te, "LLM", [&llm](GraphBuilder& gb) {
        const int64_t t = 8;
        ggml_tensor* x = gb.input(HostTensor({llm.hidden, t, 1}));
        ggml_tensor* pos = gb.input_i32(position_ids(t), {t});
        return std::vector<ggml_tensor*>{text_states(gb.nn(), llm, x, pos)};
    });
    if (!runner.ok()) return runner.status();
    return std::unique_ptr<TextConditioner>(
        new Flux2DevConditioner(ctx.index, llm, std::move(tokenizer), std::move(*runner)));
}

}  // namespace ggdiff
