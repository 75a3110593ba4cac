"""weft_torch installed as a user installs a backend: Weft installed with `cmake --install` into a
prefix, then `WEFT_HOME=<prefix> pip install --no-build-isolation bindings/torch` into a fresh
virtual environment of the user's own that sees this interpreter's torch. Then two ranks in that
environment (nothing of the build tree on their path) run init_process_group("weft") - without
`import weft_torch` under torch 2.x (torch's entry-point autoload), with it under 1.13 - and check
an all-reduce and an all-gather, and that the backend they loaded is the one pip installed.

    python test_pip_install.py BUILD_DIR SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap

import fwlaunch

RANK_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import torch
    import torch.distributed as dist
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        import weft_torch  # torch 1.13 has no backend autoload
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("weft", rank=rank, world_size=size)
    assert dist.get_backend() == "weft", dist.get_backend()
    import weft_torch
    where = os.path.dirname(os.path.abspath(weft_torch.__file__))
    assert where.startswith(sys.prefix), "weft_torch came from %s, not the environment %s" % (where, sys.prefix)
    t = torch.arange(1000, dtype=torch.float32) + rank
    dist.all_reduce(t)
    expect = torch.arange(1000, dtype=torch.float32) * size + sum(range(size))
    assert torch.equal(t, expect), (t[:4], expect[:4])
    out = [torch.empty(3) for _ in range(size)]
    dist.all_gather(out, torch.full((3,), float(rank)))
    assert all(torch.equal(o, torch.full((3,), float(r))) for r, o in enumerate(out))
    dist.destroy_process_group()
    print("rank %d: torch %s, weft_torch from %s: all_reduce and all_gather agree" % (rank, torch.__version__, where))
    """
)


def user_env(root):
    """A fresh environment that sees this interpreter's torch, as a user's venv with torch in it."""
    env_dir = os.path.join(root, "env")
    fwlaunch.run_command([sys.executable, "-m", "venv", "--system-site-packages", env_dir], 120)
    python = os.path.join(env_dir, "bin", "python")
    if sys.prefix != sys.base_prefix:
        # This interpreter is itself a virtual environment (the project's torch 2.x): its packages
        # are what a user's environment would have installed, so the new one sees them.
        ours = sysconfig.get_paths()["purelib"]
        theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(theirs, "torch_from_base.pth"), "w") as f:
            f.write(ours + "\n")
    return python


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    build_dir, source_dir = (os.path.abspath(a) for a in sys.argv[1:])
    try:
        import torch  # noqa: F401
    except ImportError as e:
        fwlaunch.skip("no torch for %s (%s)" % (sys.executable, e))
    # Nothing of the build tree on any path of what runs from here on (fwlaunch passes this
    # process's environment on): the user's environment only.
    for key in ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH"):
        os.environ.pop(key, None)
    root = tempfile.mkdtemp(prefix="weft-pip-")
    try:
        prefix = os.path.join(root, "prefix")
        fwlaunch.run_command(["cmake", "--install", build_dir, "--prefix", prefix], 300)
        python = user_env(root)
        # pip builds in the source tree it is given: a copy keeps the checkout clean.
        source = os.path.join(root, "weft_torch-src")
        shutil.copytree(os.path.join(source_dir, "bindings", "torch"), source)
        fwlaunch.run_command([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", source],
                             500, env={"WEFT_HOME": prefix, "MAX_JOBS": os.environ.get("MAX_JOBS", "2")})
        listed = subprocess.run([python, "-m", "pip", "show", "-f", "weft_torch"], capture_output=True, text=True,
                                check=True).stdout
        assert "weft_torch_autoload.py" in listed, listed
        script = os.path.join(root, "ranks.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        fwlaunch.spawn_ranks([python, script], 2, 300, what="the pip-installed backend's ranks")
        print("PASS: pip install against torch %s, then init_process_group('weft') from the user's environment"
              % torch.__version__)
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
