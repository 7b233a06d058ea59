// Errors as values: Status (ok or a message) and Result<T> (a value or a Status).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ggdiff {

class Status {
  public:
    Status() = default;
    static Status Ok() { return Status(); }
    static Status Error(std::string message) { return Status(std::move(message)); }
    // An error in what the caller asked for (a prompt the model cannot take, inputs that do
    // not go together), found while generating: the C API returns GGDIFF_ERROR_INPUT for it
    // and the server answers 400 instead of 500.
    static Status InputError(std::string message) {
        Status s(std::move(message));
        s.input_error_ = true;
        return s;
    }

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const std::string& message() const { return message_; }
    bool input_error() const { return input_error_; }

    // Prefixes the message with context ("loading x: ..."); no-op on success.
    Status with_context(const std::string& context) const {
        if (ok()) return *this;
        Status s(context + ": " + message_);
        s.input_error_ = input_error_;
        return s;
    }

  private:
    explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
    bool failed_ = false;
    bool input_error_ = false;
    std::string message_;
};

template <class T>
class Result {
  public:
    Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error
    bool ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return ok(); }
    const Status& status() const {
        static const Status kOk;
        return ok() ? kOk : std::get<Status>(v_);
    }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }

  private:
    std::variant<T, Status> v_;
};

}  // namespace ggdiff

// Returns early from the enclosing function when a Status-returning expression fails.
#define GGDIFF_TRY(expr)               \
    do {                               \
        ::ggdiff::Status _st = (expr); \
        if (!_st.ok()) return _st;     \
    } while (0)
