#include "families/anima/text.h"

#include <algorithm>

#include "core/log.h"
#include "pipeline/parts/module_setup.h"
#include "tokenizers/prompt_attention.h"

namespace ggdiff {

namespace {

constexpr int kQwenEndOfText = 151643;  // <|endoftext|>, the reference's id for an empty prompt

std::vector<int32_t> positions(int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return p;
}

}  // namespace

std::vector<int> anima_t5_ids(const UnigramTokenizer& t5, const std::string& text) {
    std::string s;
    for (char ch : text) {
        if (ch == ' ' && !s.empty() && s.back() == ' ') continue;
        s += ch;
    }
    return t5.encode(s);
}

Result<std::unique_ptr<AnimaConditioner>> AnimaConditioner::create(
    const FamilyContext& ctx, const ModuleDevices& te, const ModuleDevices& adapter,
    const models::QwenLlmConfig& llm, const models::AnimaConfig& dit,
    std::shared_ptr<const LlmTokenizer> qwen, std::shared_ptr<const UnigramTokenizer> t5) {
    if (static_cast<int64_t>(t5->vocab_size()) > dit.adapter_vocab) {
        return Status::Error("the T5 tokenizer has " + std::to_string(t5->vocab_size()) +
                             " tokens but Anima's LLM adapter embeds only " +
                             std::to_string(dit.adapter_vocab) + ": not T5's tokenizer");
    }
    auto c = std::unique_ptr<AnimaConditioner>(new AnimaConditioner());
    c->index_ = &ctx.index;
    c->llm_ = llm;
    c->dit_ = dit;
    c->qwen_ = std::move(qwen);
    c->t5_ = std::move(t5);
    auto llm_runner = make_module(ctx, te, "LLM", [&llm](GraphBuilder& gb) {
        const int64_t t = 8;
        ggml_tensor* x = gb.input(HostTensor({llm.hidden, t, 1}));
        ggml_tensor* pos = gb.input_i32(positions(t), {t});
        return std::vector<ggml_tensor*>{models::build_qwen_llm(gb.nn(), llm, x, pos)};
    });
    if (!llm_runner.ok()) return llm_runner.status();
    c->llm_runner_ = std::move(*llm_runner);
    auto adapter_runner = make_module(ctx, adapter, "LLM adapter", [&dit](GraphBuilder& gb) {
        const int64_t tt = 4, ts = 8;
        const models::AnimaRope rt = models::anima_adapter_rope(dit, tt);
        const models::AnimaRope rs = models::anima_adapter_rope(dit, ts);
        ggml_tensor* ids = gb.input_i32(std::vector<int32_t>(tt, 1), {tt});
        ggml_tensor* q = gb.input(HostTensor({dit.adapter_source, ts, 1}));
        return std::vector<ggml_tensor*>{
            models::build_anima_adapter(gb.nn(), dit, ids, q, gb.input(rt.cos), gb.input(rt.sin),
                                        gb.input(rs.cos), gb.input(rs.sin))};
    });
    if (!adapter_runner.ok()) return adapter_runner.status();
    c->adapter_runner_ = std::move(*adapter_runner);
    return c;
}

AnimaConditioner::Tokens AnimaConditioner::tokenize(const std::string& prompt) const {
    Tokens t;
    for (const auto& run : parse_prompt_attention(prompt)) {
        if (is_break_marker(run)) continue;
        const std::vector<int> q = qwen_->encode(run.first);
        t.qwen.insert(t.qwen.end(), q.begin(), q.end());
        const std::vector<int> ids = anima_t5_ids(*t5_, run.first);
        t.t5.insert(t.t5.end(), ids.begin(), ids.end());
        t.t5_weights.insert(t.t5_weights.end(), ids.size(), run.second);
    }
    if (t.qwen.empty()) {
        const int eot = qwen_->token_to_id("<|endoftext|>");
        t.qwen.push_back(eot >= 0 ? eot : kQwenEndOfText);
    }
    t.t5.push_back(t5_->eos_id());
    t.t5_weights.push_back(1.0f);
    return t;
}

Result<Conditioning> AnimaConditioner::encode(const TextRequest& request) {
    const Tokens tok = tokenize(request.prompt);
    std::string pieces;
    for (size_t i = 0; i < tok.t5.size(); ++i) {
        pieces += " " + t5_->piece(tok.t5[i]) + string_format("/%g", tok.t5_weights[i]);
    }
    GGDIFF_LOG_DEBUG("Anima: %zu Qwen3 tokens; T5 tokens:%s", tok.qwen.size(), pieces.c_str());
    const int64_t nq = static_cast<int64_t>(tok.qwen.size());
    const int64_t nt = static_cast<int64_t>(tok.t5.size());
    for (int id : tok.t5) {
        if (id < 0 || id >= dit_.adapter_vocab) {
            return Status::Error("T5 token id " + std::to_string(id) +
                                 " is past Anima's LLM adapter embedding (" +
                                 std::to_string(dit_.adapter_vocab) + " rows)");
        }
    }
    auto embeds = models::qwen_llm_embed(*index_, llm_, tok.qwen);
    if (!embeds.ok()) return embeds.status();
    const std::vector<int32_t> pos = positions(nq);
    auto h = llm_runner_->run([&](GraphBuilder& gb) {
        ggml_tensor* x = gb.input(*embeds);
        ggml_tensor* p = gb.input_i32(pos, {nq});
        return std::vector<ggml_tensor*>{models::build_qwen_llm(gb.nn(), llm_, x, p)};
    });
    if (!h.ok()) return h.status();
    HostTensor states = std::move((*h)[0]);
    states.ne = {llm_.hidden, nq, 1};

    const std::vector<int32_t> ids(tok.t5.begin(), tok.t5.end());
    const models::AnimaRope rt = models::anima_adapter_rope(dit_, nt);
    const models::AnimaRope rs = models::anima_adapter_rope(dit_, nq);
    auto a = adapter_runner_->run([&](GraphBuilder& gb) {
        return std::vector<ggml_tensor*>{models::build_anima_adapter(
            gb.nn(), dit_, gb.input_i32(ids, {nt}), gb.input(states), gb.input(rt.cos),
            gb.input(rt.sin), gb.input(rs.cos), gb.input(rs.sin))};
    });
    if (!a.ok()) return a.status();
    const HostTensor& out = (*a)[0];
    const int64_t w = dit_.adapter_width, keep = std::min(nt, dit_.context_tokens);
    Conditioning c;
    c.context = HostTensor({w, dit_.context_tokens, 1});  // zero rows past the text
    for (int64_t t = 0; t < keep; ++t) {
        const float s = tok.t5_weights[static_cast<size_t>(t)];
        for (int64_t i = 0; i < w; ++i) c.context.data[t * w + i] = out.data[t * w + i] * s;
    }
    return c;
}

void AnimaConditioner::end_phase() {
    llm_runner_->end_phase();
    adapter_runner_->end_phase();
}

}  // namespace ggdiff
