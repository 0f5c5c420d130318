#!/usr/bin/env python3
"""symmcomm's torch operators inside torch.compile with a dynamic token dimension, as vLLM and
SGLang compile their models: the batch size changes every step and the graph must not be
recompiled for each one. One function gathers, gathers with counts taken from the symbolic
batch size, quantizes to NVFP4 and gathers with swizzled scales, and reduce-scatters; it is
compiled once (fullgraph, the token dimension marked dynamic) and run at three batch sizes.

Checks: each batch size gives eager's bytes; torch.compile compiled exactly one graph (no
recompilation after the first) and broke no graph. Prints those counts.

Usage: python3 examples/python/dynamic_shapes.py        (one rank)
       torchrun --nproc-per-node N examples/python/dynamic_shapes.py
Exit 77: no PyTorch or GPU.
"""
import faulthandler
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("dynamic_shapes.py: PyTorch is not installed; nothing to run")
    sys.exit(77)
if not torch.cuda.is_available():
    print("dynamic_shapes.py: no CUDA GPU; nothing to run")
    sys.exit(77)

import torch._dynamo  # noqa: E402
import torch._dynamo.testing  # noqa: E402

import symmcomm  # noqa: E402
import symmcomm.ops  # noqa: E402

HIDDEN, GROUP = 512, "dynamic"
BATCHES = (16, 40, 72)  # tokens per rank (0 and 1 would be specialised by PyTorch itself)


def make_step(ops, world):
    def step(x):
        tokens, hidden = x.shape
        gathered = ops.all_gather(x, GROUP)
        gathered_v = ops.all_gatherv(x, [tokens] * world, GROUP)  # symbolic counts
        data, scales, global_ = ops.quantize_nvfp4(x, None)
        q_data, q_scales, q_globals = ops.all_gather_nvfp4(data, scales, global_, GROUP, hidden)
        summed = ops.reduce_scatter(gathered, GROUP)
        return gathered, gathered_v, q_data, q_scales, q_globals, summed
    return step


def main():
    faulthandler.dump_traceback_later(int(os.environ.get("SYMMCOMM_EXAMPLE_TIMEOUT_S", "120")),
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

    step = make_step(ops, world)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(step, backend=counter, fullgraph=True)
    ok = True
    for tokens in BATCHES:
        g = torch.Generator(device="cuda").manual_seed(tokens + 1000 * rank)
        x = torch.randn(tokens, HIDDEN, generator=g, device="cuda").to(torch.bfloat16)
        torch._dynamo.mark_dynamic(x, 0)
        got = compiled(x)
        want = step(x)
        torch.cuda.synchronize()
        same = all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(got, want))
        ok = ok and same
        print("rank %d: %d tokens: compiled == eager %s, graphs compiled so far %d"
              % (rank, tokens, same, counter.frame_count), flush=True)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    recompiles = counter.frame_count - 1
    print("rank %d: batch sizes %s: %d graph compiled, %d recompilations, %d graph breaks"
          % (rank, list(BATCHES), counter.frame_count, recompiles, breaks))
    ok = ok and counter.frame_count == 1 and breaks == 0
    symmcomm.ops.unregister_communicator(GROUP)
    comm.release()
    print("dynamic_shapes.py rank %d: %s" % (rank, "OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
