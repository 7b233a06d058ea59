// Family parts that do nothing, for tests of the pipeline's planning on a fake Family: a text
// conditioner that gives an empty conditioning and a VAE of factor 8 that decodes nothing
// (with or without an encoder, as can_encode() reports).
#pragma once

#include "pipeline/family.h"

namespace ggdiff::fake_parts {

class FakeText : public TextConditioner {
  public:
    Result<Conditioning> encode(const TextRequest&) override { return Conditioning{}; }
    void end_phase() override {}
};

class FakeVae : public Autoencoder {
  public:
    explicit FakeVae(bool encoder = false) : encoder_(encoder) {}
    int downscale() const override { return 8; }
    Result<HostTensor> decode(const HostTensor&) override { return Status::Error("unused"); }
    bool can_encode() const override { return encoder_; }
    Result<HostTensor> encode(const HostTensor&, sampling::Rng&) override {
        return Status::Error("unused");
    }
    void end_phase() override {}

  private:
    bool encoder_;
};

}  // namespace ggdiff::fake_parts
