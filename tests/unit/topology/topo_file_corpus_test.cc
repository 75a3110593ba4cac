// Every input in the fuzz corpus (tests/fixtures/topo-corpus, seeded with the fixtures, small
// malformed files and whatever scripts/fuzz-topo found) goes through the parser: it must end
// in success or a clean weftInvalidArgument, and what parses must survive the writers (the
// properties fuzz/topo_file_fuzz.cc checks).
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "topo_file_test_util.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

using testing::countNodes;

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && name != "README") out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TopoFileCorpus, EveryInputParsesOrFailsCleanly) {
  std::vector<std::string> files = filesIn(testing::fixtureDir("topo-corpus"));
  ASSERT_GE(files.size(), 20u) << "the corpus is missing: " << testing::fixtureDir("topo-corpus");
  int parsed = 0, refused = 0;
  for (const std::string& path : files) {
    std::string text = testing::readText(path);
    System s;
    Status st = parseTopologyXml(text, "corpus.xml", &s);
    if (!st.isOk()) {
      ++refused;
      EXPECT_EQ(st.code(), weftInvalidArgument) << path;
      EXPECT_EQ(st.message().rfind("corpus.xml", 0), 0u) << path << ": " << st.message();
      continue;
    }
    ++parsed;
    std::string xml = writeTopologyXml(s, s.version);
    std::string json = writeTopologyJson(s);
    EXPECT_FALSE(json.empty());
    System back;
    Status again = parseTopologyXml(xml, "rewritten.xml", &back);
    ASSERT_TRUE(again.isOk()) << path << ": " << again.message() << "\n" << xml;
    for (NodeType t : {NodeType::kCpu, NodeType::kGpu, NodeType::kNic, NodeType::kNvSwitch}) {
      EXPECT_EQ(countNodes(back, t), countNodes(s, t)) << path << " " << nodeTypeName(t);
    }
    // Once written, the text is stable: writing what was read back gives the same text.
    EXPECT_EQ(writeTopologyXml(back, s.version), xml) << path;
    System other;
    ASSERT_TRUE(parseTopologyXml(writeTopologyXml(s, 3 - s.version), "other.xml", &other).isOk()) << path;
    System merged;
    EXPECT_TRUE(mergeTopology(s, s, &merged).isOk()) << path;
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace topo
}  // namespace weft
