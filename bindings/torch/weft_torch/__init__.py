"""weft_torch: Weft as the torch.distributed backend "weft".

    import torch.distributed as dist
    import weft_torch                      # registers the backend (torch 2.x: done at `import torch`)
    dist.init_process_group("weft", ...)   # or backend="weft" in new_group / torchrun scripts
    dist.init_process_group("weft", pg_options=weft_torch.Options())  # Weft's own settings

The backend runs every collective torch.distributed offers on CPU tensors (and, built against
torch 2.x with CUDA, on CUDA tensors) through Weft's C API; see docs/pytorch.md, "Using Weft from
PyTorch".
"""
import inspect

import torch.distributed as dist

from . import _C

__all__ = [
    "BACKEND",
    "Options",
    "weft_version",
    "use_shared_memory_allocator",
    "restore_cpu_allocator",
    "shared_memory_allocator_stats",
    "release_unused_shared_memory",
]

#: The name to pass to torch.distributed.init_process_group / new_group.
BACKEND = "weft"


def weft_version():
    """Weft's version code (major*10000 + minor*100 + patch)."""
    return _C.weft_version()


def use_shared_memory_allocator(threshold_bytes=1 << 20, arena_bytes=64 << 20, max_bytes=0):
    """Serves CPU tensors of at least threshold_bytes from Weft's shared memory, so that
    collectives on them (DDP's gradient buckets) run zero-copy between the ranks of a host.

    Installs a torch CPU allocator: large allocations come from a pool of arenas (each of at least
    arena_bytes, one weftMemAlloc segment in /dev/shm, registered with every "weft" process
    group's communicator; freed blocks are reused), smaller ones from the allocator it replaces.
    Call it before the model and DDP are made (tensors allocated earlier stay where they are); a
    second call changes the options. max_bytes (0: no limit but /dev/shm's room) caps the pool;
    past it, or when /dev/shm is short, allocations fall back to torch's allocator with a warning.

    Mind fork(): a child process (a DataLoader worker started by fork) shares the pages of
    tensors that live in the pool with its parent; it makes its own new tensors elsewhere.
    """
    _C.use_shared_memory_allocator(int(threshold_bytes), int(arena_bytes), int(max_bytes))


def restore_cpu_allocator():
    """Gives torch back the CPU allocator use_shared_memory_allocator replaced (tensors already in
    the pool stay valid, and are freed into it)."""
    _C.restore_cpu_allocator()


def release_unused_shared_memory():
    """Frees the pool's arenas that hold no live tensor; returns how many."""
    return _C.release_unused_shared_memory()


def shared_memory_allocator_stats():
    """The pool's state and counters: installed, arenas, arena_bytes, live_blocks, live_bytes,
    served (allocations from the pool), reused (of those, in memory an earlier tensor had used),
    forwarded (below the threshold), fallbacks (could not be served) with last_fallback (why),
    communicators (attached weft groups) and registrations."""
    return _C.shared_memory_allocator_stats()


#: What pg_options= may set for a "weft" group: min_channels, max_channels, comm_name.
Options = _C.Options


def _create_process_group(dist_options, pg_options=None):
    """The creator torch calls (extended_api): torch's DistributedBackendOptions and the user's
    pg_options, which must be a weft_torch.Options or None."""
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError(
            f"weft: pg_options must be a weft_torch.Options (got {type(pg_options).__name__}); "
            "make one with weft_torch.Options() and set its fields"
        )
    return _C.create_process_group_with_options(
        dist_options.store, dist_options.group_rank, dist_options.group_size, dist_options.timeout, pg_options
    )


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # already registered (a second import of a reloaded module)
    params = inspect.signature(dist.Backend.register_backend).parameters
    kwargs = {"extended_api": True}
    if "devices" in params:  # torch 2.x: the devices the backend serves
        kwargs["devices"] = ["cpu", "cuda"] if _C.with_cuda else ["cpu"]
    dist.Backend.register_backend(BACKEND, _create_process_group, **kwargs)


_register()
