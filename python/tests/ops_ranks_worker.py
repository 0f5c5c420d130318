"""One rank of test_torch_ranks.py's operator test (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
in the environment): the torch operators' C++ implementations against their Python ones and
against references every rank computes from every rank's seeded inputs, across real ranks, on
plain PyTorch tensors and on tensors from a symmcomm pool (symmetric windows: NCCL's symmetric
kernels or symmcomm's own where the communicator can run them). Values are small integers, so
every sum is exact in bf16 and fp32 whatever the order. Prints "ops_ranks_worker rank R: OK" at
the end, or "C++ operators unavailable: <why>" and exits 0 when libsymmcomm_torch.so is absent
(the test then skips, saying why); any failed check raises."""
import sys

import torch
import torch.distributed as dist

import symmcomm
import symmcomm.ops
from ranks_worker import join  # beside this file: the script's directory is on sys.path

GROUP = "ops-ranks"
ROWS, HIDDEN = 8, 256


def ints(rank, rows, salt):
    """Rank `rank`'s bf16 [rows, HIDDEN] of integers in -4..4 (the same on every process)."""
    g = torch.Generator(device="cuda").manual_seed(7919 * salt + rank)
    return torch.randint(-4, 5, (rows, HIDDEN), device="cuda", generator=g).to(torch.bfloat16)


def same(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError("%s: %s %s against %s %s" % (what, got.dtype, tuple(got.shape),
                                                           want.dtype, tuple(want.shape)))
    a = got.view(torch.uint8) if got.element_size() == 1 else got
    b = want.view(torch.uint8) if want.element_size() == 1 else want
    if not torch.equal(a, b):
        bad = (a != b).nonzero()
        raise AssertionError("%s: %d of %d elements differ, first at %s"
                             % (what, bad.shape[0], a.numel(), bad[0].tolist()))


def both(cpp, py, name, *args):
    """Runs operator `name` in both namespaces on clones of `args`; checks their outputs are
    the same bytes and returns the C++ one."""
    a = getattr(cpp, name)(*[t.clone() if isinstance(t, torch.Tensor) else t for t in args])
    b = getattr(py, name)(*[t.clone() if isinstance(t, torch.Tensor) else t for t in args])
    torch.cuda.synchronize()
    outs_a = a if isinstance(a, tuple) else (a,)
    outs_b = b if isinstance(b, tuple) else (b,)
    for i, (x, y) in enumerate(zip(outs_a, outs_b)):
        same(x, y, "%s output %d, C++ against Python" % (name, i))
    return a


def check_operators(cpp, py, world, rank, salt, device_counts=True):
    """Every family of operator at `world` ranks (without `device_counts`, only those whose tensors
    have the same sizes on every rank: a pool's allocations must follow the same sequence on
    every rank to lie at the same offsets); returns what was checked."""
    mine = ints(rank, ROWS, salt)
    every = [ints(r, ROWS, salt) for r in range(world)]
    same(both(cpp, py, "all_gather", mine, GROUP), torch.cat(every), "all_gather")
    full = [ints(r, world * ROWS, salt + 100) for r in range(world)]
    total = sum(t.float() for t in full).to(torch.bfloat16)
    shard = total[rank * ROWS:(rank + 1) * ROWS]
    same(both(cpp, py, "reduce_scatter", full[rank], GROUP), shard, "reduce_scatter")
    checked = ["all_gather", "reduce_scatter"]
    if device_counts:
        check_host_counts(cpp, py, world, rank, salt, every)
        checked += ["all_gatherv", "reduce_scatterv"]
    check_nvfp4(cpp, py, rank, mine, full)
    check_device_counts(cpp, py, world, rank, mine, every)
    return checked + ["nvfp4 x6", "all_gatherv_device"]


def check_host_counts(cpp, py, world, rank, salt, every):
    """The v-collectives: a count of rows per rank, given on the host."""
    mine = every[rank]
    counts = [5 + r % 3 for r in range(world)]
    gathered = torch.cat([every[r][:counts[r]] for r in range(world)])
    same(both(cpp, py, "all_gatherv", mine[:counts[rank]], counts, GROUP), gathered, "all_gatherv")
    # reduce_scatterv: every rank's send holds sum(counts) rows; this rank keeps its counts[rank].
    v_full = [ints(r, sum(counts), salt + 200) for r in range(world)]
    v_total = sum(t.float() for t in v_full).to(torch.bfloat16)
    first = sum(counts[:rank])
    same(both(cpp, py, "reduce_scatterv", v_full[rank], counts, GROUP),
         v_total[first:first + counts[rank]], "reduce_scatterv")


def check_nvfp4(cpp, py, rank, mine, full):
    """NVFP4: the fused dispatch, the gather of quantized rows and the combines; C++ against
    Python."""
    both(cpp, py, "quantize_all_gather_nvfp4", mine, None, GROUP, None)
    both(cpp, py, "quantize_all_gather_nvfp4", mine, None, GROUP, HIDDEN)
    data, bs, gs = cpp.quantize_nvfp4(full[rank], None)
    both(cpp, py, "all_gather_nvfp4", data[:ROWS], bs[:ROWS], gs, GROUP, None)
    for out_dtype in (torch.bfloat16, torch.float32):
        both(cpp, py, "reduce_scatter_nvfp4", data, bs, gs, GROUP, out_dtype)
    both(cpp, py, "reduce_scatter_nvfp4_q", data, bs, gs, GROUP)


def check_device_counts(cpp, py, world, rank, mine, every):
    """Counts on the device: this rank's count below capacity; rows past the total are not
    compared (unspecified), the counts and offsets are."""
    i32 = lambda v: torch.tensor(v, device="cuda", dtype=torch.int32)  # noqa: E731
    dev_counts = [3 + r for r in range(world)]
    outs = []
    for ops in (cpp, py):
        c, o, f = i32([-1] * world), i32([-1] * world), i32([0])
        got = ops.all_gatherv_device(mine, i32([dev_counts[rank]]), c, o, f, GROUP)
        torch.cuda.synchronize()
        outs.append((got, c.tolist(), o.tolist(), f.item()))
    offsets = [sum(dev_counts[:r]) for r in range(world)]
    want = torch.cat([every[r][:dev_counts[r]] for r in range(world)])
    for label, (got, c, o, f) in zip(("C++", "Python"), outs):
        assert c == dev_counts and o == offsets and f == 0, (label, c, o, f)
        same(got[:sum(dev_counts)], want, "all_gatherv_device (%s)" % label)


def main():
    rank, world, how, device = join()
    comm = symmcomm.Communicator.init(world, symmcomm.shared_unique_id(), rank, device)
    symmcomm.ops.register_communicator(GROUP, comm)
    where = symmcomm.ops.native_library()
    if "error" in where:
        print("ops_ranks_worker rank %d: C++ operators unavailable: %s" % (rank, where["error"]))
        comm.release()
        dist.destroy_process_group()
        return 0
    cpp = symmcomm.ops.register_ops("symmcomm_ranks_cpp", "c++")
    py = symmcomm.ops.register_ops("symmcomm_ranks_py", "python")
    checked = check_operators(cpp, py, world, rank, 1)
    # Again on tensors from a pool: inputs and the operators' outputs in symmetric windows.
    pool = symmcomm.Pool(comm, initial_bytes=64 << 20, allow_growth=False)
    mempool = symmcomm.torch_mem_pool(pool)
    with torch.cuda.use_mem_pool(mempool):
        check_operators(cpp, py, world, rank, 2, device_counts=False)
    del mempool  # the checks' tensors are gone with them
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    pool.destroy()
    symmcomm.ops.unregister_communicator(GROUP)
    comm.release()
    dist.destroy_process_group()
    print("ops_ranks_worker rank %d/%d: NCCL %s, torch %s, %s; operators %s (C++ from %s)"
          % (rank, world, symmcomm.nccl_version(), torch.__version__, how, ", ".join(checked),
             where["path"]))
    print("ops_ranks_worker rank %d: OK" % rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
