"""Launching for the framework tests (torchrun, FSDP2, DeepSpeed) and perf/torch_bench.py.

Those tests start each run of ranks as fresh processes, the way a user does (torchrun, or the
environment variables torchrun sets: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so
that the default process group can be "weft" in one run and "gloo" in the next. harness.py cannot
do that: it makes "weft" the default group in every rank it starts.

run_command(argv) runs one launcher (torchrun) in its own session; spawn_ranks(argv, n) starts n
ranks with torchrun's variables. Both kill every process they started (the whole session, so
torchrun's children too) when the deadline passes, and raise: a hang is a failure, never a stuck
test. Workers write their results as JSON to a folder the caller reads back (read_results).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for these scripts


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(extra=None):
    """The environment every rank gets: Weft's bootstrap on loopback, one OpenMP thread a rank."""
    env = dict(os.environ)
    env.setdefault("WEFT_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the session: torchrun and its workers
            except ProcessLookupError:
                pass
    for p in procs:
        p.wait()


def _wait(procs, deadline_s, what):
    start = time.monotonic()
    try:
        while any(p.poll() is None for p in procs):
            if time.monotonic() - start > deadline_s:
                hung = [i for i, p in enumerate(procs) if p.poll() is None]
                raise AssertionError("%s: processes %s still running after %d s: killed (a hang)" % (what, hung, deadline_s))
            if any(p.returncode not in (None, 0) for p in procs):
                # One rank failed: give the others a moment to report their own error, then stop them.
                time.sleep(min(5.0, max(0.0, deadline_s - (time.monotonic() - start))))
                break
            time.sleep(0.1)
    finally:
        _kill(procs)
    failed = [(i, p.returncode) for i, p in enumerate(procs) if p.returncode != 0]
    if failed:
        raise AssertionError("%s: failed (process, exit code): %s" % (what, failed))
    return time.monotonic() - start


def run_command(argv, deadline_s, env=None, what=None):
    """Runs argv (e.g. torchrun and its script) to completion; returns its wall time in seconds."""
    p = subprocess.Popen(argv, env=base_env(env), start_new_session=True)
    return _wait([p], deadline_s, what or " ".join(argv[:4]))


def spawn_ranks(argv, world_size, deadline_s, env=None, what=None):
    """Starts world_size processes of argv with torchrun's variables; returns the wall time."""
    port = str(free_port())
    procs = []
    try:
        for rank in range(world_size):
            rank_env = {
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(world_size),
                "LOCAL_WORLD_SIZE": str(world_size),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
            }
            rank_env.update(env or {})
            procs.append(subprocess.Popen(argv, env=base_env(rank_env), start_new_session=True))
    except BaseException:
        _kill(procs)
        raise
    return _wait(procs, deadline_s, what or os.path.basename(argv[1]))


def write_result(out_dir, rank, result):
    path = os.path.join(out_dir, "rank%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)


def read_results(out_dir, world_size):
    results = []
    for rank in range(world_size):
        path = os.path.join(out_dir, "rank%d.json" % rank)
        assert os.path.exists(path), "rank %d wrote no result (%s)" % (rank, path)
        with open(path) as f:
            results.append(json.load(f))
    return results


def torch_major():
    import torch

    return int(torch.__version__.split(".")[0])


def skip(reason):
    print("SKIP: " + reason)
    sys.stdout.flush()
    sys.exit(SKIP)


def close(a, b, rtol=1e-5, atol=1e-6):
    return abs(a - b) <= atol + rtol * abs(b)


def compare_losses(name, weft, gloo, rtol=1e-5, atol=1e-6):
    """Prints weft's and gloo's per-step losses side by side; asserts they agree to tolerance.
    Returns the largest absolute difference."""
    assert len(weft) == len(gloo), "%s: %d steps under weft, %d under gloo" % (name, len(weft), len(gloo))
    worst = 0.0
    print("%s: step  loss (weft)        loss (gloo)        |diff|" % name)
    for step, (w, g) in enumerate(zip(weft, gloo)):
        print("%s: %4d  %.10f  %.10f  %.3g" % (name, step, w, g, abs(w - g)))
        worst = max(worst, abs(w - g))
    for step, (w, g) in enumerate(zip(weft, gloo)):
        assert close(w, g, rtol, atol), "%s step %d: loss %.10f under weft, %.10f under gloo (diff %.3g > tolerance)" % (
            name, step, w, g, abs(w - g))
    return worst
