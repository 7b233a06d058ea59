// What the end-to-end LoRA suites share: LoRA pairs drawn from a pattern, written in PEFT
// ("<module>.lora_A/lora_B.weight") or kohya ("<module>.lora_down/lora_up.weight" + ".alpha")
// form, and the check that every form of one LoRA gives the same image, which differs from the
// image without a LoRA.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "../golden/e2e_support.h"
#include "../io/io_test_util.h"

namespace ggdiff::e2e::lora_forms {

using ggdiff::testing::FakeTensor;
using ggdiff::testing::to_bytes;

constexpr int64_t kRank = 4;

// One module's pair (down [rank, in], up [out, rank]) on `out` rows of a weight `in` wide;
// small values so that the model stays in range.
struct Pair {
    std::vector<float> down, up;
    int64_t in = 0, out = 0;
};

inline Pair pair(int64_t in, int64_t out, uint32_t seed) {
    Pair p{ggdiff::testing::pattern(kRank * in, seed),
           ggdiff::testing::pattern(out * kRank, seed + 7), in, out};
    for (float& v : p.down) v *= 0.25f;
    for (float& v : p.up) v *= 0.25f;
    return p;
}

// Pairs on consecutive row ranges [at, at + out) of one weight of `rows` rows as one pair:
// down rows stacked, up block-diagonal, zero outside the ranges.
inline Pair on_rows(const std::vector<std::pair<int64_t, Pair>>& parts, int64_t rows) {
    Pair s;
    s.in = parts.front().second.in;
    s.out = rows;
    for (const auto& [at, p] : parts) s.down.insert(s.down.end(), p.down.begin(), p.down.end());
    const int64_t rank = kRank * static_cast<int64_t>(parts.size());
    s.up.assign(rows * rank, 0.0f);
    for (size_t j = 0; j < parts.size(); ++j) {
        const auto& [at, p] = parts[j];
        for (int64_t r = 0; r < p.out; ++r)
            for (int64_t c = 0; c < kRank; ++c)
                s.up[(at + r) * rank + j * kRank + c] = p.up[r * kRank + c];
    }
    return s;
}

inline void peft(std::vector<FakeTensor>& t, const std::string& module, const Pair& p) {
    t.push_back({module + ".lora_A.weight", "F32", {kRank, p.in}, to_bytes(p.down)});
    t.push_back({module + ".lora_B.weight", "F32", {p.out, kRank}, to_bytes(p.up)});
}

inline void kohya(std::vector<FakeTensor>& t, const std::string& module, const Pair& p) {
    const int64_t rank = static_cast<int64_t>(p.down.size()) / p.in;
    t.push_back({module + ".lora_down.weight", "F32", {rank, p.in}, to_bytes(p.down)});
    t.push_back({module + ".lora_up.weight", "F32", {p.out, rank}, to_bytes(p.up)});
    t.push_back({module + ".alpha", "F32", {}, to_bytes(std::vector<float>{float(rank)})});
}

// Runs `model` + `request` with <lora:NAME:1> (none when empty) into dir/NAME.png (plain.png).
inline RunResult generate(const std::vector<std::string>& model,
                          const std::vector<std::string>& request, const std::string& dir,
                          const std::string& name) {
    std::vector<std::string> args = model;
    args.insert(args.end(), {"--lora-model-dir", dir, "-v", "-o",
                             dir + "/" + (name.empty() ? "plain" : name) + ".png"});
    std::vector<std::string> req = request;
    for (size_t j = 0; j + 1 < req.size(); ++j) {
        if (req[j] == "-p" && !name.empty()) req[j + 1] += "<lora:" + name + ":1>";
    }
    args.insert(args.end(), req.begin(), req.end());
    return run_ggdiff(args, dir, 900);
}

// Generates without a LoRA and with each of dir/<form>.safetensors: every LoRA matches a weight
// for each of its modules, every form gives the first form's image (within 0.5), and that
// image differs from the one without a LoRA (more than 2).
inline void expect_forms_agree(const std::vector<std::string>& model,
                               const std::vector<std::string>& request, const std::string& dir,
                               const std::vector<std::string>& forms) {
    ASSERT_FALSE(forms.empty());
    for (const std::string& name : forms) {
        const RunResult r = generate(model, request, dir, name);
        ASSERT_TRUE(r.succeeded()) << r.describe();
        EXPECT_FALSE(contains(r.err, "match no weight")) << name << ": " << r.err;
        EXPECT_TRUE(contains(r.err, "LoRA: 1 file(s)")) << name << ": " << r.err;
    }
    const RunResult plain = generate(model, request, dir, "");
    ASSERT_TRUE(plain.succeeded()) << plain.describe();
    const std::string first = dir + "/" + forms.front() + ".png";
    for (size_t i = 1; i < forms.size(); ++i) {
        const ImageDiff same = compare_images(dir + "/" + forms[i] + ".png", first);
        ASSERT_TRUE(same.ok) << same.error;
        EXPECT_LE(same.mean_abs, 0.5)
            << forms[i] << " vs " << forms.front() << ", max " << same.max_abs;
        std::printf("%s vs %s %.3f\n", forms[i].c_str(), forms.front().c_str(), same.mean_abs);
    }
    const ImageDiff moved = compare_images(first, dir + "/plain.png");
    ASSERT_TRUE(moved.ok) << moved.error;
    EXPECT_GT(moved.mean_abs, 2.0) << "the LoRA changed nothing";
    std::printf("%s vs no LoRA %.3f\n", forms.front().c_str(), moved.mean_abs);
}

}  // namespace ggdiff::e2e::lora_forms
