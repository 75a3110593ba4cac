// Typed attributes of one topology-file element, for the reader (topo_file.cc): each read
// leaves the value as it was when the attribute is absent or blank (NCCL reads those as
// unset), and refuses a malformed one with an error naming file:line, the attribute and what
// was expected. The text-to-value parsing itself is topo_file_values.h's.
#ifndef WEFT_TOPOLOGY_TOPO_FILE_ATTRS_H_
#define WEFT_TOPOLOGY_TOPO_FILE_ATTRS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/status.h"
#include "topology/xml.h"

namespace weft {
namespace topo {

class TopoAttrReader {
 public:
  // source: the file name errors and log lines give; it must outlive the reader.
  explicit TopoAttrReader(const std::string& source) : source_(source) {}

 protected:
  // "file:line" of the source.
  std::string where(int line) const { return xmlWhere(source_, line); }

  // An error at a line of the source: "file:line: " + the formatted text.
  Status fail(int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  // An error saying the attribute a of e is not what was expected.
  Status badValue(const XmlElement& e, const XmlAttribute& a, const char* expected);

  // Unknown attributes are worth a TRACE line: a newer NCCL may add some.
  void note(const XmlElement& e, std::initializer_list<const char*> known) const;
  // An element the format does not have, logged and left out.
  void skipElement(const XmlElement& e, const XmlElement& parent) const;

  // The attribute, or nullptr when it is absent or blank: real dumps write link_speed="" and
  // other empty values where the tool had nothing to say, and NCCL reads those as unset.
  static const XmlAttribute* given(const XmlElement& e, const char* name);

  // An integer (decimal or 0x hex) in lo..hi.
  Status readInt(const XmlElement& e, const char* name, long long lo, long long hi, long long* out);
  template <typename T>
  Status readIntAs(const XmlElement& e, const char* name, long long lo, long long hi, T* out) {
    long long v = static_cast<long long>(*out);
    WEFT_TRY(readInt(e, name, lo, hi, &v));
    *out = static_cast<T>(v);
    return Status::ok();
  }
  // A hex number ("0x10de" or "10de") up to max.
  Status readHex(const XmlElement& e, const char* name, uint64_t max, uint64_t* out);
  Status readHex32(const XmlElement& e, const char* name, uint32_t max, uint32_t* out);
  // A non-negative real number up to max.
  Status readReal(const XmlElement& e, const char* name, double max, double* out);
  // The text as written (an empty value included).
  Status readString(const XmlElement& e, const char* name, std::string* out);
  // A PCI bus id, normalised ("0000:18:00.0").
  Status readBusId(const XmlElement& e, const char* name, std::string* out);
  // link_speed: GT/s per lane ("16.0 GT/s PCIe"); "" and "Unknown" give 0.
  Status readLinkSpeed(const XmlElement& e, double* out);
  // link_width: lanes, 0..64 ("16" or "x16").
  Status readWidth(const XmlElement& e, int* out);

 private:
  const std::string& source_;
};

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TOPO_FILE_ATTRS_H_
