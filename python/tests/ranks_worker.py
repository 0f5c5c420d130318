"""One rank of test_torch_ranks.py (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the
environment): every collective of the package on two communicators - PyTorch's own, borrowed
from the NCCL process group, and one symmcomm creates - against references PyTorch computes from
every rank's inputs (each rank can make all of them: they come from seeded generators), on
tensors from a symmcomm pool through torch.cuda.use_mem_pool, and replayed from a CUDA graph.
Prints "ranks_worker rank R: OK" at the end; any failed check raises (non-zero exit)."""
import os
import sys

import torch
import torch.distributed as dist

import symmcomm

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def inputs(rank, n, salt):
    """Rank `rank`'s bf16 input of n elements (the same tensor on every process)."""
    g = torch.Generator(device="cuda").manual_seed(1000 * salt + rank)
    return (torch.randn(n, generator=g, device="cuda") * (rank + 1)).to(torch.bfloat16)


def nvfp4_empty(count, scales=1):
    return symmcomm.Nvfp4Tensor(torch.zeros(count // 2, dtype=torch.uint8, device="cuda"),
                                torch.zeros(count // 16, dtype=torch.uint8, device="cuda"),
                                torch.zeros(scales, dtype=torch.float32, device="cuda"))


def fp8_empty(count, scales=1):
    return symmcomm.Fp8Tensor(torch.zeros(count, dtype=torch.float8_e4m3fn, device="cuda"),
                              torch.zeros(scales, dtype=torch.float32, device="cuda"))


def nvfp4_of(x):
    q = nvfp4_empty(x.numel())
    symmcomm.quantize_nvfp4(x, q)
    return q


def fp8_of(x):
    q = fp8_empty(x.numel())
    symmcomm.quantize_fp8(x, q)
    return q


def e2m1_values(q):
    """The e2m1 codes of an NVFP4 tensor as fp32 values (element 2i in the low nibble)."""
    table = torch.tensor(E2M1, device=q.data.device)
    lo = (q.data & 0x0F).long()
    hi = (q.data >> 4).long()
    return torch.stack([table[lo], table[hi]], dim=1).reshape(-1)


def nvfp4_values(q):
    """fp32 values of an NVFP4 tensor, decoded by PyTorch from the format's definition:
    e2m1 code x e4m3 block scale / global scale."""
    block = q.block_scales.view(torch.float8_e4m3fn).float().repeat_interleave(16)
    return e2m1_values(q) * block / q.global_scale[0]


def fp8_values(q):
    return q.data.float() * q.scale[0]


def swizzled_reference(linear, rows, cols):
    """The GEMMs' 128 x 4 tile layout of a [rows, cols] uint8 scale matrix, written by PyTorch
    from the definition: rows padded to 128 and columns to 4 with zeros; in a tile, scale (i, j)
    at (i % 32) * 16 + (i // 32) * 4 + j; tiles row by row."""
    r_pad, c_pad = -(-rows // 128) * 128, -(-cols // 4) * 4
    m = torch.zeros(r_pad, c_pad, dtype=torch.uint8, device=linear.device)
    m[:rows, :cols] = linear.view(rows, cols)
    return m.view(r_pad // 128, 4, 32, c_pad // 4, 4).permute(0, 3, 2, 1, 4).reshape(-1)


def expect_equal(got, want, what):
    if not torch.equal(got, want):
        bad = (got != want).sum().item() if got.shape == want.shape else "shape"
        raise AssertionError("%s: %s elements differ from PyTorch's reference" % (what, bad))


def expect_close(got, want, bound, what):
    """|got - want| <= 2^-8 * bound + 1e-30 elementwise (bound: the sum of the magnitudes)."""
    err = (got.float() - want).abs() - bound * 2.0 ** -8
    worst = err.max().item()
    if worst > 1e-30:
        raise AssertionError("%s: off PyTorch's fp32 sum by more than a bf16 step (%g)"
                             % (what, worst))


def check_collectives(comm, world, rank, label, salt):
    paths = {}
    n = 16 * 512
    xs = [inputs(r, n, salt) for r in range(world)]

    # bf16 all-gather and all-gatherv (uneven: rank r sends 16 * (r + 2) elements).
    out = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    paths["all_gather bf16"] = symmcomm.all_gather(comm, xs[rank], out).path
    expect_equal(out, torch.cat(xs), label + " all_gather bf16")
    counts = [16 * (r + 2) for r in range(world)]
    parts = [xs[r][:counts[r]] for r in range(world)]
    outv = torch.empty(sum(counts), dtype=torch.bfloat16, device="cuda")
    paths["all_gatherv bf16"] = symmcomm.all_gatherv(comm, parts[rank].clone(), outv, counts).path
    expect_equal(outv, torch.cat(parts), label + " all_gatherv bf16")

    # NVFP4 and FP8 all-gathers: every rank's quantized tensor, scales included, byte for byte.
    qs = [nvfp4_of(x) for x in xs]
    g = nvfp4_empty(world * n, world)
    paths["all_gather nvfp4"] = symmcomm.all_gather(comm, qs[rank], g).path
    expect_equal(g.data, torch.cat([q.data for q in qs]), label + " nvfp4 data")
    expect_equal(g.block_scales, torch.cat([q.block_scales for q in qs]), label + " block scales")
    expect_equal(g.global_scale, torch.cat([q.global_scale for q in qs]), label + " global scales")
    for r in range(world):
        part = symmcomm.rank_part(g, r, world)
        expect_equal(part.block_scales, qs[r].block_scales, label + " rank_part block scales")
        expect_equal(part.global_scale, qs[r].global_scale, label + " rank_part global scale")
    qv = [nvfp4_of(x[:c].clone()) for x, c in zip(xs, counts)]
    gv = nvfp4_empty(sum(counts), world)
    paths["all_gatherv nvfp4"] = symmcomm.all_gatherv(comm, qv[rank], gv, counts).path
    expect_equal(gv.data, torch.cat([q.data for q in qv]), label + " all_gatherv nvfp4 data")
    expect_equal(gv.global_scale, torch.cat([q.global_scale for q in qv]),
                 label + " all_gatherv nvfp4 global scales")
    # Swizzled block scales for rows of 256 elements (16 scale columns), the GEMMs' layout.
    row = 256
    rows = world * n // row
    gs = symmcomm.Nvfp4Tensor(torch.zeros(world * n // 2, dtype=torch.uint8, device="cuda"),
                              torch.full((symmcomm.swizzled_scale_bytes(rows, row // 16),), 0xEE,
                                         dtype=torch.uint8, device="cuda"),
                              torch.zeros(world, dtype=torch.float32, device="cuda"))
    paths["all_gather nvfp4 swizzled"] = symmcomm.all_gather(comm, qs[rank], gs,
                                                             row_elements=row).path
    expect_equal(gs.data, torch.cat([q.data for q in qs]), label + " swizzled gather data")
    expect_equal(gs.block_scales,
                 swizzled_reference(torch.cat([q.block_scales for q in qs]), rows, row // 16),
                 label + " swizzled block scales")
    fs = [fp8_of(x) for x in xs]
    gf = fp8_empty(world * n, world)
    paths["all_gather fp8"] = symmcomm.all_gather(comm, fs[rank], gf).path
    expect_equal(gf.data.view(torch.uint8), torch.cat([f.data.view(torch.uint8) for f in fs]),
                 label + " fp8 codes")
    expect_equal(gf.scale, torch.cat([f.scale for f in fs]), label + " fp8 scales")

    # Reduce-scatters: this rank's shard of the sum over ranks.
    m = n // world
    shard = slice(rank * m, (rank + 1) * m)
    rs = torch.empty(m, dtype=torch.bfloat16, device="cuda")
    paths["reduce_scatter bf16"] = symmcomm.reduce_scatter(comm, xs[rank], rs).path
    want = sum(x[shard].float() for x in xs)
    if world == 2:  # one addition: exactly PyTorch's fp32 sum rounded once
        expect_equal(rs, want.to(torch.bfloat16), label + " reduce_scatter bf16")
    else:
        expect_close(rs, want, sum(x[shard].float().abs() for x in xs), label + " bf16")
    rs32 = torch.empty(m, dtype=torch.float32, device="cuda")
    for name, quantized, values, empty in (("nvfp4", qs, nvfp4_values, nvfp4_empty),
                                           ("fp8", fs, fp8_values, fp8_empty)):
        paths["reduce_scatter " + name] = symmcomm.reduce_scatter(comm, quantized[rank], rs).path
        vals = [values(q)[shard] for q in quantized]
        bound = sum(v.abs() for v in vals)
        expect_close(rs, sum(vals), bound, label + " reduce_scatter " + name)
        # fp32 output: PyTorch's fp32 sum up to the device's fused multiply-adds.
        symmcomm.reduce_scatter(comm, quantized[rank], rs32)
        worst = ((rs32 - sum(vals)).abs() - bound * 2.0 ** -20).max().item()
        if worst > 1e-30:
            raise AssertionError("%s reduce_scatter %s -> fp32: off PyTorch's sum (%g)"
                                 % (label, name, worst))
        # Re-quantized output: its decoded values are the fp32 sum within the format's step.
        requantized = empty(m)
        symmcomm.reduce_scatter(comm, quantized[rank], requantized)
        rel = ((values(requantized) - rs32).norm() / rs32.norm()).item()
        if not rel < (0.15 if name == "nvfp4" else 0.06):
            raise AssertionError("%s reduce_scatter %s re-quantized: relative error %g"
                                 % (label, name, rel))

    # reduce_scatterv, uneven shards (rank r keeps counts[r] elements of the sum), from bf16 and
    # from NVFP4 (C ABI 4's symmcomm_reduce_scatterv).
    rcounts = [16 * (r + 1) for r in range(world)]
    total = sum(rcounts)
    first = sum(rcounts[:rank])
    mine = slice(first, first + rcounts[rank])
    xr = [x[:total].clone() for x in xs]
    outr = torch.empty(rcounts[rank], dtype=torch.bfloat16, device="cuda")
    paths["reduce_scatterv bf16"] = symmcomm.reduce_scatterv(comm, xr[rank], outr, rcounts).path
    expect_close(outr, sum(x[mine].float() for x in xr), sum(x[mine].float().abs() for x in xr),
                 label + " reduce_scatterv bf16")
    qr = [nvfp4_of(x) for x in xr]
    paths["reduce_scatterv nvfp4"] = symmcomm.reduce_scatterv(comm, qr[rank], outr, rcounts).path
    vals = [nvfp4_values(q)[mine] for q in qr]
    expect_close(outr, sum(vals), sum(v.abs() for v in vals), label + " reduce_scatterv nvfp4")

    # Fused quantize + gather with the scale computed from the data: every rank's quantization
    # byte for byte (as quantize_nvfp4 then all_gather), linear and swizzled scales.
    gq = nvfp4_empty(world * n, world)
    paths["quantize_all_gather nvfp4"] = symmcomm.quantize_all_gather(comm, xs[rank], gq).path
    expect_equal(gq.data, torch.cat([q.data for q in qs]), label + " quantize_all_gather data")
    expect_equal(gq.block_scales, torch.cat([q.block_scales for q in qs]),
                 label + " quantize_all_gather block scales")
    expect_equal(gq.global_scale, torch.cat([q.global_scale for q in qs]),
                 label + " quantize_all_gather global scales")
    gqs = symmcomm.Nvfp4Tensor(torch.zeros(world * n // 2, dtype=torch.uint8, device="cuda"),
                               torch.full((symmcomm.swizzled_scale_bytes(rows, row // 16),), 0xEE,
                                          dtype=torch.uint8, device="cuda"),
                               torch.zeros(world, dtype=torch.float32, device="cuda"))
    paths["quantize_all_gather nvfp4 swizzled"] = symmcomm.quantize_all_gather(
        comm, xs[rank], gqs, row_elements=row).path
    expect_equal(gqs.block_scales,
                 swizzled_reference(torch.cat([q.block_scales for q in qs]), rows, row // 16),
                 label + " quantize_all_gather swizzled block scales")

    # CUDA graph: a gather captured once, replayed on new inputs.
    src = xs[rank].clone()
    dst = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        symmcomm.all_gather(comm, src, dst)
    fresh = [inputs(r, n, salt + 50) for r in range(world)]
    src.copy_(fresh[rank])
    graph.replay()
    torch.cuda.synchronize()
    expect_equal(dst, torch.cat(fresh), label + " all_gather replayed from a CUDA graph")
    del graph
    return paths


def check_pool(comm, world, rank, label):
    """Tensors made under torch.cuda.use_mem_pool land in the pool's windows (where the
    communicator can have windows) and gather correctly."""
    pool = symmcomm.Pool(comm, initial_bytes=64 << 20, allow_growth=False)
    mempool = symmcomm.torch_mem_pool(pool)
    n = 4096
    with torch.cuda.use_mem_pool(mempool):
        send = inputs(rank, n, 7)
        recv = torch.empty(world * n, dtype=torch.bfloat16, device="cuda")
    # A pool's memory is in its windows whatever NCCL can do with them (comm.symmetric).
    assert symmcomm.is_symmetric(comm, recv), label + ": a pool tensor is not in a window"
    plan = symmcomm.all_gather(comm, send, recv)
    expect_equal(recv, torch.cat([inputs(r, n, 7) for r in range(world)]), label + " pool gather")
    del send, recv, mempool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    pool.destroy()
    return plan.path


def join():
    """This process's rank of the launch (torch.distributed's environment): its GPU set and the
    NCCL process group made. Returns (rank, world, how the ranks share GPUs, device)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    how = symmcomm.share_gpus_if_needed(rank, world)
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=torch.device("cuda", device))
    return rank, world, how, device


def main():
    rank, world, how, device = join()
    borrowed = symmcomm.Communicator.from_process_group()
    own = symmcomm.Communicator.init(world, symmcomm.shared_unique_id(), rank, device)
    assert borrowed.info()[:3] == (rank, world, device), borrowed.info()
    report = []
    for label, comm, salt in (("borrowed", borrowed, 1), ("own", own, 2)):
        paths = check_collectives(comm, world, rank, label, salt)
        paths["pool all_gather"] = check_pool(comm, world, rank, label)
        report.append("%s (symmetric %s): %s" % (label, comm.symmetric, ", ".join(
            "%s %s" % (k, v) for k, v in paths.items())))
    # Still PyTorch's communicator after symmcomm used it: a torch collective on the group.
    t = torch.full((4,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    assert t[0].item() == world * (world + 1) / 2, t
    own.release()
    borrowed.release()
    dist.destroy_process_group()
    print("ranks_worker rank %d/%d: NCCL %s, torch %s; %s\n  %s\nranks_worker rank %d: OK"
          % (rank, world, symmcomm.nccl_version(), torch.__version__, how, "\n  ".join(report),
             rank))
    return 0


if __name__ == "__main__":
    sys.exit(main())
