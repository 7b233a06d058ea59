// Schema entries read when a model is loaded: files, weight types, prediction.
#include "api/option_decl.h"
#include "io/weight_type.h"
#include "sampling/parameterization.h"

namespace ggdiff::api {

void add_model_options(std::vector<OptionSpec>& out) {
    const char* g = "Model files";
    auto file = [&](const char* name, const char* help, auto field) {
        return opt(out, g, name, OptType::Path, kModel).help(help).bind(to_text(field));
    };

    opt(out, g, "model", OptType::Path, kModel | kRepeatable)
        .short_name("m")
        .help(
            "Checkpoint with all components (.safetensors, .gguf or PyTorch .ckpt/.pt/.pth/.bin "
            "file, or a diffusers folder); -M info takes several")
        .bind(to_text(GGDIFF_FIELD(model.model)));
    file("diffusion-model", "Stand-alone diffusion model (UNet / DiT) weights",
         GGDIFF_FIELD(model.diffusion_model));
    file("high-noise-diffusion-model",
         "Wan 2.2 A14B: the high-noise expert's DiT, which samples the first steps "
         "(--high-noise-steps, --moe-boundary); the model (--diffusion-model) samples the rest",
         GGDIFF_FIELD(model.high_noise_diffusion_model));
    file("uncond-diffusion-model",
         "Ideogram 4: the unconditional DiT, which runs the unconditional (cfg) pass; without it "
         "the model (--diffusion-model) runs that pass without text",
         GGDIFF_FIELD(model.uncond_diffusion_model));
    file("vae", "Stand-alone VAE weights (replace the checkpoint's)", GGDIFF_FIELD(model.vae));
    opt(out, g, "vae-format", OptType::Enum, kModel)
        .values({"auto", "flux", "sd3", "flux2"})
        .def("auto")
        .help(
            "Latent format of the --vae for PiD, whose checkpoint does not say which VAE it "
            "decodes: flux (FLUX.1 / Z-Image PiD), sd3 or flux2; auto: a 32-channel VAE is "
            "FLUX.2's, a 16-channel one is read unscaled as stable-diffusion.cpp does. Other "
            "families know their VAE and ignore it")
        .bind(to_text(GGDIFF_FIELD(model.vae_format)));
    file("taesd", "Tiny AutoEncoder for fast, lower quality decoding (and encoding)",
         GGDIFF_FIELD(model.taesd))
        .alias("tae");
    file("clip_l", "CLIP ViT-L text encoder", GGDIFF_FIELD(model.clip_l));
    file("clip_g", "OpenCLIP ViT-bigG text encoder", GGDIFF_FIELD(model.clip_g));
    file("clip_vision",
         "CLIP vision encoder (Wan 2.1 image-to-video: ViT-H/14, e.g. ComfyUI's "
         "clip_vision_h.safetensors; HF or open_clip names)",
         GGDIFF_FIELD(model.clip_vision));
    file("t5xxl", "T5-XXL text encoder", GGDIFF_FIELD(model.t5xxl));
    file("llm", "LLM text encoder (Qwen2.5-VL for Qwen Image, Mistral for FLUX.2, ...)",
         GGDIFF_FIELD(model.llm))
        .alias("qwen2vl");
    file("llm_vision",
         "Vision tower of the LLM text encoder when it is not inside the --llm file (Qwen Image "
         "Edit: HF/ComfyUI 'visual.*' safetensors or a llama.cpp mmproj GGUF)",
         GGDIFF_FIELD(model.llm_vision))
        .alias("qwen2vl_vision");
    file("audio-vae",
         "Audio VAE with its vocoder (LTX-2: the sound track of the video, e.g. "
         "ltx-2.3-22b-dev_audio_vae.safetensors)",
         GGDIFF_FIELD(model.audio_vae));
    file("embeddings-connectors",
         "LTX-2 text embedding projections and embeddings connectors (e.g. "
         "ltx-2.3-22b-dev_embeddings_connectors.safetensors)",
         GGDIFF_FIELD(model.embeddings_connectors));
    file("tokenizer",
         "CLIP tokenizer to use instead of the built-in one: a merges.txt, vocab.json or "
         "tokenizer.json file, or a folder holding them (or a tokenizer/ folder)",
         GGDIFF_FIELD(model.tokenizer));
    file("llm-tokenizer",
         "Tokenizer of the LLM text encoder when it is not next to the --llm file: a folder with "
         "vocab.json + merges.txt (+ added_tokens.json), a tokenizer.json, or a folder holding "
         "tokenizer/; for Mistral (FLUX.2 dev) its tekken.json or tokenizer.json",
         GGDIFF_FIELD(model.llm_tokenizer));
    file("t5xxl-tokenizer",
         "T5 tokenizer (FLUX, SD3): a Hugging Face tokenizer.json, or a folder holding it (or "
         "tokenizer_2/); default: one found next to the T5 weights or the model",
         GGDIFF_FIELD(model.t5xxl_tokenizer));
    file("control-net",
         "ControlNet for the model (original layout, with or without control_model., or "
         "diffusers); used with --control-image",
         GGDIFF_FIELD(model.control_net));
    file("photo-maker",
         "PhotoMaker ID encoder for SDXL models (v1 or v2 safetensors); the prompt names the "
         "person with a class word followed by the trigger word img (\"a woman img\"); used "
         "with --pm-id-images-dir",
         GGDIFF_FIELD(model.photo_maker));
    file("pulid-weights",
         "PuLID-FLUX v0.9.x weights (pulid_flux_v0.9.1.safetensors) for a FLUX.1 model: identity "
         "cross-attention modules between the DiT's blocks, acting with --pulid-id-embedding",
         GGDIFF_FIELD(model.pulid_weights));
    file("lora-model-dir",
         "Folder of LoRA files: a prompt tag <lora:NAME:WEIGHT> applies NAME.safetensors (or "
         ".gguf, .ckpt, .pt, .bin) from it with multiplier WEIGHT",
         GGDIFF_FIELD(model.lora_model_dir));
    file("embd-dir",
         "Folder of textual-inversion embeddings (SD1, SD2, SDXL): a prompt that names one "
         "(file stem, any case, even inside a word) gets its vectors; .safetensors, .gguf and "
         "PyTorch .pt / .bin files; no effect on other families",
         GGDIFF_FIELD(model.embd_dir));

    opt(out, g, "type", OptType::Enum, kModel)
        .values(weight_type_names)
        .help("Convert weights on load to this type; default: keep the file's types")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            auto t = parse_weight_type(v.text);
            if (!t.ok()) return t.status();
            o.model.weight_type = *t;
            v.text = weight_type_name(*t);
            return Status::Ok();
        });
    opt(out, g, "tensor-type-rules", OptType::String, kModel)
        .not_yet()
        .help("Weight type per tensor name pattern, e.g. \"^vae\\.=f16,model\\.=q8_0\"");
    opt(out, g, "lora-apply-mode", OptType::Enum, kModel)
        .values({"auto", "immediately", "at_runtime"})
        .def("auto")
        .help(
            "How LoRAs are applied: immediately merges them into the weights, at_runtime adds "
            "them in each layer, auto merges unless a weight is quantized or row-split")
        .bind(to_text(GGDIFF_FIELD(model.lora_apply_mode)));
    opt(out, g, "prediction", OptType::Enum, kModel)
        .values(sampling::prediction_names)
        .help(
            "Override the prediction type detected from the checkpoint (SD1/SD2 take eps or v; "
            "a prediction the model cannot use is an error)")
        .bind([](ApiOptions& o, OptionValue& v) -> Status {
            for (const std::string& name : sampling::prediction_names()) {
                if (name == v.text) {
                    o.model.prediction = name;
                    return Status::Ok();
                }
            }
            return Status::Error("unknown prediction '" + v.text + "'");
        });

    g = "Seamless tiling";
    opt(out, g, "circular", OptType::Bool, kModel)
        .help(
            "Seamless tiling: the image wraps around in both directions (the UNet's, "
            "ControlNet's and VAE's convolutions pad with the other side instead of zeros; "
            "the DiTs of FLUX.1, FLUX.2, Chroma, Z-Image and Qwen Image also wrap their RoPE "
            "positions and patch padding; SD3's DiT is unchanged, only its VAE wraps); not "
            "supported yet for Wan")
        .bind(to_bool(GGDIFF_FIELD(model.circular)));
    opt(out, g, "circularx", OptType::Bool, kModel)
        .help("Seamless tiling horizontally only (left and right edges continue each other)")
        .bind(to_bool(GGDIFF_FIELD(model.circularx)));
    opt(out, g, "circulary", OptType::Bool, kModel)
        .help("Seamless tiling vertically only (top and bottom edges continue each other)")
        .bind(to_bool(GGDIFF_FIELD(model.circulary)));
}

}  // namespace ggdiff::api
