#include "base/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

namespace weft {

const std::string& Status::noText() {
  static const std::string empty;
  return empty;
}

Status::Detail& Status::detail() {
  if (!detail_) detail_ = std::make_unique<Detail>();
  return *detail_;
}

Status Status::error(weftResult_t code, std::string message) {
  Status s;
  s.code_ = code == weftSuccess ? weftInternalError : code;
  s.detail().message = std::move(message);
  return s;
}

Status&& Status::withSite(const char* file, int line) && {
  if (!isOk()) {
    const char* base = std::strrchr(file, '/');
    std::string& trace = detail().trace;
    if (!trace.empty()) trace += " <- ";
    trace += (base ? base + 1 : file);
    trace += ":" + std::to_string(line);
  }
  return std::move(*this);
}

Status&& Status::withPrefix(const std::string& prefix) && {
  if (!isOk()) detail().message.insert(0, prefix);
  return std::move(*this);
}

Status&& Status::withSuffix(const std::string& suffix) && {
  if (!isOk()) detail().message += suffix;
  return std::move(*this);
}

std::string formatTextV(const char* fmt, va_list args) {
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&text[0], text.size() + 1, fmt, again);
  va_end(again);
  return text;
}

std::string formatText(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string text = formatTextV(fmt, args);
  va_end(args);
  return text;
}

Status makeError(weftResult_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string text = formatTextV(fmt, args);
  va_end(args);
  return Status::error(code, std::move(text));
}

std::string errnoText(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return text ? text : "unknown error";
}

}  // namespace weft
