#!/usr/bin/env python3
"""Checks symmcomm-info's output on any machine (a GPU-less one included): it exits 0, its text
names every section, and its JSON follows schema "symmcomm-info/1" (every field present with its
type, every path reported, the environment it was given reported back).

Usage: check_info.py <symmcomm-info> [--expect-architectures 90,100-real,...]
Also imported by python/tests (check_report) to check `python -m symmcomm.info --json`.
"""
import json
import os
import subprocess
import sys

PATHS = ["fallback", "nccl-symmetric", "lsa-kernel", "small-message-gather", "device-count-kernels",
         "counts-in-the-lines"]


def fail(message):
    raise AssertionError(message)


def expect(condition, message):
    if not condition:
        fail(message)


def check_report(report, environment=None):
    """Raises AssertionError naming the first field of `report` (a parsed JSON report) that is
    missing or of the wrong type."""
    expect(report.get("schema") == "symmcomm-info/1", "schema: %r" % report.get("schema"))
    lib = report["symmcomm"]
    expect(isinstance(lib["version"], str) and lib["version"].count(".") == 2, "symmcomm.version")
    expect(isinstance(lib["c_abi_version"], int) and lib["c_abi_version"] >= 5, "c_abi_version")
    expect(isinstance(lib["cuda_architectures"], list) and lib["cuda_architectures"],
           "symmcomm.cuda_architectures must list what the build carries")
    expect(isinstance(lib["nccl_device_api"], bool), "symmcomm.nccl_device_api")
    cuda = report["cuda"]
    expect(isinstance(cuda["runtime"], str), "cuda.runtime")
    expect(cuda["driver"] is None or isinstance(cuda["driver"], str), "cuda.driver")
    nccl = report["nccl"]
    expect(isinstance(nccl["built"], str) and nccl["built"].startswith("2."), "nccl.built")
    expect(nccl["loaded"] is None or nccl["loaded"].startswith("2."), "nccl.loaded")
    expect(isinstance(nccl["device_api_usable"], bool) and isinstance(nccl["note"], str), "nccl")
    expect(isinstance(nccl["libraries"], list) and
           all(isinstance(p, str) and os.path.isfile(p) for p in nccl["libraries"]),
           "nccl.libraries: files that exist")
    # symmcomm links NCCL dynamically: the library it runs on is listed.
    expect(any(os.path.basename(p).startswith("libnccl.so") for p in nccl["libraries"]),
           "nccl.libraries names the loaded libnccl: %r" % nccl["libraries"])
    gpus = report["gpus"]
    expect(isinstance(gpus, list), "gpus")
    for g in gpus:
        for key, kind in (("index", int), ("name", str), ("compute_capability", str),
                          ("sms", int), ("memory_bytes", int), ("code", str)):
            expect(isinstance(g.get(key), kind), "gpus[].%s" % key)
        expect(g["code"] in ("sass", "ptx-jit", "none", "unknown"), "gpus[].code %r" % g["code"])
    if not gpus:
        expect(report["gpu_note"], "gpu_note must say why no GPU is listed")
    expect(len(report["p2p"]) == len(gpus), "p2p is one row per GPU")
    expect(isinstance(report["environment"], dict) and isinstance(report["unset"], list),
           "environment / unset")
    names = [p["name"] for p in report["paths"]]
    expect(names == PATHS, "paths: %r" % names)
    for p in report["paths"]:
        expect(isinstance(p["available"], bool) and p["needs"] and p["why"], "path %s" % p["name"])
    if not gpus:
        expect(not any(p["available"] for p in report["paths"]), "no GPU: no path available")
    for name, value in (environment or {}).items():
        expect(report["environment"].get(name) == value, "environment[%s]" % name)
        expect(name not in report["unset"], "%s is set, not unset" % name)


def main():
    binary = sys.argv[1]
    expected = None
    if "--expect-architectures" in sys.argv:
        expected = sys.argv[sys.argv.index("--expect-architectures") + 1].split(",")
    env = dict(os.environ, SYMMCOMM_LSA_LL="0", NCCL_NVLS_ENABLE="0")
    text = subprocess.run([binary], env=env, capture_output=True, text=True, check=True).stdout
    for section in ("symmcomm ", "built for CUDA architectures", "CUDA runtime", "NCCL built",
                    "GPUs (", "Environment", "Paths", "small-message-gather"):
        expect(section in text, "text lacks %r:\n%s" % (section, text))
    out = subprocess.run([binary, "--json"], env=env, capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    check_report(report, {"SYMMCOMM_LSA_LL": "0", "NCCL_NVLS_ENABLE": "0"})
    expect("probe" not in report, "a report without --ranks makes no communicator")
    # --ranks 1: one communicator made and probed where there is a GPU, else why not.
    out = subprocess.run([binary, "--json", "--ranks", "1"], env=env, capture_output=True,
                         text=True, check=True)
    probe = json.loads(out.stdout)["probe"]
    expect(probe["ranks"] == 1, "probe.ranks")
    if report["gpus"]:
        expect(len(probe.get("communicators", [])) == 1, "probe: %r" % probe)
    else:
        expect(probe.get("error"), "probe without a GPU must say why: %r" % probe)
    if expected is not None:
        expect(report["symmcomm"]["cuda_architectures"] == expected,
               "architectures %r, expected %r" % (report["symmcomm"]["cuda_architectures"],
                                                  expected))
    print("check_info: OK (%d GPU(s), paths available: %s)" % (
        len(report["gpus"]), [p["name"] for p in report["paths"] if p["available"]] or "none"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, KeyError, subprocess.CalledProcessError, ValueError) as e:
        print("check_info: FAIL: %r" % (e,), file=sys.stderr)
        sys.exit(1)
