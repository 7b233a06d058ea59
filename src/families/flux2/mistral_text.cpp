#include "families/flux2/mistral_text.h"

#include "core/log.h"
#include "tokenizers/find_tokenizer.h"

namespace ggdiff {

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

ChatTemplate flux2_dev_template() {
    ChatTemplate t;
    t.prefix = flux2_dev_prompt_prefix();
    t.suffix = flux2_dev_prompt_suffix();
    t.out_layers = flux2_dev_text_layers();
    t.pad_states = static_cast<int>(kFlux2DevTextRows);
    return t;
}

Result<std::shared_ptr<const MistralTokenizer>> load_mistral_tokenizer(
    const FamilyContext& ctx, const std::string& llm_prefix) {
    const std::string& flag = ctx.options.llm_tokenizer;
    Result<MistralTokenizer> tok = Status::Error("no tokenizer");
    std::string source;
    if (flag.empty() && ctx.index.has(llm_prefix + "tekken_model")) {
        const TensorInfo* t = ctx.index.find(llm_prefix + "tekken_model");
        source = "the tekken.json in the --llm file (" + t->source_name + ")";
        std::string text;
        if (t->dtype == DType::U8) {
            const uint8_t* bytes = ctx.index.raw(*t);
            if (!bytes) return Status::Error("cannot read " + source);
            text.assign(reinterpret_cast<const char*>(bytes), static_cast<size_t>(t->nbytes));
        } else {
            // `-M convert` stores the bytes as numbers of another type.
            std::vector<float> v;
            Status st = ctx.index.read_f32(*t, v);
            if (!st.ok()) return st.with_context(source);
            text.reserve(v.size());
            for (float b : v) text.push_back(static_cast<char>(static_cast<uint8_t>(b)));
        }
        tok = MistralTokenizer::from_tekken_text(text, source);
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
    const ChatTemplate tmpl = flux2_dev_template();
    auto encoder =
        LlmTextEncoder::create(ctx, ctx.placement.te, llm, std::move(tokenizer), "LLM", tmpl);
    if (!encoder.ok()) return encoder.status();
    return std::unique_ptr<TextConditioner>(new LlmConditioner(std::move(*encoder), tmpl));
}

}  // namespace ggdiff
