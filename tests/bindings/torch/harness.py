"""Launches the ranks of a weft_torch test as processes on this host.

run(target, world_size, *args) starts world_size processes (multiprocessing, spawn), each calling
target(rank, world_size, *args) after init_process_group("weft") through a FileStore in a fresh
temporary folder, with a Gloo group over the same ranks ready for comparisons (gloo_group()).
It fails (raises) when a rank fails, and kills every rank when the whole run passes its deadline,
so a hang is a failure, never a stuck test.
"""
import datetime
import os
import shutil
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

_gloo = None


def gloo_group():
    """A Gloo process group over every rank, made by run() next to the default weft group."""
    return _gloo


def _entry(target, rank, world_size, store_dir, timeout_s, finalize, args):
    global _gloo
    try:
        torch.set_num_threads(1)  # the machine is small and shared: one compute thread per rank
        import weft_torch  # noqa: F401  registers "weft"

        dist.init_process_group(
            "weft",
            init_method="file://" + os.path.join(store_dir, "store"),
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        _gloo = dist.new_group(backend="gloo")
        target(rank, world_size, *args)
        if finalize:
            dist.barrier(group=_gloo)
            dist.destroy_process_group()
    except BaseException:  # noqa: B902  the parent reads the exit code; the traceback goes to stderr
        sys.stderr.write("rank %d failed:\n%s" % (rank, traceback.format_exc()))
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)


def run(target, world_size, *args, deadline_s=240, timeout_s=60, finalize=True, killed=()):
    """Runs target(rank, world_size, *args) on world_size ranks; raises unless every rank exits 0.

    timeout_s: init_process_group's timeout (Weft's deadline for every wait). finalize: end with a
    barrier and destroy_process_group. killed: ranks expected to die by SIGKILL.
    """
    store_dir = tempfile.mkdtemp(prefix="weft_torch_test_")
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_entry, args=(target, rank, world_size, store_dir, timeout_s, finalize, args))
        for rank in range(world_size)
    ]
    start = time.monotonic()
    try:
        for p in procs:
            p.start()
        for p in procs:
            p.join(max(0.0, deadline_s - (time.monotonic() - start)))
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        if hung:
            raise AssertionError("ranks %s still running after %d s: killed (a hang)" % (hung, deadline_s))
        failed = [(r, p.exitcode) for r, p in enumerate(procs) if p.exitcode != (-9 if r in killed else 0)]
        if failed:
            raise AssertionError("ranks failed (rank, exit code): %s" % failed)
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    print("%s: %d ranks passed in %.1f s" % (getattr(target, "__name__", "test"), world_size, time.monotonic() - start))


def world_sizes_from_argv(default=(2,)):
    """The rank counts given on the command line (e.g. `test_ddp.py 2 4`)."""
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()]
    return sizes or list(default)
