#!/usr/bin/env python3
"""One MoE layer by expert with symmcomm.moe.MoeGroup, captured in one CUDA graph and replayed
with new routing.

Each rank routes its tokens on the device (top-k of a router's scores), dispatches them as NVFP4
to the ranks of their experts in the masked expert-major layout ([L, capacity, hidden/2] rows,
swizzled block scales, expert_count), runs its experts on that layout - a BF16 batched matmul
over the dequantized rows, the stand-in for the NVFP4 grouped GEMM Hopper lacks; rows past
expert_count are not tokens (zero on path="python", as an earlier dispatch left them on the
library's paths), cost nothing but FLOPs and are never sent back - writing its outputs where
the group holds them (MoeConfig(combine_in_place=True): MoeGroup.expert_out), and combines them
from there to the tokens' ranks (weights applied, fp32 sum, one rounding), no copy between the
GEMM and the combine. The graph is replayed with new tokens; every replay is checked against
the same step computed eagerly.

Usage: python3 examples/python/moe_group_layer.py           (one rank)
       torchrun --nproc-per-node N examples/python/moe_group_layer.py
The package is found from this checkout (python/) unless installed. Exit 77: no PyTorch or GPU.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("moe_group_layer.py: PyTorch is not installed; nothing to run")
    sys.exit(77)
if not torch.cuda.is_available():
    print("moe_group_layer.py: no CUDA GPU; nothing to run")
    sys.exit(77)

import symmcomm  # noqa: E402
from symmcomm import moe  # noqa: E402

TOKENS, HIDDEN, EXPERTS_PER_RANK, TOP_K = 32, 512, 4, 2
# The layer's static NVFP4 activation scale, the same on every rank (as checkpoints calibrate
# it): amax / (6 x 448) for N(0, 1) tokens.
GLOBAL_SCALE = 5.0 / (6 * 448)


class Layer:
    """The router and this rank's experts (one matrix each), and the step on static buffers."""

    def __init__(self, comm, config, rank):
        self.config = config
        self.group = moe.MoeGroup(comm, config,
                                  global_scale=torch.full((1,), GLOBAL_SCALE, device="cuda"))
        g = torch.Generator(device="cuda").manual_seed(7)  # the same router on every rank
        self.router = torch.randn(HIDDEN, config.num_experts, generator=g, device="cuda")
        g.manual_seed(100 + rank)
        self.w = (torch.randn(config.local_experts, HIDDEN, HIDDEN, generator=g, device="cuda")
                  / HIDDEN ** 0.5).to(torch.bfloat16)
        self.x = torch.zeros(TOKENS, HIDDEN, dtype=torch.bfloat16, device="cuda")
        self.num_tokens = torch.full((1,), TOKENS, dtype=torch.int32, device="cuda")

    def step(self):
        c = self.config
        scores = (self.x.float() @ self.router).softmax(-1)
        weights, ids = scores.topk(TOP_K, dim=-1)
        d = self.group.dispatch(self.x, ids.to(torch.int32), weights.float(), self.num_tokens)
        rows = torch.empty(c.local_experts * c.capacity * HIDDEN, dtype=torch.bfloat16,
                           device="cuda")
        # Every row of the layout carries one global scale (d.global_scale), so one call
        # dequantizes them all; the block scales are swizzled per expert for the GEMM, so the
        # stand-in dequantizes from the linear copy the rows came with.
        symmcomm.dequantize_nvfp4(symmcomm.Nvfp4Tensor(d.data.reshape(-1), self.linear_scales(d),
                                                       d.global_scale), rows)
        # The expert GEMM writes where the group holds its outputs: combine reads them there.
        y = torch.bmm(rows.view(c.local_experts, c.capacity, HIDDEN), self.w,
                      out=self.group.expert_out)
        return self.group.combine(y, d), d

    def linear_scales(self, d):
        """The dispatched rows' block scales in row order (the swizzled layout undone)."""
        c = self.config
        cols = HIDDEN // symmcomm.NVFP4_BLOCK
        r = torch.arange(c.capacity, device="cuda").unsqueeze(1)
        k = torch.arange(cols, device="cuda").unsqueeze(0)
        tile = (r // 128) * ((cols + 3) // 4) + k // 4
        offset = tile * 512 + (r % 128 % 32) * 16 + (r % 128 // 32) * 4 + k % 4
        return d.block_scales[:, offset.reshape(-1)].reshape(-1)


def main():
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
    sharing = symmcomm.share_gpus_if_needed(rank, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    torch.cuda.set_device(device)
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        uid = symmcomm.shared_unique_id(dist)
    else:
        uid = symmcomm.unique_id()
    comm = symmcomm.Communicator.init(world, uid, rank, device)
    config = moe.MoeConfig(EXPERTS_PER_RANK * world, TOP_K, HIDDEN, TOKENS, world,
                           combine_in_place=True)
    layer = Layer(comm, config, rank)

    # Warm up outside the capture (plans, workspaces), then capture one whole step.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        layer.step()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, d = layer.step()

    for replay in range(3):
        g = torch.Generator(device="cuda").manual_seed(1000 * replay + rank)
        layer.x.copy_(torch.randn(TOKENS, HIDDEN, generator=g, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        replayed = out.clone()
        eager, _ = layer.step()  # the same step, eagerly, on the same tokens
        torch.cuda.synchronize()
        # The same math; NCCL may sum in another order outside the graph: within bf16 rounding.
        assert torch.allclose(replayed.float(), eager.float(), rtol=2 ** -7, atol=1e-3), \
            f"replay {replay}: the graph's output differs from the eager step"
        assert moe.check_dispatch(d) == 0, "no pair is dropped at the default capacity"
        assert replayed.abs().sum() > 0
    print(f"rank {rank}/{world} ({sharing}): {config}; {layer.group.reason}; "
          f"rows per local expert {d.expert_count.tolist()}")
    del graph
    comm.release()
    print("moe_group_layer.py: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
