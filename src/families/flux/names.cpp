// diffusers FluxTransformer2DModel -> FLUX.1 original names (as in the single-file
// checkpoints). diffusers keeps q, k and v (and a single block's MLP input) as separate
// linears where the original fuses them; those stay separate under names of their own
// ("img_attn.q", "single_blocks.N.mlp_in", ...), which the FLUX graph reads as such. The
// final adaLN projection is stored (scale, shift) by diffusers and (shift, scale) by the
// original, so it keeps a name of its own too ("final_layer.adaLN_scale_shift").
#include "families/flux/names.h"

#include "io/name_util.h"

namespace ggdiff {

namespace {

// "<from>.<rest>" -> "<to>.<rest>" for the first matching pair.
bool map_members(const std::string& s,
                 std::initializer_list<std::pair<const char*, const char*>> table,
                 std::string* out) {
    for (const auto& [from, to] : table) {
        std::string t = s;
        if (replace_prefix(&t, from, to)) {
            *out = t;
            return true;
        }
    }
    return false;
}

bool map_double(const std::string& rest, std::string* out) {
    return map_members(rest,
                       {
                           {"norm1.linear.", "img_mod.lin."},
                           {"norm1_context.linear.", "txt_mod.lin."},
                           {"attn.to_q.", "img_attn.q."},
                           {"attn.to_k.", "img_attn.k."},
                           {"attn.to_v.", "img_attn.v."},
                           {"attn.add_q_proj.", "txt_attn.q."},
                           {"attn.add_k_proj.", "txt_attn.k."},
                           {"attn.add_v_proj.", "txt_attn.v."},
                           {"attn.norm_q.weight", "img_attn.norm.query_norm.scale"},
                           {"attn.norm_k.weight", "img_attn.norm.key_norm.scale"},
                           {"attn.norm_added_q.weight", "txt_attn.norm.query_norm.scale"},
                           {"attn.norm_added_k.weight", "txt_attn.norm.key_norm.scale"},
                           {"attn.to_out.0.", "img_attn.proj."},
                           {"attn.to_add_out.", "txt_attn.proj."},
                           {"ff.net.0.proj.", "img_mlp.0."},
                           {"ff.net.2.", "img_mlp.2."},
                           {"ff_context.net.0.proj.", "txt_mlp.0."},
                           {"ff_context.net.2.", "txt_mlp.2."},
                       },
                       out);
}

bool map_single(const std::string& rest, std::string* out) {
    return map_members(rest,
                       {
                           {"norm.linear.", "modulation.lin."},
                           {"attn.to_q.", "q."},
                           {"attn.to_k.", "k."},
                           {"attn.to_v.", "v."},
                           {"proj_mlp.", "mlp_in."},
                           {"proj_out.", "linear2."},
                           {"attn.norm_q.weight", "norm.query_norm.scale"},
                           {"attn.norm_k.weight", "norm.key_norm.scale"},
                       },
                       out);
}

}  // namespace

bool DiffusersFluxMap::detect(const std::vector<std::string>& names) {
    bool blocks = false, embed = false;
    for (const std::string& n : names) {
        blocks |= starts_with(n, "single_transformer_blocks.");
        embed |= starts_with(n, "x_embedder.");
    }
    return blocks && embed;
}

bool DiffusersFluxMap::map(const std::string& name, std::string* out) {
    int i = 0;
    std::string rest, mapped;
    if (take_indexed(name, "transformer_blocks.", &i, &rest) && map_double(rest, &mapped)) {
        *out = "double_blocks." + std::to_string(i) + "." + mapped;
        return true;
    }
    if (take_indexed(name, "single_transformer_blocks.", &i, &rest) && map_single(rest, &mapped)) {
        *out = "single_blocks." + std::to_string(i) + "." + mapped;
        return true;
    }
    return map_members(
        name,
        {
            {"x_embedder.", "img_in."},
            {"context_embedder.", "txt_in."},
            {"time_text_embed.timestep_embedder.linear_1.", "time_in.in_layer."},
            {"time_text_embed.timestep_embedder.linear_2.", "time_in.out_layer."},
            {"time_text_embed.guidance_embedder.linear_1.", "guidance_in.in_layer."},
            {"time_text_embed.guidance_embedder.linear_2.", "guidance_in.out_layer."},
            {"time_text_embed.text_embedder.linear_1.", "vector_in.in_layer."},
            {"time_text_embed.text_embedder.linear_2.", "vector_in.out_layer."},
            {"norm_out.linear.", "final_layer.adaLN_scale_shift."},
            {"proj_out.", "final_layer.linear."},
        },
        out);
}

namespace {

bool bare_flux(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
        if (starts_with(n, "double_blocks.")) return true;
    }
    return DiffusersFluxMap::detect(names);
}

}  // namespace

const ModelLayout kFluxLayout = {
    bare_flux,
    DiffusersFluxMap::detect,
    DiffusersFluxMap::map,
    "diffusers FLUX transformer layout renamed to the original",
    {"FluxPipeline", "FluxImg2ImgPipeline", "FluxKontextPipeline"},
    {{"transformer", "model.diffusion_model."},
     {"vae", "first_stage_model."},
     {"text_encoder", "text_encoders.clip_l."},
     {"text_encoder_2", "text_encoders.t5xxl."}},
};

}  // namespace ggdiff
