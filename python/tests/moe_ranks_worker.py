"""One rank of symmcomm.moe.MoeGroup over real ranks (run by test_torch_ranks.py): every rank
builds the same world of inputs from one seed, dispatches its own on the GPU and compares what it
received with the one-process simulation of test_moe_group.py (every data and scale byte, the
counts, overflow and error bits), combines and compares with the fp64 sum rounded once; then the
same in a CUDA graph replayed with new routing copied into its inputs. On the package's own
fallback (path="python"), the library's fallback, then the path Auto picks (the library's LSA
kernels where they can run). Prints
"moe_ranks_worker rank R: OK"."""
import random
import sys

import torch
import torch.distributed as dist

import symmcomm
from symmcomm import moe
from ranks_worker import join
from test_moe_group import dispatch_world, world_inputs


def to_device(ranks, device):
    """Rank inputs on `device` (NVFP4 tokens and routing)."""
    out = []
    for r in ranks:
        x = r["x"]
        out.append(dict(x=symmcomm.Nvfp4Tensor(x.data.to(device), x.block_scales.to(device),
                                               x.global_scale.to(device)),
                        topk_idx=r["topk_idx"].to(device),
                        topk_weights=r["topk_weights"].to(device),
                        num_tokens=r["num_tokens"].to(device)))
    return out


def expected_combine(config, ranks, dispatched, outs, rank):
    """This rank's combined tokens as the one-process world computes them, in fp64: the rows of
    its tokens dispatched (num_tokens clamped; a combine leaves the rest of its output
    unspecified)."""
    T = config.max_tokens_per_rank
    summed = sum(moe.combine_partials(config, d, y).double() for d, y in zip(dispatched, outs))
    n = min(max(int(ranks[rank]["num_tokens"].item()), 0), T)
    return summed[rank * T:rank * T + n]


def expect_placed(config, got, want, what):
    """The dispatch `got` (on the device) holds `want`'s rows and scales below each expert's
    count (rows past it: zero on path="python", as an earlier dispatch left them on the
    library's paths), and its counts, overflow, error and global scale."""
    for name in ("expert_count", "overflow", "error", "global_scale"):
        assert torch.equal(getattr(got, name).cpu(), getattr(want, name)), \
            "%s: %s differs" % (what, name)
    counts = want.expert_count.tolist()
    data = got.data.cpu()
    for e, n in enumerate(counts):
        assert torch.equal(data[e, :n], want.data[e, :n]), "%s: expert %d's rows differ" % (what, e)
    slots = torch.cat([e * config.capacity + torch.arange(n) for e, n in enumerate(counts)] +
                      [torch.zeros(0, dtype=torch.int64)])
    at = moe._swizzled_offsets(config, slots, "cpu").reshape(-1)
    assert torch.equal(got.block_scales.cpu().reshape(-1)[at], want.block_scales.reshape(-1)[at]), \
        "%s: block scales differ" % what


def check(config, group, world_seed, rank, device):
    """One dispatch + combine on this rank against the simulation; returns the dispatch."""
    idx, counts, ranks = world_inputs(config, random.Random(world_seed), "minus")
    dispatched = dispatch_world(config, ranks)
    g = torch.Generator().manual_seed(world_seed)
    L, cap, H = config.local_experts, config.capacity, config.hidden
    outs = [torch.randn(L, cap, H, generator=g).to(torch.bfloat16) for _ in range(config.world)]
    mine = to_device(ranks, device)[rank]
    d = group.dispatch(mine["x"], mine["topk_idx"], mine["topk_weights"], mine["num_tokens"])
    y = group.combine(outs[rank].to(device), d)
    torch.cuda.synchronize()
    expect_placed(config, d, dispatched[rank], "%s, seed %d" % (group.path, world_seed))
    exact = expected_combine(config, ranks, dispatched, outs, rank)
    assert torch.allclose(y.cpu().double()[:len(exact)], exact, rtol=2 ** -8, atol=1e-5), \
        "combine differs"
    return d


def graph_replays(config, group, rank, device):
    """Dispatch + combine captured once, replayed with three routings copied into its inputs."""
    T, K, H = config.max_tokens_per_rank, config.top_k, config.hidden
    static = dict(x=symmcomm.Nvfp4Tensor(torch.zeros(T, H // 2, dtype=torch.uint8, device=device),
                                         torch.zeros(T, H // 16, dtype=torch.uint8, device=device),
                                         torch.full((1,), 0.5, device=device)),
                  topk_idx=torch.full((T, K), -1, dtype=torch.int32, device=device),
                  topk_weights=torch.zeros(T, K, device=device),
                  num_tokens=torch.zeros(1, dtype=torch.int32, device=device))
    y_in = torch.zeros(config.local_experts, config.capacity, H, dtype=torch.bfloat16,
                       device=device)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up outside capture (workspaces, plans)
        d = group.dispatch(static["x"], static["topk_idx"], static["topk_weights"],
                           static["num_tokens"])
        group.combine(y_in, d)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        d = group.dispatch(static["x"], static["topk_idx"], static["topk_weights"],
                           static["num_tokens"])
        y = group.combine(y_in, d)
    for seed in (101, 202, 303):
        idx, counts, ranks = world_inputs(config, random.Random(seed), "random")
        dispatched = dispatch_world(config, ranks)
        g = torch.Generator().manual_seed(seed)
        outs = [torch.randn(config.local_experts, config.capacity, H, generator=g)
                .to(torch.bfloat16) for _ in range(config.world)]
        mine = ranks[rank]
        static["x"].data.copy_(mine["x"].data)
        static["x"].block_scales.copy_(mine["x"].block_scales)
        static["topk_idx"].copy_(mine["topk_idx"])
        static["topk_weights"].copy_(mine["topk_weights"])
        static["num_tokens"].copy_(mine["num_tokens"])
        y_in.copy_(outs[rank])
        graph.replay()
        torch.cuda.synchronize()
        expect_placed(config, d, dispatched[rank], "%s, replay %d" % (group.path, seed))
        exact = expected_combine(config, ranks, dispatched, outs, rank)
        assert torch.allclose(y.cpu().double()[:len(exact)], exact, rtol=2 ** -8, atol=1e-5), \
            "replay %d: combine differs" % seed
    del graph


def main():
    rank, world, how, device = join()
    comm = symmcomm.Communicator.from_process_group()
    config = moe.MoeConfig(8 * world, 4, 256, 16, world)
    reasons = []
    # The package's own fallback, the library's, and Auto's choice (its LSA kernels where they
    # can run: every rank gets the same answer from the library).
    for path in ("python", "fallback", "auto"):
        group = moe.MoeGroup(comm, config, path=path)
        for seed in (1, 2, 3):
            check(config, group, seed, rank, device)
        graph_replays(config, group, rank, device)
        reasons.append(group.reason)
        group.destroy()
    reason = " | ".join(reasons)
    comm.release()
    dist.destroy_process_group()
    print("moe_ranks_worker rank %d/%d: NCCL %s; %s; %s\nmoe_ranks_worker rank %d: OK"
          % (rank, world, symmcomm.nccl_version(), how, reason, rank))
    return 0


if __name__ == "__main__":
    sys.exit(main())
