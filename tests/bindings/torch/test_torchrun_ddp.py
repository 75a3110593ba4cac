"""DDP under torchrun with backend "weft", against the same run with "gloo".

The script is both the launcher and the worker. Launched plainly, it runs

    python -m torch.distributed.run --standalone --nproc_per_node N test_torchrun_ddp.py --worker ...

twice, once with --backend weft and once with --backend gloo, and compares what the ranks wrote.
Each worker does what a torchrun user's script does: init_process_group(backend) from torchrun's
environment (under torch 2.x without `import weft_torch`: the backend must come from the
torch.backends entry point that torch loads at import), a small CNN with BatchNorm (DDP broadcasts
its buffers) in DDP, a synthetic image data set split by DistributedSampler, SGD with momentum,
2 epochs; rank 1 starts from different weights, so DDP's initial broadcast matters.

Checked: every rank's per-step loss under weft equals gloo's to float tolerance (printed; at 2
ranks bitwise equal, as are the final parameters, since a + b is the same whichever library adds
it; at 3+ ranks the summation order differs and float tolerance applies); after every
step the parameters are bitwise identical across ranks (a float64 checksum per step, and the full
final parameters); the final parameters equal gloo's to tolerance; the globally averaged loss
(an all_reduce through the backend under test) matches too.

Usage: test_torchrun_ddp.py [N]   (ranks, default 2). Exit 0: pass; 77: skipped (no torchrun).
Environment: PYTHONPATH with the weft_torch built for this interpreter's torch.
"""
import argparse
import os
import shutil
import sys
import tempfile

import fwlaunch

STEPS_PER_EPOCH_BATCH = 16  # samples per rank per step
SAMPLES = 256
EPOCHS = 2


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    torch.set_num_threads(1)
    if args.backend == "weft" and (fwlaunch.torch_major() < 2 or os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0"):
        import weft_torch  # noqa: F401  torch 1.13 has no backend autoload
    if args.backend == "weft":
        assert "WEFT" in getattr(dist.Backend, "_plugins", {}), (
            "backend 'weft' is not registered after `import torch` (torch %s): is weft_torch's dist-info "
            "(entry point torch.backends) on PYTHONPATH?" % torch.__version__)
    import datetime

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=60))  # env:// from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == args.backend, "default group's backend is %r" % dist.get_backend()
    assert world == int(os.environ["WORLD_SIZE"]) and rank == int(os.environ["RANK"])

    # The data: the same fixed set on every rank; labels from a fixed random "teacher" so it is learnable.
    g = torch.Generator().manual_seed(1234)
    images = torch.randn(SAMPLES, 1, 16, 16, generator=g)
    teacher = torch.randn(16 * 16, 10, generator=g)
    labels = (images.reshape(SAMPLES, -1) @ teacher).argmax(1)
    sampler = DistributedSampler(TensorDataset(images, labels), num_replicas=world, rank=rank, shuffle=True, seed=7)
    loader = DataLoader(TensorDataset(images, labels), batch_size=STEPS_PER_EPOCH_BATCH, sampler=sampler)

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10))
    if rank == 1:
        # A different start on rank 1: DDP's construction must broadcast rank 0's parameters.
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    ddp = DDP(model, bucket_cap_mb=0.01)  # small buckets: several all-reduces overlap backward
    # SGD with momentum, not Adam: Adam's update of a parameter whose gradient is near 0 is about
    # lr * sign(gradient), so at 3+ ranks (where the two libraries sum in different orders) a
    # last-bit difference would show as a parameter difference of lr, hiding a real error.
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)

    losses, mean_losses, checksums = [], [], []
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            mean /= world
            losses.append(loss.item())
            mean_losses.append(mean.item())
            flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
            checksums.append([flat.sum().item(), flat.abs().sum().item()])
    # Parameters only: BatchNorm's running statistics are rank 0's at the start of each forward (DDP
    # broadcasts them) but each rank's own after it.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.save(flat, os.path.join(args.out, "params%d.pt" % rank))
    fwlaunch.write_result(args.out, rank, {
        "losses": losses, "mean_losses": mean_losses, "checksums": checksums, "torch": torch.__version__})
    dist.barrier()
    dist.destroy_process_group()


def torchrun_py311_workaround():
    """torch 1.13's torchrun cannot start under Python 3.11 with its defaults: Std.from_str("0")
    (torch/distributed/elastic/multiprocessing/api.py) looks the value up by iterating the IntFlag
    Std, and 3.11 no longer yields the zero member NONE there, so --redirects/--tee "0" become None
    and start_processes fails with "AttributeError: 'NoneType' object has no attribute 'get'".
    A mapping that names only an absent local rank (9) leaves every real rank's streams alone."""
    import torch

    if fwlaunch.torch_major() >= 2 or sys.version_info < (3, 11):
        return []
    assert torch.__version__.startswith("1."), torch.__version__
    return ["--redirects", "9:1", "--tee", "9:1"]


def launch(backend, world, out_dir, deadline_s):
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(world)]
    argv += torchrun_py311_workaround()
    argv += [os.path.abspath(__file__), "--worker", "--backend", backend, "--out", out_dir]
    return fwlaunch.run_command(argv, deadline_s, what="torchrun %s" % backend)


def main(world):
    import torch

    try:
        import torch.distributed.run  # noqa: F401
    except ImportError as e:
        fwlaunch.skip("torch %s has no torch.distributed.run (torchrun): %s" % (torch.__version__, e))
    tmp = tempfile.mkdtemp(prefix="weft_torchrun_")
    try:
        results, params, times = {}, {}, {}
        for backend in ("weft", "gloo"):
            out = os.path.join(tmp, backend)
            os.makedirs(out)
            times[backend] = launch(backend, world, out, deadline_s=90)
            results[backend] = fwlaunch.read_results(out, world)
            params[backend] = [torch.load(os.path.join(out, "params%d.pt" % r)) for r in range(world)]
        for backend in ("weft", "gloo"):
            res, ps = results[backend], params[backend]
            for r in range(1, world):
                assert res[r]["checksums"] == res[0]["checksums"], (
                    "%s: parameters differ between rank 0 and rank %d after some step: checksums %s vs %s" % (
                        backend, r, res[0]["checksums"], res[r]["checksums"]))
                assert torch.equal(ps[r], ps[0]), "%s: final parameters differ between rank 0 and rank %d" % (backend, r)
        worst = 0.0
        for r in range(world):
            worst = max(worst, fwlaunch.compare_losses(
                "rank %d" % r, results["weft"][r]["losses"], results["gloo"][r]["losses"]))
        worst = max(worst, fwlaunch.compare_losses(
            "mean", results["weft"][0]["mean_losses"], results["gloo"][0]["mean_losses"]))
        pw, pg = params["weft"][0], params["gloo"][0]
        if world == 2:
            # a + b is the same float whichever library adds it: the runs must be bitwise equal.
            assert worst == 0.0, "2 ranks: losses differ from gloo's by up to %.3g (expected bitwise equal)" % worst
            assert torch.equal(pw, pg), "2 ranks: final parameters differ from gloo's by %g (expected bitwise equal)" % (
                (pw - pg).abs().max().item())
        assert torch.allclose(pw, pg, rtol=1e-4, atol=1e-5), "final parameters differ from gloo's by %g" % (
            (pw - pg).abs().max().item())
        print("torchrun ddp (torch %s, %d ranks, %d steps): passed; largest loss difference weft-gloo %.3g, "
              "largest parameter difference %.3g; torchrun wall time %.1f s (weft) %.1f s (gloo)" % (
                  torch.__version__, world, len(results["weft"][0]["losses"]), worst, (pw - pg).abs().max().item(),
                  times["weft"], times["gloo"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ranks", nargs="?", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help="(internal) run as a rank under torchrun")
    parser.add_argument("--backend", default="weft")
    parser.add_argument("--out", help="(internal) the folder for the worker's results")
    a = parser.parse_args()
    if a.worker:
        worker(a)
    else:
        main(a.ranks)
