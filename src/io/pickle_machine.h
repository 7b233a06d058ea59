// A Python pickle read as data, never as code: the opcodes that build numbers, strings,
// tuples, lists and dicts are interpreted; the few callables a PyTorch state dict needs
// (tensor and parameter rebuilding, OrderedDict, bytes) are recognized by name and rebuilt
// here; every other call (REDUCE, NEWOBJ, INST, OBJ, BUILD of an object) is refused with an
// error that names the global. Naming a global does nothing by itself, so a class may appear
// as plain data (PyTorch Lightning keys its callback states by class).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "io/dtype.h"

namespace ggdiff {

// Limits; pickles past them are refused with a message.
constexpr uint64_t kMaxPickleBytes = 256ull << 20;
constexpr size_t kMaxPickleObjects = 1u << 21;

struct PickleObject {
    enum class Kind {
        None,
        Bool,
        Int,      // `i`
        BigInt,   // wider than 64 bits: `text` holds the little-endian two's complement bytes
        Float,    // `f`
        Str,      // `text` (UTF-8 as stored)
        Bytes,    // `text`
        Tuple,    // `items`
        List,     // `items` (sets and frozensets too)
        Dict,     // `items`: key, value, key, value ... in insertion order (last write wins)
        Global,   // `text`: "module.name"
        Storage,  // a persistent-id storage: `i` = index into PickleMachine::storages()
        Tensor,   // `tensor`
    };
    struct TensorView {
        size_t storage = 0;           // index into PickleMachine::storages()
        uint64_t offset = 0;          // elements from the storage's first element
        std::vector<int64_t> shape;   // torch order
        std::vector<int64_t> stride;  // in elements
    };
    Kind kind = Kind::None;
    int64_t i = 0;
    double f = 0;
    std::string text;
    std::vector<uint32_t> items;
    TensorView tensor;
};

const char* pickle_kind_name(PickleObject::Kind k);

// A storage named by a persistent id: ('storage', torch.<Type>Storage, key, location, numel)
// in zip archives; legacy files add a sixth item, None or (view key, offset, size), and a
// view is recorded as a slice of its root storage.
struct PickleStorage {
    std::string key;        // the root storage's key (zip entry data/<key>, legacy key list)
    std::string type_name;  // "torch.HalfStorage"
    DType dtype = DType::F32;
    uint64_t numel = 0;        // elements of the root storage
    uint64_t view_offset = 0;  // legacy views: elements from the root's start
    uint64_t view_numel = 0;   // elements visible through this storage object
};

// The torch.<Type>Storage names ggdiff reads and their element types.
bool torch_storage_dtype(const std::string& global, DType* out);

class PickleMachine {
  public:
    using Id = uint32_t;

    // Runs one pickle starting at data[0] up to its STOP; *used is set to the bytes it took
    // (the next pickle of a legacy file starts there). Returns the id of the result. Objects
    // (and storages) accumulate across runs of the same machine.
    Result<Id> run(const uint8_t* data, uint64_t size, uint64_t* used);

    const PickleObject& at(Id id) const { return objects_[id]; }
    const std::vector<PickleStorage>& storages() const { return storages_; }
    size_t object_count() const { return objects_.size(); }

  private:
    std::vector<PickleObject> objects_;
    std::vector<PickleStorage> storages_;
    std::unordered_map<std::string, size_t> storage_keys_;  // key -> its first storage
    friend class PickleRun;
};

}  // namespace ggdiff
