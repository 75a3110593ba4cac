"""DeepSpeed ZeRO stages 1, 2 and 3 over "weft", against the same training over "gloo" (CPU).

The script launches its ranks (processes with torchrun's environment, fwlaunch.spawn_ranks) once
with deepspeed.init_distributed(dist_backend="weft") and once with dist_backend="gloo". Each rank
trains the same small model (seed 0) on its own data, for each ZeRO stage in turn:
deepspeed.initialize(model, optimizer=torch.optim.Adam(...), config={"zero_optimization":
{"stage": s}, fp32, "zero_allow_untested_optimizer": true}), 6 steps of engine.backward /
engine.step. Checked: every rank's per-step loss under weft equals gloo's to float tolerance
(printed), per stage; the engine's data-parallel group and the ZeRO optimizer's group run on
the backend asked for (so ZeRO's reduce-scatter/all-gather/all-reduce went through it); the stages agree with each other (ZeRO changes where the optimizer state
lives, not the arithmetic, to float tolerance); the default group's backend is the one asked for.

CPU set-up: DS_ACCELERATOR=cpu (DeepSpeed's CPU accelerator; there is no CUDA here), a torch
optimizer passed as the client optimizer (DeepSpeed's own fused/CPU Adam ops are not needed),
fp32 (no fp16/bf16 config). DS_BUILD_OPS=0 is set too: no op is prebuilt, and none is required.

DeepSpeed and a backend name it does not know (DeepSpeed 0.19.8, site-packages/deepspeed):
- deepspeed/comm/comm.py:init_distributed(dist_backend=...) does not refuse "weft". It calls
  init_deepspeed_backend(get_accelerator().communication_backend_name(), ...) (comm.py), which only
  knows nccl/mpi/gloo/ccl/hccl and for anything else logs at debug level "DeepSpeed does not
  support ... backend" and returns; then TorchBackend(dist_backend, ...) (deepspeed/comm/torch.py:
  TorchBackend.__init__ -> init_process_group) calls torch.distributed.init_process_group("weft",
  ...), which torch resolves through the registered plugin. So the user's step is only that
  "weft" is registered before the call: torch 2.x does it at `import torch` (the torch.backends
  entry point), torch 1.x needs `import weft_torch` first.
- deepspeed/__init__.py:initialize() always calls dist.init_distributed(dist_backend=
  get_accelerator().communication_backend_name()) -- "gloo" for the CPU accelerator without oneCCL
  (deepspeed/accelerator/cpu_accelerator.py:CPU_Accelerator.__init__), "nccl" for CUDA -- there is
  no argument to pass a backend name. Because the group already exists after the user's own
  deepspeed.init_distributed("weft") (or torch.distributed.init_process_group("weft")), that call
  does nothing, and the engine's collectives run on the default group, i.e. weft. A user who
  skips the explicit init gets the accelerator's backend, not weft. (The engine also stores the
  accelerator's name as engine.dist_backend; it is only tested against None.)
- TorchBackend.__init__ also builds DeepSpeed's shared-memory all-reduce op (ShareMemCommBuilder,
  csrc/cpu/comm/shm*.cpp, JIT with ninja into ~/.cache/torch_extensions on first use) whatever the
  backend; it serves only deepspeed.comm.inference_all_reduce (inference with tensor-parallel
  module injection), never training's collectives, which go through torch.distributed.

Usage: test_deepspeed.py [N]   (ranks, default 2). Exit 0: pass; 77: skipped (no DeepSpeed for this
interpreter). Environment: PYTHONPATH with the weft_torch built for this torch.
"""
import argparse
import os
import shutil
import sys
import tempfile

import fwlaunch

STAGES = (1, 2, 3)
STEPS = 6


def worker(args):
    import logging

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if args.backend == "weft":
        import weft_torch  # noqa: F401  needed under torch 1.x; a no-op under 2.x (autoloaded)
    import deepspeed
    import torch.nn as nn
    import torch.nn.functional as F

    deepspeed.utils.logger.setLevel(logging.WARNING)
    from deepspeed.accelerator import get_accelerator

    assert get_accelerator().device_name() == "cpu", "DeepSpeed's accelerator is %r, not cpu (DS_ACCELERATOR=cpu)" % (
        get_accelerator().device_name())
    import datetime

    deepspeed.init_distributed(dist_backend=args.backend, timeout=datetime.timedelta(seconds=60))
    assert dist.get_backend() == args.backend, "default group's backend is %r" % dist.get_backend()
    rank, world = dist.get_rank(), dist.get_world_size()

    out = {"backend": args.backend}
    for stage in STAGES:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 64), nn.GELU(),
                              nn.Linear(64, 4))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        config = {
            "train_micro_batch_size_per_gpu": 8,
            "gradient_accumulation_steps": 1,
            "zero_optimization": {"stage": stage},
            "zero_allow_untested_optimizer": True,
            "steps_per_print": 1 << 30,
            "wall_clock_breakdown": False,
        }
        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)
        assert dist.get_backend() == args.backend, "after deepspeed.initialize the default group is %r" % (
            dist.get_backend())
        # ZeRO's gradient reduction and parameter gathering run on these groups: weft's, or gloo's.
        for what, grp in (("engine.data_parallel_group", engine.data_parallel_group),
                          ("ZeRO optimizer's dp_process_group", engine.optimizer.dp_process_group)):
            assert dist.get_backend(grp) == args.backend, "ZeRO-%d: %s runs on %r, not %r" % (
                stage, what, dist.get_backend(grp), args.backend)
        losses = []
        for step in range(STEPS):
            g = torch.Generator().manual_seed(300 + 17 * step + rank)
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            loss = F.mse_loss(engine(x), y)
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
        out["zero%d_losses" % stage] = losses
        engine.destroy()
        del engine, model, opt
        dist.barrier()
    fwlaunch.write_result(args.out, rank, out)
    dist.destroy_process_group()


def shm_op_built():
    """Whether DeepSpeed's shm comm op is already in torch's JIT extension cache (else the first
    TorchBackend of this run compiles it: about 2 minutes on a busy 2-core machine)."""
    import glob

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch_extensions")
    return bool(glob.glob(os.path.join(root, "**", "deepspeed_shm_comm", "*.so"), recursive=True))


def main(world):
    try:
        import deepspeed
    except ImportError as e:
        fwlaunch.skip("DeepSpeed is not installed for %s: %s" % (sys.executable, e))
    import torch

    env = {"DS_ACCELERATOR": "cpu", "DS_BUILD_OPS": "0"}
    tmp = tempfile.mkdtemp(prefix="weft_deepspeed_")
    try:
        results = {}
        deadline_s = 150
        if not shm_op_built():
            deadline_s = 450
            print("DeepSpeed's shm comm op is not built yet: this run compiles it once (JIT, into torch's "
                  "extension cache); deadline %d s" % deadline_s)
        for backend in ("weft", "gloo"):
            out = os.path.join(tmp, backend)
            os.makedirs(out)
            t = fwlaunch.spawn_ranks([sys.executable, os.path.abspath(__file__), "--worker", "--backend", backend,
                                      "--out", out], world, deadline_s=deadline_s, env=env,
                                     what="deepspeed %s" % backend)
            print("deepspeed %s: %d ranks, ZeRO %s, %.1f s" % (backend, world, STAGES, t))
            results[backend] = fwlaunch.read_results(out, world)
        w, g = results["weft"], results["gloo"]
        for r in range(world):
            for stage in STAGES:
                key = "zero%d_losses" % stage
                fwlaunch.compare_losses("rank %d ZeRO-%d" % (r, stage), w[r][key], g[r][key])
            for stage in STAGES[1:]:
                for step, (a, b) in enumerate(zip(w[r]["zero%d_losses" % stage], w[r]["zero1_losses"])):
                    assert fwlaunch.close(a, b, 1e-4, 1e-6), "weft rank %d step %d: ZeRO-%d loss %.8f, ZeRO-1 %.8f" % (
                        r, step, stage, a, b)
        print("deepspeed %s (torch %s, %d ranks): ZeRO stages %s over weft agree with gloo" % (
            deepspeed.__version__, torch.__version__, world, STAGES))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ranks", nargs="?", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help="(internal) run as one rank")
    parser.add_argument("--backend", default="weft")
    parser.add_argument("--out", help="(internal) the folder for the worker's results")
    a = parser.parse_args()
    if a.worker:
        worker(a)
    else:
        main(a.ranks)
