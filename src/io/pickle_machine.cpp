// The pickle opcodes (protocols 0 to 5, as Python's pickletools documents them) over a stack
// of object ids; objects live in one arena, so shared and even cyclic references (a list
// appended to itself through the memo) cost nothing and free together.
#include "io/pickle_machine.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "core/checked_math.h"
#include "core/log.h"
#include "core/safe_text.h"

namespace ggdiff {

using Kind = PickleObject::Kind;

const char* pickle_kind_name(Kind k) {
    switch (k) {
        case Kind::None:
            return "None";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
        case Kind::BigInt:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::Str:
            return "str";
        case Kind::Bytes:
            return "bytes";
        case Kind::Tuple:
            return "tuple";
        case Kind::List:
            return "list";
        case Kind::Dict:
            return "dict";
        case Kind::Global:
            return "global";
        case Kind::Storage:
            return "storage";
        case Kind::Tensor:
            return "tensor";
    }
    return "?";
}

bool torch_storage_dtype(const std::string& global, DType* out) {
    static const std::pair<const char*, DType> kTypes[] = {
        {"DoubleStorage", DType::F64},
        {"FloatStorage", DType::F32},
        {"HalfStorage", DType::F16},
        {"BFloat16Storage", DType::BF16},
        {"LongStorage", DType::I64},
        {"IntStorage", DType::I32},
        {"ShortStorage", DType::I16},
        {"CharStorage", DType::I8},
        {"ByteStorage", DType::U8},
        {"BoolStorage", DType::BOOL},
        {"Float8_e4m3fnStorage", DType::F8_E4M3},
        {"Float8_e5m2Storage", DType::F8_E5M2},
    };
    // Storages saved from GPU tensors by old versions are torch.cuda.<Type>Storage.
    std::string name;
    if (global.rfind("torch.cuda.", 0) == 0) {
        name = global.substr(11);
    } else if (global.rfind("torch.", 0) == 0) {
        name = global.substr(6);
    } else {
        return false;
    }
    for (const auto& [n, t] : kTypes) {
        if (name == n) {
            *out = t;
            return true;
        }
    }
    return false;
}

namespace {

// The callables a state dict needs; each is rebuilt here from its arguments.
constexpr const char* kRebuildTensorV2 = "torch._utils._rebuild_tensor_v2";
constexpr const char* kRebuildTensor = "torch._utils._rebuild_tensor";
constexpr const char* kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr const char* kRebuildParameterWithState = "torch._utils._rebuild_parameter_with_state";
constexpr const char* kRebuildFromType = "torch._tensor._rebuild_from_type_v2";
constexpr const char* kOrderedDict = "collections.OrderedDict";
constexpr const char* kCodecsEncode = "_codecs.encode";
constexpr size_t kMaxGlobalName = 1024;

}  // namespace

class PickleRun {
  public:
    PickleRun(PickleMachine* m, const uint8_t* data, uint64_t size)
        : m_(*m), data_(data), size_(size) {}

    Result<PickleMachine::Id> run(uint64_t* used) {
        while (pos_ < size_) {
            op_at_ = pos_;
            const uint8_t op = data_[pos_++];
            if (op == '.') {
                if (depth() < 1) return fail("STOP with an empty stack");
                *used = pos_;
                return stack_.back();
            }
            GGDIFF_TRY(step(op));
        }
        return fail("the pickle ends without STOP (truncated)");
    }

    bool at_end() const { return pos_ >= size_; }

  private:
    using Id = PickleMachine::Id;

    Status fail(const std::string& what) const {
        return Status::Error(string_format("pickle byte %llu: ", (unsigned long long)op_at_) +
                             what);
    }
    Status refuse_call(const std::string& global, const char* how) const {
        return Status::Error(
            string_format("pickle byte %llu: ", (unsigned long long)op_at_) + "refused " + how +
            " of " + quote_name(global) +
            ": ggdiff runs no code from a file and rebuilds only the tensors, storages and "
            "containers of a PyTorch state dict");
    }

    // Items above the innermost mark.
    size_t depth() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
    Status need(size_t n) const { return depth() >= n ? Status::Ok() : fail("stack underflow"); }
    Result<Id> make(Kind k) {
        if (m_.objects_.size() >= kMaxPickleObjects) {
            return fail(string_format("more than %zu objects", kMaxPickleObjects));
        }
        m_.objects_.emplace_back();
        m_.objects_.back().kind = k;
        return static_cast<Id>(m_.objects_.size() - 1);
    }
    PickleObject& obj(Id id) { return m_.objects_[id]; }
    Status push(Kind k, int64_t i = 0, std::string text = {}) {
        auto id = make(k);
        if (!id.ok()) return id.status();
        obj(*id).i = i;
        obj(*id).text = std::move(text);
        stack_.push_back(*id);
        return Status::Ok();
    }
    Id pop() {
        const Id id = stack_.back();
        stack_.pop_back();
        return id;
    }
    // The items above the innermost mark, which is removed with them.
    Result<std::vector<Id>> pop_mark() {
        if (marks_.empty()) return fail("no MARK for this opcode");
        const size_t base = marks_.back();
        marks_.pop_back();
        std::vector<Id> items(stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
        stack_.resize(base);
        return items;
    }

    bool take(uint64_t n, const uint8_t** p) {
        if (size_ - pos_ < n) return false;
        *p = data_ + pos_;
        pos_ += n;
        return true;
    }
    Status truncated() const { return fail("the pickle is truncated inside an opcode"); }
    Result<std::string> line() {
        const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
        if (!nl) return truncated();
        const uint64_t n = static_cast<const uint8_t*>(nl) - (data_ + pos_);
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n + 1;
        return s;
    }
    Result<uint64_t> length(int bytes) {
        const uint8_t* p = nullptr;
        if (!take(bytes, &p)) return truncated();
        uint64_t n = 0;
        for (int k = bytes - 1; k >= 0; --k) n = (n << 8) | p[k];
        if (bytes == 4 && (n & 0x80000000u)) return fail("negative length");
        if (n > size_ - pos_) {
            return fail(string_format("a %llu-byte value runs past the end of the pickle",
                                      (unsigned long long)n));
        }
        return n;
    }
    Status push_text(Kind k, int length_bytes) {
        auto n = length(length_bytes);
        if (!n.ok()) return n.status();
        const uint8_t* p = nullptr;
        take(*n, &p);
        return push(k, 0, std::string(reinterpret_cast<const char*>(p), *n));
    }
    Status push_decimal(std::string s, bool is_long) {
        if (is_long && !s.empty() && s.back() == 'L') s.pop_back();
        if (!is_long && s == "01") return push(Kind::Bool, 1);
        if (!is_long && s == "00") return push(Kind::Bool, 0);
        size_t k = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
        if (k == s.size()) return fail("INT/LONG without digits");
        for (size_t j = k; j < s.size(); ++j) {
            if (s[j] < '0' || s[j] > '9') return fail("INT/LONG is not a decimal number");
        }
        errno = 0;
        const long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (errno == ERANGE) return fail("decimal integer wider than 64 bits");
        return push(Kind::Int, v);
    }
    // LONG1 / LONG4: little-endian two's complement of n bytes.
    Status push_long(uint64_t n) {
        const uint8_t* p = nullptr;
        if (!take(n, &p)) return truncated();
        if (n > 8) return push(Kind::BigInt, 0, std::string(reinterpret_cast<const char*>(p), n));
        uint64_t v = 0;
        for (uint64_t k = n; k-- > 0;) v = (v << 8) | p[k];
        if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~0ull << (8 * n);  // sign-extend
        return push(Kind::Int, static_cast<int64_t>(v));
    }
    Status push_global(const std::string& module, const std::string& name) {
        if (module.empty() || name.empty() || module.size() + name.size() > kMaxGlobalName) {
            return fail("empty or overlong global name");
        }
        return push(Kind::Global, 0, module + "." + name);
    }
    Status memo_put(uint64_t key) {
        GGDIFF_TRY(need(1));
        memo_[key] = stack_.back();
        return Status::Ok();
    }
    Status memo_get(uint64_t key) {
        auto it = memo_.find(key);
        if (it == memo_.end())
            return fail(string_format("memo %llu is not set", (unsigned long long)key));
        stack_.push_back(it->second);
        return Status::Ok();
    }
    Result<uint64_t> decimal_line() {
        auto s = line();
        if (!s.ok()) return s.status();
        if (s->empty() || s->size() > 19) return fail("bad memo index");
        uint64_t v = 0;
        for (char c : *s) {
            if (c < '0' || c > '9') return fail("bad memo index");
            v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        return v;
    }

    Status build_tuple(std::vector<Id> items) {
        auto id = make(Kind::Tuple);
        if (!id.ok()) return id.status();
        obj(*id).items = std::move(items);
        stack_.push_back(*id);
        return Status::Ok();
    }
    Status add_to(Id target, Kind want, const std::vector<Id>& items) {
        if (obj(target).kind != want) {
            return fail(std::string("adds items to a ") + pickle_kind_name(obj(target).kind) +
                        ", not a " + pickle_kind_name(want));
        }
        if (want == Kind::Dict && items.size() % 2) return fail("SETITEMS with an odd count");
        auto& dst = obj(target).items;
        dst.insert(dst.end(), items.begin(), items.end());
        return Status::Ok();
    }

    bool is_int(Id id) const { return m_.objects_[id].kind == Kind::Int; }

    // BINPERSID: ('storage', torch.<Type>Storage, key, location, numel[, view]).
    Status persistent_load(Id pid) {
        const PickleObject& t = obj(pid);
        if (t.kind != Kind::Tuple || (t.items.size() != 5 && t.items.size() != 6) ||
            obj(t.items[0]).kind != Kind::Str || obj(t.items[0]).text != "storage") {
            return fail("a persistent id that is not a PyTorch storage");
        }
        const PickleObject& type = obj(t.items[1]);
        const PickleObject& key = obj(t.items[2]);
        const PickleObject& numel = obj(t.items[4]);
        if (type.kind != Kind::Global) return fail("storage type is not a global");
        PickleStorage s;
        s.type_name = type.text;
        if (!torch_storage_dtype(type.text, &s.dtype)) {
            return fail("storage type " + quote_name(type.text) + " is not one ggdiff reads");
        }
        if (key.kind == Kind::Str) {
            s.key = key.text;
        } else if (key.kind == Kind::Int) {
            s.key = std::to_string(key.i);
        } else {
            return fail("storage key is not a string");
        }
        if (numel.kind != Kind::Int || numel.i < 0) return fail("storage size is not a count");
        s.numel = static_cast<uint64_t>(numel.i);
        s.view_numel = s.numel;
        if (t.items.size() == 6 && obj(t.items[5]).kind != Kind::None) {
            const PickleObject& v = obj(t.items[5]);
            if (v.kind != Kind::Tuple || v.items.size() != 3 || !is_int(v.items[1]) ||
                !is_int(v.items[2]) || obj(v.items[1]).i < 0 || obj(v.items[2]).i < 0) {
                return fail("storage view is not (key, offset, size)");
            }
            s.view_offset = static_cast<uint64_t>(obj(v.items[1]).i);
            s.view_numel = static_cast<uint64_t>(obj(v.items[2]).i);
            uint64_t view_end = 0;
            if (!checked_add(s.view_offset, s.view_numel, &view_end) || view_end > s.numel) {
                return fail("storage view runs past its storage " + quote_name(s.key));
            }
        }
        const auto [first, fresh] = m_.storage_keys_.emplace(s.key, m_.storages_.size());
        if (!fresh) {
            const PickleStorage& o = m_.storages_[first->second];
            if (o.dtype != s.dtype || o.numel != s.numel) {
                return fail("storage " + quote_name(s.key) + " is named with two types or sizes");
            }
        }
        auto id = make(Kind::Storage);
        if (!id.ok()) return id.status();
        obj(*id).i = static_cast<int64_t>(m_.storages_.size());
        m_.storages_.push_back(std::move(s));
        stack_.push_back(*id);
        return Status::Ok();
    }

    Result<std::vector<int64_t>> int_tuple(Id id, const char* what) {
        const PickleObject& t = obj(id);
        if (t.kind != Kind::Tuple) return fail(std::string(what) + " is not a tuple");
        if (t.items.size() > 16) return fail(std::string(what) + " has more than 16 dimensions");
        std::vector<int64_t> out;
        for (Id e : t.items) {
            if (!is_int(e)) return fail(std::string(what) + " holds a non-integer");
            out.push_back(obj(e).i);
        }
        return out;
    }

    // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) and
    // _rebuild_tensor(storage, offset, size, stride).
    Result<Id> rebuild_tensor(const std::vector<Id>& args, bool v2) {
        if (v2 ? (args.size() < 6 || args.size() > 7) : args.size() != 4) {
            return fail(string_format("tensor rebuild with %zu arguments", args.size()));
        }
        if (obj(args[0]).kind != Kind::Storage) return fail("tensor rebuild without a storage");
        if (!is_int(args[1]) || obj(args[1]).i < 0) return fail("negative tensor storage offset");
        auto shape = int_tuple(args[2], "tensor size");
        if (!shape.ok()) return shape.status();
        auto stride = int_tuple(args[3], "tensor stride");
        if (!stride.ok()) return stride.status();
        if (shape->size() != stride->size()) return fail("tensor size and stride differ in rank");
        for (int64_t d : *shape) {
            if (d < 0) return fail("negative tensor dimension");
        }
        auto id = make(Kind::Tensor);
        if (!id.ok()) return id.status();
        PickleObject::TensorView& t = obj(*id).tensor;
        t.storage = static_cast<size_t>(obj(args[0]).i);
        t.offset = static_cast<uint64_t>(obj(args[1]).i);
        t.shape = std::move(*shape);
        t.stride = std::move(*stride);
        return *id;
    }

    // Latin-1 text to bytes (protocol 2 pickles bytes as _codecs.encode(text, 'latin1')).
    Result<Id> latin1_bytes(const std::vector<Id>& args) {
        if (args.size() != 2 || obj(args[0]).kind != Kind::Str || obj(args[1]).kind != Kind::Str ||
            (obj(args[1]).text != "latin1" && obj(args[1]).text != "latin-1")) {
            return fail("_codecs.encode other than (text, 'latin1')");
        }
        const std::string& s = obj(args[0]).text;
        std::string out;
        for (size_t k = 0; k < s.size(); ++k) {
            const uint8_t c = static_cast<uint8_t>(s[k]);
            if (c < 0x80) {
                out += static_cast<char>(c);
            } else if ((c == 0xc2 || c == 0xc3) && k + 1 < s.size() &&
                       (static_cast<uint8_t>(s[k + 1]) & 0xc0) == 0x80) {
                out += static_cast<char>(((c & 0x03) << 6) | (s[k + 1] & 0x3f));
                ++k;
            } else {
                return fail("_codecs.encode of text that is not Latin-1");
            }
        }
        auto id = make(Kind::Bytes);
        if (!id.ok()) return id.status();
        obj(*id).text = std::move(out);
        return *id;
    }

    Result<Id> call(Id callable, Id args_id, int nesting = 0) {
        const PickleObject& f = obj(callable);
        if (f.kind != Kind::Global) {
            return fail(std::string("REDUCE calls a ") + pickle_kind_name(f.kind));
        }
        if (obj(args_id).kind != Kind::Tuple) return fail("REDUCE arguments are not a tuple");
        const std::string name = f.text;
        const std::vector<Id> args = obj(args_id).items;
        if (name == kRebuildTensorV2) return rebuild_tensor(args, true);
        if (name == kRebuildTensor) return rebuild_tensor(args, false);
        if (name == kRebuildParameter || name == kRebuildParameterWithState) {
            if (args.size() < 3 || obj(args[0]).kind != Kind::Tensor) {
                return fail("parameter rebuild without a tensor");
            }
            return args[0];
        }
        if (name == kRebuildFromType) {
            // (func, type, args, state): a tensor subclass rebuilt by func(*args).
            if (args.size() != 4 || obj(args[1]).kind != Kind::Global) {
                return fail("_rebuild_from_type_v2 with unexpected arguments");
            }
            const std::string& type = obj(args[1]).text;
            if (type != "torch.Tensor" && type != "torch.nn.parameter.Parameter") {
                return refuse_call(type, "a tensor subclass");
            }
            if (nesting > 0) return fail("nested _rebuild_from_type_v2");
            return call(args[0], args[2], nesting + 1);
        }
        if (name == kOrderedDict) {
            if (!args.empty()) return fail("OrderedDict built from arguments");
            return make(Kind::Dict);
        }
        if (name == kCodecsEncode) return latin1_bytes(args);
        return refuse_call(name, "a call");
    }

    Status step(uint8_t op) {
        const uint8_t* p = nullptr;
        switch (op) {
            case 0x80:  // PROTO
                if (!take(1, &p)) return truncated();
                if (*p > 5) return fail(string_format("pickle protocol %u", *p));
                return Status::Ok();
            case 0x95:  // FRAME: a length hint only
                if (!take(8, &p)) return truncated();
                return Status::Ok();
            case '(':  // MARK
                marks_.push_back(stack_.size());
                return Status::Ok();
            case '0':  // POP
                GGDIFF_TRY(need(1));
                stack_.pop_back();
                return Status::Ok();
            case '1': {  // POP_MARK
                auto items = pop_mark();
                return items.ok() ? Status::Ok() : items.status();
            }
            case '2':  // DUP
                GGDIFF_TRY(need(1));
                stack_.push_back(stack_.back());
                return Status::Ok();
            case 'N':
                return push(Kind::None);
            case 0x88:
                return push(Kind::Bool, 1);
            case 0x89:
                return push(Kind::Bool, 0);
            case 'K':
                if (!take(1, &p)) return truncated();
                return push(Kind::Int, p[0]);
            case 'M':
                if (!take(2, &p)) return truncated();
                return push(Kind::Int, p[0] | (p[1] << 8));
            case 'J': {
                if (!take(4, &p)) return truncated();
                uint32_t v = 0;
                std::memcpy(&v, p, 4);
                return push(Kind::Int, static_cast<int32_t>(v));
            }
            case 'I':
            case 'L': {
                auto s = line();
                if (!s.ok()) return s.status();
                return push_decimal(*s, op == 'L');
            }
            case 0x8a: {  // LONG1
                if (!take(1, &p)) return truncated();
                return push_long(p[0]);
            }
            case 0x8b: {  // LONG4
                auto n = length(4);
                if (!n.ok()) return n.status();
                return push_long(*n);
            }
            case 'F': {
                auto s = line();
                if (!s.ok()) return s.status();
                char* end = nullptr;
                const double v = std::strtod(s->c_str(), &end);
                if (s->empty() || *end != '\0') return fail("FLOAT is not a number");
                GGDIFF_TRY(push(Kind::Float));
                obj(stack_.back()).f = v;
                return Status::Ok();
            }
            case 'G': {  // BINFLOAT: big-endian
                if (!take(8, &p)) return truncated();
                uint64_t bits = 0;
                for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[k];
                double v = 0;
                std::memcpy(&v, &bits, 8);
                GGDIFF_TRY(push(Kind::Float));
                obj(stack_.back()).f = v;
                return Status::Ok();
            }
            case 'S': {  // STRING: a quoted repr
                auto s = line();
                if (!s.ok()) return s.status();
                std::string v = *s;
                if (v.size() >= 2 && (v[0] == '\'' || v[0] == '"') && v.back() == v[0]) {
                    v = v.substr(1, v.size() - 2);
                }
                return push(Kind::Str, 0, std::move(v));
            }
            case 'V': {
                auto s = line();
                if (!s.ok()) return s.status();
                return push(Kind::Str, 0, *s);
            }
            case 'T':  // BINSTRING
            case 'X':  // BINUNICODE
                return push_text(Kind::Str, 4);
            case 'U':   // SHORT_BINSTRING
            case 0x8c:  // SHORT_BINUNICODE
                return push_text(Kind::Str, 1);
            case 0x8d:  // BINUNICODE8
                return push_text(Kind::Str, 8);
            case 'C':  // SHORT_BINBYTES
                return push_text(Kind::Bytes, 1);
            case 'B':  // BINBYTES
                return push_text(Kind::Bytes, 4);
            case 0x8e:  // BINBYTES8
            case 0x96:  // BYTEARRAY8
                return push_text(Kind::Bytes, 8);
            case ')':
                return build_tuple({});
            case 0x85:
            case 0x86:
            case 0x87: {  // TUPLE1..3
                const size_t n = op - 0x84u;
                GGDIFF_TRY(need(n));
                std::vector<Id> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
                stack_.resize(stack_.size() - n);
                return build_tuple(std::move(items));
            }
            case 't': {
                auto items = pop_mark();
                if (!items.ok()) return items.status();
                return build_tuple(std::move(*items));
            }
            case ']':
            case 0x8f:  // EMPTY_SET: a list here
                return push(Kind::List);
            case '}':
                return push(Kind::Dict);
            case 'l':
            case 'd':
            case 0x91: {  // LIST, DICT, FROZENSET from the mark
                auto items = pop_mark();
                if (!items.ok()) return items.status();
                const Kind k = op == 'd' ? Kind::Dict : Kind::List;
                if (k == Kind::Dict && items->size() % 2) return fail("DICT with an odd count");
                auto id = make(k);
                if (!id.ok()) return id.status();
                obj(*id).items = std::move(*items);
                stack_.push_back(*id);
                return Status::Ok();
            }
            case 'a': {  // APPEND
                GGDIFF_TRY(need(2));
                const Id v = pop();
                return add_to(stack_.back(), Kind::List, {v});
            }
            case 's': {  // SETITEM
                GGDIFF_TRY(need(3));
                const Id v = pop();
                const Id k = pop();
                return add_to(stack_.back(), Kind::Dict, {k, v});
            }
            case 'e':
            case 'u':
            case 0x90: {  // APPENDS, SETITEMS, ADDITEMS
                auto items = pop_mark();
                if (!items.ok()) return items.status();
                GGDIFF_TRY(need(1));
                return add_to(stack_.back(), op == 'u' ? Kind::Dict : Kind::List, *items);
            }
            case 'c': {  // GLOBAL
                auto module = line();
                if (!module.ok()) return module.status();
                auto name = line();
                if (!name.ok()) return name.status();
                return push_global(*module, *name);
            }
            case 0x93: {  // STACK_GLOBAL
                GGDIFF_TRY(need(2));
                const Id name = pop();
                const Id module = pop();
                if (obj(module).kind != Kind::Str || obj(name).kind != Kind::Str) {
                    return fail("STACK_GLOBAL of non-strings");
                }
                return push_global(obj(module).text, obj(name).text);
            }
            case 'R': {  // REDUCE
                GGDIFF_TRY(need(2));
                const Id args = pop();
                const Id callable = pop();
                auto r = call(callable, args);
                if (!r.ok()) return r.status();
                stack_.push_back(*r);
                return Status::Ok();
            }
            case 'b': {  // BUILD: state for the object below it
                GGDIFF_TRY(need(2));
                pop();
                const PickleObject& target = obj(stack_.back());
                // OrderedDict state dicts carry _metadata; tensors may carry nothing useful.
                if (target.kind == Kind::Dict || target.kind == Kind::Tensor) return Status::Ok();
                if (target.kind == Kind::Global)
                    return refuse_call(target.text, "setting the state");
                return fail(std::string("BUILD on a ") + pickle_kind_name(target.kind));
            }
            case 0x81:    // NEWOBJ
            case 0x92: {  // NEWOBJ_EX
                GGDIFF_TRY(need(op == 0x81 ? 2 : 3));
                const Id cls = stack_[stack_.size() - (op == 0x81 ? 2 : 3)];
                if (obj(cls).kind == Kind::Global)
                    return refuse_call(obj(cls).text, "creating an object");
                return fail("NEWOBJ of a non-class");
            }
            case 'i': {  // INST module\nname\n with args from the mark
                auto module = line();
                if (!module.ok()) return module.status();
                auto name = line();
                if (!name.ok()) return name.status();
                return refuse_call(*module + "." + *name, "creating an object");
            }
            case 'o': {  // OBJ: class and args from the mark
                if (marks_.empty() || depth() < 1) return fail("OBJ without a class");
                const Id cls = stack_[marks_.back()];
                if (obj(cls).kind == Kind::Global)
                    return refuse_call(obj(cls).text, "creating an object");
                return fail("OBJ of a non-class");
            }
            case 'Q': {  // BINPERSID
                GGDIFF_TRY(need(1));
                return persistent_load(pop());
            }
            case 'P': {
                auto s = line();
                if (!s.ok()) return s.status();
                return fail("a text persistent id " + quote_name(*s) +
                            ", which PyTorch does not write");
            }
            case 'p': {  // PUT
                auto k = decimal_line();
                if (!k.ok()) return k.status();
                return memo_put(*k);
            }
            case 'q':
                if (!take(1, &p)) return truncated();
                return memo_put(p[0]);
            case 'r': {
                if (!take(4, &p)) return truncated();
                uint32_t k = 0;
                std::memcpy(&k, p, 4);
                return memo_put(k);
            }
            case 0x94:  // MEMOIZE
                return memo_put(memo_.size());
            case 'g': {
                auto k = decimal_line();
                if (!k.ok()) return k.status();
                return memo_get(*k);
            }
            case 'h':
                if (!take(1, &p)) return truncated();
                return memo_get(p[0]);
            case 'j': {
                if (!take(4, &p)) return truncated();
                uint32_t k = 0;
                std::memcpy(&k, p, 4);
                return memo_get(k);
            }
            case 0x82:
            case 0x83:
            case 0x84:
                return fail("the copyreg extension registry (EXT1/2/4), which ggdiff refuses");
            case 0x97:
            case 0x98:
                return fail("out-of-band buffers, which a file cannot carry");
            default:
                return fail(string_format("unknown pickle opcode 0x%02x", op));
        }
    }

    PickleMachine& m_;
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
    uint64_t op_at_ = 0;
    std::vector<Id> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint64_t, Id> memo_;
};

Result<PickleMachine::Id> PickleMachine::run(const uint8_t* data, uint64_t size, uint64_t* used) {
    // A pickle is read up to its STOP; one that runs on past the limit is refused.
    const bool capped = size > kMaxPickleBytes;
    PickleRun r(this, data, capped ? kMaxPickleBytes : size);
    auto id = r.run(used);
    if (!id.ok() && capped && r.at_end()) {
        return Status::Error(string_format("pickle longer than %llu MiB",
                                           (unsigned long long)(kMaxPickleBytes >> 20)));
    }
    return id;
}

}  // namespace ggdiff
