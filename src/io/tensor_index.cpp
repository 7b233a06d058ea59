#include "io/tensor_index.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <utility>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"
#include "io/diffusers_folder.h"
#include "io/mapped_file.h"
#include "io/name_map.h"
#include "io/name_util.h"
#include "io/tensor_convert.h"

namespace ggdiff {

int64_t TensorInfo::numel() const {
    // Readers guarantee that a tensor with no zero dimension has numel * element size ==
    // nbytes; the saturation only guards hand-built TensorInfos.
    int64_t n = 0;
    return checked_numel(shape, &n) ? n : std::numeric_limits<int64_t>::max();
}

std::vector<int64_t> TensorInfo::ne() const {
    std::vector<int64_t> out(shape.rbegin(), shape.rend());
    if (out.empty()) out.push_back(1);
    return out;
}

Component component_of(const std::string& name) {
    if (starts_with(name, "model.diffusion_model.")) return Component::Diffusion;
    if (starts_with(name, "cond_stage_model.") || starts_with(name, "conditioner.") ||
        starts_with(name, "text_encoders.")) {
        return Component::TextEncoder;
    }
    if (starts_with(name, "first_stage_model.") || starts_with(name, "taesd.")) {
        return Component::Vae;
    }
    return Component::Other;
}

const char* component_name(Component c) {
    switch (c) {
        case Component::Diffusion:
            return "diffusion";
        case Component::TextEncoder:
            return "text encoders";
        case Component::Vae:
            return "vae";
        case Component::Other:
            return "other";
    }
    return "?";
}

std::string prefix_for_role(const std::string& role) {
    std::string r;
    for (char c : role) r += c == '-' ? '_' : static_cast<char>(std::tolower(c));
    static const std::pair<const char*, const char*> kRoles[] = {
        {"model", ""},
        {"diffusion_model", "model.diffusion_model."},
        {"high_noise_diffusion_model", "model.high_noise_diffusion_model."},
        {"uncond_diffusion_model", "model.diffusion_model.uncond."},
        {"vae", "first_stage_model."},
        {"taesd", "taesd."},
        {"clip_l", "text_encoders.clip_l."},
        {"clip_g", "text_encoders.clip_g."},
        {"t5xxl", "text_encoders.t5xxl."},
        {"llm", "text_encoders.llm."},
        {"llm_vision", "text_encoders.llm.visual."},
        {"qwen2vl_vision", "text_encoders.llm.visual."},
        {"clip_vision", "clip_vision."},
        {"control_net", "control_model."},
        {"photo_maker", "photo_maker."},
        {"upscale_model", "upscaler."},
        // LTX-2's part files keep their own names (audio_vae.*, text_embedding_projection.*,
        // model.diffusion_model.*_embeddings_connector.*), as the reference loads them.
        {"audio_vae", ""},
        {"embeddings_connectors", ""},
    };
    for (const auto& [name, prefix] : kRoles) {
        if (r == name) return prefix;
    }
    return r.empty() ? "" : r + ".";
}

// Stages the files of one add() call; commit() applies them all or nothing.
class TensorIndexBuilder {
  public:
    explicit TensorIndexBuilder(TensorIndex* index) : index_(index) {}

    Status stage_file(const std::string& path, const std::string& prefix) {
        const std::string shown = escape_text(path);
        auto map = MappedFile::open(path);
        if (!map.ok()) return map.status().with_context(shown);
        auto header = read_checkpoint_header(**map);
        if (!header.ok()) return header.status().with_context(shown);

        std::vector<std::string> names;
        names.reserve(header->tensors.size());
        for (const StoredTensor& t : header->tensors) names.push_back(t.name);
        std::vector<std::string> notes;
        const std::vector<NameMapping> mapped =
            map_tensor_names(names, prefix, &notes, index_->layouts_);

        const size_t file_index = index_->paths_.size() + staged_paths_.size();
        for (const NameMapping& m : mapped) {
            const StoredTensor& s = header->tensors[m.source];
            TensorInfo t;
            t.name = m.name;
            t.source_name = s.name;
            t.dtype = s.dtype;
            t.ggml_type = s.ggml_type;
            t.shape = s.shape;
            t.file = file_index;
            t.offset = s.offset;
            t.nbytes = s.nbytes;
            if (m.parts > 1) GGDIFF_TRY(slice(&t, m.part, m.parts).with_context(shown));
            auto [it, fresh] = seen_.emplace(t.name, shown + ": " + quote_name(s.name));
            if (!fresh) {
                return Status::Error("tensors " + it->second + " and " + shown + ": " +
                                     quote_name(s.name) + " both map to " + quote_name(t.name));
            }
            staged_.push_back(std::move(t));
        }
        std::string note;
        for (const std::string& n : notes) note += "; " + n;
        GGDIFF_LOG_INFO("indexed %s: %zu tensors (%s%s%s)", shown.c_str(), mapped.size(),
                        header->format.c_str(), prefix.empty() ? "" : ", prefix ",
                        escape_text(prefix + note).c_str());
        for (auto& [k, v] : header->metadata) metadata_[k] = v;
        staged_paths_.push_back(path);
        staged_maps_.push_back(std::move(*map));
        if (!prefix.empty()) prefixes_.insert(prefix);
        return Status::Ok();
    }

    void commit() {
        TensorIndex& ix = *index_;
        // Role files replace whatever their prefix held before this add().
        std::vector<TensorInfo> kept;
        size_t replaced_by_prefix = 0;
        for (TensorInfo& t : ix.tensors_) {
            bool drop = false;
            for (const std::string& p : prefixes_) drop = drop || starts_with(t.name, p);
            if (drop) {
                ++replaced_by_prefix;
            } else {
                kept.push_back(std::move(t));
            }
        }
        if (replaced_by_prefix) {
            GGDIFF_LOG_INFO("replaced %zu previously indexed tensors under the new file's prefix",
                            replaced_by_prefix);
        }
        std::set<std::string> incoming;
        for (const TensorInfo& t : staged_) incoming.insert(t.name);
        std::vector<TensorInfo> merged;
        size_t duplicates = 0;
        for (TensorInfo& t : kept) {
            if (incoming.count(t.name)) {
                ++duplicates;
            } else {
                merged.push_back(std::move(t));
            }
        }
        if (duplicates) {
            GGDIFF_LOG_WARN(
                "%zu tensors were already indexed from an earlier file; the later "
                "file wins",
                duplicates);
        }
        for (TensorInfo& t : staged_) merged.push_back(std::move(t));
        ix.tensors_ = std::move(merged);
        ix.by_name_.clear();
        for (size_t i = 0; i < ix.tensors_.size(); ++i) ix.by_name_[ix.tensors_[i].name] = i;
        for (auto& p : staged_paths_) ix.paths_.push_back(std::move(p));
        for (auto& m : staged_maps_) ix.maps_.push_back(std::move(m));
        for (auto& [k, v] : metadata_) ix.metadata_[k] = v;
    }

  private:
    // Part `part` of `parts` equal slices along torch dim 0 (contiguous bytes).
    static Status slice(TensorInfo* t, int part, int parts) {
        if (t->shape.empty() || t->shape[0] % parts != 0) {
            return Status::Error("tensor " + quote_name(t->source_name) + " with shape " +
                                 shape_string(t->shape) + " cannot be split in " +
                                 std::to_string(parts));
        }
        t->shape[0] /= parts;
        uint64_t bytes = 0;
        if (!stored_nbytes(t->dtype, t->ggml_type, t->shape, &bytes) ||
            bytes * parts != t->nbytes) {
            return Status::Error("tensor " + quote_name(t->source_name) + " cannot be split in " +
                                 std::to_string(parts) + " along its first dimension");
        }
        t->nbytes = bytes;
        t->offset += bytes * part;
        return Status::Ok();
    }

    TensorIndex* index_;
    std::vector<TensorInfo> staged_;
    std::vector<std::string> staged_paths_;
    std::vector<std::unique_ptr<MappedFile>> staged_maps_;
    std::map<std::string, std::string> metadata_;
    std::set<std::string> prefixes_;
    std::map<std::string, std::string> seen_;  // canonical name -> "file: stored name"
};

TensorIndex::TensorIndex() = default;
TensorIndex::TensorIndex(ModelLayouts layouts) : layouts_(std::move(layouts)) {}
TensorIndex::~TensorIndex() = default;
TensorIndex::TensorIndex(TensorIndex&&) noexcept = default;
TensorIndex& TensorIndex::operator=(TensorIndex&&) noexcept = default;

Status TensorIndex::add(const std::string& path, const std::string& prefix) {
    TensorIndexBuilder builder(this);
    if (is_directory(path)) {
        auto parts = diffusers_folder_parts(path, prefix, layouts_);
        if (!parts.ok()) return parts.status();
        for (const FolderPart& p : *parts) GGDIFF_TRY(builder.stage_file(p.path, p.prefix));
    } else {
        GGDIFF_TRY(builder.stage_file(path, prefix));
    }
    builder.commit();
    return Status::Ok();
}

const TensorInfo* TensorIndex::find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

bool TensorIndex::has_prefix(const std::string& prefix) const {
    auto it = by_name_.lower_bound(prefix);
    return it != by_name_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

const uint8_t* TensorIndex::raw(const TensorInfo& t) const {
    return maps_[t.file]->data() + t.offset;
}

void TensorIndex::release(const TensorInfo& t) const {
    if (t.file < maps_.size()) maps_[t.file]->release(t.offset, t.nbytes);
}

Status TensorIndex::read(const TensorInfo& t, int type, void* dst) const {
    if (t.file >= maps_.size()) {
        return Status::Error("tensor " + quote_name(t.name) + ": bad file index");
    }
    return convert_tensor(t, raw(t), type, dst);
}

Status TensorIndex::read_f32(const TensorInfo& t, std::vector<float>& out) const {
    out.resize(static_cast<size_t>(t.numel()));
    return read(t, 0 /* GGML_TYPE_F32 */, out.data());
}

}  // namespace ggdiff
