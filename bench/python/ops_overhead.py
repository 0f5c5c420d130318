#!/usr/bin/env python3
"""Per-call host overhead of symmcomm's all-gather five ways, side by side on the same tensors
(one rank on GPU 0, NCCL through PyTorch's process group and symmcomm's own communicator):

  op      torch.ops.symmcomm.all_gather_out (symmcomm.ops, the CUDA-key operator: its C++
          implementation where libsymmcomm_torch.so is built, else the Python one)
  op_py   the same operator's Python implementation (another namespace), beside it in the run
  op_ovl  the operator called through its overload (torch.ops.symmcomm.all_gather_out.default,
          kept by the caller): no overload lookup per call, as a hot loop can have it
  direct  symmcomm.all_gather (the package's ctypes call the Python implementation wraps)
  torch   torch.distributed.all_gather_into_tensor

Rows: BF16 all-gathers (8 KiB and 56 KiB per rank) and an NVFP4 all-gather (packed data, block
scales and the global scale; torch.distributed gathers the same three tensors in one
coalescing group, as an engine without symmcomm does). Each: `calls` back-to-back enqueues
timed on the host (time.perf_counter, no synchronisation inside the loop, one after); every
figure is the median of `repeats` such runs with their min-max, the three ways taking turns
within each repeat; the GPU work is a few KiB, so the figure is the host cost of a call. Writes a Markdown table and JSON to OUT_DIR.

Usage: python3 bench/python/ops_overhead.py [OUT_DIR] [--calls N] [--repeats R]
"""
import argparse
import datetime
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import symmcomm  # noqa: E402
import symmcomm.ops  # noqa: E402


def per_call_us(cases, calls, repeats):
    """{way: [median, min, max]} of `repeats` runs of `calls` calls of each way, microseconds per
    call. The ways take turns within every repeat (op, direct, torch, op, ...), so a drift of the
    machine over the run (clocks, another process) weighs on all of them alike; Python's garbage
    collector is off while timing, as timeit has it."""
    runs = {k: [] for k in cases}
    for fn in cases.values():
        fn()
    torch.cuda.synchronize()
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for k, fn in cases.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                runs[k].append((t1 - t0) / calls * 1e6)
    finally:
        if gc_was_on:
            gc.enable()
    return {k: [statistics.median(v), min(v), max(v)] for k, v in runs.items()}


def nvfp4_cases(ops, ops_py, comm, hidden):
    """The NVFP4 all-gather the five ways: 4 rows of `hidden` elements (data, block scales, one
    global scale), gathered by the operator (three ways), the ctypes call and torch.distributed."""
    data = torch.zeros(4, hidden // 2, device="cuda", dtype=torch.uint8)
    bs = torch.full((4, hidden // 16), 0x38, device="cuda", dtype=torch.uint8)
    gs = torch.ones(1, device="cuda", dtype=torch.float32)
    out_data, out_bs = torch.empty_like(data), torch.empty_like(bs)
    out_gs = torch.empty(1, device="cuda", dtype=torch.float32)

    def torch_gather():
        with dist._coalescing_manager(async_ops=False):
            dist.all_gather_into_tensor(out_data, data)
            dist.all_gather_into_tensor(out_bs, bs)
            dist.all_gather_into_tensor(out_gs, gs)

    gather_nvfp4_ovl = ops.all_gather_nvfp4_out.default
    send = symmcomm.Nvfp4Tensor(data, bs, gs)
    recv = symmcomm.Nvfp4Tensor(out_data, out_bs, out_gs)
    return data.numel() + bs.numel() + 4, {
        "op": lambda: ops.all_gather_nvfp4_out(data, bs, gs, out_data, out_bs, out_gs,
                                               "overhead"),
        "op_py": lambda: ops_py.all_gather_nvfp4_out(data, bs, gs, out_data, out_bs, out_gs,
                                                     "overhead"),
        "op_ovl": lambda: gather_nvfp4_ovl(data, bs, gs, out_data, out_bs, out_gs, "overhead"),
        "direct": lambda: symmcomm.all_gather(comm, send, recv),
        "torch": torch_gather,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "..", "results"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
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
    ops_py = symmcomm.ops.register_ops("symmcomm_overhead_py", "python")
    op_impl = symmcomm.ops.implementation("all_gather_out")
    gather_ovl = ops.all_gather_out.default
    rows = []
    for hidden in (1024, 7168):
        x = torch.randn(4, hidden, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(x)
        cases = {
            "op": lambda: ops.all_gather_out(x, out, "overhead"),
            "op_py": lambda: ops_py.all_gather_out(x, out, "overhead"),
            "op_ovl": lambda: gather_ovl(x, out, "overhead"),
            "direct": lambda: symmcomm.all_gather(comm, x, out),
            "torch": lambda: dist.all_gather_into_tensor(out, x),
        }
        rows.append({"what": "bf16", "bytes": x.numel() * 2,
                     **per_call_us(cases, a.calls, a.repeats)})
    nbytes, cases = nvfp4_cases(ops, ops_py, comm, 7168)
    rows.append({"what": "nvfp4", "bytes": nbytes, **per_call_us(cases, a.calls, a.repeats)})
    props = torch.cuda.get_device_properties(0)
    meta = {"gpu": props.name, "torch": torch.__version__, "nccl": symmcomm.nccl_version(),
            "date": datetime.date.today().isoformat(), "calls": a.calls, "repeats": a.repeats,
            "command": " ".join(sys.argv), "op_implementation": op_impl,
            "native": symmcomm.ops.native_library()}
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "ops_overhead.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = ["# Per-call host overhead, us: median (min-max) of %d runs of %d calls (one rank; %s, "
             "torch %s, NCCL %s, %s; torch.ops.symmcomm runs its %s implementation)"
             % (a.repeats, a.calls, meta["gpu"], meta["torch"], meta["nccl"], meta["date"],
                op_impl), "",
             "| tensor | bytes | torch.ops.symmcomm | its overload (.default) "
             "| the op's Python implementation | symmcomm (ctypes) | torch.distributed "
             "| op / torch | op - direct | Python op - direct |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def cell(v):
        return "%.2f (%.2f-%.2f)" % tuple(v)

    for r in rows:
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f |"
                     % (r["what"], r["bytes"], cell(r["op"]), cell(r["op_ovl"]), cell(r["op_py"]),
                        cell(r["direct"]), cell(r["torch"]), r["op"][0] / r["torch"][0],
                        r["op"][0] - r["direct"][0], r["op_py"][0] - r["direct"][0]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out_dir, "ops_overhead.md"), "w") as f:
        f.write(text)
    print(text)
    symmcomm.ops.unregister_communicator("overhead")
    comm.release()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
