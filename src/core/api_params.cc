// Parameters through the C API: weftParamCount / weftParamInfo / weftParamGet, over the table of
// base/params_table.h (params::all()). The names and types never change, so they are kept once
// in static storage; values are read again at each call, the way Weft reads them.
#include <cstring>
#include <string>
#include <vector>

#include "base/params.h"
#include "core/api_entry.h"
#include "core/call_context.h"

namespace weft {
namespace core {
namespace capi {
namespace {

struct ParamName {
  std::string name;
  weftParamType_t type;
};

weftParamType_t typeOf(const std::string& type) {
  if (type == "int64_t") return weftParamInt64;
  if (type == "bool") return weftParamBool;
  return weftParamString;
}

const std::vector<ParamName>& names() {
  static const std::vector<ParamName>* table = [] {
    auto* t = new std::vector<ParamName>();  // never destroyed: names may be read at exit
    for (const params::ParamInfo& p : params::all()) t->push_back({p.env, typeOf(p.type)});
    return t;
  }();
  return *table;
}

Status info(const Call& call, int index, const char** name, weftParamType_t* type) {
  WEFT_TRY(call.checkOutput(name, "name"));
  WEFT_TRY(call.checkOutput(type, "type"));
  const int count = static_cast<int>(names().size());
  if (index < 0 || index >= count) {
    return call.error(weftInvalidArgument, "index %d is not a parameter's: there are %d (0 .. %d)", index, count,
                      count - 1);
  }
  *name = names()[index].name.c_str();
  *type = names()[index].type;
  return Status::ok();
}

Status get(const Call& call, const char* name, char* value, size_t valueBytes, size_t* length) {
  WEFT_TRY(call.checkOutput(name, "name"));
  WEFT_TRY(call.checkOutput(length, "length"));
  if (value == nullptr && valueBytes != 0) {
    return call.error(weftInvalidArgument, "value is NULL but valueBytes is %zu; pass 0 to ask for the length",
                      valueBytes);
  }
  for (const params::ParamInfo& p : params::all()) {
    if (p.env != name) continue;
    *length = p.value.size();
    if (value == nullptr) return Status::ok();
    if (valueBytes <= p.value.size()) {
      return call.error(weftInvalidArgument, "%s is \"%s\": %zu bytes with its NUL, more than valueBytes (%zu)", name,
                        p.value.c_str(), p.value.size() + 1, valueBytes);
    }
    std::memcpy(value, p.value.c_str(), p.value.size() + 1);
    return Status::ok();
  }
  return call.error(weftInvalidArgument,
                    "\"%s\" is not a Weft parameter; weftParamInfo lists them (so does weft-topo --params)", name);
}

}  // namespace

weftResult_t paramCount(int* count) {
  Call call(nullptr, "weftParamCount");
  Status s = call.checkOutput(count, "count");
  if (s.isOk()) *count = static_cast<int>(names().size());
  return call.finish(s);
}

weftResult_t paramInfo(int index, const char** name, weftParamType_t* type) {
  Call call(nullptr, "weftParamInfo");
  return call.finish(info(call, index, name, type));
}

weftResult_t paramGet(const char* name, char* value, size_t valueBytes, size_t* length) {
  Call call(nullptr, "weftParamGet");
  return call.finish(get(call, name, value, valueBytes, length));
}

}  // namespace capi
}  // namespace core
}  // namespace weft
