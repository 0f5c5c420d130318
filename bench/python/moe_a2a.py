#!/usr/bin/env python3
"""MoE dispatch and combine by expert at DeepSeek-R1's shapes (hidden 7168, 256 experts, top-8
of group-limited routing: top-4 of 8 groups), side by side in one run:

  "MoeGroup"              symmcomm.moe.MoeGroup on the path Auto takes (the LSA kernels where
                          the library can run them: each routed NVFP4 row written once into
                          its expert's rank in the masked expert-major layout, each output row
                          sent back and summed in fp32 on its token's rank);
  "MoeGroup in place"     the same with MoeConfig(combine_in_place=True): the expert outputs
                          written where the group holds them (MoeGroup.expert_out), each token's
                          rank reading and summing its rows there in one pass;
  "MoeGroup fallback"     the same group forced onto its fallback (all-gathers of tokens and
                          routing, placement, fp32 reduce-scatter);
  "AG/RS device counts"   symmcomm's all-gather / reduce-scatter layer with the counts on the
                          device (all_gatherv_device of the NVFP4 tokens, reduce_scatterv_device
                          of bf16 outputs): every token to every rank, no placement;
  "all_to_all_single"     torch.distributed.all_to_all_single padded, as engines without DeepEP
                          do: each rank sends every peer T rows (NVFP4 data + block scales
                          packed, the rows of tokens routed there first), and the bf16 outputs
                          back the same way.

Each tokens-per-rank value T: dispatch and combine each timed eager and as a replayed CUDA graph,
`--runs` runs of `--replays` calls (after a barrier), medians with min-max over the runs, rank
0's; the sum is dispatch + combine. Usage:
  torchrun --nproc-per-node N bench/python/moe_a2a.py OUT_PREFIX [--tokens 1,4,16,64,256]
Writes OUT_PREFIX.json and OUT_PREFIX.md. Ranks sharing one GPU need NCCL >= 2.30 with
NCCL_MULTI_RANK_GPU_ENABLE=1 (PyTorch's too: LD_PRELOAD the same libnccl). Exit 77: no GPU.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

from moe_step import (BLOCK, GLOBAL_SCALE, log, parse_args, save, sharing, span,  # noqa: E402
                      stacks_on_sigusr1, timed)  # (moe_step exits 77 without a GPU)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import symmcomm  # noqa: E402
from symmcomm import moe  # noqa: E402

HIDDEN, EXPERTS, TOP_K, GROUPS, TOP_GROUPS = 7168, 256, 8, 8, 4
WAYS = ("MoeGroup", "MoeGroup in place", "MoeGroup fallback", "AG/RS device counts",
        "all_to_all_single")


def routing(rank, tokens, seed):
    """topk_idx int32 and topk_weights float32 [tokens, 8] of group-limited routing on random
    scores (the same on every call of a rank)."""
    g = torch.Generator(device="cuda").manual_seed(seed * 1000 + rank)
    scores = torch.rand(tokens, EXPERTS, generator=g, device="cuda")
    grouped = scores.view(tokens, GROUPS, EXPERTS // GROUPS)
    top_groups = grouped.topk(2, dim=-1).values.sum(-1).topk(TOP_GROUPS, dim=-1).indices
    keep = torch.zeros(tokens, GROUPS, device="cuda").scatter_(1, top_groups, 1.0)
    weights, ids = (grouped * keep.unsqueeze(-1)).view(tokens, EXPERTS).topk(TOP_K, dim=-1)
    return ids.to(torch.int32), (weights / weights.sum(-1, keepdim=True)).float()


class Way:
    """One way's dispatch and combine at T tokens per rank, on static buffers."""

    def __init__(self, name, ctx, tokens):
        self.name, self.ctx, self.T = name, ctx, tokens
        W, H = ctx.world, HIDDEN
        self.plans = {}
        g = torch.Generator(device="cuda").manual_seed(ctx.rank)
        x = torch.randn(tokens, H, generator=g, device="cuda").to(torch.bfloat16)
        u8 = dict(dtype=torch.uint8, device="cuda")
        self.x = symmcomm.Nvfp4Tensor(torch.empty(tokens, H // 2, **u8),
                                      torch.empty(tokens, H // BLOCK, **u8),
                                      torch.full((1,), GLOBAL_SCALE, device="cuda"))
        symmcomm.quantize_nvfp4(x.view(-1), symmcomm.Nvfp4Tensor(
            self.x.data.view(-1), self.x.block_scales.view(-1), self.x.global_scale),
            compute_scale=False)
        self.ids, self.weights = routing(ctx.rank, tokens, 1)
        self.num_tokens = torch.full((1,), tokens, dtype=torch.int32, device="cuda")
        self.group = None
        if name.startswith("MoeGroup"):
            mean = W * tokens * TOP_K / EXPERTS
            self.config = moe.MoeConfig(EXPERTS, TOP_K, H, tokens, W,
                                        capacity=max(8, int(2 * mean + 0.999)),
                                        combine_in_place=name.endswith("in place"))
            self.group = moe.MoeGroup(ctx.comm, self.config,
                                      path="fallback" if name.endswith("fallback") else "auto")
            if self.group.expert_out is not None:  # the GEMM's output where the group holds it
                self.y = self.group.expert_out
                self.y.zero_()
            else:
                self.y = torch.zeros(self.config.local_experts, self.config.capacity, H,
                                     dtype=torch.bfloat16, device="cuda")
            self.d = self.group.dispatch(self.x, self.ids, self.weights, self.num_tokens)
        elif name == "AG/RS device counts":
            n = tokens * H
            with torch.cuda.use_mem_pool(ctx.mempool):
                self.recv = symmcomm.Nvfp4Tensor(torch.empty(W * n // 2, **u8),
                                                 torch.empty(W * n // BLOCK, **u8),
                                                 torch.empty(W, device="cuda"))
                self.yg = torch.zeros(W * n, dtype=torch.bfloat16, device="cuda")
                self.out = torch.empty(n, dtype=torch.bfloat16, device="cuda")
                i32 = dict(dtype=torch.int32, device="cuda")
                self.dc = symmcomm.DeviceCounts(self.num_tokens.clone(), torch.zeros(W, **i32),
                                                torch.zeros(W, **i32), torch.zeros(1, **i32))
            self.send = symmcomm.Nvfp4Tensor(self.x.data.view(-1), self.x.block_scales.view(-1),
                                             self.x.global_scale)
        else:
            row = H // 2 + H // BLOCK
            self.a2a_send = torch.zeros(W * tokens, row, **u8)
            self.a2a_recv = torch.zeros(W * tokens, row, **u8)
            self.y_send = torch.zeros(W * tokens, H, dtype=torch.bfloat16, device="cuda")
            self.y_recv = torch.zeros(W * tokens, H, dtype=torch.bfloat16, device="cuda")
            # Each peer's rows: the tokens routed to one of its experts first (an engine's
            # permutation), padded to T rows per peer.
            peer = (self.ids.long() // (EXPERTS // W))
            sent = torch.zeros(W, tokens, dtype=torch.bool, device="cuda")
            sent.scatter_(0, peer.t().clamp(0, W - 1), True)
            order = torch.argsort((~sent).to(torch.int8), dim=1, stable=True)
            packed = torch.cat([self.x.data, self.x.block_scales], dim=1)
            self.a2a_send.copy_(packed[order.reshape(-1)])

    def close(self):
        """Releases the group's window (collective: every rank closes the same ways)."""
        if self.group is not None:
            self.group.destroy()

    def path(self):
        """The path each step took and why."""
        if self.group is not None and self.group.path == "lsa":
            return {"dispatch and combine": self.group.reason}
        return {k: "%s (%s)" % (p.path, p.why) for k, p in self.plans.items()}

    def dispatch(self):
        c = self.ctx
        if self.group is not None:
            self.d = self.group.dispatch(self.x, self.ids, self.weights, self.num_tokens)
            self.plans = dict(self.group.plans)
        elif self.name == "AG/RS device counts":
            self.plans["dispatch"] = symmcomm.all_gatherv_device(c.comm, self.send, self.recv,
                                                                 self.dc, HIDDEN)
        else:
            dist.all_to_all_single(self.a2a_recv, self.a2a_send)

    def combine(self):
        c = self.ctx
        if self.group is not None:
            self.group.combine(self.y, self.d)
            self.plans = dict(self.group.plans)
        elif self.name == "AG/RS device counts":
            self.plans["combine"] = symmcomm.reduce_scatterv_device(c.comm, self.yg, self.out,
                                                                    self.dc, HIDDEN)
        else:
            dist.all_to_all_single(self.y_recv, self.y_send)


def eager(ctx, fn, args):
    """Per-call times (us) of `fn` launched eagerly: args.runs runs of args.replays calls."""
    fn()
    torch.cuda.synchronize()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(args.runs):
        dist.barrier(group=ctx.gloo)
        torch.cuda.synchronize()
        start.record()
        for _ in range(args.replays):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / args.replays)
    return times


class Context:
    def __init__(self, args):
        self.rank, self.world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", self.world))
        self.sharing = sharing(self.rank, local_world)
        self.device = int(os.environ.get("LOCAL_RANK", self.rank)) % torch.cuda.device_count()
        torch.cuda.set_device(self.device)
        dist.init_process_group("nccl", device_id=torch.device("cuda", self.device))
        self.gloo = dist.new_group(backend="gloo")
        self.comm = symmcomm.Communicator.init(
            self.world, symmcomm.shared_unique_id(dist, self.gloo), self.rank, self.device)
        n = max(args.tokens) * HIDDEN
        need = (n // 2 + n // BLOCK + 4) * self.world + 2 * (self.world + 1) * n + (8 << 20)
        self.pool = symmcomm.Pool(self.comm, initial_bytes=need, allow_growth=False)
        self.mempool = symmcomm.torch_mem_pool(self.pool)


def measure(ctx, args):
    results = []
    for tokens in args.tokens:
        for name in WAYS:
            row = {"ranks": ctx.world, "tokens_per_rank": tokens, "way": name}
            way = None
            try:
                way = Way(name, ctx, tokens)
                for mode, timer in (("eager", eager), ("graph", timed)):
                    row[mode + "_dispatch_us"] = timer(ctx, way.dispatch, args)
                    row[mode + "_combine_us"] = timer(ctx, way.combine, args)
                    row[mode + "_sum_us"] = [a + b for a, b in zip(row[mode + "_dispatch_us"],
                                                                   row[mode + "_combine_us"])]
            except Exception as e:  # noqa: BLE001 (a way that cannot run is reported, not fatal)
                row["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
                log(ctx.rank, "%s at %d tokens/rank: %s" % (name, tokens, row["error"]))
                results.append(row)
                if way is not None:
                    torch.cuda.synchronize()
                    way.close()
                continue
            row["paths"] = way.path()
            results.append(row)
            log(ctx.rank, "%d ranks, %d tokens/rank, %s: graph sum %s us, eager sum %s us"
                % (ctx.world, tokens, name, span(row["graph_sum_us"]), span(row["eager_sum_us"])))
            torch.cuda.synchronize()
            way.close()
            del way
    return results


def table(results, world, sharing):
    lines = ["%d ranks (%s). us per call, median (min-max) of the runs; sum = dispatch + "
             "combine per run; vs a2a: all_to_all_single's sum over this way's." % (world, sharing),
             "", "| tokens/rank | way | mode | dispatch | combine | sum | vs a2a |",
             "|---|---|---|---|---|---|---|"]
    base = {(r["tokens_per_rank"], m): statistics.median(r[m + "_sum_us"]) for r in results
            for m in ("eager", "graph") if r["way"] == "all_to_all_single" and "error" not in r}
    for r in results:
        if "error" in r:
            lines.append("| %d | %s | - | not measured: %s | | | |" % (r["tokens_per_rank"],
                                                                      r["way"], r["error"]))
            continue
        for m in ("eager", "graph"):
            b = base.get((r["tokens_per_rank"], m))
            s = statistics.median(r[m + "_sum_us"])
            lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
                r["tokens_per_rank"], r["way"], m, span(r[m + "_dispatch_us"]),
                span(r[m + "_combine_us"]), span(r[m + "_sum_us"]),
                "%.3f" % (s / b) if b else "-"))
    return "\n".join(lines)


def main():
    args = parse_args(__doc__)
    stacks_on_sigusr1()
    ctx = Context(args)
    log(ctx.rank, "moe_a2a: %d ranks (%s), NCCL %s, PyTorch %s, %s; tokens per rank %s"
        % (ctx.world, ctx.sharing, symmcomm.nccl_version(), torch.__version__,
           torch.cuda.get_device_name(), args.tokens))
    results = measure(ctx, args)
    if ctx.rank == 0:
        save(args.out, ctx, results, table(results, ctx.world, ctx.sharing))
    dist.barrier(group=ctx.gloo)
    del ctx.mempool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    ctx.pool.destroy()
    ctx.comm.release()
    dist.barrier(group=ctx.gloo)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
