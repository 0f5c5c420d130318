#!/usr/bin/env python3
"""One MoE layer's communication as torch operators (symmcomm.ops), compiled with
torch.compile(fullgraph=True) and replayed from a CUDA graph, as a serving engine runs a decode
step. DP attention: every rank holds a different number of tokens each step; the dispatch
gathers them with the counts on the device, so the one captured graph serves every step.

Dispatch: this rank's tokens (capacity rows, the first `count` real) quantized to NVFP4 and
gathered compactly with all_gatherv_device_nvfp4. Combine: every rank's expert outputs for all
gathered rows, in NVFP4, summed into this rank's own rows with reduce_scatterv_device_nvfp4.
Checked against eager PyTorch arithmetic on the dequantized values.

Usage: python3 examples/python/moe_layer_compiled.py            (one rank)
       torchrun --nproc-per-node N examples/python/moe_layer_compiled.py
Exit 77: no PyTorch or GPU. After SYMMCOMM_EXAMPLE_TIMEOUT_S (90) seconds the Python stacks are
printed and the run exits non-zero.
"""
import faulthandler
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("moe_layer_compiled.py: PyTorch is not installed; nothing to run")
    sys.exit(77)
if not torch.cuda.is_available():
    print("moe_layer_compiled.py: no CUDA GPU; nothing to run")
    sys.exit(77)

import symmcomm  # noqa: E402
import symmcomm.ops  # noqa: E402

CAPACITY, HIDDEN, GROUP = 32, 1024, "moe"


def main():
    # A stuck step prints every thread's Python stack and exits non-zero instead of hanging CI.
    faulthandler.dump_traceback_later(int(os.environ.get("SYMMCOMM_EXAMPLE_TIMEOUT_S", "90")),
                                      exit=True)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
    symmcomm.share_gpus_if_needed(rank, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    torch.cuda.set_device(device)
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        uid = symmcomm.shared_unique_id(dist)
    else:
        uid = symmcomm.unique_id()
    comm = symmcomm.Communicator.init(world, uid, rank, device)
    symmcomm.ops.register_communicator(GROUP, comm)
    ops = symmcomm.ops.register_ops()

    i32 = lambda n: torch.zeros(n, dtype=torch.int32, device="cuda")  # noqa: E731
    count, counts, offsets, overflow = i32(1), i32(world), i32(world), i32(1)

    def step(x, partial_data, partial_scales, partial_global):
        data, scales, global_ = ops.quantize_nvfp4(x, None)
        gathered = ops.all_gatherv_device_nvfp4(data, scales, global_, count, counts, offsets,
                                                overflow, GROUP)
        combined = ops.reduce_scatterv_device_nvfp4(partial_data, partial_scales, partial_global,
                                                    count, counts, offsets, overflow, GROUP)
        return gathered, combined

    def progress(what):
        print("rank %d: %s" % (rank, what), flush=True)

    compiled = torch.compile(step, fullgraph=True)
    x = torch.zeros(CAPACITY, HIDDEN, dtype=torch.bfloat16, device="cuda")
    partial = torch.zeros(world * CAPACITY, HIDDEN, dtype=torch.bfloat16, device="cuda")
    pd, ps, pg = ops.quantize_nvfp4(partial, None)
    progress("compiling (torch.compile, fullgraph) and running once eagerly")
    compiled(x, pd, ps, pg)  # compile and size the workspace outside capture
    torch.cuda.synchronize()
    progress("capturing one CUDA graph")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = compiled(x, pd, ps, pg)
    progress("replaying with new counts")

    ok = True
    for step_no in range(3):
        # This step's tokens: a different count per rank and per step, one graph for all.
        mine = (CAPACITY * (step_no + 1 + rank)) // (world + 3) % (CAPACITY + 1)
        g = torch.Generator(device="cuda").manual_seed(100 * step_no + rank)
        x.copy_(torch.randn(CAPACITY, HIDDEN, generator=g, device="cuda").to(torch.bfloat16))
        count.fill_(mine)
        new_pd, new_ps, new_pg = ops.quantize_nvfp4(
            torch.randn(world * CAPACITY, HIDDEN, generator=g, device="cuda").to(torch.bfloat16),
            None)
        pd.copy_(new_pd)
        ps.copy_(new_ps)
        pg.copy_(new_pg)
        graph.replay()
        torch.cuda.synchronize()
        (gdata, gscales, gglobal), combined = static
        got_counts = counts.tolist()
        assert got_counts[rank] == mine and not overflow.item(), (got_counts, overflow.item())
        first = offsets.tolist()[rank]
        # This rank's own rows, gathered and dequantized, equal its own quantized tokens (the
        # global scale is the whole capacity's, as the step quantized it).
        own = ops.dequantize_nvfp4(gdata[first:first + mine].contiguous(),
                                   gscales[first:first + mine].contiguous(), gglobal[rank:rank + 1])
        want = ops.dequantize_nvfp4(*ops.quantize_nvfp4(x, None))[:mine]
        ok = ok and torch.equal(own, want)
        # Rows past this rank's count in the combine are zero.
        ok = ok and bool((combined[mine:] == 0).all())
        print("rank %d step %d: %d tokens (counts %s), gathered rows %s, combine zero-padded %s"
              % (rank, step_no, mine, got_counts, torch.equal(own, want),
                 bool((combined[mine:] == 0).all())))
    # The graph first: NCCL keeps a communicator until every graph that captured its work is
    # destroyed (symmcomm refuses to wait for that and leaks the communicator instead, with a
    # warning).
    del graph, static, gdata, gscales, gglobal, combined
    torch.cuda.synchronize()
    symmcomm.ops.unregister_communicator(GROUP)
    comm.release()
    print("moe_layer_compiled.py rank %d: %s" % (rank, "OK" if ok else "WRONG RESULT"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
