#include "models/vae/taesd.h"

#include "io/checkpoint_file.h"
#include "nn/layers.h"

namespace ggdiff::models {

namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// One entry of the nn.Sequential of taesd.py / diffusers: the index is implicit (the
// position in the list, plus the layout's offset).
struct Layer {
    enum Kind { Conv, Relu, Block, Upsample } kind;
    int in = 0, out = 0, stride = 1;
    bool bias = true;
};

std::vector<Layer> decoder_layers(const TaesdConfig& cfg) {
    const int c = cfg.channels;
    std::vector<Layer> l = {{Layer::Conv, cfg.z_channels, c}, {Layer::Relu}};
    for (int stage = 0; stage < 3; ++stage) {
        for (int i = 0; i < 3; ++i) l.push_back({Layer::Block, c, c});
        l.push_back({Layer::Upsample});
        l.push_back({Layer::Conv, c, c, 1, false});
    }
    l.push_back({Layer::Block, c, c});
    l.push_back({Layer::Conv, c, cfg.out_channels});
    return l;
}

std::vector<Layer> encoder_layers(const TaesdConfig& cfg) {
    const int c = cfg.channels;
    std::vector<Layer> l = {{Layer::Conv, cfg.in_channels, c}, {Layer::Block, c, c}};
    for (int stage = 0; stage < 3; ++stage) {
        l.push_back({Layer::Conv, c, c, 2, false});
        for (int i = 0; i < 3; ++i) l.push_back({Layer::Block, c, c});
    }
    l.push_back({Layer::Conv, c, cfg.z_channels});
    return l;
}

std::string decoder_base(const std::string& prefix) {
    return prefix + "decoder.layers.";
}
std::string encoder_base(const std::string& prefix) {
    return prefix + "encoder.layers.";
}

// taesd Block: conv, ReLU, conv, ReLU, conv, plus the input (1x1 skip conv without bias
// when the width changes), then ReLU.
ggml_tensor* block(nn::Ctx& c, ggml_tensor* x, const std::string& p, int in, int out) {
    ggml_tensor* h = nn::conv2d(c, x, p + "conv.0", in, out, 3, 1, 1);
    h = ggml_relu(c.ctx, h);
    h = nn::conv2d(c, h, p + "conv.2", out, out, 3, 1, 1);
    h = ggml_relu(c.ctx, h);
    h = nn::conv2d(c, h, p + "conv.4", out, out, 3, 1, 1);
    if (in != out) x = nn::conv2d(c, x, p + "skip", in, out, 1, 1, 0, false);
    return ggml_relu(c.ctx, ggml_add(c.ctx, h, x));
}

ggml_tensor* run_layers(nn::Ctx& c, ggml_tensor* x, const std::vector<Layer>& layers,
                        const std::string& base, int offset) {
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& l = layers[i];
        const std::string p = base + std::to_string(static_cast<int>(i) + offset);
        switch (l.kind) {
            case Layer::Conv:
                x = nn::conv2d(c, x, p, l.in, l.out, 3, l.stride, 1, l.bias);
                break;
            case Layer::Relu:
                x = ggml_relu(c.ctx, x);
                break;
            case Layer::Block:
                x = block(c, x, p + ".", l.in, l.out);
                break;
            case Layer::Upsample:
                x = nn::upsample_nearest2x(c.ctx, x);
                break;
        }
    }
    return x;
}

void add_layer_shapes(Shapes& s, const std::vector<Layer>& layers, const std::string& base,
                      int offset) {
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& l = layers[i];
        const std::string p = base + std::to_string(static_cast<int>(i) + offset);
        if (l.kind == Layer::Conv) {
            s.push_back({p + ".weight", {l.out, l.in, 3, 3}});
            if (l.bias) s.push_back({p + ".bias", {l.out}});
        } else if (l.kind == Layer::Block) {
            s.push_back({p + ".conv.0.weight", {l.out, l.in, 3, 3}});
            s.push_back({p + ".conv.0.bias", {l.out}});
            s.push_back({p + ".conv.2.weight", {l.out, l.out, 3, 3}});
            s.push_back({p + ".conv.2.bias", {l.out}});
            s.push_back({p + ".conv.4.weight", {l.out, l.out, 3, 3}});
            s.push_back({p + ".conv.4.bias", {l.out}});
            if (l.in != l.out) s.push_back({p + ".skip.weight", {l.out, l.in, 1, 1}});
        }
    }
}

}  // namespace

Shapes taesd_tensor_shapes(const TaesdConfig& cfg, const std::string& prefix) {
    Shapes s;
    if (cfg.has_decoder) {
        add_layer_shapes(s, decoder_layers(cfg), decoder_base(prefix), cfg.decoder_offset);
    }
    if (cfg.has_encoder) add_layer_shapes(s, encoder_layers(cfg), encoder_base(prefix), 0);
    return s;
}

Result<TaesdConfig> detect_taesd(const TensorIndex& index, const std::string& prefix) {
    TaesdConfig cfg;
    const std::string dec = decoder_base(prefix), enc = encoder_base(prefix);

    const TensorInfo* first = index.find(dec + "0.weight");
    cfg.decoder_offset = 0;
    if (!first) {
        first = index.find(dec + "1.weight");
        cfg.decoder_offset = 1;
    }
    const TensorInfo* enc_first = index.find(enc + "0.weight");
    cfg.has_decoder = first != nullptr;
    cfg.has_encoder = enc_first != nullptr;
    if (!cfg.has_decoder && !cfg.has_encoder) {
        return Status::Error("TAESD: missing tensor " + dec + "0.weight");
    }
    if (cfg.has_decoder) {
        if (first->shape.size() != 4) {
            return Status::Error("TAESD: tensor " + first->name + " has shape " +
                                 shape_string(first->shape) + ", expected 4 dimensions");
        }
        cfg.channels = static_cast<int>(first->shape[0]);
        cfg.z_channels = static_cast<int>(first->shape[1]);
        const std::string last =
            dec + std::to_string(decoder_layers(cfg).size() - 1 + cfg.decoder_offset) + ".weight";
        const TensorInfo* t = index.find(last);
        if (!t) return Status::Error("TAESD: missing tensor " + last);
        if (!t->shape.empty()) cfg.out_channels = static_cast<int>(t->shape[0]);
    }
    if (cfg.has_encoder) {
        if (enc_first->shape.size() != 4) {
            return Status::Error("TAESD: tensor " + enc_first->name + " has shape " +
                                 shape_string(enc_first->shape) + ", expected 4 dimensions");
        }
        cfg.in_channels = static_cast<int>(enc_first->shape[1]);
        if (!cfg.has_decoder) {
            cfg.channels = static_cast<int>(enc_first->shape[0]);
            const std::string last =
                enc + std::to_string(encoder_layers(cfg).size() - 1) + ".weight";
            const TensorInfo* t = index.find(last);
            if (!t) return Status::Error("TAESD: missing tensor " + last);
            if (!t->shape.empty()) cfg.z_channels = static_cast<int>(t->shape[0]);
        }
    }

    for (const auto& [name, want] : taesd_tensor_shapes(cfg, prefix)) {
        const TensorInfo* t = index.find(name);
        if (!t) return Status::Error("TAESD: missing tensor " + name);
        if (t->shape != want) {
            return Status::Error("TAESD: tensor " + name + " has shape " + shape_string(t->shape) +
                                 ", expected " + shape_string(want));
        }
    }
    return cfg;
}

ggml_tensor* build_taesd_decode(nn::Ctx& c, const TaesdConfig& cfg, ggml_tensor* z,
                                const std::string& prefix) {
    // Soft clamp of the latent to (-3, 3): tanh(z / 3) * 3.
    ggml_tensor* h = ggml_scale(c.ctx, ggml_tanh(c.ctx, ggml_scale(c.ctx, z, 1.0f / 3.0f)), 3.0f);
    h = run_layers(c, h, decoder_layers(cfg), decoder_base(prefix), cfg.decoder_offset);
    return ggml_scale_bias(c.ctx, h, 2.0f, -1.0f);  // [0, 1] -> [-1, 1]
}

ggml_tensor* build_taesd_encode(nn::Ctx& c, const TaesdConfig& cfg, ggml_tensor* x,
                                const std::string& prefix) {
    x = ggml_scale_bias(c.ctx, x, 0.5f, 0.5f);  // [-1, 1] -> [0, 1]
    return run_layers(c, x, encoder_layers(cfg), encoder_base(prefix), 0);
}

}  // namespace ggdiff::models
