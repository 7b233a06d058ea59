// Shorthand for declaring schema entries (used by the option_table_*.cpp files only):
//
//   opt(out, "steps", OptType::Int, kGenerate).range(1, 10000).def("20")
//       .help("Number of sampling steps").bind(set_field(&GenerateOptions::steps));
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "api/option_schema.h"

namespace ggdiff::api {

class Decl {
  public:
    explicit Decl(OptionSpec& s) : s_(s) {}
    Decl& alias(const char* a) {
        s_.aliases = a;
        return *this;
    }
    Decl& short_name(const char* c) {
        s_.short_name = c;
        return *this;
    }
    Decl& range(double lo, double hi = 1e300) {
        s_.min = lo;
        s_.max = hi;
        return *this;
    }
    Decl& def(const char* text) {
        s_.default_text = text;
        return *this;
    }
    Decl& values(std::function<std::vector<std::string>()> fn) {
        s_.values = std::move(fn);
        return *this;
    }
    Decl& values(std::vector<std::string> list) {
        s_.values = [list] { return list; };
        return *this;
    }
    Decl& help(const char* text) {
        s_.help = text;
        return *this;
    }
    Decl& help(const std::string& text) {
        s_.help = text;
        return *this;
    }
    Decl& flags(int f) {
        s_.flags |= f;
        return *this;
    }
    // Accepted, but does nothing here; `why` is shown in --help and when used.
    Decl& no_effect(const char* why) {
        s_.support = Support::NoEffect;
        s_.note = why;
        return *this;
    }
    // Setting it fails with "--NAME is not supported yet".
    Decl& not_yet(const char* what = "") {
        s_.support = Support::NotYet;
        s_.note = what;
        return *this;
    }
    Decl& unsupported_values(const char* csv) {
        s_.unsupported_values = csv;
        return *this;
    }
    Decl& bind(std::function<Status(ApiOptions&, OptionValue&)> fn) {
        s_.bind = std::move(fn);
        return *this;
    }
    Decl& check(std::function<Status(const OptionValue&)> fn) {
        s_.check = std::move(fn);
        return *this;
    }

  private:
    OptionSpec& s_;
};

// Appends an entry to `out` in `group` and returns its declarator.
inline Decl opt(std::vector<OptionSpec>& out, const char* group, const char* name, OptType type,
                int flags) {
    out.emplace_back();
    OptionSpec& s = out.back();
    s.name = name;
    s.group = group;
    s.type = type;
    s.flags = flags;
    if (type == OptType::Bool) s.default_text = "false";
    return Decl(s);
}

// Binders: copy the typed value into a field of ApiOptions.
template <class F>
std::function<Status(ApiOptions&, OptionValue&)> to_text(F field) {
    return [field](ApiOptions& o, OptionValue& v) {
        field(o) = v.text;
        return Status::Ok();
    };
}

template <class F>
std::function<Status(ApiOptions&, OptionValue&)> to_int(F field) {
    return [field](ApiOptions& o, OptionValue& v) {
        using T = std::remove_reference_t<decltype(field(o))>;
        field(o) = static_cast<T>(v.i);
        return Status::Ok();
    };
}

template <class F>
std::function<Status(ApiOptions&, OptionValue&)> to_float(F field) {
    return [field](ApiOptions& o, OptionValue& v) {
        using T = std::remove_reference_t<decltype(field(o))>;
        if constexpr (std::is_same_v<T, std::optional<float>>) {
            field(o) = static_cast<float>(v.f);
        } else {
            field(o) = static_cast<T>(v.f);
        }
        return Status::Ok();
    };
}

template <class F>
std::function<Status(ApiOptions&, OptionValue&)> to_bool(F field) {
    return [field](ApiOptions& o, OptionValue& v) {
        field(o) = v.b;
        return Status::Ok();
    };
}

}  // namespace ggdiff::api

// A field of ApiOptions as a callable: FIELD(gen.steps).
#define GGDIFF_FIELD(expr)        \
    [](ApiOptions & o) -> auto& { \
        return o.expr;            \
    }
