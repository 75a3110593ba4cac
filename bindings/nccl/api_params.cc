// libnccl.so.2: NCCL's parameter API (ncclParam*, NCCL 2.30+) over Weft's parameter table
// (weftParamCount / weftParamInfo / weftParamGet). The keys are Weft's variable names, e.g.
// "WEFT_TIMEOUT_S" (ncclParamGetAllParameterKeys lists them); an NCCL_X key Weft has as WEFT_X is
// refused with that name suggested, since the two may not mean the same.
//
// Typed reads: integer parameters, and booleans as 0 / 1, read with any ncclParamGetI* / U* that
// holds the value; strings only with ncclParamGetStr. ncclParamGet copies the value's bytes:
// an int64_t for integers, one byte for booleans, the characters and their NUL for strings.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "shim.h"

using namespace weft::nccl;

// What an ncclParamHandle_t points to: one parameter of Weft's table.
struct ncclParamHandle {
  const char* name;  // Weft's static storage
  weftParamType_t type;
};

namespace {

const std::deque<ncclParamHandle>& handles() {
  static const std::deque<ncclParamHandle>* table = [] {
    auto* t = new std::deque<ncclParamHandle>();  // never destroyed: handles outlive main's return
    int count = 0;
    if (weftParamCount(&count) != weftSuccess) return t;
    for (int i = 0; i < count; ++i) {
      ncclParamHandle h{nullptr, weftParamString};
      if (weftParamInfo(i, &h.name, &h.type) == weftSuccess) t->push_back(h);
    }
    return t;
  }();
  return *table;
}

const ncclParamHandle* byName(const char* key) {
  for (const ncclParamHandle& h : handles()) {
    if (std::strcmp(h.name, key) == 0) return &h;
  }
  return nullptr;
}

ncclResult_t unknownKey(const char* fn, const char* key) {
  if (std::strncmp(key, "NCCL_", 5) == 0) {
    std::string weft = std::string("WEFT_") + (key + 5);
    if (byName(weft.c_str()) != nullptr) {
      return fail(ncclInvalidArgument,
                  "%s: \"%s\" is not a parameter of Weft's libnccl.so.2; Weft has %s, which may not mean the same: "
                  "ask for it by that name",
                  fn, key, weft.c_str());
    }
  }
  return fail(ncclInvalidArgument,
              "%s: \"%s\" is not a parameter of Weft's libnccl.so.2; its parameters are Weft's WEFT_* variables "
              "(ncclParamGetAllParameterKeys lists them)",
              fn, key);
}

// The handle, if it is one of ours (a stray pointer is refused, never read).
bool knownHandle(ncclParamHandle_t h, const char* fn) {
  for (const ncclParamHandle& mine : handles()) {
    if (&mine == h) return true;
  }
  fail(ncclInvalidArgument, "%s: handle %p was not returned by ncclParamBind", fn, static_cast<void*>(h));
  return false;
}

// The parameter's value now, as Weft's text.
ncclResult_t readText(const char* name, std::string* text) {
  size_t length = 0;
  weftResult_t r = weftParamGet(name, nullptr, 0, &length);
  if (r != weftSuccess) return fromWeft(r);
  std::vector<char> buf(length + 1);
  r = weftParamGet(name, buf.data(), buf.size(), &length);
  if (r != weftSuccess) return fromWeft(r);
  text->assign(buf.data(), length);
  return ncclSuccess;
}

// An integer or boolean parameter's value as int64_t.
ncclResult_t readInteger(ncclParamHandle_t h, const char* fn, int64_t* out) {
  if (h->type == weftParamString) {
    return fail(ncclInvalidArgument, "%s: %s is a string parameter; read it with ncclParamGetStr", fn, h->name);
  }
  std::string text;
  ncclResult_t r = readText(h->name, &text);
  if (r != ncclSuccess) return r;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') {
    return fail(ncclInternalError, "%s: Weft gave %s as \"%s\", which is not an integer", fn, h->name, text.c_str());
  }
  *out = v;
  return ncclSuccess;
}

template <typename T>
ncclResult_t getTyped(ncclParamHandle_t h, T* out, const char* fn, const char* typeName) {
  if (!knownHandle(h, fn)) return ncclInvalidArgument;
  if (out == nullptr) return fail(ncclInvalidArgument, "%s: out is NULL", fn);
  int64_t v = 0;
  ncclResult_t r = readInteger(h, fn, &v);
  if (r != ncclSuccess) return r;
  const bool fits = std::is_signed<T>::value
                        ? v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                              v <= static_cast<int64_t>(std::numeric_limits<T>::max())
                        : v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (!fits) {
    return fail(ncclInvalidArgument, "%s: %s is %lld, which %s cannot hold; read it with ncclParamGetI64", fn, h->name,
                static_cast<long long>(v), typeName);
  }
  *out = static_cast<T>(v);
  return ncclSuccess;
}

}  // namespace

WEFT_NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  if (out == nullptr) return fail(ncclInvalidArgument, "ncclParamBind: out is NULL");
  *out = nullptr;
  if (key == nullptr) return fail(ncclInvalidArgument, "ncclParamBind: key is NULL");
  const ncclParamHandle* h = byName(key);
  if (h == nullptr) return unknownKey("ncclParamBind", key);
  *out = const_cast<ncclParamHandle_t>(h);
  return ncclSuccess;
}

WEFT_NCCL_API(ncclResult_t, ncclParamGetI8, ncclParamHandle_t h, int8_t* out) {
  return getTyped(h, out, "ncclParamGetI8", "int8_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetI16, ncclParamHandle_t h, int16_t* out) {
  return getTyped(h, out, "ncclParamGetI16", "int16_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetI32, ncclParamHandle_t h, int32_t* out) {
  return getTyped(h, out, "ncclParamGetI32", "int32_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetI64, ncclParamHandle_t h, int64_t* out) {
  return getTyped(h, out, "ncclParamGetI64", "int64_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetU8, ncclParamHandle_t h, uint8_t* out) {
  return getTyped(h, out, "ncclParamGetU8", "uint8_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetU16, ncclParamHandle_t h, uint16_t* out) {
  return getTyped(h, out, "ncclParamGetU16", "uint16_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetU32, ncclParamHandle_t h, uint32_t* out) {
  return getTyped(h, out, "ncclParamGetU32", "uint32_t");
}
WEFT_NCCL_API(ncclResult_t, ncclParamGetU64, ncclParamHandle_t h, uint64_t* out) {
  return getTyped(h, out, "ncclParamGetU64", "uint64_t");
}

// The text stays valid until this thread's next ncclParamGetStr.
WEFT_NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  static thread_local std::string text;
  if (!knownHandle(h, "ncclParamGetStr")) return ncclInvalidArgument;
  if (out == nullptr) return fail(ncclInvalidArgument, "ncclParamGetStr: out is NULL");
  ncclResult_t r = readText(h->name, &text);
  if (r == ncclSuccess) *out = text.c_str();
  return r;
}

WEFT_NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  const char* fn = "ncclParamGet";
  if (!knownHandle(h, fn)) return ncclInvalidArgument;
  if (len == nullptr) return fail(ncclInvalidArgument, "%s: len is NULL", fn);
  if (maxLen < 0 || (out == nullptr && maxLen > 0)) {
    return fail(ncclInvalidArgument, "%s: out is %p with maxLen %d; pass a buffer of maxLen >= 0 bytes", fn, out,
                maxLen);
  }
  std::string bytes;
  if (h->type == weftParamString) {
    ncclResult_t r = readText(h->name, &bytes);
    if (r != ncclSuccess) return r;
    bytes.push_back('\0');
  } else {
    int64_t v = 0;
    ncclResult_t r = readInteger(h, fn, &v);
    if (r != ncclSuccess) return r;
    const int8_t flag = v != 0;
    bytes = h->type == weftParamBool ? std::string(reinterpret_cast<const char*>(&flag), 1)
                                     : std::string(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  *len = static_cast<int>(bytes.size());
  if (static_cast<size_t>(maxLen) < bytes.size()) {
    return fail(ncclInvalidArgument, "%s: %s takes %zu bytes, more than maxLen (%d)", fn, h->name, bytes.size(),
                maxLen);
  }
  std::memcpy(out, bytes.data(), bytes.size());
  return ncclSuccess;
}

// The text stays valid until this thread's next ncclParamGetParameter.
WEFT_NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  static thread_local std::string text;
  const char* fn = "ncclParamGetParameter";
  if (key == nullptr || value == nullptr || valueLen == nullptr) {
    return fail(ncclInvalidArgument, "%s: key, value and valueLen must not be NULL (key %p, value %p, valueLen %p)", fn,
                static_cast<const void*>(key), static_cast<void*>(value), static_cast<void*>(valueLen));
  }
  const ncclParamHandle* h = byName(key);
  if (h == nullptr) return unknownKey(fn, key);
  ncclResult_t r = readText(h->name, &text);
  if (r != ncclSuccess) return r;
  *value = text.c_str();
  *valueLen = static_cast<int>(text.size());
  return ncclSuccess;
}

// The table stays valid until this thread's next call (the names themselves never change).
WEFT_NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  static thread_local std::vector<const char*> keys;
  if (table == nullptr || tableLen == nullptr) {
    return fail(ncclInvalidArgument, "ncclParamGetAllParameterKeys: table and tableLen must not be NULL");
  }
  keys.clear();
  for (const ncclParamHandle& h : handles()) keys.push_back(h.name);
  *table = keys.data();
  *tableLen = static_cast<int>(keys.size());
  return ncclSuccess;
}

// One INFO line per parameter (NCCL_DEBUG=INFO or WEFT_DEBUG=INFO shows them).
WEFT_NCCL_API(void, ncclParamDumpAll, void) {
  static const char* const kTypes[] = {"integer", "boolean", "string"};
  for (const ncclParamHandle& h : handles()) {
    std::string text;
    if (readText(h.name, &text) != ncclSuccess) continue;
    const bool known = h.type >= weftParamInt64 && h.type <= weftParamString;
    logInfo("parameter %s = \"%s\" (%s)", h.name, text.c_str(), known ? kTypes[h.type] : "?");
  }
}
