#!/usr/bin/env python3
"""Per-call host overhead of symmcomm's all-gather three ways, side by side on the same tensors
(one rank on GPU 0, NCCL through PyTorch's process group and symmcomm's own communicator):

  op      torch.ops.symmcomm.all_gather_out (symmcomm.ops, the CUDA-key operator)
  direct  symmcomm.all_gather (the package's ctypes call the operator wraps)
  torch   torch.distributed.all_gather_into_tensor

Each: `calls` back-to-back enqueues timed on the host (time.perf_counter, no synchronisation
inside the loop, one after), best of `repeats`; the GPU work is a few KiB, so the figure is the
host cost of a call. Writes a Markdown table and JSON to OUT_DIR (default: bench/results/...).

Usage: python3 bench/python/ops_overhead.py [OUT_DIR] [--calls N] [--repeats R]
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import symmcomm  # noqa: E402
import symmcomm.ops  # noqa: E402


def best_per_call_us(fn, calls, repeats):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) / calls * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "..", "results"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("ops_overhead.py: no CUDA GPU; nothing to measure")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    comm = symmcomm.Communicator.from_process_group()
    symmcomm.ops.register_communicator("overhead", comm)
    ops = symmcomm.ops.register_ops()
    rows = []
    for hidden in (1024, 7168):
        x = torch.randn(4, hidden, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(x)
        cases = {
            "op": lambda: ops.all_gather_out(x, out, "overhead"),
            "direct": lambda: symmcomm.all_gather(comm, x, out),
            "torch": lambda: dist.all_gather_into_tensor(out, x),
        }
        us = {k: best_per_call_us(f, a.calls, a.repeats) for k, f in cases.items()}
        rows.append({"bytes": x.numel() * 2, **us})
    props = torch.cuda.get_device_properties(0)
    meta = {"gpu": props.name, "torch": torch.__version__, "nccl": symmcomm.nccl_version(),
            "date": datetime.date.today().isoformat(), "calls": a.calls, "repeats": a.repeats,
            "command": " ".join(sys.argv)}
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "ops_overhead.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = ["# Per-call host overhead, us (best of %d x %d calls; %s, torch %s, NCCL %s, %s)"
             % (a.repeats, a.calls, meta["gpu"], meta["torch"], meta["nccl"], meta["date"]), "",
             "| bytes | torch.ops.symmcomm | symmcomm (ctypes) | torch.distributed | op / direct |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %.2f | %.2f | %.2f | %.2f |"
                     % (r["bytes"], r["op"], r["direct"], r["torch"], r["op"] / r["direct"]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out_dir, "ops_overhead.md"), "w") as f:
        f.write(text)
    print(text)
    symmcomm.ops.unregister_communicator("overhead")
    comm.release()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
