// weft_torch._C: the Python face of the backend. weft_torch/__init__.py registers
// create_process_group with torch.distributed as the creator of backend "weft".
#include <stdlib.h>

#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group.h"
#include "shared_memory_allocator.h"

namespace py = pybind11;

namespace {

// The shared-memory CPU allocator (shared_memory_allocator.h); weft_torch/__init__.py wraps these.
void bindAllocator(py::module_& m) {
  using weft_torch::SharedMemoryAllocator;
  m.def(
      "use_shared_memory_allocator",
      [](size_t threshold, size_t arena, size_t max) {
        weft_torch::SharedMemoryOptions o;
        o.thresholdBytes = threshold;
        o.arenaBytes = arena;
        o.maxBytes = max;
        SharedMemoryAllocator::instance().install(o);
      },
      py::arg("threshold_bytes"), py::arg("arena_bytes"), py::arg("max_bytes"));
  m.def("restore_cpu_allocator", [] { SharedMemoryAllocator::instance().uninstall(); });
  m.def("release_unused_shared_memory", [] { return SharedMemoryAllocator::instance().releaseUnused(); });
  m.def("shared_memory_allocator_stats", [] {
    const weft_torch::SharedMemoryStats s = SharedMemoryAllocator::instance().stats();
    py::dict d;
    d["installed"] = s.installed;
    d["arenas"] = s.arenas;
    d["arena_bytes"] = s.arenaBytes;
    d["live_blocks"] = s.liveBlocks;
    d["live_bytes"] = s.liveBytes;
    d["served"] = s.served;
    d["reused"] = s.reused;
    d["forwarded"] = s.forwarded;
    d["fallbacks"] = s.fallbacks;
    d["last_fallback"] = s.lastFallback;
    d["communicators"] = s.communicators;
    d["registrations"] = s.registrations;
    return d;
  });
}

// weft_torch.Options: what pg_options= can set for a "weft" group (process_group.h, WeftOptions).
void bindOptions(py::module_& m) {
  using weft_torch::WeftOptions;
#ifdef WEFT_TORCH_BACKEND_API
  py::class_<WeftOptions, c10d::Backend::Options, c10::intrusive_ptr<WeftOptions>> options(m, "Options", R"(
Options of a "weft" process group, passed as pg_options= to init_process_group or new_group.
  min_channels, max_channels: channels per collective (0: WEFT_MIN_CHANNELS / WEFT_MAX_CHANNELS)
  comm_name: the name Weft's log lines and errors show (default "torch.distributed")
The timeout is init_process_group's timeout=.)");
#else
  py::class_<WeftOptions, c10::intrusive_ptr<WeftOptions>> options(m, "Options", "Options of a \"weft\" process group");
  options.def_readwrite("_timeout", &WeftOptions::timeout);
#endif
  options.def(py::init<>())
      .def_readwrite("min_channels", &WeftOptions::minChannels)
      .def_readwrite("max_channels", &WeftOptions::maxChannels)
      .def_readwrite("comm_name", &WeftOptions::commName);
}

// Names this front end in the flight recorder of every communicator (WEFT_RECORDER_FRONT_END,
// unless the user set it), when the extension loads: before any process group creates one.
__attribute__((constructor)) void nameRecorderFrontEnd() { setenv("WEFT_RECORDER_FRONT_END", "torch", 0); }

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "Weft's torch.distributed backend (import weft_torch to register it as \"weft\")";
  // Called by torch.distributed with (prefix store, rank, size, timeout); joining the
  // communicator waits for the other ranks, so the GIL is released meanwhile.
  m.def("create_process_group", &weft_torch::ProcessGroupWeft::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>());
  bindOptions(m);
  // The same with the user's pg_options (torch's extended_api creator).
  m.def(
      "create_process_group_with_options",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout,
         const c10::intrusive_ptr<weft_torch::WeftOptions>& options) {
        return weft_torch::ProcessGroupWeft::createWithOptions(store, rank, size, timeout, options);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("options").none(true),
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "weft_version",
      [] {
        int version = 0;
        (void)weftGetVersion(&version);
        return version;
      },
      "Weft's version code: major*10000 + minor*100 + patch");
  bindAllocator(m);
#ifdef WEFT_TORCH_CUDA
  m.attr("with_cuda") = true;
#else
  m.attr("with_cuda") = false;
#endif
  m.attr("torch_version") = TORCH_VERSION;
}
