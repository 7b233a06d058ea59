// PyTorch files written by the tests themselves (no torch here): pickle protocol 2 state dicts
// in torch.save's zip layout (<archive>/data.pkl, <archive>/data/<key>, <archive>/version;
// stored entries aligned to 64 bytes) or its legacy layout (five pickles, then each storage
// after its 8-byte element count). Hostile variants are made by editing what these return.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ggdiff::testing {

// Little-endian bytes of an integer.
inline std::string le_bytes(uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

// Protocol 2 pickle opcodes, appended one by one.
struct PickleBytes {
    std::string b = std::string("\x80\x02", 2);

    PickleBytes& raw(const std::string& s) {
        b += s;
        return *this;
    }
    PickleBytes& op(char c) {
        b += c;
        return *this;
    }
    PickleBytes& str(const std::string& s) {  // BINUNICODE
        b += 'X';
        b += le_bytes(s.size(), 4);
        b += s;
        return *this;
    }
    PickleBytes& integer(int64_t v) {
        if (v >= 0 && v < 256) {
            b += 'K';
            b += static_cast<char>(v);
        } else if (v >= INT32_MIN && v <= INT32_MAX) {
            b += 'J';
            b += le_bytes(static_cast<uint32_t>(v), 4);
        } else {
            b += '\x8a';
            b += '\x08';
            b += le_bytes(static_cast<uint64_t>(v), 8);
        }
        return *this;
    }
    PickleBytes& global(const std::string& module, const std::string& name) {
        b += 'c' + module + '\n' + name + '\n';
        return *this;
    }
    PickleBytes& put(uint8_t k) {  // BINPUT
        b += 'q';
        b += static_cast<char>(k);
        return *this;
    }
    PickleBytes& get(uint8_t k) {  // BINGET
        b += 'h';
        b += static_cast<char>(k);
        return *this;
    }
    PickleBytes& mark() { return op('('); }
    PickleBytes& tuple() { return op('t'); }
    PickleBytes& empty_dict() { return op('}'); }
    PickleBytes& setitems() { return op('u'); }
    PickleBytes& reduce() { return op('R'); }
    PickleBytes& stop() { return op('.'); }
    // int tuple
    PickleBytes& ints(const std::vector<int64_t>& v) {
        mark();
        for (int64_t x : v) integer(x);
        return tuple();
    }
};

struct TorchTensor {
    std::string name;  // '/' separates nested dict keys: "state_dict/a.weight"
    std::string storage_type = "HalfStorage";
    std::vector<int64_t> shape;
    std::string data;  // the storage's bytes (its element count is derived)
    // Or the bytes from a file: `file_bytes` bytes at `file_offset` of `file`.
    std::string file;
    uint64_t file_offset = 0;
    uint64_t file_bytes = 0;

    uint64_t storage_bytes() const { return file.empty() ? data.size() : file_bytes; }
    std::string key;              // storage key; tensors with one key share the first's data
    int64_t offset = 0;           // storage offset in elements
    std::vector<int64_t> stride;  // empty: contiguous
};

inline int64_t torch_element_size(const std::string& type) {
    if (type == "DoubleStorage" || type == "LongStorage") return 8;
    if (type == "FloatStorage" || type == "IntStorage") return 4;
    if (type == "HalfStorage" || type == "BFloat16Storage" || type == "ShortStorage") return 2;
    return 1;
}

// The state dict pickle and the storages it names (key -> bytes, first use order).
struct TorchPickle {
    std::string pickle;
    std::vector<std::pair<std::string, size_t>> storages;  // key -> the tensor holding its bytes
};

inline TorchPickle torch_state_dict_pickle(const std::vector<TorchTensor>& tensors,
                                           bool legacy = false) {
    TorchPickle out;
    PickleBytes p;
    // Nested dicts: the tensors are grouped by their '/'-separated path, in order.
    std::map<std::string, int> seen_key;
    std::function<void(const std::string&, const std::vector<size_t>&)> emit_dict;
    auto emit_tensor = [&](const TorchTensor& t, size_t index) {
        const std::string key = t.key.empty() ? std::to_string(index) : t.key;
        const int64_t esize = torch_element_size(t.storage_type);
        if (!seen_key.count(key)) {
            seen_key[key] = 1;
            out.storages.push_back({key, index});
        }
        std::vector<int64_t> stride = t.stride;
        if (stride.empty()) {
            stride.assign(t.shape.size(), 1);
            for (size_t d = t.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * t.shape[d];
        }
        p.global("torch._utils", "_rebuild_tensor_v2").mark();
        p.mark().str("storage").global("torch", t.storage_type).str(key).str("cpu");
        p.integer(static_cast<int64_t>(t.storage_bytes()) / esize);
        if (legacy) p.op('N');
        p.tuple().op('Q');
        p.integer(t.offset).ints(t.shape).ints(stride).op('\x89');
        p.global("collections", "OrderedDict").op(')').reduce();
        p.tuple().reduce();
    };
    emit_dict = [&](const std::string& prefix, const std::vector<size_t>& members) {
        p.empty_dict();
        if (members.empty()) return;
        p.mark();
        std::vector<std::string> keys;
        std::map<std::string, std::vector<size_t>> sub;
        for (size_t i : members) {
            const std::string rest = tensors[i].name.substr(prefix.size());
            const size_t slash = rest.find('/');
            const std::string key = slash == std::string::npos ? rest : rest.substr(0, slash);
            if (slash == std::string::npos) {
                keys.push_back(rest);
                sub[rest] = {i};
            } else {
                if (!sub.count(key)) keys.push_back(key);
                sub[key].push_back(i);
            }
        }
        for (const std::string& key : keys) {
            p.str(key);
            const std::vector<size_t>& m = sub[key];
            if (m.size() == 1 && tensors[m[0]].name == prefix + key) {
                emit_tensor(tensors[m[0]], m[0]);
            } else {
                emit_dict(prefix + key + "/", m);
            }
        }
        p.setitems();
    };
    std::vector<size_t> all;
    for (size_t i = 0; i < tensors.size(); ++i) all.push_back(i);
    emit_dict("", all);
    out.pickle = p.stop().b;
    return out;
}

struct ZipFileSpec {
    std::string name;
    std::string data;
    uint16_t method = 0;                  // claimed method (the data is written as given)
    const TorchTensor* tensor = nullptr;  // when set, the data is this tensor's storage bytes
};

// Streams a storage's bytes (from memory or its file) through `sink`.
inline void for_storage_bytes(const ZipFileSpec& f,
                              const std::function<void(const char*, size_t)>& sink) {
    if (!f.tensor) {
        sink(f.data.data(), f.data.size());
    } else if (f.tensor->file.empty()) {
        sink(f.tensor->data.data(), f.tensor->data.size());
    } else {
        std::ifstream in(f.tensor->file, std::ios::binary);
        in.seekg(static_cast<std::streamoff>(f.tensor->file_offset));
        std::vector<char> buf(1 << 20);
        for (uint64_t left = f.tensor->file_bytes; left > 0;) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
            in.read(buf.data(), static_cast<std::streamsize>(n));
            sink(buf.data(), n);
            left -= n;
        }
    }
}

inline uint32_t crc32_update(uint32_t c, const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        c ^= static_cast<unsigned char>(p[i]);
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return c;
}

// A zip archive of stored entries (no ZIP64: under 4 GiB), each entry's data aligned to 64
// bytes as torch does, written to `out`.
inline void write_zip_archive(std::ostream& out, const std::vector<ZipFileSpec>& files) {
    std::string central;
    uint64_t pos = 0;
    for (const ZipFileSpec& f : files) {
        uint64_t size = f.data.size();
        if (f.tensor) size = f.tensor->storage_bytes();
        const uint64_t header = pos;
        const uint64_t unaligned = header + 30 + f.name.size() + 4;
        const uint64_t pad = (64 - unaligned % 64) % 64;
        const std::string extra = le_bytes(0x4246, 2) + le_bytes(pad, 2) + std::string(pad, 'Z');
        uint32_t crc = 0xffffffffu;
        for_storage_bytes(f, [&](const char* p, size_t n) { crc = crc32_update(crc, p, n); });
        crc = ~crc;
        const std::string common = le_bytes(f.method, 2) + le_bytes(0, 4) + le_bytes(crc, 4) +
                                   le_bytes(size, 4) + le_bytes(size, 4) +
                                   le_bytes(f.name.size(), 2);
        const std::string local = le_bytes(0x04034b50, 4) + le_bytes(20, 2) + le_bytes(0, 2) +
                                  common + le_bytes(extra.size(), 2) + f.name + extra;
        out.write(local.data(), static_cast<std::streamsize>(local.size()));
        for_storage_bytes(
            f, [&](const char* p, size_t n) { out.write(p, static_cast<std::streamsize>(n)); });
        pos += local.size() + size;
        central += le_bytes(0x02014b50, 4) + le_bytes(20, 2) + le_bytes(20, 2) + le_bytes(0, 2) +
                   common + le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 2) +
                   le_bytes(0, 4) + le_bytes(header, 4) + f.name;
    }
    const std::string end = central + le_bytes(0x06054b50, 4) + le_bytes(0, 2) + le_bytes(0, 2) +
                            le_bytes(files.size(), 2) + le_bytes(files.size(), 2) +
                            le_bytes(central.size(), 4) + le_bytes(pos, 4) + le_bytes(0, 2);
    out.write(end.data(), static_cast<std::streamsize>(end.size()));
}

inline std::string zip_archive(const std::vector<ZipFileSpec>& files) {
    std::ostringstream out;
    write_zip_archive(out, files);
    return out.str();
}

// torch.save's zip layout around a data.pkl and its storages.
inline std::vector<ZipFileSpec> torch_zip_files(const std::vector<TorchTensor>& tensors,
                                                const TorchPickle& p,
                                                const std::string& archive = "archive") {
    std::vector<ZipFileSpec> files = {{archive + "/data.pkl", p.pickle}};
    for (const auto& [key, index] : p.storages) {
        ZipFileSpec f;
        f.name = archive + "/data/" + key;
        f.tensor = &tensors[index];
        files.push_back(f);
    }
    files.push_back({archive + "/version", "3\n"});
    return files;
}

inline std::string torch_zip(const std::vector<TorchTensor>& tensors,
                             const std::string& archive = "archive") {
    return zip_archive(torch_zip_files(tensors, torch_state_dict_pickle(tensors), archive));
}

inline void write_torch_zip_file(const std::string& path, const std::vector<TorchTensor>& tensors,
                                 const std::string& archive = "archive") {
    std::ofstream out(path, std::ios::binary);
    write_zip_archive(out, torch_zip_files(tensors, torch_state_dict_pickle(tensors), archive));
}

// torch.save(..., _use_new_zipfile_serialization=False).
inline std::string torch_legacy(const std::vector<TorchTensor>& tensors) {
    const TorchPickle p = torch_state_dict_pickle(tensors, true);
    std::string out;
    out += std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
    out += PickleBytes().raw("M\xe9\x03").stop().b;  // 1001
    PickleBytes info;
    info.empty_dict().mark().str("protocol_version").raw("M\xe9\x03").str("little_endian");
    info.op('\x88').str("type_sizes").empty_dict().setitems().stop();
    out += info.b;
    out += p.pickle;
    PickleBytes keys;
    keys.op(']').mark();
    for (const auto& [key, index] : p.storages) keys.str(key);
    out += keys.op('e').stop().b;
    for (const auto& [key, index] : p.storages) {
        const TorchTensor& t = tensors[index];
        out += le_bytes(t.storage_bytes() / torch_element_size(t.storage_type), 8);
        for_storage_bytes(ZipFileSpec{"", "", 0, &t},
                          [&](const char* b, size_t n) { out.append(b, n); });
    }
    return out;
}

}  // namespace ggdiff::testing
