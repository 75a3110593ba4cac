/*
 * Weft network plugin ABI, version 1: what a vendor implements to carry Weft's inter-host
 * traffic over its own network without rebuilding Weft (as NCCL's net_vN.h and libfabric's
 * provider ops tables do).
 *
 * A plugin is a shared library that exports one symbol, WEFT_NET_PLUGIN_SYMBOL_V1
 * ("weftNetPlugin_v1"), a weftNet_v1_t whose first field is its own size. Weft loads it when
 * WEFT_NET_PLUGIN=/path/to/libfoo.so is set, checks size and version, calls init() once per
 * process, and then uses it for every pair of ranks that talks over the network (ranks on
 * other hosts, or every pair when WEFT_SHM_DISABLE=1).
 *
 * Compatibility rules (libfabric's): entries are only ever appended. Weft accepts any table
 * whose size is at least sizeof(weftNet_v1_t) as of version 1 and uses the entries it knows;
 * a new field a newer Weft adds is used only when the plugin's size covers it. A plugin built
 * against an older header keeps working. Incompatible changes get a new symbol (weftNetPlugin_v2)
 * and a new header, net_v2.h, beside this one.
 *
 * The model (NCCL's): communications are one-directional. The receiving rank listen()s and
 * hands the opaque handle it gets to the sending rank out of band (Weft's bootstrap carries
 * it); the sender connect()s with it and the receiver accept()s. Messages on one
 * communication arrive in the order they were sent, each whole. Everything is non-blocking:
 * connect(), accept(), isend() and irecv() may return weftSuccess with a NULL result, which
 * means "not now, call again"; test() polls a request. Weft calls every function of one
 * communication from one thread at a time, but different communications from different
 * threads.
 *
 * Building one needs this header and weft.h only, e.g.
 *   c++ -shared -fPIC -fvisibility=hidden -I<weft>/include foo_net.cc -o libweft-net-foo.so
 * with `extern "C" __attribute__((visibility("default"))) const weftNet_v1_t weftNetPlugin_v1 =
 * {.size = sizeof(weftNet_v1_t), .version = WEFT_NET_PLUGIN_VERSION_V1, ...};`
 * (tests/unit/transports/plugins/loopback_net_plugin.cc is a complete example over TCP).
 *
 * Version 1 moves host memory: Weft hands the plugin its own staging buffers (device buffers
 * are staged through pinned host memory, as for the built-in transports). Registering memory
 * for zero-copy and device pointers (ptrSupport) are left to a later version.
 *
 * Results are weftResult_t (weft.h): weftSuccess, or weftSystemError (the OS or the network
 * refused), weftRemoteError (the peer closed or went away), weftInternalError (a bug).
 */
#ifndef WEFT_NET_V1_H_
#define WEFT_NET_V1_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_NET_PLUGIN_VERSION_V1 1
#define WEFT_NET_PLUGIN_SYMBOL_V1 "weftNetPlugin_v1"
/* The most bytes listen() may write into its handle. */
#define WEFT_NET_HANDLE_BYTES_V1 128

/* Log levels of the logger Weft passes to init(). */
#define WEFT_NET_LOG_WARN 1
#define WEFT_NET_LOG_INFO 2
#define WEFT_NET_LOG_TRACE 3

/* Memory a device reads and writes itself (properties.ptrSupport). */
#define WEFT_NET_PTR_HOST 0x1
#define WEFT_NET_PTR_DEVICE 0x2

/* Lines the plugin wants in Weft's log (printf format; Weft adds host, pid and "NET"). */
typedef void (*weftNetLogger_v1_t)(int level, const char* format, ...);

typedef struct {
  const char* name;    /* the device, for messages: "mlx5_0", "eth0" */
  const char* pciPath; /* its PCI path in sysfs, or NULL */
  int speedMbps;       /* link speed, for the cost model; 0: not known */
  int ptrSupport;      /* WEFT_NET_PTR_* */
  int maxComms;        /* communications it can hold at once; 0: no limit */
  int reserved;
} weftNetProperties_v1_t;

typedef struct weftNet_v1 {
  /* sizeof(weftNet_v1_t) as the plugin was compiled: always first. */
  size_t size;
  /* WEFT_NET_PLUGIN_VERSION_V1. */
  uint32_t version;
  uint32_t reserved;
  /* The plugin's name, for messages and the INFO line that says which transport a pair uses. */
  const char* name;

  /* Once per process, before anything else. */
  weftResult_t (*init)(weftNetLogger_v1_t logger);
  /* How many network devices this host has for Weft (at least 1 for the plugin to be used). */
  weftResult_t (*devices)(int* ndev);
  weftResult_t (*getProperties)(int dev, weftNetProperties_v1_t* props);

  /* Receiver: prepares to accept one connection on `dev`; writes at most
   * WEFT_NET_HANDLE_BYTES_V1 bytes of `handle` for the sender. */
  weftResult_t (*listen)(int dev, void* handle, void** listenComm);
  /* Sender: connects with the receiver's handle. *sendComm NULL: call again. */
  weftResult_t (*connect)(int dev, const void* handle, void** sendComm);
  /* Receiver: the connection, once the sender has come. *recvComm NULL: call again. */
  weftResult_t (*accept)(void* listenComm, void** recvComm);

  /* Starts sending `size` bytes at `data` (which stay unchanged until the request is done).
   * *request NULL: the plugin cannot take it now; call again. `tag` is informational in v1
   * (messages on one communication are matched in order). */
  weftResult_t (*isend)(void* sendComm, const void* data, size_t size, uint64_t tag, void** request);
  /* Starts receiving one message of at most `size` bytes into `data`. *request NULL: call
   * again. A longer message is an error (weftInternalError). */
  weftResult_t (*irecv)(void* recvComm, void* data, size_t size, uint64_t tag, void** request);
  /* Moves the request on; *done becomes 1 when it has completed, and then *size holds the
   * bytes sent or received, and the request is freed by the plugin. An error also ends the
   * request (weftRemoteError when the peer closed or went away). */
  weftResult_t (*test)(void* request, int* done, size_t* size);

  /* Each releases one communication; requests still open on it are abandoned. */
  weftResult_t (*closeSend)(void* sendComm);
  weftResult_t (*closeRecv)(void* recvComm);
  weftResult_t (*closeListen)(void* listenComm);
  /* Reserved for the end of the process; may be NULL. This Weft keeps a plugin loaded for the
   * life of the process and does not call it. */
  void (*finalize)(void);
} weftNet_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_NET_V1_H_ */
