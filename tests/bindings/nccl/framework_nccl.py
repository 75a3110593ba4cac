#!/usr/bin/env python3
"""Weft's libnccl.so.2 where frameworks load NCCL.

usage: framework_nccl.py preload PYTHON WEFT_LIB
       framework_nccl.py symbols WEFT_LIB PYTHON DOWNLOADS_DIR

preload: runs `import torch` with LD_PRELOAD=WEFT_LIB and LD_BIND_NOW=1 under PYTHON (pip's torch
  2.x, a CUDA build that links NCCL), and reads the dynamic linker's bindings (LD_DEBUG): every
  nccl* function libtorch_cuda.so imports must bind to Weft's library. pip's torch also loads
  its own nvidia-nccl copy by path (torch/__init__.py's CUDA preload); that copy stays unused.
  torch.cuda.nccl.version() is the version of the header torch was compiled with (a constant in
  libtorch_python), so the test reads the runtime version through the bound ncclGetVersion.
symbols: for the NCCL-linked parts of PYTHON's torch (libtorch_cuda.so), cupy-cuda13x
  (cupy_backends/cuda/libs/nccl*.so) and jax-cuda13-pjrt (xla_cuda_plugin.so, which looks NCCL's
  functions up by name at run time: its name table is read), every nccl* function they import is
  defined by Weft's library. The wheels are the ones scripts/setup downloads (not installed).
Exit 0: all good; 1: a missing symbol or a wrong binding (listed); 77: what it needs is absent.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

SKIP = 77


def defined(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    return {f[2].split("@")[0] for f in (line.split() for line in out.splitlines()) if len(f) == 3}


def imported(lib):
    out = subprocess.run(["nm", "-D", "--undefined-only", lib], check=True, capture_output=True, text=True).stdout
    names = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    return {n for n in names if re.fullmatch(r"p?nccl[A-Z]\w*", n)}


def looked_up(lib):
    """NCCL function names a library keeps as strings (for dlsym): whole strings only."""
    out = subprocess.run(["strings", "-n", "6", lib], check=True, capture_output=True, text=True).stdout
    return {s for s in out.splitlines() if re.fullmatch(r"nccl[A-Z][A-Za-z0-9]*", s)}


def preload(python, weft_lib):
    code = ("import torch, ctypes\n"
            "v = ctypes.c_int()\n"
            "assert ctypes.CDLL(None).ncclGetVersion(ctypes.byref(v)) == 0\n"
            "print('runtime', v.value, 'compiled', '.'.join(map(str, torch.cuda.nccl.version())))\n")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(weft_lib), LD_BIND_NOW="1", LD_DEBUG="bindings",
                   LD_DEBUG_OUTPUT=os.path.join(tmp, "ld"))
        r = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            if "No module named 'torch'" in r.stderr:
                print("skipped: %s has no torch" % python)
                return SKIP
            print("import torch under LD_PRELOAD failed:\n" + r.stderr[-3000:])
            return 1
        print(r.stdout.strip())
        bindings = {}
        for path in glob.glob(os.path.join(tmp, "ld.*")):
            for line in open(path, errors="replace"):
                m = re.search(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `(p?nccl\w+)'", line)
                if m and m.group(1).endswith("libtorch_cuda.so"):
                    bindings[m.group(3)] = m.group(2)
    if not bindings:
        print("skipped: no libtorch_cuda.so binding to any nccl* symbol (a CPU-only torch?)")
        return SKIP
    wrong = {n: to for n, to in bindings.items() if os.path.realpath(to) != os.path.realpath(weft_lib)}
    runtime = r.stdout.split()[1]
    ok = not wrong and runtime.startswith("23")
    print("%d nccl functions of libtorch_cuda.so bound: %d to Weft's library" % (len(bindings), len(bindings) - len(wrong)))
    for n, to in sorted(wrong.items()):
        print("  %s bound to %s" % (n, to))
    if not runtime.startswith("23"):
        print("ncclGetVersion reported %s, not Weft's 2.32 level" % runtime)
    return 0 if ok else 1


def unpack(wheel, member_glob, into):
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if glob.fnmatch.fnmatch(n, member_glob)]
        for n in names:
            z.extract(n, into)
        return [os.path.join(into, n) for n in names]


def symbols(weft_lib, python, downloads):
    ours = defined(weft_lib)
    users = {}
    r = subprocess.run([python, "-c", "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))"],
                       capture_output=True, text=True)
    torch_cuda = os.path.join(r.stdout.strip(), "libtorch_cuda.so") if r.returncode == 0 else ""
    if os.path.exists(torch_cuda):
        users["torch " + torch_cuda] = imported(torch_cuda)
    with tempfile.TemporaryDirectory() as tmp:
        for wheel in sorted(glob.glob(os.path.join(downloads, "cupy_cuda13x-*.whl"))):
            for so in unpack(wheel, "cupy_backends/cuda/libs/nccl*.so", tmp):
                users["cupy " + os.path.basename(wheel) + ":" + os.path.basename(so)] = imported(so)
        for wheel in sorted(glob.glob(os.path.join(downloads, "jax_cuda13_pjrt-*.whl"))):
            for so in unpack(wheel, "*xla_cuda_plugin.so", tmp):
                users["jax " + os.path.basename(wheel) + ":" + os.path.basename(so)] = looked_up(so)
    kinds = {k.split()[0] for k in users}
    if kinds != {"torch", "cupy", "jax"}:
        print("skipped: missing %s (scripts/setup downloads the wheels into %s)" %
              (", ".join(sorted({"torch", "cupy", "jax"} - kinds)), downloads))
        return SKIP
    bad = 0
    for who, names in sorted(users.items()):
        missing = sorted(names - ours)
        print("%-70s %3d nccl functions, %d missing%s" % (who, len(names), len(missing),
                                                          (": " + ", ".join(missing)) if missing else ""))
        bad += bool(missing) or not names
    return 1 if bad else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "preload":
        return preload(argv[2], argv[3])
    if len(argv) == 5 and argv[1] == "symbols":
        return symbols(argv[2], argv[3], argv[4])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
