"""A rank that dies makes the survivors raise, within the time-out, instead of hanging.

Three ranks all-reduce together; then the last one kills itself (SIGKILL: no goodbye on any
socket). The survivors keep all-reducing, with a 20-second time-out given to
init_process_group: the first call that needs the dead rank must raise a RuntimeError that
carries Weft's message ("weft: all_reduce failed on rank ...: <weftGetLastError>"), in less
than the time-out plus a margin, and a later call must raise too (the communicator stays
failed). The harness kills every rank of a run that passes its deadline, so a hang fails.

Usage: test_dead_rank.py [ranks]   (default 3)
"""
import os
import signal
import time

import torch
import torch.distributed as dist

import harness

TIMEOUT_S = 20


def survivors_raise(rank, n):
    victim = n - 1
    t = torch.ones(1000)
    for _ in range(3):
        dist.all_reduce(t)
    dist.barrier()
    if rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for _ in range(1000000):
            dist.all_reduce(t)
    except RuntimeError as e:
        elapsed = time.monotonic() - start
        message = str(e)
    else:
        raise AssertionError("rank %d: all-reduces kept succeeding after rank %d died" % (rank, victim))
    print("rank %d raised after %.2f s: %s" % (rank, elapsed, message.splitlines()[0][:300]), flush=True)
    assert elapsed < TIMEOUT_S + 10, "rank %d took %.1f s to notice (time-out %d s)" % (rank, elapsed, TIMEOUT_S)
    assert message.startswith("weft: all_reduce failed on rank %d" % rank), message
    detail = message.split("): ", 1)[-1]
    assert len(detail.strip()) > 10, "no Weft message in %r" % message
    # The communicator stays failed: the next call raises at once (no second wait).
    start = time.monotonic()
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        assert "weft:" in str(e), str(e)
    else:
        raise AssertionError("an all-reduce succeeded after the failure")
    assert time.monotonic() - start < 5, "the second failure took %.1f s" % (time.monotonic() - start)


def ddp_survivors_raise(rank, n):
    """The same in DDP training: the victim dies between steps; backward raises on the survivors."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    victim = n - 1
    start = None
    try:
        for step in range(1000):
            if step == 5:
                if rank == victim:
                    os.kill(os.getpid(), signal.SIGKILL)
                start = time.monotonic()
            opt.zero_grad()
            ddp(torch.randn(16, 32)).sum().backward()
            opt.step()
    except RuntimeError as e:
        message = str(e)
    else:
        raise AssertionError("rank %d: DDP kept training after rank %d died" % (rank, victim))
    elapsed = time.monotonic() - start
    print("rank %d: DDP raised after %.2f s: %s" % (rank, elapsed, message.splitlines()[0][:200]), flush=True)
    assert "weft: all_reduce failed" in message, message
    assert elapsed < TIMEOUT_S + 10, "rank %d took %.1f s to notice (time-out %d s)" % (rank, elapsed, TIMEOUT_S)


if __name__ == "__main__":
    for n in harness.world_sizes_from_argv((3,)):
        for test in (survivors_raise, ddp_survivors_raise):
            harness.run(test, n, timeout_s=TIMEOUT_S, deadline_s=TIMEOUT_S + 60, finalize=False, killed=(n - 1,))
