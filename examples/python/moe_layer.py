#!/usr/bin/env python3
"""One MoE layer's communication with the symmcomm package, checked against PyTorch.

Dispatch: every rank's tokens quantized to NVFP4 and gathered into every rank's symmetric
buffer in one call (fused where symmcomm's LSA kernel runs). Combine: every rank's expert
outputs for all tokens, in NVFP4, summed across ranks into this rank's tokens in bf16 (fp32
accumulation, one rounding). Tensors come from a symmcomm pool through PyTorch's MemPool.

Usage: python3 examples/python/moe_layer.py            (one rank)
       torchrun --nproc-per-node N examples/python/moe_layer.py
The package is found from this checkout (python/) unless installed; the library from
$SYMMCOMM_LIBRARY or the usual places (symmcomm._capi.candidates()). Exit 77: no PyTorch or GPU.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("moe_layer.py: PyTorch is not installed; nothing to run")
    sys.exit(77)
if not torch.cuda.is_available():
    print("moe_layer.py: no CUDA GPU; nothing to run")
    sys.exit(77)

import symmcomm  # noqa: E402

TOKENS, HIDDEN = 64, 7168


def nvfp4_tensor(count, scales):
    return symmcomm.Nvfp4Tensor(torch.empty(count // 2, dtype=torch.uint8, device="cuda"),
                                torch.empty(count // 16, dtype=torch.uint8, device="cuda"),
                                torch.empty(scales, dtype=torch.float32, device="cuda"))


def expert_outputs(rank, count):
    g = torch.Generator(device="cuda").manual_seed(1000 + rank)
    return torch.randn(count, generator=g, device="cuda").to(torch.bfloat16)


def main():
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
    # More ranks than GPUs (a test machine): say how NCCL is to share them, before any
    # communicator exists.
    sharing = symmcomm.share_gpus_if_needed(rank, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
    torch.cuda.set_device(device)
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        uid = symmcomm.shared_unique_id(dist)
    else:
        uid = symmcomm.unique_id()
    comm = symmcomm.Communicator.init(world, uid, rank, device)
    # No on-demand growth: PyTorch may allocate in different orders on different ranks.
    pool = symmcomm.Pool(comm, initial_bytes=256 << 20, allow_growth=False)
    mempool = symmcomm.torch_mem_pool(pool)
    n = TOKENS * HIDDEN
    with torch.cuda.use_mem_pool(mempool):
        x = (torch.randn(n, device="cuda") * (rank + 1)).to(torch.bfloat16)
        gathered = nvfp4_tensor(world * n, world)
        partial = nvfp4_tensor(world * n, 1)
        out = torch.empty(n, dtype=torch.bfloat16, device="cuda")

    # Dispatch.
    dispatch = symmcomm.quantize_all_gather(comm, x, gathered)
    tokens = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    for r in range(world):  # each rank's part with its own global scale
        part = symmcomm.rank_part(gathered, r, world)
        symmcomm.dequantize_nvfp4(part, tokens[r * n:(r + 1) * n])
    # Combine.
    symmcomm.quantize_nvfp4(expert_outputs(rank, world * n), partial)
    combine = symmcomm.reduce_scatter(comm, partial, out)
    torch.cuda.synchronize()

    # This rank's slice of the gather is its own tokens in NVFP4 (relative L2 error ~0.1).
    mine = tokens.view(world, n)[rank].float()
    err = ((mine - x.float()).norm() / x.float().norm()).item()
    assert err < 0.15, f"dispatch: NVFP4 error {err}"
    # The combine equals the sum of every rank's NVFP4 expert outputs for this rank's tokens.
    want = torch.zeros(n, dtype=torch.float32, device="cuda")
    q = nvfp4_tensor(world * n, 1)
    back = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    for r in range(world):
        symmcomm.quantize_nvfp4(expert_outputs(r, world * n), q)
        symmcomm.dequantize_nvfp4(q, back)
        want += back[rank * n:(rank + 1) * n].float()
    torch.cuda.synchronize()
    rel = ((out.float() - want).norm() / want.norm()).item()
    assert rel < 1e-2, f"combine: relative error {rel} against the host-side sum"
    print(f"rank {rank}/{world} ({sharing}): dispatch {dispatch.path} (error {err:.3f}), "
          f"combine {combine.path} (error {rel:.1e})\n  dispatch: {dispatch.reason}\n"
          f"  combine: {combine.reason}")

    del x, gathered, partial, out, tokens
    del mempool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    pool.destroy()
    comm.release()
    print("moe_layer.py: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
