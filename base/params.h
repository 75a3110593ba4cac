// Parameters: the only place that reads the environment. Every parameter is declared once in
// params_table.h; callers read it with weft::params::Name(), which parses the environment
// variable WEFT_<ENV> (a bad value is logged once and the default used).
#ifndef WEFT_BASE_PARAMS_H_
#define WEFT_BASE_PARAMS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace weft {
namespace params {

#define WEFT_PARAM(type, name, env, def, help) type name();
#include "base/params_table.h"
#undef WEFT_PARAM

struct ParamInfo {
  std::string env;           // full variable name, e.g. WEFT_TIMEOUT_S
  std::string type;          // "int64_t", "bool", "string"
  std::string defaultValue;  // as text
  std::string value;         // current value as text (the default when unset)
  bool isSet = false;        // the environment sets it
  std::string help;
};

// The rank (or size) a launcher other than Weft's own set: Open MPI's OMPI_COMM_WORLD_RANK /
// _SIZE, then PMI's PMI_RANK / PMI_SIZE. -1 when none is set to an integer. (These are not
// WEFT_* parameters, but the environment is read only here.)
int64_t launcherRank();
int64_t launcherSize();

// The whole table with current values, in declaration order.
std::vector<ParamInfo> all();

// WEFT_* variables in the environment that are not in the table, each with the closest
// known name ("WEFT_TIMEOUT" -> "WEFT_TIMEOUT_S"), or "" when nothing is close.
std::vector<std::pair<std::string, std::string>> unknownVariables();

// Logs a warning for each unknown WEFT_* variable, once per process.
void warnUnknownOnce();

}  // namespace params
}  // namespace weft

#endif  // WEFT_BASE_PARAMS_H_
