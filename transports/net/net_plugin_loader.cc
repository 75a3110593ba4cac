// Loading a network plugin (net_plugin.h): dlopen, the weftNetPlugin_v1 symbol, the table's
// size, version and entries, init() with Weft's logger; each failure a sentence naming the
// library and the way out.
#include <dlfcn.h>

#include <cstdarg>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "base/log.h"
#include "transports/net/net_plugin.h"

namespace weft {
namespace net {
namespace {

// The logger the plugin gets: its lines join Weft's log under NET.
void pluginLogger(int level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const std::string line = formatTextV(format, args);
  va_end(args);
  const char* text = line.c_str();
  if (level <= WEFT_NET_LOG_WARN) {
    WEFT_LOG(kWarn, kNet, "network plugin: %s", text);
  } else if (level == WEFT_NET_LOG_INFO) {
    WEFT_LOG(kInfo, kNet, "network plugin: %s", text);
  } else {
    WEFT_LOG(kTrace, kNet, "network plugin: %s", text);
  }
}

}  // namespace

const char* netResultName(weftResult_t r) {
  switch (r) {
    case weftSuccess:
      return "weftSuccess";
    case weftSystemError:
      return "weftSystemError";
    case weftInternalError:
      return "weftInternalError";
    case weftInvalidArgument:
      return "weftInvalidArgument";
    case weftInvalidUsage:
      return "weftInvalidUsage";
    case weftRemoteError:
      return "weftRemoteError";
    case weftTimeout:
      return "weftTimeout";
    default:
      return "an error code net_v1.h does not list";
  }
}

Status checkNetPluginTable(const weftNet_v1_t* t, const std::string& path) {
  if (t->size < sizeof(weftNet_v1_t)) {
    return WEFT_ERROR(weftInvalidArgument,
                      "WEFT_NET_PLUGIN=%s: its %s table is %zu bytes, but version 1 of include/weft/net_v1.h needs at "
                      "least %zu; rebuild the plugin against this Weft's net_v1.h",
                      path.c_str(), WEFT_NET_PLUGIN_SYMBOL_V1, t->size, sizeof(weftNet_v1_t));
  }
  if (t->version != WEFT_NET_PLUGIN_VERSION_V1) {
    return WEFT_ERROR(weftInvalidArgument,
                      "WEFT_NET_PLUGIN=%s: its %s table says version %u, but this symbol carries version %d; the "
                      "plugin is broken or was built for another Weft",
                      path.c_str(), WEFT_NET_PLUGIN_SYMBOL_V1, t->version, WEFT_NET_PLUGIN_VERSION_V1);
  }
  const std::pair<const char*, bool> required[] = {
      {"name", t->name != nullptr},
      {"init", t->init != nullptr},
      {"devices", t->devices != nullptr},
      {"getProperties", t->getProperties != nullptr},
      {"listen", t->listen != nullptr},
      {"connect", t->connect != nullptr},
      {"accept", t->accept != nullptr},
      {"isend", t->isend != nullptr},
      {"irecv", t->irecv != nullptr},
      {"test", t->test != nullptr},
      {"closeSend", t->closeSend != nullptr},
      {"closeRecv", t->closeRecv != nullptr},
      {"closeListen", t->closeListen != nullptr},
  };
  for (const auto& [field, set] : required) {
    if (!set) {
      return WEFT_ERROR(weftInvalidArgument,
                        "WEFT_NET_PLUGIN=%s: its %s table leaves %s unset; every entry but "
                        "finalize is required in version 1",
                        path.c_str(), WEFT_NET_PLUGIN_SYMBOL_V1, field);
    }
  }
  return Status::ok();
}

namespace {

// Checks `table`, keeps its v1 prefix in *plugin and starts it (init, devices); `path` names it
// in messages (a library, or "built-in").
Status adoptTable(const weftNet_v1_t* table, const std::string& path, NetPlugin* plugin) {
  WEFT_TRY(checkNetPluginTable(table, path));
  std::memcpy(&plugin->ops, table, sizeof(weftNet_v1_t));
  plugin->path = path;
  plugin->name = table->name;
  // A built-in table (builtinNetPlugin) is chosen by WEFT_NET, a library by WEFT_NET_PLUGIN.
  const bool builtin = path.rfind("built-in:", 0) == 0;
  const std::string who = builtin ? "WEFT_NET=" + plugin->name + "-plugin" : "WEFT_NET_PLUGIN=" + path;
  const char* wayOut = builtin ? "set WEFT_NET=socket" : "unset WEFT_NET_PLUGIN";
  weftResult_t r = plugin->ops.init(pluginLogger);
  if (r != weftSuccess) {
    return WEFT_ERROR(r, "%s (%s): init failed (%s); see the plugin's log lines above, or %s", who.c_str(),
                      plugin->name.c_str(), netResultName(r), wayOut);
  }
  r = plugin->ops.devices(&plugin->devices);
  if (r != weftSuccess || plugin->devices < 1) {
    return WEFT_ERROR(r != weftSuccess ? r : weftSystemError,
                      "%s (%s) offers no network device (%s, %d devices); see the log lines above, or %s", who.c_str(),
                      plugin->name.c_str(), netResultName(r), plugin->devices, wayOut);
  }
  weftNetProperties_v1_t props{};
  if (plugin->ops.getProperties(0, &props) == weftSuccess) {
    WEFT_LOG(kInfo, kNet, "network plugin %s loaded from %s: %d device(s), device 0 %s at %d Mb/s",
             plugin->name.c_str(), path.c_str(), plugin->devices, props.name ? props.name : "?", props.speedMbps);
  }
  return Status::ok();
}

Status loadOnce(const std::string& path, NetPlugin* plugin) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return WEFT_ERROR(weftSystemError,
                      "WEFT_NET_PLUGIN=%s cannot be loaded: %s; check the path, or unset "
                      "WEFT_NET_PLUGIN to use the built-in network transports",
                      path.c_str(), why ? why : "?");
  }
  const auto* table = static_cast<const weftNet_v1_t*>(dlsym(lib, WEFT_NET_PLUGIN_SYMBOL_V1));
  if (table == nullptr) {
    return WEFT_ERROR(weftInvalidArgument,
                      "WEFT_NET_PLUGIN=%s has no symbol %s: it is not a Weft network plugin of version 1 (see "
                      "include/weft/net_v1.h), or it exports it without C linkage",
                      path.c_str(), WEFT_NET_PLUGIN_SYMBOL_V1);
  }
  return adoptTable(table, path, plugin);
}

struct Loaded {
  Status status;
  std::unique_ptr<NetPlugin> plugin;
};

// Each plugin once per process, by key; failures are remembered and returned again.
Status once(const std::string& key, const std::function<Status(NetPlugin*)>& load, const NetPlugin** out) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;  // never freed: plugins stay loaded
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(key);
  if (it == loaded.end()) {
    Loaded l;
    l.plugin = std::make_unique<NetPlugin>();
    l.status = load(l.plugin.get());
    it = loaded.emplace(key, std::move(l)).first;
  }
  if (!it->second.status.isOk()) return it->second.status;
  *out = it->second.plugin.get();
  return Status::ok();
}

}  // namespace

Status loadNetPlugin(const std::string& path, const NetPlugin** out) {
  return once(path, [&path](NetPlugin* p) { return loadOnce(path, p); }, out);
}

Status builtinNetPlugin(const weftNet_v1_t* table, const NetPlugin** out) {
  const std::string key = std::string("built-in:") + (table->name ? table->name : "?");
  return once(key, [&](NetPlugin* p) { return adoptTable(table, key, p); }, out);
}

}  // namespace net
}  // namespace weft
