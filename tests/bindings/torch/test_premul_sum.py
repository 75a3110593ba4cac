"""PREMUL_SUM through weft: every input multiplied by a factor, then summed.

The factor comes from the op's supplement (torch.distributed._make_nccl_premul_sum, a number or
a one-element tensor) and becomes a Weft op made by weftRedOpCreatePreMulSum for the call. Gloo
has no PREMUL_SUM; the reference is factor * the sum of every rank's input, exact for the small
integer inputs and power-of-two factors used here.

Usage: test_premul_sum.py 2 4   (the rank counts)
"""
import torch
import torch.distributed as dist

import harness


def data(rank, shape, dtype, salt=0):
    g = torch.Generator().manual_seed(7 + 100 * rank + salt)
    return torch.randint(1, 4, shape, generator=g).to(dtype)


def expect(what, got, want):
    assert got.dtype == want.dtype and torch.equal(got, want), "%s: got %s, expected %s" % (what, got, want)


def factor_tensor(value, dtype):
    """The tensor form of the factor: a one-element tensor (torch 2.x), a list of one (torch 1.13)."""
    t = torch.tensor([value], dtype=dtype)
    return t if int(torch.__version__.split(".")[0]) >= 2 else [t]


def premul_sum(rank, n):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for factor_kind in ("number", "tensor"):
            op = dist._make_nccl_premul_sum(0.5 if factor_kind == "number" else factor_tensor(0.25, dtype))
            f = 0.5 if factor_kind == "number" else 0.25
            for size in (5, 70000):
                t = data(rank, (size,), dtype, size)
                want = (sum(data(r, (size,), dtype, size).to(torch.float64) for r in range(n)) * f).to(dtype)
                dist.all_reduce(t, op=op)
                expect("all_reduce PREMUL_SUM(%s) %s x%d" % (factor_kind, dtype, size), t, want)
    op = dist._make_nccl_premul_sum(2.0)
    ins = [data(rank, (6,), torch.float32, 50 + r) for r in range(n)]
    out = torch.empty(6)
    dist.reduce_scatter_tensor(out, torch.cat(ins), op=op)
    want = sum(data(q, (6,), torch.float32, 50 + rank) for q in range(n)) * 2.0
    expect("reduce_scatter_tensor PREMUL_SUM", out, want)
    t = data(rank, (10,), torch.float64, 60)
    dist.reduce(t, dst=0, op=op)
    if rank == 0:
        expect("reduce PREMUL_SUM", t, sum(data(r, (10,), torch.float64, 60) for r in range(n)) * 2.0)
    if rank == 0:
        print("PREMUL_SUM at %d ranks: all equal to the reference" % n)


if __name__ == "__main__":
    for n in harness.world_sizes_from_argv((2, 4)):
        harness.run(premul_sum, n)
