"""A small DDP training run over Weft (or Gloo, to compare).

    torchrun --nproc_per_node 4 train.py --backend weft

Each rank trains the same small regression model on its own shard of synthetic data; DDP
averages the gradients through the chosen backend. Rank 0 prints the loss and the time per step.
"""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import weft_torch  # noqa: F401  registers the "weft" backend


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="weft", help="weft or gloo")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--width", type=int, default=512)
    args = p.parse_args()

    dist.init_process_group(args.backend)  # rank, world size and store from torchrun's environment
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    model = torch.nn.Sequential(torch.nn.Linear(64, args.width), torch.nn.ReLU(), torch.nn.Linear(args.width, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    true_w = torch.randn(64, 1)
    gen = torch.Generator().manual_seed(1 + rank)  # each rank its own data
    start = time.perf_counter()
    for step in range(args.steps):
        x = torch.randn(32, 64, generator=gen)
        loss = F.mse_loss(ddp(x), x @ true_w)
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here, overlapped with the backward pass
        opt.step()
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print("step %3d  loss %.4f" % (step, loss.item()), flush=True)
    dist.barrier()
    if rank == 0:
        print("%s, %d ranks: %.2f ms per step" % (args.backend, world, (time.perf_counter() - start) / args.steps * 1e3))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
