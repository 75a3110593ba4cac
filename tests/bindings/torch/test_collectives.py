"""Every collective torch.distributed offers on CPU tensors, through weft, against Gloo.

Inputs are small integers (1..3) in every dtype, so every sum, product, minimum, maximum and
average is exact: results must be bitwise equal to Gloo's (and to a reference computed from all
ranks' inputs, which every rank can regenerate). Where Gloo lacks an operation in this torch
(AVG, bfloat16, _allgather_base, reduce_scatter, list all_to_all, ...) the reference alone is
the judge; the run prints which comparisons that was.

Usage: test_collectives.py 2 4   (the rank counts)
"""
import warnings

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

import harness

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
          torch.int64]
OPS = {"SUM": ReduceOp.SUM, "PRODUCT": ReduceOp.PRODUCT, "MIN": ReduceOp.MIN, "MAX": ReduceOp.MAX}
gloo_missing = set()


def data(rank, shape, dtype, salt=0):
    """Rank `rank`'s input: integers 1..3 (any rank can make any other rank's input)."""
    g = torch.Generator().manual_seed(1 + 1000 * rank + salt)
    return torch.randint(1, 4, shape, generator=g).to(dtype)


def reduce_ref(tensors, op):
    acc = torch.stack([t.to(torch.float64) for t in tensors])
    if op == "SUM":
        out = acc.sum(0)
    elif op == "PRODUCT":
        out = acc.prod(0)
    elif op == "MIN":
        out = acc.min(0).values
    else:
        out = acc.max(0).values
    return out.to(tensors[0].dtype)


def expect(what, got, want):
    assert got.dtype == want.dtype and torch.equal(got, want), "%s: got %s, expected %s" % (what, got, want)


def with_gloo(what, fn):
    """Runs fn() on Gloo; returns False (and notes it) when Gloo does not support the call (torch
    2.15's Gloo all_to_all takes equal sizes only: "invalid tensor size")."""
    try:
        fn()
        return True
    except (RuntimeError, ValueError) as e:
        msg = str(e)
        if any(s in msg for s in ("not support", "nsupported", "Cannot use", "Invalid scalar type", "invalid tensor size")):
            gloo_missing.add(what)
            return False
        raise


def test_all_reduce(rank, n, gloo):
    for dtype in DTYPES:
        for size in (5, 70000):  # one message small enough for doubling/tree, one for the ring
            for name, op in OPS.items():
                what = "all_reduce %s %s x%d" % (name, dtype, size)
                t = data(rank, (size,), dtype, size)
                want = reduce_ref([data(r, (size,), dtype, size) for r in range(n)], name)
                dist.all_reduce(t, op=op)
                expect(what, t, want)
                tg = data(rank, (size,), dtype, size)
                if with_gloo("all_reduce %s %s" % (name, dtype), lambda: dist.all_reduce(tg, op=op, group=gloo)):
                    expect(what + " against gloo", t, tg)
        # AVG: Gloo has none; the sum divided by the rank count (integer division for integers).
        t = data(rank, (33,), dtype, 7)
        total = reduce_ref([data(r, (33,), dtype, 7) for r in range(n)], "SUM").to(torch.float64)
        want = (total / n).to(dtype) if dtype.is_floating_point else torch.div(total, n, rounding_mode="floor").to(dtype)
        dist.all_reduce(t, op=ReduceOp.AVG)
        expect("all_reduce AVG %s" % dtype, t, want)
    gloo_missing.add("all_reduce AVG")

    # bool: SUM is a logical or, PRODUCT and MIN a logical and.
    for name, op in OPS.items():
        t = data(rank, (40,), torch.int32, 3) == 1
        ins = [data(r, (40,), torch.int32, 3) == 1 for r in range(n)]
        want = torch.stack(ins).any(0) if name in ("SUM", "MAX") else torch.stack(ins).all(0)
        dist.all_reduce(t, op=op)
        expect("all_reduce %s bool" % name, t, want)

    # A tensor that is not contiguous: every other column of a matrix; the others stay as they were.
    base = data(rank, (6, 10), torch.float32, 11)
    view = base[:, ::2]
    keep = base[:, 1::2].clone()
    dist.all_reduce(view)
    want = reduce_ref([data(r, (6, 10), torch.float32, 11)[:, ::2] for r in range(n)], "SUM")
    expect("all_reduce of a non-contiguous view", view.contiguous(), want)
    expect("columns next to the view", base[:, 1::2], keep)
    # Gloo (torch 1.13) reduces a view's underlying storage as if it were contiguous, so it gets
    # the contiguous copy.
    bg = data(rank, (6, 10), torch.float32, 11)[:, ::2].contiguous()
    dist.all_reduce(bg, group=gloo)
    expect("non-contiguous against gloo", view.contiguous(), bg)

    # all_reduce_coalesced: one Weft group of all-reduces.
    ts = [data(rank, (9,), torch.float32, 20), data(rank, (3, 4), torch.float32, 21)]
    dist.all_reduce_coalesced(ts)
    expect("all_reduce_coalesced[0]", ts[0], reduce_ref([data(r, (9,), torch.float32, 20) for r in range(n)], "SUM"))
    expect("all_reduce_coalesced[1]", ts[1],
           reduce_ref([data(r, (3, 4), torch.float32, 21) for r in range(n)], "SUM"))

    # Refusals raise at the call, with a sentence.
    for op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR):
        try:
            dist.all_reduce(torch.ones(3, dtype=torch.int32), op=op)
        except ValueError as e:
            assert "bitwise" in str(e), str(e)
        else:
            raise AssertionError("all_reduce with %s was not refused" % op)
    try:
        dist.all_reduce(torch.ones(3, dtype=torch.int16))
    except ValueError as e:
        assert "int16" in str(e) or "Short" in str(e), str(e)
    else:
        raise AssertionError("all_reduce of int16 was not refused")


def test_rooted(rank, n, gloo):
    for root in range(n):
        for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8):
            t = data(rank, (13, 3), dtype, 30 + root)
            dist.broadcast(t, src=root)
            expect("broadcast from %d %s" % (root, dtype), t, data(root, (13, 3), dtype, 30 + root))
            tg = data(rank, (13, 3), dtype, 30 + root)
            if with_gloo("broadcast %s" % dtype, lambda: dist.broadcast(tg, src=root, group=gloo)):
                expect("broadcast against gloo", t, tg)
        t = data(rank, (8,), torch.int32, 40) == 2
        dist.broadcast(t, src=root)
        expect("broadcast bool", t, data(root, (8,), torch.int32, 40) == 2)

    dst = n - 1
    for name in ("SUM", "MAX"):
        for dtype in (torch.float32, torch.int32):
            t = data(rank, (100,), dtype, 50)
            dist.reduce(t, dst=dst, op=OPS[name])
            if rank == dst:
                expect("reduce %s %s" % (name, dtype), t, reduce_ref([data(r, (100,), dtype, 50) for r in range(n)], name))
            tg = data(rank, (100,), dtype, 50)
            if with_gloo("reduce", lambda: dist.reduce(tg, dst=dst, op=OPS[name], group=gloo)) and rank == dst:
                expect("reduce against gloo", t, tg)

    # gather to rank 1 (0 with one rank), scatter from the last rank.
    root = 1 % n
    t = data(rank, (4, 2), torch.float64, 60)
    outs = [torch.zeros(4, 2, dtype=torch.float64) for _ in range(n)] if rank == root else None
    dist.gather(t, gather_list=outs, dst=root)
    if rank == root:
        for r in range(n):
            expect("gather from %d" % r, outs[r], data(r, (4, 2), torch.float64, 60))
        outs_g = [torch.zeros(4, 2, dtype=torch.float64) for _ in range(n)]
        dist.gather(t, gather_list=outs_g, dst=root, group=gloo)
        for r in range(n):
            expect("gather against gloo", outs[r], outs_g[r])
    else:
        dist.gather(t, dst=root, group=gloo)
    src = n - 1
    ins = [data(src, (5,), torch.int64, 70 + r) for r in range(n)] if rank == src else None
    out = torch.zeros(5, dtype=torch.int64)
    dist.scatter(out, scatter_list=ins, src=src)
    expect("scatter", out, data(src, (5,), torch.int64, 70 + rank))
    out_g = torch.zeros(5, dtype=torch.int64)
    dist.scatter(out_g, scatter_list=ins, src=src, group=gloo)
    expect("scatter against gloo", out, out_g)

    try:
        dist.broadcast(torch.zeros(2), src=n)
    except (ValueError, RuntimeError) as e:
        assert "rank" in str(e), str(e)
    else:
        raise AssertionError("broadcast from rank %d of %d was not refused" % (n, n))


def test_gathers(rank, n, gloo):
    for dtype in (torch.float32, torch.float16, torch.int8, torch.int64):
        t = data(rank, (3, 5), dtype, 80)
        outs = [torch.empty(3, 5, dtype=dtype) for _ in range(n)]
        dist.all_gather(outs, t)
        for r in range(n):
            expect("all_gather[%d] %s" % (r, dtype), outs[r], data(r, (3, 5), dtype, 80))
        outs_g = [torch.empty(3, 5, dtype=dtype) for _ in range(n)]
        if with_gloo("all_gather %s" % dtype, lambda: dist.all_gather(outs_g, t, group=gloo)):
            for r in range(n):
                expect("all_gather against gloo", outs[r], outs_g[r])
        # all_gather_into_tensor (_allgather_base): Gloo lacks it here; compare with its list form.
        flat = torch.empty(n * 3, 5, dtype=dtype)
        dist.all_gather_into_tensor(flat, t)
        expect("all_gather_into_tensor %s" % dtype, flat, torch.cat(outs))

    # reduce_scatter (list and tensor forms): the reduction of block `rank` of every rank's input.
    for dtype in (torch.float32, torch.int32, torch.bfloat16):
        for name in ("SUM", "MAX"):
            ins = [data(rank, (6,), dtype, 90 + r) for r in range(n)]
            want = reduce_ref([data(q, (6,), dtype, 90 + rank) for q in range(n)], name)
            out = torch.empty(6, dtype=dtype)
            dist.reduce_scatter(out, ins, op=OPS[name])
            expect("reduce_scatter %s %s" % (name, dtype), out, want)
            out2 = torch.empty(6, dtype=dtype)
            dist.reduce_scatter_tensor(out2, torch.cat(ins), op=OPS[name])
            expect("reduce_scatter_tensor %s %s" % (name, dtype), out2, want)
            # Against Gloo: its all_reduce of the whole input, block `rank`.
            whole = torch.cat(ins)
            if with_gloo("all_reduce %s %s" % (name, dtype), lambda: dist.all_reduce(whole, op=OPS[name], group=gloo)):
                expect("reduce_scatter against gloo's all_reduce", out, whole[6 * rank:6 * rank + 6])
    gloo_missing.add("reduce_scatter")


def test_all_to_all(rank, n, gloo):
    # Even blocks.
    t = data(rank, (4 * n, 3), torch.float32, 100)
    out = torch.empty_like(t)
    dist.all_to_all_single(out, t)
    want = torch.cat([data(p, (4 * n, 3), torch.float32, 100)[4 * rank:4 * rank + 4] for p in range(n)])
    expect("all_to_all_single", out, want)
    out_g = torch.empty_like(t)
    dist.all_to_all_single(out_g, t, group=gloo)
    expect("all_to_all_single against gloo", out, out_g)

    # Uneven blocks, some empty: rank r sends (3r + p) % 4 rows of 3 to rank p.
    def rows(src, dst):
        return (3 * src + dst) % 4

    in_splits = [rows(rank, p) for p in range(n)]
    out_splits = [rows(p, rank) for p in range(n)]
    for dtype in (torch.int64, torch.float16):
        t = data(rank, (sum(in_splits), 3), dtype, 110)
        out = torch.full((sum(out_splits), 3), -1).to(dtype)
        dist.all_to_all_single(out, t, output_split_sizes=out_splits, input_split_sizes=in_splits)
        parts = []
        for p in range(n):
            src_in = data(p, (sum(rows(p, q) for q in range(n)), 3), dtype, 110)
            start = sum(rows(p, q) for q in range(rank))
            parts.append(src_in[start:start + rows(p, rank)])
        expect("all_to_all_single uneven %s" % dtype, out, torch.cat(parts))
        out_g = torch.full((sum(out_splits), 3), -1).to(dtype)
        dist.all_to_all_single(out_g, t, output_split_sizes=out_splits, input_split_sizes=in_splits, group=gloo)
        expect("all_to_all_single uneven against gloo", out, out_g)

    # List form: rank r sends r + p + 1 elements to rank p.
    ins = [data(rank, (rank + p + 1,), torch.int32, 120 + p) for p in range(n)]
    outs = [torch.empty(p + rank + 1, dtype=torch.int32) for p in range(n)]
    dist.all_to_all(outs, ins)
    for p in range(n):
        expect("all_to_all from %d" % p, outs[p], data(p, (p + rank + 1,), torch.int32, 120 + rank))
    outs_g = [torch.empty(p + rank + 1, dtype=torch.int32) for p in range(n)]
    if with_gloo("all_to_all (list)", lambda: dist.all_to_all(outs_g, ins, group=gloo)):
        for p in range(n):
            expect("all_to_all against gloo", outs[p], outs_g[p])


def test_point_to_point(rank, n, gloo):
    if n < 2:
        return
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    # isend/irecv both ways without batch_isend_irecv (sends and receives queued one after another
    # run as one Weft group, so they cannot wait on each other), on fresh connections.
    for size in (10, 1 << 20):
        t = data(rank, (size,), torch.float32, 125)
        a, b = torch.empty(size), torch.empty(size)
        reqs = [dist.isend(t, nxt), dist.isend(t, prv), dist.irecv(a, prv), dist.irecv(b, nxt)]
        for r in reqs:
            r.wait()
        expect("isend/irecv from the left %d" % size, a, data(prv, (size,), torch.float32, 125))
        expect("isend/irecv from the right %d" % size, b, data(nxt, (size,), torch.float32, 125))
    # A receive queued behind a send to the same peer, then a blocking receive.
    t = data(rank, (1000,), torch.float32, 126)
    got = torch.empty(1000)
    if rank < 2:
        req = dist.isend(t, 1 - rank)
        dist.recv(got, 1 - rank)
        req.wait()
        expect("isend then recv", got, data(1 - rank, (1000,), torch.float32, 126))
    for size in (10, 1 << 20):  # 40 B and 4 MiB
        t = data(rank, (size,), torch.float32, 130)
        got = torch.empty(size)
        # Even ranks send first, odd ranks receive first: blocking calls cannot wait on each other.
        if rank % 2 == 0:
            dist.send(t, dst=nxt)
            dist.recv(got, src=prv)
        else:
            dist.recv(got, src=prv)
            dist.send(t, dst=nxt)
        expect("send/recv %d" % size, got, data(prv, (size,), torch.float32, 130))
        # batch_isend_irecv: both directions at once (one Weft group).
        got2 = torch.empty(size)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, nxt), dist.P2POp(dist.irecv, got2, prv)])
        for r in reqs:
            r.wait()
        expect("batch_isend_irecv %d" % size, got2, got)
    # A non-contiguous receive buffer, written back.
    m = torch.zeros(4, 6)
    if rank == 0:
        dist.send(data(0, (4, 3), torch.float32, 140), dst=1)
    elif rank == 1:
        dist.recv(m[:, ::2], src=0)
        expect("recv into a view", m[:, ::2], data(0, (4, 3), torch.float32, 140))
        expect("recv leaves the rest", m[:, 1::2], torch.zeros(4, 3))
    # Gloo, the same exchange, for comparison.
    t = data(rank, (10,), torch.float32, 150)
    got_w, got_g = torch.empty(10), torch.empty(10)
    for got, grp in ((got_w, None), (got_g, gloo)):
        if rank % 2 == 0:
            dist.send(t, dst=nxt, group=grp)
            dist.recv(got, src=prv, group=grp)
        else:
            dist.recv(got, src=prv, group=grp)
            dist.send(t, dst=nxt, group=grp)
    expect("send/recv against gloo", got_w, got_g)


def test_async_and_barrier(rank, n, gloo):
    # Several calls in flight; the futures carry the outputs; then() chains like DDP's hooks.
    ts = [data(rank, (1000,), torch.float32, 160 + i) for i in range(8)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    fut = works[-1].get_future().then(lambda f: f.value()[0] * 2)
    works[3].wait()  # not the next call: the worker runs the earlier ones first
    for i, w in enumerate(works):
        w.wait()
        assert w.is_completed() and w.is_success()
        expect("async all_reduce %d" % i, ts[i],
               reduce_ref([data(r, (1000,), torch.float32, 160 + i) for r in range(n)], "SUM"))
    expect("future.then", fut.wait(), ts[-1] * 2)
    # Polling alone (no wait, no future) gets a call done.
    t = data(rank, (10,), torch.float32, 170)
    w = dist.all_reduce(t, async_op=True)
    while not w.is_completed():
        pass
    expect("polled all_reduce", t, reduce_ref([data(r, (10,), torch.float32, 170) for r in range(n)], "SUM"))
    # A call nobody asks about starts anyway: this rank waits on a Gloo call that needs it done
    # on the other ranks.
    t = data(rank, (10,), torch.float32, 171)
    w = dist.all_reduce(t, async_op=True)
    dist.barrier(group=gloo)
    flag = torch.zeros(1)
    if rank != 0:
        w.wait()
    dist.all_reduce(flag, group=gloo)
    w.wait()
    expect("unobserved all_reduce", t, reduce_ref([data(r, (10,), torch.float32, 171) for r in range(n)], "SUM"))
    for _ in range(3):
        dist.barrier()
    w = dist.barrier(async_op=True)
    w.wait()


def collectives(rank, n):
    warnings.filterwarnings("ignore", message=".*all_reduce_coalesced will be deprecated")
    gloo = harness.gloo_group()
    test_all_reduce(rank, n, gloo)
    test_rooted(rank, n, gloo)
    test_gathers(rank, n, gloo)
    test_all_to_all(rank, n, gloo)
    test_point_to_point(rank, n, gloo)
    test_async_and_barrier(rank, n, gloo)
    if rank == 0:
        print("collectives at %d ranks: all equal; Gloo lacks (reference only): %s" % (n, ", ".join(sorted(gloo_missing))))


if __name__ == "__main__":
    for n in harness.world_sizes_from_argv((2, 4)):
        harness.run(collectives, n)
