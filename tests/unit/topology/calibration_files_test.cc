// The cost model on the machines as their topology files describe them (tests/fixtures/topo),
// end to end: file -> system -> paths -> search -> predicted ring all-reduce busbw at 1 GiB,
// within 10 % of the published figures (../shared/reference/formats.md section 6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "topology/cost_model.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

std::string fixture(const char* name) {
  return std::string(WEFT_TESTS_DIR) + "/fixtures/topo/" + name;
}

double ringAllReduceBusBw(const char* file, int nodes) {
  System sys;
  Status s = readTopologyFile(fixture(file), &sys);
  EXPECT_TRUE(s.isOk()) << s.message();
  Cluster cluster = Cluster::uniform(sys, nodes);
  SearchResult topo = search(cluster);
  CostInput in;
  in.cluster = &cluster;
  in.topo = &topo;
  in.collective = coll::CollKind::kAllReduce;
  in.algorithm = coll::Algo::kRing;
  in.protocol = Protocol::kSimple;
  in.bytes = int64_t{1} << 30;
  return predict(in).busBwGBs;
}

void expectWithin10Percent(const char* file, int nodes, double published) {
  double predicted = ringAllReduceBusBw(file, nodes);
  std::printf("%s x%d: predicted %.1f GB/s, published %.1f GB/s (%+.1f%%)\n", file, nodes, predicted, published,
              100.0 * (predicted - published) / published);
  EXPECT_LE(std::fabs(predicted - published), 0.10 * published) << file;
}

TEST(CalibrationFromFiles, DgxH100) { expectWithin10Percent("dgx-h100.xml", 1, 367.5); }
TEST(CalibrationFromFiles, DgxA100) { expectWithin10Percent("dgx-a100.xml", 1, 230.0); }
TEST(CalibrationFromFiles, Mi300x) { expectWithin10Percent("mi300x.xml", 1, 317.5); }
TEST(CalibrationFromFiles, TwoDgxH100Nodes) { expectWithin10Percent("dgx-h100.xml", 2, 377.5); }

}  // namespace
}  // namespace topo
}  // namespace weft
