"""weft_torch: Weft as the torch.distributed backend "weft".

    import torch.distributed as dist
    import weft_torch                      # registers the backend
    dist.init_process_group("weft", ...)   # or backend="weft" in new_group / torchrun scripts

The backend runs every collective torch.distributed offers on CPU tensors (and, built against
torch 2.x with CUDA, on CUDA tensors) through Weft's C API; see the README, "Using Weft from
PyTorch".
"""
import inspect

import torch.distributed as dist

from . import _C

__all__ = ["BACKEND", "weft_version"]

#: The name to pass to torch.distributed.init_process_group / new_group.
BACKEND = "weft"


def weft_version():
    """Weft's version code (major*10000 + minor*100 + patch)."""
    return _C.weft_version()


def _create_process_group(store, rank, size, timeout):
    return _C.create_process_group(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # already registered (a second import of a reloaded module)
    params = inspect.signature(dist.Backend.register_backend).parameters
    if "devices" in params:  # torch 2.x: the devices the backend serves
        devices = ["cpu", "cuda"] if _C.with_cuda else ["cpu"]
        dist.Backend.register_backend(BACKEND, _create_process_group, devices=devices)
    else:  # torch 1.13
        dist.Backend.register_backend(BACKEND, _create_process_group)


_register()
