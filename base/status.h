// Status and Result<T>: the one error idiom of megascale.
//
// Library code never prints and never exits on bad input: it returns a Status whose message names
// the input (a field path such as "layout.tp"), the offending value and the rule it broke. Only the
// CLI turns a Status into a message on stderr and an exit code. Thread-safe as values (no shared state).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace megascale {

// What a bad-field error says, as data (a caller that needs the field or the rule reads them here,
// never back out of the message).
struct FieldError {
  std::string field;  // the input's path, e.g. "layout.tp" or "faults.failures[0].time_s"
  std::string value;  // the offending value as the user wrote it (or as printed)
  std::string rule;   // what it must be
};

class Status {
 public:
  enum class Code { kOk = 0, kInvalidInput, kNotFound, kIoError, kInternal, kFailedRun, kStopped };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidInput(std::string msg) { return Status(Code::kInvalidInput, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status IoError(std::string msg) { return Status(Code::kIoError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  // The job itself failed (a simulated or real rank died): not an input error.
  static Status FailedRun(std::string msg) { return Status(Code::kFailedRun, std::move(msg)); }
  // The work stopped, cleanly, because the process was asked to (SIGINT, SIGTERM): exit 128 + signal.
  static Status Stopped(int signal, std::string msg) {
    Status s(Code::kStopped, std::move(msg));
    s.signal_ = signal;
    return s;
  }

  // Builds the canonical bad-field message: "<field> = <value>: <rule>".
  static Status BadField(const std::string& field, const std::string& value, const std::string& rule) {
    Status s = InvalidInput(field + " = " + value + ": " + rule);
    s.field_error_ = std::make_shared<const FieldError>(FieldError{field, value, rule});
    return s;
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const { return ok() ? "OK" : message_; }
  // The field, value and rule of a BadField error; nullptr for every other status.
  const FieldError* field_error() const { return field_error_.get(); }
  // The signal of a Stopped status; 0 for every other.
  int signal() const { return signal_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
  std::shared_ptr<const FieldError> field_error_;  // shared: a Status is copied as it travels up
  int signal_ = 0;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}     // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace megascale

// Propagates a non-OK Status to the caller.
#define MS_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::megascale::Status ms_status_ = (expr);     \
    if (!ms_status_.ok()) return ms_status_;     \
  } while (0)

#define MS_CONCAT_INNER(a, b) a##b
#define MS_CONCAT(a, b) MS_CONCAT_INNER(a, b)
// Declares `lhs` from a Result, or returns its Status.
#define MS_ASSIGN_OR_RETURN(lhs, expr) MS_ASSIGN_OR_RETURN_IMPL(MS_CONCAT(ms_result_, __LINE__), lhs, expr)
#define MS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
