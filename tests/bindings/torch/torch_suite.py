"""torch's own distributed test suite (torch.testing._internal.distributed.distributed_test), run
with "weft" as a plugin backend that has gloo's CPU features, under whichever torch runs this.

    torch_suite.py --backend weft --world-size 2 [--shard 1/4] [-k PATTERN] [--json out.json]
                   [--expect baseline.json]

How it enters the suite: the module reads BACKEND once, at import, to decide which tests exist
(decorators such as "only gloo supports timeouts"), and again at run time, to pick the backend
the test uses. The driver imports it with BACKEND=gloo, so that every test gloo would run
exists, then sets the module's BACKEND to the backend asked for: the tests the suite gates to
gloo by name (time-outs, barrier behaviour, monitored barriers) run on weft too. "weft" is added
to every feature set of DistTestCases where gloo is (ddp, subgroup, plugin, ...), as torch's docs
tell plugin backends to do, and the module's BACKEND compares equal to "gloo" as well as to its
own name, so that test bodies which pick gloo's CPU path by name ("if BACKEND == 'gloo': build a
CPU model") take it for weft too. Ranks are forked (no re-import of torch per test).

The recorded gloo runs ctest compares with are in suite-baseline/ (torch<major>-<ranks>.json), made by
    torch_suite.py --backend gloo --world-size N --json suite-baseline/torch2-N.json --brief
--expect: a JSON written by an earlier run on gloo (--json): the run fails when a test that
passed there fails here; tests listed in KNOWN_DIFFERENCES below are reported, not failed, with
their reason (the same list is in docs/pytorch.md).
"""
import argparse
import fnmatch
import json
import os
import sys
import tempfile
import time
import unittest

# Tests where weft differs from gloo on purpose, with the reason (by torch major version). Keep in
# step with docs/pytorch.md ("torch's own test suite").
KNOWN_DIFFERENCES = {
    1: {
        "test_monitored_barrier_gloo": "torch 1.13's dist.monitored_barrier refuses every backend but gloo by name "
        "(distributed_c10d.py: 'monitored_barrier is only implemented for GLOO backend'); the group's own "
        "monitored_barrier works on weft (test_monitored_barrier_gloo_rank_0_timeout), and torch 2.x lifts the check",
        "test_monitored_barrier_gloo_subgroup": "the same check of torch 1.13's dist.monitored_barrier",
        "test_monitored_barrier_failure_order": "the same check of torch 1.13's dist.monitored_barrier (3+ ranks)",
        "test_monitored_barrier_wait_all_ranks": "the same check of torch 1.13's dist.monitored_barrier (3+ ranks)",
    },
    2: {
        "test_ddp_logging_data_cpu": "torch 2.x's ProcessGroup names its backend by type, and every plugin backend "
        "is of type CUSTOM (ProcessGroup::getBackendName returns 'custom'); DDP's logging data records that "
        "name while the test expects dist.get_backend()'s 'weft'. No backend can change it; the rest of "
        "the logging data is checked by the same test up to that line",
    },
}


# More under TORCH_DISTRIBUTED_DEBUG=DETAIL.
DETAIL_DIFFERENCES = {
    1: {
        "test_barrier_timeout_full_group": "torch 1.13 puts only gloo, nccl and ucc groups in its DETAIL checking wrapper "
        "(distributed_c10d._new_process_group_helper), never a plugin backend's, while the test expects the wrapper's "
        "'failed to pass monitoredBarrier'; weft's own time-out message is what it raises. torch 2.x wraps plugin "
        "backends too, and the test passes there",
    },
}


class AlsoGloo(str):
    """A backend name that also equals "gloo" (hash and set membership stay its own name's)."""

    def __eq__(self, other):
        return str.__eq__(self, other) or (isinstance(other, str) and str.__eq__("gloo", other))

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="weft")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--shard", default="1/1", help="i/n: run the i-th of n equal slices of the tests")
    p.add_argument("-k", action="append", default=[], help="fnmatch pattern(s) of test names to run")
    p.add_argument("--json", help="write every test's outcome here")
    p.add_argument("--brief", action="store_true", help="--json without the failures' tracebacks (for baselines)")
    p.add_argument("--expect", help="a --json file of a gloo run: fail where gloo passed and this did not")
    p.add_argument("--list", action="store_true", help="print the test names and exit")
    return p.parse_args()


def main():
    args = parse()
    temp = tempfile.mkdtemp(prefix="weft-torch-suite-")
    os.environ.update({"BACKEND": "gloo", "WORLD_SIZE": str(args.world_size), "TEMP_DIR": temp,
                       "MASTER_ADDR": "127.0.0.1"})
    os.environ.setdefault("WEFT_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    if args.backend == "weft":
        import weft_torch  # noqa: F401  (torch 2.x has it already through the entry point)
    from torch.testing._internal import common_distributed
    from torch.testing._internal.distributed import distributed_test as suite

    for name, backends in list(common_distributed.DistTestCases.backend_feature.items()) + list(
            common_distributed.DistTestCases.skip_collective.items()):
        if "gloo" in backends or name == "plugin":
            backends.add(args.backend)
    suite.BACKEND = AlsoGloo(args.backend) if args.backend != "gloo" else "gloo"

    class Suite(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            if hasattr(self, "_fork_processes"):
                self._fork_processes()
            else:
                import torch.multiprocessing as mp
                self._start_processes(mp.get_context("fork").Process)

    loader = unittest.TestLoader()
    names = sorted(loader.getTestCaseNames(Suite))
    if args.k:
        names = [n for n in names if any(fnmatch.fnmatch(n, k) or k in n for k in args.k)]
    i, n = (int(x) for x in args.shard.split("/"))
    names = names[i - 1::n]
    if args.list:
        print("\n".join(names))
        return 0

    outcomes = {}
    start = time.time()
    for name in names:
        t0 = time.time()
        result = unittest.TestResult()
        Suite(name).run(result)
        if result.errors:
            outcome, detail = "error", result.errors[0][1]
        elif result.failures:
            outcome, detail = "fail", result.failures[0][1]
        elif result.skipped:
            outcome, detail = "skip", result.skipped[0][1]
        else:
            outcome, detail = "pass", ""
        outcomes[name] = {"outcome": outcome, "seconds": round(time.time() - t0, 2), "detail": detail[-2000:]}
        print("%-6s %6.1fs %s" % (outcome, time.time() - t0, name), flush=True)

    counts = {}
    for o in outcomes.values():
        counts[o["outcome"]] = counts.get(o["outcome"], 0) + 1
    print("torch %s, %s, %d ranks: %s in %.0f s" % (torch.__version__, args.backend, args.world_size,
                                                     ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())),
                                                     time.time() - start))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "backend": args.backend, "world_size": args.world_size,
                       "tests": {n: ({"outcome": o["outcome"]} if args.brief else o) for n, o in outcomes.items()}},
                      f, indent=1, sort_keys=True)

    major = int(torch.__version__.split(".")[0])
    known = dict(KNOWN_DIFFERENCES.get(major, {}))
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL":
        known.update(DETAIL_DIFFERENCES.get(major, {}))
    bad = []
    if args.expect:
        with open(args.expect) as f:
            baseline = json.load(f)["tests"]
        for name, o in outcomes.items():
            base = baseline.get(name, {}).get("outcome")
            if base == "pass" and o["outcome"] != "pass":
                if name in known:
                    print("known  %s: %s" % (name, known[name]))
                else:
                    bad.append(name)
    else:
        bad = [n for n, o in outcomes.items() if o["outcome"] in ("fail", "error") and n not in known]
    for name in bad:
        print("\nFAILED %s (%s):\n%s" % (name, outcomes[name]["outcome"], outcomes[name]["detail"]))
    print("%d passed, %d failed" % (counts.get("pass", 0), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
