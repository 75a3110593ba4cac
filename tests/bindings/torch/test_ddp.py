"""DDP training through weft against the same training through Gloo, in the same processes.

Two copies of a small model start from the same seed; one is wrapped in DDP over the default
"weft" group, the other over a Gloo group; both see the same data on each rank for 36 steps,
with a branch used only on some steps (find_unused_parameters=True), gradient accumulation with
no_sync() every third step, several gradient buckets (so all-reduces overlap backward), and a
barrier now and then. After every step:

- the weft model's parameters are bitwise identical on every rank;
- its loss equals Gloo's exactly at 2 ranks (a + b is the same sum whichever library adds it),
  and within float tolerance at more ranks (the summation order differs);
- its parameters match Gloo's the same way.

Then subgroups (new_group with backend "weft"): a DDP model per group of two ranks (one rank per
group with 2 ranks) trained against the same model over Gloo subgroups.

Usage: test_ddp.py 2 4   (the rank counts)
"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import harness

STEPS = 36


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(24, 64)
        self.fc2 = nn.Linear(64, 32)
        self.head = nn.Linear(32, 4)
        self.extra = nn.Linear(32, 4)  # an unused parameter on some steps (on some ranks)

    def forward(self, x, use_extra):
        h = F.relu(self.fc2(F.relu(self.fc1(x))))
        out = self.head(h)
        if use_extra:
            out = out + self.extra(h)
        return out


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def same_on_all_ranks(vec, group, world_size):
    gathered = [torch.empty_like(vec) for _ in range(world_size)]
    dist.all_gather(gathered, vec, group=group)
    return all(torch.equal(g, gathered[0]) for g in gathered)


def make(pg):
    torch.manual_seed(0)
    model = Net()
    # bucket_cap_mb small: several buckets, so several all-reduces are in flight during backward.
    ddp = DDP(model, process_group=pg, find_unused_parameters=True, bucket_cap_mb=0.004)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    return ddp, opt


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 + 97 * step + rank)
    x = torch.randn(8, 24, generator=g)
    y = torch.randn(8, 4, generator=g)
    return x, y


def train_step(ddp, opt, step, rank):
    opt.zero_grad()
    x, y = batch(step, rank)
    # The extra branch: used by every rank on even steps, by rank 0 alone when step % 4 == 1.
    use_extra = step % 2 == 0 or (rank == 0 and step % 4 == 1)
    if step % 3 == 1:
        # Accumulate one micro-batch locally; the next backward synchronises both.
        with ddp.no_sync():
            F.mse_loss(ddp(x, use_extra), y).backward()
        x, y = batch(step + 1000, rank)
    loss = F.mse_loss(ddp(x, use_extra), y)
    loss.backward()
    opt.step()
    return loss.detach()


def check_step(step, rank, weft_ddp, gloo_ddp, loss_w, loss_g, exact, gloo):
    """gloo: a Gloo group over the ranks that train together (used to compare across them)."""
    n = dist.get_world_size(gloo)
    pw, pg = flat_params(weft_ddp.module), flat_params(gloo_ddp.module)
    assert same_on_all_ranks(pw, gloo, n), "step %d: weft parameters differ across ranks" % step
    assert same_on_all_ranks(pg, gloo, n), "step %d: gloo parameters differ across ranks" % step
    if exact:
        assert torch.equal(loss_w, loss_g), "step %d rank %d: loss %r (weft) != %r (gloo)" % (
            step, rank, loss_w.item(), loss_g.item())
        assert torch.equal(pw, pg), "step %d rank %d: parameters differ from gloo's (max diff %g)" % (
            step, rank, (pw - pg).abs().max().item())
    else:
        assert torch.allclose(loss_w, loss_g, rtol=1e-4, atol=1e-6), "step %d: loss %r vs %r" % (
            step, loss_w.item(), loss_g.item())
        assert torch.allclose(pw, pg, rtol=1e-4, atol=1e-5), "step %d: parameters differ from gloo's by %g" % (
            step, (pw - pg).abs().max().item())


def ddp_against_gloo(rank, world_size):
    gloo = harness.gloo_group()
    weft_ddp, weft_opt = make(None)  # the default group: weft
    gloo_ddp, gloo_opt = make(gloo)
    assert dist.get_backend() == "weft"
    exact = world_size <= 2
    for step in range(STEPS):
        loss_w = train_step(weft_ddp, weft_opt, step, rank)
        loss_g = train_step(gloo_ddp, gloo_opt, step, rank)
        check_step(step, rank, weft_ddp, gloo_ddp, loss_w, loss_g, exact, gloo)
        if step % 10 == 0:
            dist.barrier()
    if rank == 0:
        print("ddp: %d steps at %d ranks, final loss %.6f (weft) %.6f (gloo)" % (
            STEPS, world_size, loss_w.item(), loss_g.item()))

    # Subgroups: pairs of ranks (single ranks when there are 2), every group made by every rank.
    width = 2 if world_size >= 4 else 1
    groups = [list(range(s, min(s + width, world_size))) for s in range(0, world_size, width)]
    mine = None
    for ranks in groups:
        w = dist.new_group(ranks=ranks, backend="weft")
        g = dist.new_group(ranks=ranks, backend="gloo")
        if rank in ranks:
            mine = (ranks, w, g)
    ranks, sub_w, sub_g = mine
    # A collective in the subgroup: the sum of its members' ranks.
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t, group=sub_w)
    assert t.item() == sum(r + 1 for r in ranks), "subgroup %s all_reduce gave %r" % (ranks, t.item())
    dist.barrier(group=sub_w)
    weft_ddp, weft_opt = make(sub_w)
    gloo_ddp, gloo_opt = make(sub_g)
    for step in range(6):
        loss_w = train_step(weft_ddp, weft_opt, step, rank)
        loss_g = train_step(gloo_ddp, gloo_opt, step, rank)
        check_step(step, rank, weft_ddp, gloo_ddp, loss_w, loss_g, len(ranks) <= 2, sub_g)
    dist.barrier()


if __name__ == "__main__":
    for n in harness.world_sizes_from_argv((2, 4)):
        harness.run(ddp_against_gloo, n)
