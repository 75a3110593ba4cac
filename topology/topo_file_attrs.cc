// Typed attributes of topology-file elements with errors that name file:line (see
// topo_file_attrs.h); the reader in topo_file.cc builds on them.
#include "topology/topo_file_attrs.h"

#include <cstdarg>
#include <cstdio>

#include "base/log.h"
#include "topology/system.h"
#include "topology/topo_file_values.h"

namespace weft {
namespace topo {

Status TopoAttrReader::fail(int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string what = formatTextV(fmt, args);
  va_end(args);
  return WEFT_ERROR(weftInvalidArgument, "%s: %s", where(line).c_str(), what.c_str());
}

Status TopoAttrReader::badValue(const XmlElement& e, const XmlAttribute& a, const char* expected) {
  return fail(a.line, "attribute %s=\"%s\" of <%s> is not %s", xmlShown(a.name).c_str(), xmlShown(a.value).c_str(),
              e.name.c_str(), expected);
}

void TopoAttrReader::note(const XmlElement& e, std::initializer_list<const char*> known) const {
  for (const XmlAttribute& a : e.attributes) {
    bool isKnown = false;
    for (const char* k : known) isKnown = isKnown || a.name == k;
    if (!isKnown) {
      WEFT_LOG(kTrace, kGraph, "%s: attribute %s of <%s> ignored", where(a.line).c_str(), xmlShown(a.name).c_str(),
               e.name.c_str());
    }
  }
}

void TopoAttrReader::skipElement(const XmlElement& e, const XmlElement& parent) const {
  WEFT_LOG(kInfo, kGraph, "%s: <%s> inside <%s> is not part of the topology format; skipped", where(e.line).c_str(),
           xmlShown(e.name).c_str(), parent.name.c_str());
}

const XmlAttribute* TopoAttrReader::given(const XmlElement& e, const char* name) {
  const XmlAttribute* a = e.attribute(name);
  return a == nullptr || trimBlanks(a->value).empty() ? nullptr : a;
}

Status TopoAttrReader::readInt(const XmlElement& e, const char* name, long long lo, long long hi, long long* out) {
  const XmlAttribute* a = given(e, name);
  if (a == nullptr) return Status::ok();
  long long v = 0;
  if (!parseInteger(a->value, &v)) return badValue(e, *a, "an integer");
  if (v < lo || v > hi) {
    char range[96];
    std::snprintf(range, sizeof(range), "an integer in %lld..%lld", lo, hi);
    return badValue(e, *a, range);
  }
  *out = v;
  return Status::ok();
}

Status TopoAttrReader::readHex(const XmlElement& e, const char* name, uint64_t max, uint64_t* out) {
  const XmlAttribute* a = given(e, name);
  if (a == nullptr) return Status::ok();
  uint64_t v = 0;
  if (!parseHex(a->value, &v) || v > max) return badValue(e, *a, max > 0xffffffffu ? "a hex number" : "a hex id");
  *out = v;
  return Status::ok();
}

Status TopoAttrReader::readHex32(const XmlElement& e, const char* name, uint32_t max, uint32_t* out) {
  uint64_t v = *out;
  WEFT_TRY(readHex(e, name, max, &v));
  *out = static_cast<uint32_t>(v);
  return Status::ok();
}

Status TopoAttrReader::readReal(const XmlElement& e, const char* name, double max, double* out) {
  const XmlAttribute* a = given(e, name);
  if (a == nullptr) return Status::ok();
  double v = 0;
  std::string rest;
  if (!parseRealPrefix(a->value, &v, &rest) || !rest.empty() || v < 0 || v > max) {
    return badValue(e, *a, "a non-negative number");
  }
  *out = v;
  return Status::ok();
}

Status TopoAttrReader::readString(const XmlElement& e, const char* name, std::string* out) {
  const XmlAttribute* a = e.attribute(name);
  if (a != nullptr) *out = a->value;
  return Status::ok();
}

Status TopoAttrReader::readBusId(const XmlElement& e, const char* name, std::string* out) {
  const XmlAttribute* a = given(e, name);
  if (a == nullptr) return Status::ok();
  std::string id = normaliseBusId(trimBlanks(a->value));
  if (id.empty()) return badValue(e, *a, "a PCI bus id (expected e.g. \"0000:18:00.0\")");
  *out = id;
  return Status::ok();
}

Status TopoAttrReader::readLinkSpeed(const XmlElement& e, double* out) {
  const XmlAttribute* a = e.attribute("link_speed");
  if (a != nullptr && !parseLinkSpeed(a->value, out)) {
    return badValue(e, *a, "a PCIe link speed (expected e.g. \"16.0 GT/s PCIe\")");
  }
  return Status::ok();
}

Status TopoAttrReader::readWidth(const XmlElement& e, int* out) {
  const XmlAttribute* a = given(e, "link_width");
  if (a == nullptr) return Status::ok();
  std::string t = trimBlanks(a->value);
  if (!t.empty() && (t[0] == 'x' || t[0] == 'X')) t.erase(0, 1);  // "x16"
  long long v = 0;
  if (!parseInteger(t, &v) || v < 0 || v > 64) return badValue(e, *a, "a PCIe link width in lanes (0..64)");
  *out = static_cast<int>(v);
  return Status::ok();
}

}  // namespace topo
}  // namespace weft
