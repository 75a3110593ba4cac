// Status: the result of an internal operation, with a message a person can act on.
// Internal functions return [[nodiscard]] Status; WEFT_TRY propagates a failure and records the
// call site (visible at TRACE). No exception crosses the C API: src/core turns a Status into a
// weftResult_t and the message into weftGetLastError's text.
#ifndef WEFT_BASE_STATUS_H_
#define WEFT_BASE_STATUS_H_

#include <cstdarg>
#include <memory>
#include <string>

#include "weft/weft.h"

namespace weft {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(const Status& other) : code_(other.code_), detail_(other.copyDetail()) {}
  Status(Status&&) noexcept = default;
  Status& operator=(const Status& other) {
    if (this != &other) code_ = other.code_, detail_ = other.copyDetail();
    return *this;
  }
  Status& operator=(Status&&) noexcept = default;
  static Status ok() { return Status(); }
  static Status error(weftResult_t code, std::string message);

  bool isOk() const { return code_ == weftSuccess; }
  weftResult_t code() const { return code_; }
  const std::string& message() const { return detail_ ? detail_->message : noText(); }
  // Call sites this failure passed through, innermost first ("file:line <- file:line").
  const std::string& trace() const { return detail_ ? detail_->trace : noText(); }

  Status&& withSite(const char* file, int line) &&;
  // Prefixes the message with context, e.g. "allreduce #12: " + message.
  Status&& withPrefix(const std::string& prefix) &&;
  Status&& withSuffix(const std::string& suffix) &&;

 private:
  // The texts live behind a pointer, allocated only for a failure: a success (what every call
  // on the fast path returns, many times over) is a code and a null pointer to make, move and
  // destroy, where two strings cost tens of instructions each time.
  struct Detail {
    std::string message;
    std::string trace;
  };
  static const std::string& noText();
  std::unique_ptr<Detail> copyDetail() const { return detail_ ? std::make_unique<Detail>(*detail_) : nullptr; }
  Detail& detail();

  weftResult_t code_ = weftSuccess;
  std::unique_ptr<Detail> detail_;
};

// printf-style constructor: return WEFT_ERROR(weftSystemError, "shm_open(%s): %s", name, why);
Status makeError(weftResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Text for errno values, thread-safe.
std::string errnoText(int err);

// printf into a std::string of any length (the one formatter behind messages and errors).
std::string formatText(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string formatTextV(const char* fmt, va_list args);

}  // namespace weft

#define WEFT_ERROR(code, ...) (::weft::makeError((code), __VA_ARGS__).withSite(__FILE__, __LINE__))

#define WEFT_TRY(expr)                                                      \
  do {                                                                      \
    ::weft::Status weft_try_status_ = (expr);                               \
    if (!weft_try_status_.isOk()) {                                        \
      return std::move(weft_try_status_).withSite(__FILE__, __LINE__);     \
    }                                                                       \
  } while (0)

#endif  // WEFT_BASE_STATUS_H_
