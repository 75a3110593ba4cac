#!/usr/bin/env python3
"""Where a DDP step's CPU time goes, thread by thread: weft against Gloo and the local step.

Runs a model of torch_bench.py ("mlp" unless named: 6 x Linear(2048, 2048), batch 4, ~100 MB of
gradients; or "embedding") under DDP on 2 ranks (processes on this host) for 30 steps after warm-up, and prints rank 0's
step time with each of its threads' CPU time per step (from /proc/self/task: utime + stime) and
their context switches. "local" runs the same model without DDP (two processes still, so they
compete for the CPUs alike). On a machine with a core per rank the compute thread and the
backend's threads share that core: a step can take no less than their CPU time together.

A diagnostic, not a benchmark for RESULTS (torch_bench.py is); in no ctest.
Usage: PYTHONPATH=build/python-torch2 WEFT_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 \\
       /opt/weft/venv/bin/python perf/torch_ddp_threads.py {weft|gloo|local} [mlp|embedding]
"""
import datetime
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_bench import MODELS, make_model  # the same models and inputs as the benchmark

STEPS = 30


def thread_times():
    """{(tid, name): (CPU ms, context-switch text)} for every thread of this process."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/stat" % tid) as f:
                stat = f.read()
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
            with open("/proc/self/task/%s/status" % tid) as f:
                switches = " ".join(line.strip() for line in f if "ctxt_switches" in line)
        except OSError:  # the thread ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        out[(tid, name)] = (ticks * 1000.0 / os.sysconf("SC_CLK_TCK"), switches)
    return out


def worker(rank, n, store, mode, kind):
    torch.set_num_threads(1)
    import weft_torch  # noqa: F401  (registers "weft")

    dist.init_process_group("gloo" if mode == "local" else mode, init_method="file://" + store, rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=300))
    model = make_model(kind)
    if mode != "local":
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = MODELS[kind][1]()

    def step():
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier()
    before, t0 = thread_times(), time.perf_counter()
    for _ in range(STEPS):
        step()
    ms = (time.perf_counter() - t0) / STEPS * 1e3
    after = thread_times()
    if rank == 0:
        print("%s, %s: step %.1f ms (rank 0, mean of %d)" % (mode, kind, ms, STEPS))
        for key, (cpu, switches) in sorted(after.items(), key=lambda kv: -kv[1][0]):
            per_step = (cpu - before.get(key, (0.0, ""))[0]) / STEPS
            if per_step >= 0.2:
                print("  thread %-16s CPU %6.1f ms/step  %s" % (key[1], per_step, switches))
    dist.destroy_process_group()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "weft"
    kind = sys.argv[2] if len(sys.argv) > 2 else "mlp"
    if mode not in ("weft", "gloo", "local") or kind not in MODELS:
        raise SystemExit("usage: torch_ddp_threads.py {weft|gloo|local} [%s]" % "|".join(sorted(MODELS)))
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(2, os.path.join(tmp, "store"), mode, kind), nprocs=2)


if __name__ == "__main__":
    main()
