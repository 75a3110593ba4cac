// Attribute values of topology files as text: integers (decimal or 0x hex), hex ids, real
// numbers, PCIe link speeds. Locale-independent (std::from_chars); used by topo_file_attrs.cc
// and topo_file.cc.
#ifndef WEFT_TOPOLOGY_TOPO_FILE_VALUES_H_
#define WEFT_TOPOLOGY_TOPO_FILE_VALUES_H_

#include <cstdint>
#include <string>

namespace weft {
namespace topo {

// Without leading and trailing blanks.
std::string trimBlanks(const std::string& s);
// Case-insensitive prefix test.
bool startsWithNoCase(const std::string& s, const char* prefix);
// "42", "-1", "0x1f" (surrounding blanks allowed). False when not a number or out of range.
bool parseInteger(const std::string& text, long long* out);
// "0x10de" or "10de".
bool parseHex(const std::string& text, uint64_t* out);
// A finite number at the start of `text` ("16.0 GT/s" -> 16); *rest is what follows, trimmed.
bool parseRealPrefix(const std::string& text, double* out, std::string* rest);
// "32.0 GT/s PCIe", "16 GT/s", "8": GT/s per lane; "" and "Unknown" give 0. False otherwise.
bool parseLinkSpeed(const std::string& text, double* gts);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TOPO_FILE_VALUES_H_
