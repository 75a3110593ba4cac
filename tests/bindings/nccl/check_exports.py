#!/usr/bin/env python3
"""Checks what Weft's libnccl.so.2 exports, the way NVIDIA's library exports it.

usage: check_exports.py LIB HEADER_DIR|none REAL_LIB|none OUR_NCCL_H

- every defined dynamic symbol is a function named ncclX (WEAK) or pncclX (GLOBAL), nothing else;
- each ncclX has its pncclX twin at the same address; no symbol carries a version;
- the names are exactly the functions declared by nccl.h and the host functions of
  nccl_device/*.h (NVIDIA's headers in HEADER_DIR, else our nccl.h and the device list below);
  with NVIDIA's headers, our nccl.h declares the same functions as theirs;
- where NVIDIA's libnccl.so.2 is installed (REAL_LIB), the same names as it exports, but for
  the functions its headers declare and it does not export (NOT_EXPORTED_BY_NVIDIA);
- SONAME libnccl.so.2, NEEDED libweft, RUNPATH/RPATH with $ORIGIN.
"""
import glob
import os
import re
import subprocess
import sys

# The device API's host functions (nccl_device/*.h of 2.32), for machines without the header.
DEVICE_HOST_FUNCTIONS = {
    "ncclCommQueryProperties", "ncclDevCommCreate", "ncclDevCommDestroy",
    "ncclGetLsaMultimemDevicePointer", "ncclGetMultimemDevicePointer", "ncclGetLsaDevicePointer",
    "ncclGetPeerDevicePointer", "ncclGetMultimemDeviceLeInfo", "ncclGetCftDeviceLeInfo",
    "ncclGetPeerDeviceLeInfo", "ncclTeamWorld", "ncclTeamLsa", "ncclTeamCft", "ncclTeamCftMultimem",
    "ncclTeamRankToWorld", "ncclTeamRankToLsa", "ncclTeamRail", "ncclLsaBarrierCreateRequirement",
    "ncclGinBarrierCreateRequirement", "ncclCftBarrierCreateRequirement", "ncclLLA2ACalcSlots",
    "ncclLLA2ACreateRequirement", "ncclGinOutboxCreateRequirement", "ncclGinInboxA2ACreateRequirement",
}
# Declared by 2.32.3's nccl_device/host.h, but NVIDIA's libnccl.so.2 does not export it (a program
# calling it links only against ours). If NVIDIA starts exporting it, the comparison says so.
NOT_EXPORTED_BY_NVIDIA = {"ncclCftBarrierCreateRequirement"}
API_FUNCTIONS = 73

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def dyn_syms(lib):
    """Defined dynamic symbols: name -> (value, type, bind, raw name with any @version)."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].rstrip(":").isdigit() or f[6] == "UND":
            continue
        raw = f[7]
        syms[re.split("@", raw)[0]] = (f[1], f[3], f[4], raw)
    syms.pop("", None)
    return syms


def declared_names(header_dir, our_header):
    if header_dir == "none":
        text = open(our_header).read()
        names = set(re.findall(r"WEFT_NCCL_DECLARE\(\s*[^,]+,\s*(nccl\w+)\s*,", text))
        return names, set(DEVICE_HOST_FUNCTIONS)
    text = open(os.path.join(header_dir, "nccl.h")).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    names = set(re.findall(r"(?:ncclResult_t|const\s+char\s*\*|void)\s+(nccl\w+)\s*\(", text))
    device = set()
    for path in glob.glob(os.path.join(header_dir, "nccl_device", "*.h")):
        # Exported host functions only: the inline ones (NCCL_HOST_DEVICE_INLINE) do not match.
        device |= set(re.findall(r"NCCL_EXTERN_C\s+(?:__host__\s+)?\w+\s+(nccl\w+)\s*\(", open(path).read()))
    return names, device


def main():
    lib, header_dir, real_lib, our_header = sys.argv[1:5]
    syms = dyn_syms(lib)
    api, device = declared_names(header_dir, our_header)
    check(len(api) == API_FUNCTIONS, f"expected {API_FUNCTIONS} functions in nccl.h, parsed {len(api)}")
    check(device == DEVICE_HOST_FUNCTIONS, f"device-API host functions differ from the list: {sorted(device ^ DEVICE_HOST_FUNCTIONS)}")
    wanted = api | device
    if header_dir != "none":
        ours, _ = declared_names("none", our_header)
        check(ours == api, f"our nccl.h declares differently from NVIDIA's: {sorted(ours ^ api)}")

    weak = {n for n, s in syms.items() if n.startswith("nccl")}
    twins = {n for n, s in syms.items() if n.startswith("pnccl")}
    others = set(syms) - weak - twins
    check(not others, f"exported beyond nccl*/pnccl*: {sorted(others)}")
    check(weak == wanted, f"missing {sorted(wanted - weak)}, extra {sorted(weak - wanted)}")
    check(twins == {"p" + n for n in wanted}, f"pnccl twins differ: {sorted(twins ^ {'p' + n for n in wanted})}")
    for name in sorted(weak):
        value, typ, bind, raw = syms[name]
        check(typ == "FUNC" and bind == "WEAK", f"{name}: {typ} {bind}, expected FUNC WEAK")
        check("@" not in raw, f"{raw}: carries a symbol version")
        twin = syms.get("p" + name)
        if twin:
            check(twin[1] == "FUNC" and twin[2] == "GLOBAL", f"p{name}: {twin[1]} {twin[2]}, expected FUNC GLOBAL")
            check(twin[0] == value, f"p{name} at {twin[0]}, {name} at {value}")
            check("@" not in twin[3], f"{twin[3]}: carries a symbol version")

    if real_lib != "none" and os.path.exists(real_lib):
        real = dyn_syms(real_lib)
        real_api = {n for n in real if re.match(r"p?nccl[A-Z]", n)} - {"ncclResetDebugInitInternal"}
        gap = NOT_EXPORTED_BY_NVIDIA | {"p" + n for n in NOT_EXPORTED_BY_NVIDIA}
        ours = (weak | twins) - gap
        check(real_api == ours, f"NVIDIA's library exports {sorted(real_api ^ ours)} differently")
        for n in real_api & set(syms):
            check(real[n][2] == syms[n][2], f"{n}: {syms[n][2]} here, {real[n][2]} in NVIDIA's library")

    dyn = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    check("Library soname: [libnccl.so.2]" in dyn, "SONAME is not libnccl.so.2")
    check(re.search(r"Shared library: \[libweft\.so", dyn) is not None, "libweft.so is not NEEDED")
    check(re.search(r"Library (runpath|rpath): \[[^\]]*\$ORIGIN", dyn) is not None, "no $ORIGIN in RUNPATH/RPATH")

    print(f"{lib}: {len(weak)} weak ncclX, {len(twins)} global pncclX, {len(others)} other exports "
          f"({'NVIDIA headers in ' + header_dir if header_dir != 'none' else 'our nccl.h'})")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
