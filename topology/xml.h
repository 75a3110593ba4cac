// A small XML reader for topology files (topo_file.cc is its caller). No external library.
//
// It reads what NCCL and RCCL write and what people type by hand: elements, attributes in
// single or double quotes, self-closing tags, comments, <?xml ...?> and other processing
// instructions, a <!DOCTYPE ...> line, CDATA, and the five predefined entities plus numeric
// character references. Text between elements is ignored (topology files carry none). It is
// strict about syntax -- every error names the source, the line and what was expected -- and
// bounded: input size, nesting depth and element count are limited, so no input makes it
// recurse deeply, allocate without bound or read out of range.
#ifndef WEFT_TOPOLOGY_XML_H_
#define WEFT_TOPOLOGY_XML_H_

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"

namespace weft {
namespace topo {

struct XmlAttribute {
  std::string name;
  std::string value;  // entities resolved, whitespace characters turned into spaces
  int line = 0;
};

struct XmlElement {
  std::string name;
  int line = 0;  // line of the '<' that opens it
  std::vector<XmlAttribute> attributes;
  std::vector<XmlElement> children;

  // The attribute of that name, or nullptr.
  const XmlAttribute* attribute(const char* attrName) const;
};

struct XmlLimits {
  size_t maxBytes = 16u << 20;    // a real topology file is a few tens of KiB
  int maxDepth = 64;              // system > cpu > pci > ... nests about 10 deep in practice
  size_t maxElements = 1u << 16;  // NCCL's own reader stops at 4096
  size_t maxAttributes = 256;     // per element; NCCL's have at most a dozen
};

// Parses `text` into its root element. Errors are weftInvalidArgument with messages such as
// "topo.xml:12: expected '>' to close <gpu ...>" or "topo.xml: unclosed <pci> opened at line 5";
// `sourceName` is the file name shown ("" shows "line 12: ...").
[[nodiscard]] Status parseXml(const std::string& text, const std::string& sourceName, XmlElement* root,
                              const XmlLimits& limits = XmlLimits());

// "topo.xml:12" or, without a source name, "line 12".
std::string xmlWhere(const std::string& sourceName, int line);

// A name or value as a message shows it: at most `maxLen` bytes, control characters as '?'.
std::string xmlShown(const std::string& text, size_t maxLen = 48);

// Text safe inside a double-quoted attribute value (& < > " and control characters escaped).
std::string xmlEscape(const std::string& text);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_XML_H_
