#!/usr/bin/env python3
"""torch.distributed through Weft's backend ("weft") against Gloo, in one run.

Each rank is a process on this host (spawned here, FileStore rendezvous, Weft's bootstrap on the
loopback interface). Every rank makes the default "weft" group and a Gloo group over the same
ranks; each measurement alternates blocks of weft and Gloo calls on the same tensor, so drift on
a noisy machine hits both alike.

1. all_reduce (float32 sum, in place, blocking like dist.all_reduce(t)) from 4 B to 256 MiB:
   time per call (the slowest rank's mean) and busbw = bytes / time * 2(n-1)/n.
2. A DDP training step (zero_grad, forward, backward with its all-reduces, SGD step) of two models
   with about 100 MB of gradients: "mlp" (6 x Linear(2048, 2048), batch 4: compute-heavy) and
   "embedding" (an embedding table with dense gradients: little compute), DDP over weft against
   DDP over Gloo, and the same step without DDP (no communication) to show the compute share.

Usage (from the build tree's root, after building weft_torch):
  PYTHONPATH=build/python /usr/bin/python3 perf/torch_bench.py --ranks 2 4
"""
import argparse
import datetime
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MiB = 1 << 20


def sizes(lo, hi):
    s = lo
    while s <= hi:
        yield s
        s *= 4


def fmt_bytes(b):
    for unit, scale in (("MiB", MiB), ("KiB", 1024)):
        if b >= scale:
            return "%d %s" % (b // scale, unit)
    return "%d B" % b


def slowest(seconds, gloo):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    return t.item()


def time_block(fn, iters, gloo):
    dist.barrier(group=gloo)
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return slowest((time.perf_counter() - start) / iters, gloo)


def bench_allreduce(rank, n, gloo, args):
    rows = []
    for size in sizes(args.min_bytes, args.max_bytes):
        t = torch.zeros(max(1, size // 4), dtype=torch.float32)
        # About budget_bytes per block, between 2 and max_iters calls.
        iters = int(max(2, min(args.max_iters, args.budget_bytes // size)))
        results = {"weft": [], "gloo": []}
        for name, group in (("weft", None), ("gloo", gloo)):  # warm-up
            dist.all_reduce(t, group=group)
        for _ in range(args.blocks):
            for name, group in (("weft", None), ("gloo", gloo)):
                results[name].append(time_block(lambda: dist.all_reduce(t, group=group), iters, gloo))
        tw = min(results["weft"])
        tg = min(results["gloo"])
        factor = 2.0 * (n - 1) / n
        rows.append((size, tw, tg, size / tw * factor / 1e9, size / tg * factor / 1e9))
        del t
    if rank == 0:
        print("\n### all_reduce, float32 sum, %d ranks (best of %d alternating blocks)\n" % (n, args.blocks))
        print("| size | weft time (us) | gloo time (us) | weft busbw (GB/s) | gloo busbw (GB/s) | weft/gloo speed |")
        print("|---:|---:|---:|---:|---:|---:|")
        for size, tw, tg, bw, bg in rows:
            print("| %s | %.1f | %.1f | %.3f | %.3f | %.2fx |" % (fmt_bytes(size), tw * 1e6, tg * 1e6, bw, bg, tg / tw))
        sys.stdout.flush()


def make_model(kind):
    torch.manual_seed(0)
    if kind == "mlp":  # 25.2 M parameters, compute-heavy: every step multiplies by all of them
        layers = []
        for _ in range(6):
            layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)
    # "embedding": 25.2 M parameters with dense gradients and little compute (a lookup of 256 rows)
    return torch.nn.Sequential(torch.nn.Embedding(196608, 128), torch.nn.Linear(128, 1))


MODELS = {
    "mlp": ("6 x Linear(2048, 2048), batch 4", lambda: torch.randn(4, 2048)),
    "embedding": ("Embedding(196608, 128) + Linear(128, 1), dense gradients, batch 256",
                  lambda: torch.randint(0, 196608, (256,), generator=torch.Generator().manual_seed(1))),
}


def bench_ddp(rank, n, gloo, args):
    from torch.nn.parallel import DistributedDataParallel as DDP

    for kind in args.ddp_models:
        what, make_input = MODELS[kind]
        view = args.bucket_view
        models = {"weft": DDP(make_model(kind), process_group=None, gradient_as_bucket_view=view),
                  "gloo": DDP(make_model(kind), process_group=gloo, gradient_as_bucket_view=view),
                  "local (no DDP)": make_model(kind)}
        grad_bytes = sum(p.numel() * p.element_size() for p in models["local (no DDP)"].parameters())
        opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4) for k, m in models.items()}
        x = make_input()

        def step(name):
            opts[name].zero_grad()
            models[name](x).sum().backward()
            opts[name].step()

        for name in models:  # warm-up (DDP's first step builds its buckets)
            step(name)
            step(name)
        times = {k: [] for k in models}
        for _ in range(args.ddp_blocks):
            for name in models:
                times[name].append(time_block(lambda: step(name), args.ddp_steps, gloo))
        if rank == 0:
            best = {k: min(v) for k, v in times.items()}
            print("\n### DDP step, %d ranks: %.1f MB of gradients (%s, SGD%s)\n" % (
                n, grad_bytes / 1e6, what, ", gradient_as_bucket_view" if view else ""))
            print("| | step time (ms), best of %d blocks of %d steps | all blocks (ms) |" % (
                args.ddp_blocks, args.ddp_steps))
            print("|---|---:|---|")
            for k in models:
                print("| %s | %.1f | %s |" % (k, best[k] * 1e3, " / ".join("%.0f" % (t * 1e3) for t in times[k])))
            print("\nweft/gloo DDP step speed: %.2fx; time beyond the local step: weft %.1f ms, gloo %.1f ms" % (
                best["gloo"] / best["weft"], (best["weft"] - best["local (no DDP)"]) * 1e3,
                (best["gloo"] - best["local (no DDP)"]) * 1e3))
            sys.stdout.flush()
        del models, opts


def worker(rank, n, store, args):
    torch.set_num_threads(1)
    import weft_torch  # noqa: F401

    if args.shm_allocator:  # before any model: DDP's buckets (and Gloo's) come from the pool
        weft_torch.use_shared_memory_allocator()

    dist.init_process_group("weft", init_method="file://" + store, rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=600))
    gloo = dist.new_group(backend="gloo")
    if not args.no_allreduce:
        bench_allreduce(rank, n, gloo, args)
    if not args.no_ddp:
        bench_ddp(rank, n, gloo, args)
    dist.barrier(group=gloo)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--min-bytes", type=int, default=4)
    p.add_argument("--max-bytes", type=int, default=256 * MiB)
    p.add_argument("--budget-bytes", type=int, default=128 * MiB, help="bytes per block (sets the call count)")
    p.add_argument("--max-iters", type=int, default=500, help="most calls per block")
    p.add_argument("--blocks", type=int, default=5, help="alternating blocks per size and library")
    p.add_argument("--ddp-models", nargs="+", default=["mlp", "embedding"], choices=sorted(MODELS))
    p.add_argument("--bucket-view", action="store_true", help="DDP(gradient_as_bucket_view=True): no gradient copies")
    p.add_argument("--ddp-steps", type=int, default=5)
    p.add_argument("--ddp-blocks", type=int, default=3)
    p.add_argument("--shm-allocator", action="store_true",
                   help="weft_torch.use_shared_memory_allocator(): large CPU tensors (DDP's buckets) in registered "
                        "shared memory, so weft's all-reduces on them run zero-copy (both libraries use the allocator)")
    p.add_argument("--no-allreduce", action="store_true")
    p.add_argument("--no-ddp", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print("# torch %s, %s, %s" % (torch.__version__, datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
                                 " ".join(sys.argv)))
    for n in args.ranks:
        with tempfile.TemporaryDirectory(prefix="weft_torch_bench_") as d:
            mp.spawn(worker, args=(n, os.path.join(d, "store"), args), nprocs=n)


if __name__ == "__main__":
    main()
