// PyTorch files (torch.save: .ckpt, .pt, .pth, .bin) read without running them.
//
// Zip format (PyTorch 1.6 and later): an uncompressed zip whose single top folder holds
// data.pkl (the pickled object; each storage is a persistent id ('storage', torch.<Type>Storage,
// key, location, numel)), data/<key> (each storage's raw little-endian bytes), and small
// files (version, byteorder). Legacy format (torch.save(..., _use_new_zipfile_serialization=
// False)): five pickles in a row (magic number, protocol version 1001, system info, the object,
// the list of storage keys), then each listed storage as an 8-byte element count and its bytes.
//
// The object is a dict of tensors, possibly nested: tensors in nested dicts are named by their
// keys joined with '.', and a checkpoint that wraps its weights under 'state_dict' (Lightning
// .ckpt) or 'params_ema' / 'params' (BasicSR / Real-ESRGAN .pth; EMA preferred) is read from
// there. Tensors are views of storages; they are read in place, so they must be contiguous.
#include <cstring>
#include <unordered_map>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/safe_text.h"
#include "io/checkpoint_file.h"
#include "io/pickle_machine.h"
#include "io/zip_directory.h"

namespace ggdiff {

namespace {

using Id = PickleMachine::Id;
using Kind = PickleObject::Kind;

constexpr int kMaxDictDepth = 32;
constexpr size_t kMaxDictVisits = 4u << 20;

struct FlatTensor {
    std::string name;
    Id id;
};

const PickleObject* dict_value(const PickleMachine& m, const PickleObject& dict, const char* key) {
    const PickleObject* found = nullptr;
    for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
        const PickleObject& key_obj = m.at(dict.items[k]);
        if (key_obj.kind == Kind::Str && key_obj.text == key) found = &m.at(dict.items[k + 1]);
    }
    return found;
}

std::string scalar_text(const PickleObject& o) {
    switch (o.kind) {
        case Kind::Str:
            return o.text;
        case Kind::Int:
            return std::to_string(o.i);
        case Kind::Bool:
            return o.i ? "True" : "False";
        case Kind::Float:
            return string_format("%.17g", o.f);
        default:
            return "";
    }
}

// The tensors of nested dicts, named by their key paths; the root's scalars as metadata.
class Flattener {
  public:
    explicit Flattener(const PickleMachine& m) : m_(m) {}

    Status run(Id root_id, CheckpointHeader* header) {
        const PickleObject& root = m_.at(root_id);
        if (root.kind != Kind::Dict) {
            return Status::Error(std::string("the file holds a ") + pickle_kind_name(root.kind) +
                                 ", not a dict of tensors (a state dict)");
        }
        const PickleObject* weights = &root;
        for (const char* wrapper : {"state_dict", "params_ema", "params"}) {
            const PickleObject* v = dict_value(m_, root, wrapper);
            if (v && v->kind == Kind::Dict) {
                weights = v;
                break;
            }
        }
        for (size_t k = 0; k + 1 < root.items.size(); k += 2) {
            const PickleObject& key = m_.at(root.items[k]);
            const std::string value = scalar_text(m_.at(root.items[k + 1]));
            if (key.kind == Kind::Str && !value.empty() &&
                check_name(key.text, "metadata key", kMaxMetadataKeyBytes).ok()) {
                header->metadata[key.text] = value;
            }
        }
        GGDIFF_TRY(walk(*weights, "", 0));
        if (tensors.empty()) {
            return Status::Error(
                "the file's dict holds no tensors (ggdiff reads a dict of tensors, possibly "
                "nested or under 'state_dict'; tensors in lists are not read)");
        }
        return Status::Ok();
    }

    std::vector<FlatTensor> tensors;

  private:
    Status walk(const PickleObject& dict, const std::string& prefix, int depth) {
        if (depth >= kMaxDictDepth) {
            return Status::Error(string_format("dicts nested deeper than %d levels (at %s)",
                                               kMaxDictDepth, quote_name(prefix).c_str()));
        }
        // Python keeps the last value of a key given twice.
        std::unordered_map<std::string, size_t> last;
        for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
            const PickleObject& key = m_.at(dict.items[k]);
            if (key.kind == Kind::Str) last[key.text] = k;
        }
        for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
            if (++visits_ > kMaxDictVisits) {
                return Status::Error(string_format(
                    "the file's dicts have more than %zu entries (counting shared ones each "
                    "time they are reached)",
                    kMaxDictVisits));
            }
            const PickleObject& key = m_.at(dict.items[k]);
            if (key.kind != Kind::Str || last[key.text] != k) continue;
            const Id value_id = dict.items[k + 1];
            const PickleObject& value = m_.at(value_id);
            if (value.kind != Kind::Tensor && value.kind != Kind::Dict) continue;
            if (prefix.size() + 1 + key.text.size() > kMaxTensorNameBytes) {
                return Status::Error(
                    "tensor name " + quote_name(prefix + (prefix.empty() ? "" : ".") + key.text) +
                    " is longer than " + std::to_string(kMaxTensorNameBytes) + " bytes");
            }
            const std::string name = prefix.empty() ? key.text : prefix + "." + key.text;
            if (value.kind == Kind::Tensor) {
                tensors.push_back({name, value_id});
            } else {
                GGDIFF_TRY(walk(value, name, depth + 1));
            }
        }
        return Status::Ok();
    }

    const PickleMachine& m_;
    size_t visits_ = 0;
};

// Where each storage's bytes start in the file, and how many bytes it has there.
struct StorageBytes {
    uint64_t offset = 0;
    uint64_t nbytes = 0;
};

// A tensor view of a storage, checked against the storage's bytes.
Status place_tensor(const PickleMachine& m, const FlatTensor& f, const StorageBytes& bytes,
                    StoredTensor* out) {
    const PickleObject::TensorView& v = m.at(f.id).tensor;
    const PickleStorage& s = m.storages()[v.storage];
    auto fail = [&](const std::string& what) {
        return Status::Error("tensor " + quote_name(f.name) + " " + what);
    };
    out->name = f.name;
    out->dtype = s.dtype;
    out->ggml_type = dtype_to_ggml(s.dtype);
    out->shape = v.shape;
    int64_t numel = 0;
    if (!checked_numel(v.shape, &numel)) return fail("has a size that overflows");
    // Contiguous (row-major) strides; dimensions of size 1 may have any stride.
    if (numel > 0) {
        int64_t expected = 1;
        for (size_t d = v.shape.size(); d-- > 0;) {
            if (v.shape[d] != 1 && v.stride[d] != expected) {
                return fail("is not contiguous (size " + shape_string(v.shape) + ", stride " +
                            shape_string(v.stride) +
                            "); ggdiff reads tensors in place: save it with .contiguous()");
            }
            expected *= v.shape[d];
        }
    }
    const uint64_t esize = dtype_size(s.dtype);
    uint64_t end = 0, first = 0, nbytes = 0, view_bytes = 0, start = 0;
    if (!checked_add(v.offset, static_cast<uint64_t>(numel), &end) || end > s.view_numel) {
        return fail(string_format(
            "has elements [%llu, %llu + %lld) past the end of its storage %s of %llu elements",
            (unsigned long long)v.offset, (unsigned long long)v.offset, (long long)numel,
            quote_name(s.key).c_str(), (unsigned long long)s.view_numel));
    }
    if (!checked_add(s.view_offset, v.offset, &first) || !checked_mul(first, esize, &start) ||
        !checked_mul(static_cast<uint64_t>(numel), esize, &nbytes) ||
        !checked_add(start, nbytes, &view_bytes) || view_bytes > bytes.nbytes) {
        return fail("runs past the bytes of its storage " + quote_name(s.key));
    }
    out->offset = bytes.offset + start;
    out->nbytes = nbytes;
    return Status::Ok();
}

Result<CheckpointHeader> finish(const PickleMachine& m, const Flattener& flat,
                                const std::vector<StorageBytes>& bytes, CheckpointHeader header) {
    header.tensors.reserve(flat.tensors.size());
    for (const FlatTensor& f : flat.tensors) {
        StoredTensor t;
        GGDIFF_TRY(place_tensor(m, f, bytes[m.at(f.id).tensor.storage], &t));
        header.tensors.push_back(std::move(t));
    }
    GGDIFF_TRY(check_checkpoint_header(header));
    return header;
}

// The storage's size in bytes from its persistent id.
Result<uint64_t> storage_nbytes(const PickleStorage& s) {
    uint64_t n = 0;
    if (!checked_mul(s.numel, dtype_size(s.dtype), &n)) {
        return Status::Error("storage " + quote_name(s.key) + " claims a size that overflows");
    }
    return n;
}

Result<CheckpointHeader> read_torch_zip(const uint8_t* data, uint64_t size) {
    auto dir = read_zip_directory(data, size);
    if (!dir.ok()) return dir.status();
    const ZipEntry* pkl = nullptr;
    std::string top;
    for (const ZipEntry& e : dir->entries) {
        const size_t slash = e.name.find('/');
        if (slash == std::string::npos || e.name.compare(slash, std::string::npos, "/data.pkl"))
            continue;
        if (pkl) {
            return Status::Error("zip archive holds two PyTorch pickles, " + quote_name(pkl->name) +
                                 " and " + quote_name(e.name));
        }
        pkl = &e;
        top = e.name.substr(0, slash + 1);
    }
    if (!pkl) {
        return Status::Error(
            "this zip archive is not a PyTorch checkpoint (it has no <name>/data.pkl)");
    }
    if (dir->find(top + "constants.pkl")) {
        return Status::Error(
            "this is a TorchScript archive (torch.jit.save), which holds a "
            "program, not a state dict; save the model's state_dict() instead");
    }
    if (const ZipEntry* order = dir->find(top + "byteorder")) {
        if (order->stored() && order->size == 3 &&
            std::memcmp(data + order->data_offset, "big", 3) == 0) {
            return Status::Error("this PyTorch file was saved on a big-endian machine");
        }
    }
    GGDIFF_TRY(check_zip_entry_stored(*pkl));

    PickleMachine m;
    uint64_t used = 0;
    auto root = m.run(data + pkl->data_offset, pkl->size, &used);
    if (!root.ok()) return root.status().with_context(escape_text(pkl->name));
    CheckpointHeader header;
    header.format = "pytorch";
    Flattener flat(m);
    GGDIFF_TRY(flat.run(*root, &header));

    std::vector<StorageBytes> bytes(m.storages().size());
    std::unordered_map<std::string, StorageBytes> by_key;
    for (const FlatTensor& f : flat.tensors) {
        const size_t si = m.at(f.id).tensor.storage;
        const PickleStorage& s = m.storages()[si];
        auto known = by_key.find(s.key);
        if (known == by_key.end()) {
            const std::string name = top + "data/" + s.key;
            const ZipEntry* e = dir->find(name);
            if (!e) {
                return Status::Error("tensor " + quote_name(f.name) + ": its storage entry " +
                                     quote_name(name) + " is not in the archive");
            }
            GGDIFF_TRY(check_zip_entry_stored(*e));
            auto need = storage_nbytes(s);
            if (!need.ok()) return need.status();
            if (e->size < *need) {
                return Status::Error(
                    string_format("storage entry %s has %llu bytes but its pickle claims %llu",
                                  quote_name(name).c_str(), (unsigned long long)e->size,
                                  (unsigned long long)*need));
            }
            known = by_key.emplace(s.key, StorageBytes{e->data_offset, *need}).first;
        }
        bytes[si] = known->second;
    }
    return finish(m, flat, bytes, std::move(header));
}

Result<Id> run_pickle(PickleMachine& m, const uint8_t* data, uint64_t size, uint64_t* pos,
                      const char* what) {
    uint64_t used = 0;
    auto id = m.run(data + *pos, size - *pos, &used);
    if (!id.ok()) {
        if (*pos == 0) return id.status();
        return id.status().with_context(std::string("legacy PyTorch file, ") + what);
    }
    *pos += used;
    return id;
}

Result<CheckpointHeader> read_torch_legacy(const uint8_t* data, uint64_t size) {
    static const uint8_t kMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    PickleMachine m;
    uint64_t pos = 0;
    auto magic = run_pickle(m, data, size, &pos, "magic number");
    if (!magic.ok()) {
        return magic.status().with_context("a Python pickle, read as a legacy PyTorch file");
    }
    if (m.at(*magic).kind != Kind::BigInt || m.at(*magic).text.size() != sizeof(kMagic) ||
        std::memcmp(m.at(*magic).text.data(), kMagic, sizeof(kMagic)) != 0) {
        return Status::Error(
            "this is a Python pickle but not a PyTorch file (no torch.save magic number); "
            "ggdiff does not read other pickles");
    }
    auto version = run_pickle(m, data, size, &pos, "protocol version");
    if (!version.ok()) return version.status();
    if (m.at(*version).kind != Kind::Int || m.at(*version).i != 1001) {
        return Status::Error("legacy PyTorch file with an unknown protocol version (not 1001)");
    }
    auto info = run_pickle(m, data, size, &pos, "system info");
    if (!info.ok()) return info.status();
    if (m.at(*info).kind == Kind::Dict) {
        const PickleObject* le = dict_value(m, m.at(*info), "little_endian");
        if (le && le->kind == Kind::Bool && !le->i) {
            return Status::Error("this PyTorch file was saved on a big-endian machine");
        }
    }
    auto root = run_pickle(m, data, size, &pos, "state dict");
    if (!root.ok()) return root.status();
    auto keys = run_pickle(m, data, size, &pos, "storage list");
    if (!keys.ok()) return keys.status();
    if (m.at(*keys).kind != Kind::List) {
        return Status::Error("legacy PyTorch file: the storage list is not a list");
    }

    CheckpointHeader header;
    header.format = "pytorch (legacy)";
    Flattener flat(m);
    GGDIFF_TRY(flat.run(*root, &header));

    // The storages follow in the list's order, each after its 8-byte element count.
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < m.storages().size(); ++i) first.emplace(m.storages()[i].key, i);
    std::unordered_map<std::string, StorageBytes> by_key;
    for (Id k : m.at(*keys).items) {
        const PickleObject& key = m.at(k);
        if (key.kind != Kind::Str) {
            return Status::Error("legacy PyTorch file: a storage key is not a string");
        }
        auto it = first.find(key.text);
        if (it == first.end()) {
            return Status::Error("legacy PyTorch file: storage " + quote_name(key.text) +
                                 " is listed but no tensor names its type");
        }
        const PickleStorage& s = m.storages()[it->second];
        auto need = storage_nbytes(s);
        if (!need.ok()) return need.status();
        if (size - pos < 8) {
            return Status::Error("legacy PyTorch file is truncated at storage " +
                                 quote_name(s.key));
        }
        uint64_t count = 0;
        std::memcpy(&count, data + pos, 8);
        if (count != s.numel) {
            return Status::Error(string_format(
                "legacy PyTorch file: storage %s has %llu elements but its pickle claims %llu",
                quote_name(s.key).c_str(), (unsigned long long)count, (unsigned long long)s.numel));
        }
        pos += 8;
        if (size - pos < *need) {
            return Status::Error("legacy PyTorch file is truncated in storage " +
                                 quote_name(s.key));
        }
        if (!by_key.emplace(s.key, StorageBytes{pos, *need}).second) {
            return Status::Error("legacy PyTorch file lists storage " + quote_name(s.key) +
                                 " twice");
        }
        pos += *need;
    }
    std::vector<StorageBytes> bytes(m.storages().size());
    for (const FlatTensor& f : flat.tensors) {
        const size_t si = m.at(f.id).tensor.storage;
        auto it = by_key.find(m.storages()[si].key);
        if (it == by_key.end()) {
            return Status::Error("tensor " + quote_name(f.name) + ": its storage " +
                                 quote_name(m.storages()[si].key) + " is not in the file");
        }
        bytes[si] = it->second;
    }
    return finish(m, flat, bytes, std::move(header));
}

}  // namespace

Result<CheckpointHeader> read_pytorch_header(const uint8_t* data, uint64_t size) {
    if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) return read_torch_zip(data, size);
    if (size >= 2 && data[0] == 0x80) return read_torch_legacy(data, size);
    if (size >= 262 && std::memcmp(data + 257, "ustar", 5) == 0) {
        return Status::Error(
            "this is a tar archive (the oldest PyTorch format, or not a "
            "checkpoint), which ggdiff does not read");
    }
    return Status::Error("not a PyTorch file (neither a zip archive nor a pickle)");
}

}  // namespace ggdiff
