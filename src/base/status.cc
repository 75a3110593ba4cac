#include "base/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

namespace weft {

Status Status::error(weftResult_t code, std::string message) {
  Status s;
  s.code_ = code == weftSuccess ? weftInternalError : code;
  s.message_ = std::move(message);
  return s;
}

Status&& Status::withSite(const char* file, int line) && {
  if (!isOk()) {
    const char* base = std::strrchr(file, '/');
    if (!trace_.empty()) trace_ += " <- ";
    trace_ += (base ? base + 1 : file);
    trace_ += ":" + std::to_string(line);
  }
  return std::move(*this);
}

Status&& Status::withPrefix(const std::string& prefix) && {
  if (!isOk()) message_ = prefix + message_;
  return std::move(*this);
}

Status&& Status::withSuffix(const std::string& suffix) && {
  if (!isOk()) message_ += suffix;
  return std::move(*this);
}

Status makeError(weftResult_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return Status::error(code, buf);
}

std::string errnoText(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return text ? text : "unknown error";
}

}  // namespace weft
