"""FSDP2, DeviceMesh and DTensor over "weft", against the same runs over "gloo" (torch 2.x, CPU).

The script launches its own ranks (processes with torchrun's environment, fwlaunch.spawn_ranks)
twice per rank count, once with the default group on "weft" and once on "gloo", and compares what
they wrote. At 2 ranks each run does:

- fsdp2: a small transformer-ish model (embedding, two pre-norm MLP blocks, a head) with
  fully_shard on each block and the root over init_device_mesh("cpu", (2,)), Adam, 6 steps on
  different data per rank (FSDP2's all_gather_into_tensor for parameters, reduce_scatter_tensor
  for gradients); losses, and the final full parameters (DTensor.full_tensor()), against gloo's.
- dtensor: distribute_tensor(Shard(0)) and redistribute to Replicate (all-gather), Shard(1)
  (DTensor on CPU does this as all-gather + chunk: torch's shard_dim_alltoall never calls
  all-to-all on a "cpu" mesh), and a Partial tensor to Replicate (all-reduce) and Shard(0)
  (reduce-scatter); then the functional collective all_to_all_single with uneven splits over the
  mesh (what DTensor would use on a GPU mesh); each result is checked against the exact answer
  computed locally, and against gloo's.
- tp: an MLP parallelised with parallelize_module (ColwiseParallel, RowwiseParallel), SGD for 4
  steps, its losses against a plain single-process copy of the model and against gloo's.

At 4 ranks: a 2-D mesh init_device_mesh("cpu", (2, 2), ("dp", "tp")) with the MLP tensor-parallel
over "tp" and fully_shard over "dp" (FSDP + TP), 4 steps, losses against gloo's; and that every
mesh dimension's group runs on the backend under test.

Usage: test_fsdp2.py [2] [4]   (rank counts, default both). Exit 0: pass; 77: skipped (torch 1.x
has no FSDP2/DeviceMesh/DTensor). Environment: PYTHONPATH with the weft_torch built for this torch.
"""
import argparse
import datetime
import os
import shutil
import sys
import tempfile

import fwlaunch

DIM, HIDDEN, VOCAB = 32, 64, 50


def models():
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(DIM)
            self.up = nn.Linear(DIM, HIDDEN)
            self.down = nn.Linear(HIDDEN, DIM)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, DIM)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.norm = nn.LayerNorm(DIM)
            self.head = nn.Linear(DIM, VOCAB)

        def forward(self, tokens):
            h = self.embed(tokens)
            for b in self.blocks:
                h = b(h)
            return self.head(self.norm(h))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(DIM, HIDDEN)
            self.w2 = nn.Linear(HIDDEN, DIM)

        def forward(self, x):
            return self.w2(nn.functional.relu(self.w1(x)))

    return Tiny, MLP


def tokens(step, rank):
    import torch

    g = torch.Generator().manual_seed(100 + 31 * step + rank)
    return torch.randint(0, VOCAB, (4, 12), generator=g)


def fsdp2(rank, world, out):
    import torch
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    Tiny, _ = models()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = Tiny()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(6):
        t = tokens(step, rank)
        loss = F.cross_entropy(model(t[:, :-1]).reshape(-1, VOCAB), t[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    full = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()])
    out["fsdp2_losses"] = losses
    out["fsdp2_params"] = [full.sum().item(), full.abs().sum().item(), full.norm().item()]


def dtensor(rank, world, out):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (world,))
    assert dist.get_backend(mesh.get_group()) == out["backend"], "the mesh's group runs on %r" % dist.get_backend(
        mesh.get_group())
    full = torch.arange(4.0 * world * 3 * world).reshape(4 * world, 3 * world)
    d = distribute_tensor(full, mesh, [Shard(0)])
    assert torch.equal(d.to_local(), full.chunk(world, 0)[rank]), "distribute_tensor(Shard(0)): wrong local shard"
    rep = d.redistribute(mesh, [Replicate()]).to_local()  # all-gather
    assert torch.equal(rep, full), "Shard(0) -> Replicate gave %s" % rep
    s1 = d.redistribute(mesh, [Shard(1)]).to_local()  # all-to-all
    assert torch.equal(s1, full.chunk(world, 1)[rank]), "Shard(0) -> Shard(1) gave %s" % s1
    # Partial: rank r holds (r + 1) * full; the sum over ranks is full * world * (world + 1) / 2.
    part = DTensor.from_local(full * (rank + 1), mesh, [Partial()])
    total = full * (world * (world + 1) // 2)
    summed = part.redistribute(mesh, [Replicate()]).to_local()  # all-reduce
    assert torch.equal(summed, total), "Partial -> Replicate gave %s" % summed
    scattered = part.redistribute(mesh, [Shard(0)]).to_local()  # reduce-scatter
    assert torch.equal(scattered, total.chunk(world, 0)[rank]), "Partial -> Shard(0) gave %s" % scattered
    # all_to_all_single, uneven: rank r sends j + 1 rows to rank j, each row holding 100 * r + j.
    import torch.distributed._functional_collectives as funcol

    send = torch.cat([torch.full((j + 1, 2), 100.0 * rank + j) for j in range(world)])
    got = funcol.all_to_all_single(send, [rank + 1] * world, [j + 1 for j in range(world)], mesh)
    got = funcol.wait_tensor(got)
    want = torch.full((world * (rank + 1), 2), 0.0)
    for src in range(world):
        want[src * (rank + 1):(src + 1) * (rank + 1)] = 100.0 * src + rank
    assert torch.equal(got, want), "all_to_all_single over the mesh gave %s, expected %s" % (got, want)
    out["dtensor"] = [rep.sum().item(), s1.sum().item(), summed.sum().item(), scattered.sum().item(), got.sum().item()]


def tp(rank, world, out):
    import torch
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    _, MLP = models()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(1)
    ref = MLP()
    torch.manual_seed(1)
    model = parallelize_module(MLP(), mesh, {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model)]
    losses, ref_losses = [], []
    for step in range(4):
        g = torch.Generator().manual_seed(500 + step)  # the same input on every rank, as TP needs
        x, y = torch.randn(8, DIM, generator=g), torch.randn(8, DIM, generator=g)
        for m, opt, acc in ((ref, opts[0], ref_losses), (model, opts[1], losses)):
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            acc.append(loss.item())
    for step, (a, b) in enumerate(zip(losses, ref_losses)):
        assert fwlaunch.close(a, b, 1e-5, 1e-6), "tp step %d: loss %.8f tensor-parallel, %.8f single-process" % (
            step, a, b)
    out["tp_losses"] = losses


def fsdp_tp_2d(rank, world, out):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    _, MLP = models()
    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
    for dim in ("dp", "tp"):
        b = dist.get_backend(mesh[dim].get_group())
        assert b == out["backend"], "mesh dimension %s runs on %r, not %r" % (dim, b, out["backend"])
    torch.manual_seed(2)
    model = parallelize_module(MLP(), mesh["tp"], {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    dp_rank = mesh["dp"].get_local_rank()
    losses = []
    for step in range(4):
        g = torch.Generator().manual_seed(900 + 13 * step + dp_rank)  # data differs across dp, not tp
        x, y = torch.randn(8, DIM, generator=g), torch.randn(8, DIM, generator=g)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    out["fsdp_tp_losses"] = losses


def worker(args):
    import torch
    import torch.distributed as dist

    import warnings

    # RowwiseParallel's output reaches FSDP2 as a view; the model never changes it in place.
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
    torch.set_num_threads(1)
    if args.backend == "weft":
        import weft_torch  # noqa: F401  (torch 2.x registers it at import already; this is a no-op then)
    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {"backend": args.backend}
    parts = (fsdp2, dtensor, tp) if world == 2 else (fsdp_tp_2d,)
    for part in parts:
        part(rank, world, out)
        dist.barrier()
    fwlaunch.write_result(args.out, rank, out)
    dist.destroy_process_group()


def compare(world, results):
    w, g = results["weft"], results["gloo"]
    for r in range(world):
        for key in sorted(k for k in w[r] if k != "backend"):
            if key.endswith("_losses"):
                fwlaunch.compare_losses("%d ranks, rank %d, %s" % (world, r, key[:-7]), w[r][key], g[r][key])
            else:
                for i, (a, b) in enumerate(zip(w[r][key], g[r][key])):
                    assert fwlaunch.close(a, b), "rank %d %s[%d]: %.8f under weft, %.8f under gloo" % (r, key, i, a, b)
                print("%d ranks, rank %d, %s: weft %s, gloo %s" % (world, r, key, w[r][key], g[r][key]))
    for key in ("fsdp2_params",):
        if key in w[0]:
            for r in range(1, world):
                assert w[r][key] == w[0][key], "weft: full parameters differ between rank 0 and rank %d" % r


def main(sizes):
    import torch

    if fwlaunch.torch_major() < 2:
        fwlaunch.skip("torch %s has no FSDP2 (torch.distributed.fsdp.fully_shard), DeviceMesh or DTensor; "
                      "run this with torch 2.x" % torch.__version__)
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        from torch.distributed.tensor import distribute_tensor  # noqa: F401
    except ImportError as e:
        fwlaunch.skip("torch %s lacks FSDP2 or the public DTensor API: %s" % (torch.__version__, e))
    tmp = tempfile.mkdtemp(prefix="weft_fsdp2_")
    try:
        for world in sizes:
            results = {}
            for backend in ("weft", "gloo"):
                out = os.path.join(tmp, "%s%d" % (backend, world))
                os.makedirs(out)
                t = fwlaunch.spawn_ranks([sys.executable, os.path.abspath(__file__), "--worker", "--backend", backend,
                                          "--out", out], world, deadline_s=100, what="%s, %d ranks" % (backend, world))
                print("%s at %d ranks: %.1f s" % (backend, world, t))
                results[backend] = fwlaunch.read_results(out, world)
            compare(world, results)
            print("fsdp2/dtensor at %d ranks (torch %s): weft agrees with gloo" % (world, torch.__version__))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ranks", nargs="*", type=int, default=[2, 4])
    parser.add_argument("--worker", action="store_true", help="(internal) run as one rank")
    parser.add_argument("--backend", default="weft")
    parser.add_argument("--out", help="(internal) the folder for the worker's results")
    a = parser.parse_args()
    if a.worker:
        worker(a)
    else:
        main(a.ranks)
