// libfabric as a detection source: optional, and when present it lists providers per NIC.
#include <gtest/gtest.h>

#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace detect {
namespace {

TEST(DetectLibfabric, MissingLibraryIsAbsentNotAnError) {
  Inventory inv;
  DetectSourceResult r = readLibfabric("libfabric-does-not-exist.so.9", &inv);
  EXPECT_EQ(r.state, SourceState::kAbsent);
  EXPECT_NE(r.detail.find("libfabric not found"), std::string::npos) << r.detail;
  EXPECT_TRUE(inv.ports.empty());
}

TEST(DetectLibfabric, InstalledLibraryListsProviders) {
  Inventory inv;
  DetectSourceResult r = readLibfabric("libfabric.so.1", &inv);
  if (r.state == SourceState::kAbsent) GTEST_SKIP() << "libfabric is not installed here: " << r.detail;
  EXPECT_EQ(r.state, SourceState::kUsed) << r.detail;
  // Debian's libfabric has the tcp (with ofi_rxm for RDM) and shm providers.
  EXPECT_TRUE(r.detail.find("tcp") != std::string::npos || r.detail.find("shm") != std::string::npos) << r.detail;
}

}  // namespace
}  // namespace detect
}  // namespace topo
}  // namespace weft
