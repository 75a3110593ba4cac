"""pip install for weft_torch, the torch.distributed backend "weft", against the torch of the
environment it is installed into (torch 1.13 or 2.x):

    WEFT_HOME=/usr/local pip install --no-build-isolation bindings/torch

It compiles csrc/ with torch's own extension builder and links the libweft.so it finds:
WEFT_HOME (an install prefix: include/weft/weft.h, lib/libweft.so), else WEFT_INCLUDE_DIR and
WEFT_LIB_DIR, else pkg-config's weft, else /usr/local and /usr. The extension finds libweft.so at
run time through its RUNPATH (the directory it was linked against). --no-build-isolation lets the
build see the torch that is installed; torch 2.x then registers the backend at `import torch`
through the entry point below.
"""
import os
import shlex
import subprocess

from setuptools import setup

try:
    import torch
    from torch.utils.cpp_extension import BuildExtension, CppExtension
except ImportError as e:  # pragma: no cover - what a user sees without torch
    raise SystemExit(
        "weft_torch builds against the torch of this environment, and torch is not importable "
        f"({e}); install torch first and pip install with --no-build-isolation"
    )

HERE = os.path.dirname(os.path.abspath(__file__))


def find_weft():
    """(include dir, library dir) of an installed or built Weft, or SystemExit saying what to set."""
    tried = []
    candidates = []
    if os.environ.get("WEFT_HOME"):
        home = os.environ["WEFT_HOME"]
        candidates.append((os.path.join(home, "include"), os.path.join(home, "lib")))
        candidates.append((os.path.join(home, "include"), os.path.join(home, "lib64")))
    if os.environ.get("WEFT_INCLUDE_DIR") or os.environ.get("WEFT_LIB_DIR"):
        candidates.append((os.environ.get("WEFT_INCLUDE_DIR", ""), os.environ.get("WEFT_LIB_DIR", "")))
    try:
        cflags = subprocess.run(["pkg-config", "--cflags-only-I", "weft"], capture_output=True, text=True, check=True)
        libs = subprocess.run(["pkg-config", "--libs-only-L", "weft"], capture_output=True, text=True, check=True)
        inc = [f[2:] for f in shlex.split(cflags.stdout) if f.startswith("-I")]
        lib = [f[2:] for f in shlex.split(libs.stdout) if f.startswith("-L")]
        if inc and lib:
            candidates.append((inc[0], lib[0]))
    except (OSError, subprocess.CalledProcessError):
        pass
    for prefix in ("/usr/local", "/usr"):
        candidates.append((os.path.join(prefix, "include"), os.path.join(prefix, "lib")))
    for inc, lib in candidates:
        tried.append(f"{inc} + {lib}")
        if os.path.isfile(os.path.join(inc, "weft", "weft.h")) and os.path.isfile(os.path.join(lib, "libweft.so")):
            return inc, lib
    raise SystemExit(
        "weft_torch: no Weft found (weft/weft.h and libweft.so); tried " + "; ".join(tried) +
        ". Install Weft (cmake --install) and set WEFT_HOME to its prefix, or set WEFT_INCLUDE_DIR and WEFT_LIB_DIR"
    )


include_dir, lib_dir = find_weft()
major = int(torch.__version__.split(".")[0])
cxx = ["-O2", "-std=c++20" if major >= 2 else "-std=c++17", "-fvisibility=hidden"]
sources = [
    os.path.join("csrc", f)
    for f in (
        "module.cc",
        "process_group.cc",
        "process_group_exchange.cc",
        "process_group_ops.cc",
        "work_queue.cc",
        "tensor_types.cc",
        "shared_memory_allocator.cc",
    )
]

setup(
    name="weft_torch",
    version="0.1.0",
    description='Weft as the torch.distributed backend "weft"',
    packages=["weft_torch"],
    py_modules=["weft_torch_autoload"],
    ext_modules=[
        CppExtension(
            "weft_torch._C",
            sources,
            include_dirs=[include_dir],
            library_dirs=[lib_dir],
            libraries=["weft"],
            runtime_library_dirs=[lib_dir],
            extra_compile_args={"cxx": cxx},
        )
    ],
    # ninja (when installed) compiles the sources in parallel; without it, one after another.
    cmdclass={"build_ext": BuildExtension},
    entry_points={"torch.backends": ["weft = weft_torch_autoload:register"]},
)
