#!/usr/bin/env python3
"""torch.distributed through Weft's backend ("weft") against Gloo, in one run, under either torch.

It runs under the interpreter it is started with (Debian's torch 1.13: PYTHONPATH=build/python;
the venv's torch 2.x: PYTHONPATH=build/python-torch2). Each rank is a process on this host
(spawned here, FileStore rendezvous, Weft's bootstrap on the loopback interface). Every rank makes
the default "weft" group and a Gloo group over the same ranks; each measurement alternates blocks
of weft and Gloo calls on the same tensor, so drift on a noisy machine hits both alike. Each call
or step is timed alone; the figure for an iteration is the slowest rank's, and a table reports
the median of those (after warm-up), with the fastest and slowest block's median beside it.

1. all_reduce (float32 sum, in place, blocking like dist.all_reduce(t)) at 4 KiB and 64 MiB
   (--sizes; --min-bytes/--max-bytes sweep by factors of 4 instead): time per call and
   busbw = bytes / time * 2(n-1)/n, as nccl-tests count it, and the weft/gloo speed ratio.
2. A DDP training step (zero_grad, forward, backward with its all-reduces, SGD step) of fixed
   models with about 100 MB of gradients: "mlp" (6 x Linear(2048, 2048), batch 4: compute-heavy)
   and "embedding" (an embedding table with dense gradients: little compute), DDP over weft
   against DDP over Gloo, and the same step without DDP (no communication) to show the compute share.
3. torch 2.x: an FSDP2 step (fully_shard per layer and the root, over a DeviceMesh made from the
   weft or the Gloo group; all-gathers in forward and backward, reduce-scatters of the gradients)
   of the same "mlp" model, against the local step.

The CPU (lscpu's "Model name"), core count, torch and the command line head the output; --json
PATH writes every figure there too. A benchmark, not a test: it is in no ctest.

Usage (from the tree's root, after building weft_torch_ext / weft_torch2_ext):
  PYTHONPATH=build/python /usr/bin/python3 perf/torch_bench.py                       # 2 ranks
  PYTHONPATH=build/python-torch2 /opt/weft/venv/bin/python perf/torch_bench.py --ranks 2 4 --json out.json
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MiB = 1 << 20
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def sizes(args):
    if args.min_bytes is None and args.max_bytes is None:
        return list(args.sizes)
    s, hi, out = args.min_bytes or 4, args.max_bytes or 256 * MiB, []
    while s <= hi:
        out.append(s)
        s *= 4
    return out


def fmt_bytes(b):
    for unit, scale in (("MiB", MiB), ("KiB", 1024)):
        if b >= scale and b % scale == 0:
            return "%d %s" % (b // scale, unit)
    return "%d B" % b


def time_block(fn, iters, gloo):
    """Runs fn iters times after a barrier; returns each call's time on the slowest rank (s)."""
    t = torch.empty(iters, dtype=torch.float64)
    dist.barrier(group=gloo)
    for i in range(iters):
        start = time.perf_counter()
        fn()
        t[i] = time.perf_counter() - start
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    return t.tolist()


def summary(blocks):
    """blocks: lists of per-call times. The median over all calls, and the best and worst block's median."""
    meds = [statistics.median(b) for b in blocks]
    return {"median_s": statistics.median([x for b in blocks for x in b]), "best_block_s": min(meds),
            "worst_block_s": max(meds), "samples": sum(len(b) for b in blocks)}


def alternate(fns, iters, blocks, gloo):
    """fns: name -> callable. Alternating blocks of each; returns name -> summary."""
    times = {k: [] for k in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            times[name].append(time_block(fn, iters, gloo))
    return {k: summary(v) for k, v in times.items()}


def bench_allreduce(rank, n, gloo, args, out):
    rows = []
    for size in sizes(args):
        t = torch.zeros(max(1, size // 4), dtype=torch.float32)
        iters = int(max(args.min_iters, min(args.max_iters, args.budget_bytes // size)))
        fns = {"weft": lambda: dist.all_reduce(t), "gloo": lambda: dist.all_reduce(t, group=gloo)}
        for fn in fns.values():  # warm-up
            for _ in range(args.warmup):
                fn()
        s = alternate(fns, iters, args.blocks, gloo)
        factor = 2.0 * (n - 1) / n
        tw, tg = s["weft"]["median_s"], s["gloo"]["median_s"]
        rows.append({"bytes": size, "weft": s["weft"], "gloo": s["gloo"], "weft_busbw_GBps": size / tw * factor / 1e9,
                     "gloo_busbw_GBps": size / tg * factor / 1e9, "weft_over_gloo_speed": tg / tw})
        del t
    out["allreduce"] = rows
    if rank == 0:
        print("\n### all_reduce, float32 sum, %d ranks (median of %d alternating blocks of calls, slowest rank)\n" % (
            n, args.blocks))
        print("| size | calls | weft time (us) | gloo time (us) | weft busbw (GB/s) | gloo busbw (GB/s) | weft/gloo speed |"
              " weft blocks (us) | gloo blocks (us) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for r in rows:
            w, g = r["weft"], r["gloo"]
            print("| %s | %d | %.1f | %.1f | %.3f | %.3f | %.2fx | %.1f-%.1f | %.1f-%.1f |" % (
                fmt_bytes(r["bytes"]), w["samples"], w["median_s"] * 1e6, g["median_s"] * 1e6, r["weft_busbw_GBps"],
                r["gloo_busbw_GBps"], r["weft_over_gloo_speed"], w["best_block_s"] * 1e6, w["worst_block_s"] * 1e6,
                g["best_block_s"] * 1e6, g["worst_block_s"] * 1e6))
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


def step_table(rank, title, models, steps, args, gloo, out_rows):
    """Times one training step per model (zero_grad, forward, backward, SGD step) and prints a table."""
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-4) for k, (m, _) in models.items()}

    def step(name):
        model, x = models[name]
        opts[name].zero_grad()
        model(x).sum().backward()
        opts[name].step()

    for name in models:  # warm-up (DDP's first steps build its buckets; FSDP2's its buffers)
        for _ in range(2):
            step(name)
    s = alternate({name: (lambda name=name: step(name)) for name in models}, steps, args.step_blocks, gloo)
    out_rows.append(s)
    if rank == 0:
        print("\n### %s\n" % title)
        print("| | step time (ms), median of %d | blocks' medians (ms) |" % s["weft"]["samples"])
        print("|---|---:|---|")
        for k, v in s.items():
            print("| %s | %.1f | %.1f-%.1f |" % (k, v["median_s"] * 1e3, v["best_block_s"] * 1e3, v["worst_block_s"] * 1e3))
        local = s["local (no communication)"]["median_s"]
        print("\nweft/gloo step speed: %.2fx; time beyond the local step: weft %.1f ms, gloo %.1f ms" % (
            s["gloo"]["median_s"] / s["weft"]["median_s"], (s["weft"]["median_s"] - local) * 1e3,
            (s["gloo"]["median_s"] - local) * 1e3))
        sys.stdout.flush()


def bench_ddp(rank, n, gloo, args, out):
    from torch.nn.parallel import DistributedDataParallel as DDP

    out["ddp"] = rows = []
    for kind in args.ddp_models:
        what, make_input = MODELS[kind]
        view = args.bucket_view
        x = make_input()
        models = {"weft": (DDP(make_model(kind), process_group=None, gradient_as_bucket_view=view), x),
                  "gloo": (DDP(make_model(kind), process_group=gloo, gradient_as_bucket_view=view), x),
                  "local (no communication)": (make_model(kind), x)}
        grad_bytes = sum(p.numel() * p.element_size() for p in models["gloo"][0].parameters())
        step_table(rank, "DDP step, %d ranks: %s, %.1f MB of gradients (%s, SGD%s)" % (
            n, kind, grad_bytes / 1e6, what, ", gradient_as_bucket_view" if view else ""), models, args.ddp_steps,
            args, gloo, rows)
        rows[-1] = {"model": kind, "grad_bytes": grad_bytes, **rows[-1]}
        del models


def bench_fsdp2(rank, n, gloo, args, out):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    out["fsdp2"] = rows = []
    for kind in args.fsdp_models:
        what, make_input = MODELS[kind]
        x = make_input()
        models = {}
        for name, group in (("weft", dist.group.WORLD), ("gloo", gloo)):
            mesh = DeviceMesh.from_group(group, "cpu")
            m = make_model(kind)
            for layer in m:
                if any(True for _ in layer.parameters()):
                    fully_shard(layer, mesh=mesh)
            fully_shard(m, mesh=mesh)
            models[name] = (m, x)
        models["local (no communication)"] = (make_model(kind), x)
        param_bytes = sum(p.numel() * p.element_size() for p in models["local (no communication)"][0].parameters())
        step_table(rank, "FSDP2 step, %d ranks: %s, %.1f MB of parameters (%s, fully_shard per layer, SGD)" % (
            n, kind, param_bytes / 1e6, what), models, args.fsdp_steps, args, gloo, rows)
        rows[-1] = {"model": kind, "param_bytes": param_bytes, **rows[-1]}
        del models


def worker(rank, n, store, result_path, args):
    torch.set_num_threads(1)
    import weft_torch  # noqa: F401

    if args.shm_allocator:  # before any model: DDP's buckets (and Gloo's) come from the pool
        weft_torch.use_shared_memory_allocator()

    dist.init_process_group("weft", init_method="file://" + store, rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=600))
    gloo = dist.new_group(backend="gloo")
    out = {"ranks": n}
    if not args.no_allreduce:
        bench_allreduce(rank, n, gloo, args, out)
    if not args.no_ddp:
        bench_ddp(rank, n, gloo, args, out)
    if not args.no_fsdp and TORCH2:
        bench_fsdp2(rank, n, gloo, args, out)
    elif not args.no_fsdp and rank == 0:
        print("\n(FSDP2 step: not measured, torch %s has no fully_shard)" % torch.__version__)
    dist.barrier(group=gloo)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


def cpu_model():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown (no lscpu)"


def run_ranks(n, store, result_path, args):
    """mp.spawn without join, so that a hang past --deadline-s kills every rank."""
    ctx = mp.spawn(worker, args=(n, store, result_path, args), nprocs=n, join=False)
    start = time.monotonic()
    while not ctx.join(timeout=1.0):
        if time.monotonic() - start > args.deadline_s:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
            raise SystemExit("torch_bench: %d ranks still running after %d s: killed" % (n, args.deadline_s))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[2])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 64 * MiB], help="all_reduce sizes in bytes")
    p.add_argument("--min-bytes", type=int, help="sweep all_reduce sizes from this (x4 each) instead of --sizes")
    p.add_argument("--max-bytes", type=int, help="to this")
    p.add_argument("--budget-bytes", type=int, default=128 * MiB, help="bytes per block (sets the call count)")
    p.add_argument("--min-iters", type=int, default=5, help="fewest calls per block")
    p.add_argument("--max-iters", type=int, default=500, help="most calls per block")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per size and library first")
    p.add_argument("--blocks", type=int, default=5, help="alternating blocks per size and library")
    p.add_argument("--ddp-models", nargs="+", default=["mlp", "embedding"], choices=sorted(MODELS))
    p.add_argument("--bucket-view", action="store_true", help="DDP(gradient_as_bucket_view=True): no gradient copies")
    p.add_argument("--ddp-steps", type=int, default=5, help="steps per block")
    p.add_argument("--fsdp-models", nargs="+", default=["mlp"], choices=["mlp"])
    p.add_argument("--fsdp-steps", type=int, default=5, help="steps per block")
    p.add_argument("--step-blocks", "--ddp-blocks", type=int, default=3, help="alternating blocks of training steps")
    p.add_argument("--shm-allocator", action="store_true",
                   help="weft_torch.use_shared_memory_allocator(): large CPU tensors (DDP's buckets) in registered "
                        "shared memory, so weft's all-reduces on them run zero-copy (both libraries use the allocator)")
    p.add_argument("--no-allreduce", action="store_true")
    p.add_argument("--no-ddp", action="store_true")
    p.add_argument("--no-fsdp", action="store_true")
    p.add_argument("--json", metavar="PATH", help="also write every figure to PATH")
    p.add_argument("--deadline-s", type=int, default=1800, help="kill the ranks of one rank count after this")
    args = p.parse_args()
    os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    head = {"cpu_model": cpu_model(), "cpus": os.cpu_count(), "torch": torch.__version__,
            "python": sys.version.split()[0], "date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC"), "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "load_average": os.getloadavg()}
    print("# CPU: %s (%d CPUs); torch %s, Python %s; %s; load %.1f %.1f %.1f\n# %s" % (
        head["cpu_model"], head["cpus"], head["torch"], head["python"], head["date"], *head["load_average"],
        head["command"]))
    sys.stdout.flush()
    runs = []
    for n in args.ranks:
        with tempfile.TemporaryDirectory(prefix="weft_torch_bench_") as d:
            result = os.path.join(d, "result.json")
            run_ranks(n, os.path.join(d, "store"), result, args)
            with open(result) as f:
                runs.append(json.load(f))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**head, "runs": runs}, f, indent=1)
        print("\n(figures written to %s)" % args.json)


if __name__ == "__main__":
    main()
