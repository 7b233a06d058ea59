#include "pipeline/lora_manager.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "core/log.h"
#include "runtime/lora_delta.h"
#include "runtime/weight_adapters.h"
#include "runtime/weight_patch.h"

namespace ggdiff {
namespace {

// Torch shape (outermost first) of a declared weight.
std::vector<int64_t> torch_shape(const ggml_tensor* t) {
    std::vector<int64_t> s;
    for (int i = ggml_n_dims(t) - 1; i >= 0; --i) s.push_back(t->ne[i]);
    return s;
}

bool unsupported(const LoraModule& m, std::string* what) {
    static const std::pair<LoraPart, const char*> kParts[] = {
        {LoraPart::Mid, "LoCon Tucker cores (lora_mid)"},
        {LoraPart::HadaT1, "LoHa Tucker cores (hada_t1)"},
        {LoraPart::HadaT2, "LoHa Tucker cores (hada_t2)"},
        {LoraPart::LokrT2, "LoKr Tucker cores (lokr_t2)"},
        {LoraPart::DoraScale, "DoRA (dora_scale)"},
        {LoraPart::DiffBias, "bias differences (diff_b)"},
    };
    for (const auto& [p, name] : kParts) {
        if (m.has(p)) {
            *what = name;
            return true;
        }
    }
    return false;
}

std::string first_tensor(const LoraModule& m) {
    return m.parts.empty() ? std::string("?") : m.parts.begin()->second->source_name;
}

// What a LoRA key addresses: one whole weight, or rows of one or more weights (row keys).
struct Address {
    struct Part {
        std::string weight;
        std::vector<LoraRows> rows;  // empty: the whole weight
    };
    std::vector<Part> parts;
    bool by_rows = false;

    // The module's output rows the key expects (row keys).
    int64_t module_rows() const {
        int64_t n = 0;
        for (const Part& p : parts)
            for (const LoraRows& r : p.rows) n = std::max(n, r.from + r.count);
        return n;
    }
    // The weights in errors: "W" or "W rows 0-63 (and V ...)".
    std::string describe() const {
        std::string s;
        for (const Part& p : parts) {
            s += (s.empty() ? "" : " and ") + p.weight;
            for (size_t i = 0; i < p.rows.size(); ++i) {
                s += string_format("%s%lld-%lld", i ? ", " : " rows ", (long long)p.rows[i].to,
                                   (long long)(p.rows[i].to + p.rows[i].count - 1));
            }
        }
        return s;
    }
};

}  // namespace

Result<LoraApplyMode> parse_lora_apply_mode(const std::string& s) {
    if (s.empty() || s == "auto") return LoraApplyMode::Auto;
    if (s == "immediately") return LoraApplyMode::Immediately;
    if (s == "at_runtime") return LoraApplyMode::AtRuntime;
    return Status::Error("--lora-apply-mode \"" + s + "\": use auto, immediately or at_runtime");
}

struct LoraManager::TargetState {
    LoraTarget* target = nullptr;
    std::unique_ptr<WeightPatcher> patcher;
    AdapterSet adapters;
    std::map<std::string, Address> weight_of_key;
    // What is applied: (weight, update) in application order.
    std::vector<std::pair<std::string, LoraUpdate>> merged, runtime;
    int threads = 1;

    // Merges `merged` into the loaded weights: per weight, the sum of its updates is added
    // once (one weight's f32 difference in memory at a time). Updates of some rows only add
    // to the rows they span, which are the only ones converted and written back.
    Status merge() {
        std::map<std::string, std::vector<size_t>> by_weight;
        for (size_t i = 0; i < merged.size(); ++i) by_weight[merged[i].first].push_back(i);
        for (const auto& [w, idx] : by_weight) {
            bool whole = true;
            for (size_t i : idx) whole = whole && merged[i].second.whole();
            if (whole) {
                std::vector<float> sum;
                for (size_t i : idx) {
                    auto d = dense_delta(merged[i].second, threads);
                    if (!d.ok()) return d.status().with_context(w);
                    if (sum.empty()) {
                        sum = std::move(*d);
                    } else {
                        for (size_t j = 0; j < sum.size(); ++j) sum[j] += (*d)[j];
                    }
                }
                GGDIFF_TRY(patcher->add(w, sum));
                continue;
            }
            const LoraUpdate& first = merged[idx[0]].second;
            const int64_t rows = first.whole() ? first.out : first.weight_rows;
            const int64_t len = first.k;
            int64_t lo = rows, hi = 0;
            for (size_t i : idx) {
                const LoraUpdate& u = merged[i].second;
                if (u.whole()) {
                    lo = 0;
                    hi = rows;
                }
                for (const LoraRows& r : u.rows) {
                    lo = std::min(lo, r.to);
                    hi = std::max(hi, r.to + r.count);
                }
            }
            std::vector<float> sum(static_cast<size_t>((hi - lo) * len), 0.0f);
            for (size_t i : idx) {
                const LoraUpdate& u = merged[i].second;
                auto d = dense_delta(u, threads);
                if (!d.ok()) return d.status().with_context(w);
                const std::vector<LoraRows> blocks =
                    u.whole() ? std::vector<LoraRows>{{0, 0, rows}} : u.rows;
                for (const LoraRows& r : blocks) {
                    const float* src = d->data() + r.from * len;
                    float* dst = sum.data() + (r.to - lo) * len;
                    for (int64_t j = 0; j < r.count * len; ++j) dst[j] += src[j];
                }
            }
            GGDIFF_TRY(patcher->add(w, sum, lo * len));
        }
        return Status::Ok();
    }
};

LoraManager::LoraManager(std::string dir, LoraApplyMode mode, int threads)
    : dir_(std::move(dir)), mode_(mode), threads_(threads) {}

LoraManager::~LoraManager() = default;

Result<LoraFile*> LoraManager::file_for(const LoraRequest& r) {
    const std::string& name = r.name;
    auto path = r.path.empty() ? find_lora_file(dir_, name) : Result<std::string>(r.path);
    if (!path.ok()) return path.status();
    auto it = files_.find(*path);
    if (it != files_.end()) return it->second.get();
    auto f = LoraFile::open(*path);
    if (!f.ok()) return f.status().with_context("LoRA " + name);
    LoraFile* raw = f->get();
    files_.emplace(*path, std::move(*f));
    return raw;
}

Status LoraManager::prepare_targets(Family& family) {
    if (!targets_.empty()) return Status::Ok();
    for (LoraTarget& t : family.lora_targets) {
        auto s = std::make_unique<TargetState>();
        s->target = &t;
        s->threads = threads_;
        s->patcher = std::make_unique<WeightPatcher>(t.runner->weights());
        // A key two weights answer to addresses neither (row keys may name several weights,
        // never together with a whole-weight key).
        std::set<std::string> ambiguous;
        auto& map = s->weight_of_key;
        for (const auto& [name, tensor] : t.runner->weights().declared()) {
            if (ggml_n_dims(tensor) < 2 || name.size() < 7 ||
                name.compare(name.size() - 7, 7, ".weight") != 0) {
                continue;
            }
            std::vector<std::string> keys = t.keys ? t.keys(name) : std::vector<std::string>{};
            keys.push_back(lora_canonical_key(name));
            for (const std::string& k : keys) {
                auto it = map.find(k);
                if (it == map.end()) {
                    map[k].parts.push_back({name, {}});
                } else if (it->second.by_rows || it->second.parts[0].weight != name) {
                    ambiguous.insert(k);
                }
            }
            if (!t.row_keys) continue;
            const std::vector<int64_t> shape = torch_shape(tensor);
            for (const LoraRowKey& rk : t.row_keys(name, shape)) {
                bool fits = !rk.rows.empty();
                for (const LoraRows& r : rk.rows) {
                    fits = fits && r.from >= 0 && r.to >= 0 && r.count > 0 &&
                           r.to + r.count <= shape[0];
                }
                if (!fits) continue;
                auto it = map.find(rk.key);
                if (it == map.end()) {
                    Address& a = map[rk.key];
                    a.by_rows = true;
                    a.parts.push_back({name, rk.rows});
                } else if (!it->second.by_rows) {
                    ambiguous.insert(rk.key);
                } else {
                    it->second.parts.push_back({name, rk.rows});
                }
            }
        }
        for (const std::string& k : ambiguous) map.erase(k);
        targets_.push_back(std::move(s));
    }
    return Status::Ok();
}

Status LoraManager::apply(Family& family, const std::vector<LoraRequest>& loras) {
    static const std::vector<std::string> kNoNames;
    if (loras == current_) return Status::Ok();
    if (!loras.empty() && family.lora_targets.empty()) {
        return Status::Error("LoRA tags are not supported for " + family.name + " models yet");
    }
    const auto t0 = std::chrono::steady_clock::now();
    GGDIFF_TRY(prepare_targets(family));

    // Plan: every module of every file to one weight of one target.
    std::vector<std::vector<std::pair<std::string, LoraUpdate>>> merged(targets_.size()),
        runtime(targets_.size());
    std::vector<std::string> hashes;
    size_t n_modules = 0;
    for (const LoraRequest& r : loras) {
        if (r.high_noise && std::none_of(targets_.begin(), targets_.end(),
                                         [](const auto& t) { return t->target->high_noise; })) {
            return Status::Error("<lora:|high_noise|" + r.name +
                                 ">: this model has no high-noise expert "
                                 "(--high-noise-diffusion-model, Wan 2.2) to patch");
        }
        auto file = file_for(r);
        if (!file.ok()) return file.status();
        const LoraFile& f = **file;
        for (const std::string& n : r.path.empty() ? f.unrecognized() : kNoNames) {
            GGDIFF_LOG_WARN("LoRA %s: tensor %s is no LoRA tensor; ignored", r.name.c_str(),
                            n.c_str());
        }
        std::vector<std::string> unmatched;
        for (const auto& [key, module] : f.modules()) {
            size_t ti = 0;
            const Address* address = nullptr;
            for (; ti < targets_.size(); ++ti) {
                if (targets_[ti]->target->high_noise != r.high_noise) continue;
                auto it = targets_[ti]->weight_of_key.find(key);
                if (it != targets_[ti]->weight_of_key.end()) {
                    address = &it->second;
                    break;
                }
            }
            if (!address) {
                unmatched.push_back(first_tensor(module));
                continue;
            }
            std::string what;
            if (unsupported(module, &what)) {
                GGDIFF_LOG_WARN("LoRA %s: %s are not supported yet; %s skipped", r.name.c_str(),
                                what.c_str(), first_tensor(module).c_str());
                continue;
            }
            TargetState& ts = *targets_[ti];
            const float mult = ts.target->text_encoder ? r.te : r.unet;
            if (mult == 0.0f) continue;
            ModuleRunner& runner = *ts.target->runner;
            // The module's update against the shape it must have, then its part per weight.
            std::vector<int64_t> shape =
                torch_shape(runner.weights().tensor(address->parts[0].weight));
            if (address->by_rows) shape[0] = address->module_rows();
            auto u = read_lora_update(f, module, shape, mult, address->describe());
            if (!u.ok()) return u.status();
            std::vector<std::pair<std::string, LoraUpdate>> parts;
            for (const Address::Part& p : address->parts) {
                const std::vector<int64_t> ws = torch_shape(runner.weights().tensor(p.weight));
                if (p.rows.empty()) {
                    parts.emplace_back(p.weight, std::move(*u));
                    continue;
                }
                if (!std::equal(ws.begin() + 1, ws.end(), shape.begin() + 1, shape.end())) {
                    return Status::Error("LoRA " + r.name + ": " + first_tensor(module) +
                                         " cannot patch " + address->describe() +
                                         " (the weights' inputs differ)");
                }
                parts.emplace_back(p.weight, select_rows(*u, p.rows, ws[0]));
            }
            for (auto& [weight, update] : parts) {
                const ggml_tensor* w = runner.weights().tensor(weight);
                // Row-split buffers and weights re-read per segment (--max-vram cutting)
                // cannot keep a merged update.
                const bool split = runner.in_split_buffer(weight) || runner.cuts_graph();
                const bool quantized = ggml_is_quantized(w->type);
                bool at_runtime = mode_ == LoraApplyMode::AtRuntime ||
                                  (mode_ == LoraApplyMode::Auto && (split || quantized));
                if (!at_runtime && split) {
                    GGDIFF_LOG_WARN(
                        "LoRA %s: %s is in a row-split buffer or cut by --max-vram and cannot "
                        "be merged; skipped (use --lora-apply-mode auto or at_runtime)",
                        r.name.c_str(), weight.c_str());
                    continue;
                }
                (at_runtime ? runtime : merged)[ti].emplace_back(weight, std::move(update));
                ++n_modules;
            }
        }
        if (!unmatched.empty()) {
            const size_t show = std::min<size_t>(unmatched.size(), 8);
            std::string list;
            for (size_t i = 0; i < show; ++i) list += (i ? ", " : "") + unmatched[i];
            if (show < unmatched.size()) {
                list += string_format(" and %zu more", unmatched.size() - show);
            }
            GGDIFF_LOG_WARN("LoRA %s: %zu of its modules match no weight of this %s model: %s",
                            r.name.c_str(), unmatched.size(), family.name.c_str(), list.c_str());
        }
        if (!r.path.empty()) continue;  // a model's own LoRA: no A1111 hash
        auto h = f.short_hash();
        if (!h.ok()) return h.status();
        hashes.push_back(r.name + ": " + *h);
    }

    // Undo what is applied, then apply the new set.
    size_t n_merged = 0, n_runtime = 0;
    for (size_t i = 0; i < targets_.size(); ++i) {
        TargetState& ts = *targets_[i];
        ModuleRunner& runner = *ts.target->runner;
        runner.weights().set_adapters(nullptr);
        ts.adapters.clear();
        GGDIFF_TRY(ts.patcher->restore());
        ts.merged = std::move(merged[i]);
        ts.runtime = std::move(runtime[i]);
        n_merged += ts.merged.size();
        n_runtime += ts.runtime.size();
        if (!ts.merged.empty() && runner.weights().loaded()) GGDIFF_TRY(ts.merge());
        TargetState* state = &ts;
        runner.set_on_loaded([state]() {
            state->patcher->forget();
            return state->merged.empty() ? Status::Ok() : state->merge();
        });
        if (!ts.runtime.empty()) {
            std::vector<std::pair<std::string, const LoraUpdate*>> ups;
            for (const auto& [w, u] : ts.runtime) ups.emplace_back(w, &u);
            GGDIFF_TRY(ts.adapters.build(runner.weights(), ups, [&runner](const std::string& n) {
                return runner.buffer_type_for(n);
            }));
            runner.weights().set_adapters(&ts.adapters.table());
        }
    }
    current_ = loras;
    hashes_.clear();
    for (size_t i = 0; i < hashes.size(); ++i) hashes_ += (i ? ", " : "") + hashes[i];
    last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!loras.empty() || n_modules) {
        GGDIFF_LOG_INFO("LoRA: %zu file(s), %zu updates merged, %zu applied at run time (%.2fs)",
                        loras.size(), n_merged, n_runtime, last_seconds_);
    }
    return Status::Ok();
}

}  // namespace ggdiff
