// The MiniT2I recipe (MiniT2I/MiniT2I, minit2i-b-16): a small pixel-space DiT (families/minit2i/
// dit.h) conditioned by Google's flan-t5-large encoder (1024 wide, passed with --t5xxl). As
// stable-diffusion.cpp (38a51f81) runs it:
// - the prompt as the T5 tokenizer cuts it (no emphasis parsing, no EOS), cut or padded to
//   256 tokens; T5 runs with the padding masked, and the DiT replaces the padding's states by
//   its mask_token. The unconditional side is the same with every token masked: the negative
//   prompt has no effect and is never encoded;
// - the network predicts the clean image; sigma runs 1 -> 0 in even steps (--scheduler and
//   --flow-shift have no effect) and sampling starts from twice the noise, for img2img too
//   (the reference ignores the init image's pixels: --strength only shortens the schedule);
//   ancestral samplers take their non-flow steps;
// - euler, cfg 7, 512x512 when no size is given (the reference's docs use cfg 6, 100 steps).
#include <string>
#include <vector>

#include "core/log.h"
#include "families/minit2i/dit.h"
#include "families/minit2i/names.h"
#include "models/te/t5.h"
#include "pipeline/family.h"
#include "pipeline/parts/pixel_space.h"
#include "pipeline/parts/t5_encoder.h"

namespace ggdiff {
namespace {

constexpr const char* kDit = "model.diffusion_model.model.net.";
constexpr const char* kT5 = "text_encoders.t5xxl.";
constexpr int kPromptTokens = 256;  // the reference's prompt_length

bool detect(const TensorIndex& index) {
    return models::is_minit2i(index, kDit);
}

class MiniT2IText : public TextConditioner {
  public:
    explicit MiniT2IText(std::unique_ptr<T5TextEncoder> t5) : t5_(std::move(t5)) {}

    Result<Conditioning> encode(const TextRequest& r) override {
        Conditioning c;
        c.context = HostTensor({t5_->config().width, kPromptTokens, 1});
        c.pooled = HostTensor({kPromptTokens});  // the prompt mask: all 0 for the negative
        if (r.negative) {
            if (!r.prompt.empty()) {
                GGDIFF_LOG_WARN(
                    "MiniT2I: the negative prompt has no effect (the unconditional side is the "
                    "prompt with every token masked, as stable-diffusion.cpp runs it)");
            }
            return c;
        }
        // The reference tokenizer's normalization: runs of spaces become one.
        std::string text;
        for (char ch : r.prompt) {
            if (ch == ' ' && !text.empty() && text.back() == ' ') continue;
            text += ch;
        }
        std::vector<int> tokens = t5_->tokenizer().encode(text);
        if (tokens.size() > static_cast<size_t>(kPromptTokens)) {
            GGDIFF_LOG_WARN("MiniT2I: the prompt's %zu tokens are cut to %d", tokens.size(),
                            kPromptTokens);
            tokens.resize(kPromptTokens);
        }
        std::vector<int32_t> ids(kPromptTokens, t5_->tokenizer().pad_id());
        std::vector<uint8_t> real(kPromptTokens, 0);
        for (size_t i = 0; i < tokens.size(); ++i) {
            ids[i] = tokens[i];
            real[i] = 1;
            c.pooled.data[i] = 1.0f;
        }
        GGDIFF_LOG_DEBUG("MiniT2I prompt: %zu tokens", tokens.size());
        auto h = t5_->encode_ids(ids, &real);
        if (!h.ok()) return h.status().with_context("T5");
        c.context = std::move(*h);
        return c;
    }
    void end_phase() override { t5_->end_phase(); }

  private:
    std::unique_ptr<T5TextEncoder> t5_;
};

Status check_request(const GenerateOptions& o) {
    if (o.scheduler) {
        GGDIFF_LOG_WARN(
            "--scheduler %s has no effect on MiniT2I: it samples sigma 1 -> 0 in even steps, as "
            "stable-diffusion.cpp does (--sigmas gives other levels)",
            sampling::schedule_name(*o.scheduler));
    }
    if (o.flow_shift) {
        GGDIFF_LOG_WARN("--flow-shift has no effect on MiniT2I (its schedule has no shift)");
    }
    if (o.init_image) {
        GGDIFF_LOG_WARN(
            "MiniT2I img2img starts from noise as stable-diffusion.cpp does: --strength only "
            "shortens the schedule, the init image's pixels are not used");
    }
    return Status::Ok();
}

Result<Family> load(const FamilyContext& ctx) {
    auto dit = models::detect_minit2i(ctx.index, kDit);
    if (!dit.ok()) return dit.status();
    const std::string& pred = ctx.options.prediction;
    if (!pred.empty()) {
        return Status::Error("--prediction " + pred +
                             " does not apply to MiniT2I models (they predict the clean image)");
    }
    if (!ctx.index.has_prefix(kT5)) {
        return Status::Error(
            "MiniT2I needs its T5 text encoder (google/flan-t5-large): pass it with --t5xxl "
            "FILE");
    }
    if (ctx.index.has_prefix("first_stage_model.")) {
        return Status::Error("MiniT2I works on pixels and has no VAE: leave --vae out");
    }
    auto t5cfg = models::detect_t5(ctx.index, kT5);
    if (!t5cfg.ok()) return t5cfg.status().with_context("--t5xxl");
    if (t5cfg->width != dit->text_input) {
        return Status::Error(
            string_format("--t5xxl: a T5 encoder %lld wide; the MiniT2I DiT reads %lld-wide states "
                          "(google/flan-t5-large)",
                          (long long)t5cfg->width, (long long)dit->text_input));
    }
    auto tokenizer = load_t5_tokenizer(ctx);
    if (!tokenizer.ok()) return tokenizer.status();

    Family f;
    f.param = sampling::Parameterization::x0_linear(2.0f);
    f.defaults.sampler = "euler";
    f.defaults.cfg_scale = 7.0f;
    f.latent_channels = static_cast<int>(dit->channels);
    f.latent_rgb = LatentRgb::Pixels;
    f.size_multiple = dit->patch;
    f.uses_cfg = true;
    f.vae = std::make_unique<PixelSpace>();
    f.check_request = check_request;
    GGDIFF_LOG_INFO(
        "MiniT2I: DiT %lld wide (text %lld), %lld double and %lld text blocks, %lld heads of "
        "%lld, %dx%d pixel patches; T5 %lld wide, %lld layers",
        (long long)dit->width, (long long)dit->text_width, (long long)dit->depth,
        (long long)dit->text_depth, (long long)dit->heads, (long long)dit->head_dim, dit->patch,
        dit->patch, (long long)t5cfg->width, (long long)t5cfg->layers);

    auto t5 = T5TextEncoder::create(ctx, ctx.placement.te, *t5cfg, *tokenizer, kPromptTokens);
    if (!t5.ok()) return t5.status();
    f.text = std::make_unique<MiniT2IText>(std::move(*t5));
    auto denoiser = MiniT2IDenoiser::create(ctx, ctx.placement.diffusion, *dit);
    if (!denoiser.ok()) return denoiser.status();
    f.lora_targets.push_back(minit2i_lora_target((*denoiser)->runner()));
    f.denoiser = std::move(*denoiser);
    return f;
}

}  // namespace

extern const FamilyRecipe kMiniT2IRecipe = {
    "minit2i",
    "MiniT2I",
    "model.diffusion_model.model.net.img_embedder.proj1.weight (in the file: "
    "model.net.img_embedder...)",
    detect,
    load,
    "t5xxl",
    &kMiniT2ILayout,
    {"txt_preamble_blocks", "double_blocks"}};

}  // namespace ggdiff
