// What tools may ask of the library without a communicator: the parameter table and the
// schedules an algorithm produces (weft-topo --params, --schedule).
#ifndef WEFT_CORE_INSPECT_H_
#define WEFT_CORE_INSPECT_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace weft {
namespace core {

// The parameter table as text: name, type, default, current value (marked when set), help.
std::string formatParameterTable();

struct ScheduleRequest {
  std::string collective = "allreduce";  // allreduce allgather reducescatter broadcast reduce alltoall
  std::string algorithm;                 // ring, tree, doubling, pairwise; "" = the collective's default
  int nRanks = 8;
  int64_t count = 0;                     // 0: 2 * nRanks elements, enough to show every block
  int channels = 1;
  int root = 0;
  bool verify = true;                    // also run the reference interpreter
};

// Every rank's schedule, formatted, and the interpreter's verdict; weftInvalidArgument for a
// request no algorithm serves.
Status formatSchedules(const ScheduleRequest& request, std::string* out);

}  // namespace core
}  // namespace weft

#endif  // WEFT_CORE_INSPECT_H_
