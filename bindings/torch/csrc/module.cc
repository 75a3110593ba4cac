// weft_torch._C: the Python face of the backend. weft_torch/__init__.py registers
// create_process_group with torch.distributed as the creator of backend "weft".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Weft's torch.distributed backend (import weft_torch to register it as \"weft\")";
  // Called by torch.distributed with (prefix store, rank, size, timeout); joining the
  // communicator waits for the other ranks, so the GIL is released meanwhile.
  m.def("create_process_group", &weft_torch::ProcessGroupWeft::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>());
  m.def(
      "weft_version",
      [] {
        int version = 0;
        (void)weftGetVersion(&version);
        return version;
      },
      "Weft's version code: major*10000 + minor*100 + patch");
#ifdef WEFT_TORCH_CUDA
  m.attr("with_cuda") = true;
#else
  m.attr("with_cuda") = false;
#endif
  m.attr("torch_version") = TORCH_VERSION;
}
