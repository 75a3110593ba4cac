#include <algorithm>
#include <mutex>

#include "transports/transport.h"

namespace weft {
namespace {

struct Entry {
  std::string name;
  int priority;
  TransportFactory factory;
};

std::mutex& registryMutex() {
  static std::mutex mu;
  return mu;
}

std::vector<Entry>& registry() {
  static std::vector<Entry> entries;
  return entries;
}

}  // namespace

void registerTransport(const char* name, int priority, TransportFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().push_back({name, priority, std::move(factory)});
  std::stable_sort(registry().begin(), registry().end(),
                   [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
}

std::vector<std::unique_ptr<Transport>> makeTransports() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::unique_ptr<Transport>> out;
  for (const auto& e : registry()) out.push_back(e.factory());
  return out;
}

}  // namespace weft
