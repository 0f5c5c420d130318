#!/usr/bin/env python3
"""One DeepSeek-R1 MoE layer's decode step with DP attention, whole, in one CUDA graph per way of
communicating: the closest figure to an engine's tokens/s that one GPU allows.

Each rank holds T_r tokens (hidden 7168) in a buffer of `capacity` rows (T_r = T - r*T/(2N):
ranks differ, as DP attention's do). The step:
  1. quantize: bf16 -> NVFP4 (symmcomm's codec; its global scale computed on the device);
  2. dispatch: every rank's tokens gathered to every rank;
  3. experts: the gathered tokens dequantized, routed on the device (DeepSeek-V3's group-limited
     routing: sigmoid scores, top-4 of 8 groups, top-8 of 256 experts; the rows of the ranks'
     counts only), at most cap = 2x the mean load (at least 8) rows for each of this rank's
     L = 256/N experts (the rest dropped), the expert FFN (7168 -> 2048 -> 7168, SiLU) in BF16 -
     the stand-in for the NVFP4 grouped GEMM Hopper lacks - and weighted back into token order
     (bench/python/expert_standin.py). `--experts grouped` (default): the routed rows packed
     expert after expert through torch._grouped_mm, so that only the chosen experts' weights are
     read, as an engine's grouped GEMM does at decode; `--experts bmm`: the masked layout
     [L, cap, H] through torch.bmm, every local expert's weights read at every batch. Where
     torch._grouped_mm cannot run (missing, wrong, not capturable) the step takes bmm and says so;
  4. combine: the expert outputs (bf16) reduce-scattered back to their ranks.
Ways: "symmcomm device counts" (the counts on the device: all_gatherv_device /
reduce_scatterv_device move only the ranks' rows; compact layout), "symmcomm padded"
(all_gather / reduce_scatter at capacity), "torch.distributed padded" (NCCL through PyTorch at
capacity: data, scales and global scale packed into one buffer, one all_gather_into_tensor;
reduce_scatter_tensor), and "torch.distributed symmetric" (the same on tensors of PyTorch's
NCCL symmetric MemPool, register_mem_pool(symm=True), where this PyTorch and NCCL allow it).

Each way and batch: the step captured in one CUDA graph, and each phase in a graph of its own;
`--runs` timed runs of `--replays` replays each (after a barrier); a run's time is the mean per
replay; medians with min-max over the runs, rank 0's. tokens/s = sum of T_r / step time.

Usage: torchrun --nproc-per-node N bench/python/moe_step.py OUT_PREFIX [--tokens 1,4,16,64,256]
       [--experts grouped|bmm] [--trace TOKENS [--trace-every-rank]]
Writes OUT_PREFIX.json (every run) and OUT_PREFIX.md (the table); prints progress and the table.
--trace T: at T tokens per rank each way's whole step is also replayed under torch.profiler on
rank 0 (OUT_PREFIX-trace-<way>.json, Chrome traces) and OUT_PREFIX-trace.md says where each
way's step went: kernels busy, idle between them, GEMM / NCCL / symmcomm / other kernels.
--trace-every-rank: every other rank writes OUT_PREFIX-trace-<way>-r<rank>.json as well (ranks
sharing a GPU run each other's kernels at once under MPS: one rank's trace shows only its own).
Ranks sharing one GPU (more ranks than GPUs): NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1,
PyTorch's NCCL too (LD_PRELOAD the same libnccl). Processes sharing a GPU are time-sliced by it
unless a CUDA MPS daemon serves them (`SYMMCOMM_STEP_MPS=1 scripts/gpu_round.sh step`); the
table's heading says which. Exit 77: no PyTorch or GPU.
"""
import argparse
import faulthandler
import json
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("moe_step.py: PyTorch is not installed; nothing to run")
    sys.exit(77)
if not torch.cuda.is_available():
    print("moe_step.py: no CUDA GPU; nothing to run")
    sys.exit(77)

import symmcomm  # noqa: E402
import expert_standin  # noqa: E402
import trace_summary  # noqa: E402
from step_table import PHASES, span, step_table  # noqa: E402

HIDDEN = expert_standin.DEEPSEEK_R1.hidden
BLOCK = symmcomm.NVFP4_BLOCK
WAYS = ("symmcomm device counts", "symmcomm padded", "torch.distributed padded",
        "torch.distributed symmetric")
# The activations' NVFP4 global scale: static and the same on every rank, as NVFP4 checkpoints
# calibrate it (amax / (6 x 448) for the N(0, 1) tokens here), so every way dequantizes every
# gathered row with it.
GLOBAL_SCALE = 5.0 / (6 * 448)


def log(rank, text):
    if rank == 0:
        print("[%s] %s" % (time.strftime("%H:%M:%S"), text), flush=True)


def tokens_of(rank, world, tokens):
    """This rank's token count at a mean batch of `tokens` per rank (ranks differ)."""
    return max(1, tokens - (rank * tokens) // (2 * world))


class Nvfp4Buffers:
    """Flat NVFP4 send (capacity rows) and receive (world x capacity rows) tensors, and bf16
    tensors for the experts' input and output, allocated where the caller's allocator puts
    them; views of the first rows serve smaller batches."""

    def __init__(self, world, capacity):
        n = capacity * HIDDEN
        u8 = dict(dtype=torch.uint8, device="cuda")
        self.send = symmcomm.Nvfp4Tensor(torch.empty(n // 2, **u8), torch.empty(n // BLOCK, **u8),
                                         torch.full((1,), GLOBAL_SCALE, device="cuda"))
        self.recv = symmcomm.Nvfp4Tensor(torch.empty(world * n // 2, **u8),
                                         torch.empty(world * n // BLOCK, **u8),
                                         torch.ones(world, dtype=torch.float32, device="cuda"))
        self.y = torch.zeros(world * n, dtype=torch.bfloat16, device="cuda")
        self.out = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        i32 = dict(dtype=torch.int32, device="cuda")
        self.counts = symmcomm.DeviceCounts(torch.zeros(1, **i32), torch.zeros(world, **i32),
                                            torch.zeros(world, **i32), torch.zeros(1, **i32))

    def view(self, world, capacity):
        n = capacity * HIDDEN
        s, r = self.send, self.recv
        return (symmcomm.Nvfp4Tensor(s.data[:n // 2], s.block_scales[:n // BLOCK], s.global_scale),
                symmcomm.Nvfp4Tensor(r.data[:world * n // 2], r.block_scales[:world * n // BLOCK],
                                     r.global_scale),
                self.y[:world * n], self.out[:n])


class Packed:
    """torch.distributed's buffers: each rank's NVFP4 tokens packed as one byte buffer (data,
    block scales, global scale), so one all_gather_into_tensor moves them, as an engine packs
    them."""

    def __init__(self, world, capacity):
        self.world, self.capacity = world, capacity
        n = capacity * HIDDEN
        self.data_bytes, self.scale_bytes = n // 2, n // BLOCK
        self.row = self.data_bytes + self.scale_bytes + 16
        self.send = torch.zeros(self.row, dtype=torch.uint8, device="cuda")
        self.nvfp4(self.send).global_scale.fill_(GLOBAL_SCALE)
        self.recv = torch.zeros(world * self.row, dtype=torch.uint8, device="cuda")
        self.y = torch.zeros(world * n, dtype=torch.bfloat16, device="cuda")
        self.out = torch.zeros(n, dtype=torch.bfloat16, device="cuda")

    def nvfp4(self, buf):
        d, s = self.data_bytes, self.scale_bytes
        return symmcomm.Nvfp4Tensor(buf[:d], buf[d:d + s], buf[d + s:d + s + 4].view(torch.float32))


class Step:
    """One way's decode step at one batch: the phases as callables on static buffers."""

    def __init__(self, way, ctx, tokens):
        self.way, self.ctx = way, ctx
        world, rank = ctx.world, ctx.rank
        self.capacity = tokens
        self.mine = tokens_of(rank, world, tokens)
        self.counts_host = [tokens_of(r, world, tokens) for r in range(world)]
        rows = world * self.capacity
        self.experts = ctx.experts_for(rows)
        g = torch.Generator(device="cuda").manual_seed(1000 * rank + tokens)
        self.x = torch.zeros(self.capacity, HIDDEN, dtype=torch.bfloat16, device="cuda")
        self.x[:self.mine] = torch.randn(self.mine, HIDDEN, generator=g, device="cuda").to(
            torch.bfloat16)
        # Which gathered rows are tokens: the compact layout's first sum(counts), or each
        # rank's first counts[r] rows of its capacity block.
        valid = torch.zeros(rows, dtype=torch.bfloat16, device="cuda")
        if way == "symmcomm device counts":
            valid[:sum(self.counts_host)] = 1
        else:
            for r, c in enumerate(self.counts_host):
                valid[r * self.capacity:r * self.capacity + c] = 1
        self.valid = valid
        self.plans = {}
        if way.startswith("symmcomm"):
            b = ctx.symm_buffers
            self.send, self.recv, self.y, self.out = b.view(world, self.capacity)
            self.dc = b.counts
            self.dc.count.fill_(self.mine)
        else:
            p = ctx.packed[way]
            self.packed = p
            self.y = p.y[:rows * HIDDEN]
            self.out = p.out[:self.capacity * HIDDEN]

    # -- phases ------------------------------------------------------------------------------
    def quantize(self):
        if self.way.startswith("symmcomm"):
            symmcomm.quantize_nvfp4(self.x.view(-1), self.send, compute_scale=False)
        else:
            symmcomm.quantize_nvfp4(self.x.view(-1), self.packed.nvfp4(self.packed.send),
                                    compute_scale=False)

    def dispatch(self):
        c = self.ctx
        if self.way == "symmcomm device counts":
            self.plans["dispatch"] = symmcomm.all_gatherv_device(c.comm, self.send, self.recv,
                                                                 self.dc, HIDDEN)
        elif self.way == "symmcomm padded":
            self.plans["dispatch"] = symmcomm.all_gather(c.comm, self.send, self.recv)
        else:
            dist.all_gather_into_tensor(self.packed.recv, self.packed.send)

    def experts_(self):
        e = self.experts
        if self.way.startswith("symmcomm"):
            # Every rank's global scale is the static one: one call dequantizes every row.
            symmcomm.dequantize_nvfp4(self.recv, e.tokens.view(-1))
        else:
            p = self.packed
            for r in range(self.ctx.world):
                part = p.nvfp4(p.recv[r * p.row:(r + 1) * p.row])
                symmcomm.dequantize_nvfp4(part, e.tokens[r * self.capacity:
                                                         (r + 1) * self.capacity].view(-1))
        e.run(self.valid, self.y.view(-1, HIDDEN))

    def combine(self):
        c = self.ctx
        if self.way == "symmcomm device counts":
            self.plans["combine"] = symmcomm.reduce_scatterv_device(c.comm, self.y, self.out,
                                                                    self.dc, HIDDEN)
        elif self.way == "symmcomm padded":
            self.plans["combine"] = symmcomm.reduce_scatter(c.comm, self.y, self.out)
        else:
            dist.reduce_scatter_tensor(self.out, self.y)

    def phase(self, name):
        return {"quantize": self.quantize, "dispatch": self.dispatch,
                "experts": self.experts_, "combine": self.combine}[name]

    def whole(self):
        for name in PHASES:
            self.phase(name)()


def sharing(rank, local_world):
    """How the ranks share the GPUs (symmcomm.share_gpus_if_needed, which sets it up), whether a
    CUDA MPS server runs their kernels at once, and NCCL_MAX_CTAS where set (scripts/gpu_round.sh
    caps NCCL's grids under MPS: every rank's NCCL kernel must be resident at once)."""
    text = symmcomm.share_gpus_if_needed(rank, local_world)
    if text != "one GPU per rank" and os.environ.get("CUDA_MPS_PIPE_DIRECTORY"):
        text += ", under CUDA MPS (the ranks' kernels run at once, not time-sliced)"
    if os.environ.get("NCCL_MAX_CTAS"):
        text += ", NCCL_MAX_CTAS=%s" % os.environ["NCCL_MAX_CTAS"]
    return text


GEMMS = {
    "grouped": "BF16 torch._grouped_mm over the routed rows, expert after expert (only the chosen "
               "experts' weights read; Hopper has no NVFP4 GEMM)",
    "bmm": "BF16 torch.bmm over the masked expert-major layout at capacity (every local expert's "
           "weights read; Hopper has no NVFP4 GEMM)"}


def expert_form(asked, gloo, world):
    """The expert stand-in's form every rank runs and its description: `asked`, or bmm where any
    rank cannot run torch._grouped_mm (the reason in the description)."""
    if asked != "grouped":
        return asked, GEMMS[asked]
    reasons = [None] * world
    dist.all_gather_object(reasons, expert_standin.grouped_unavailable(), group=gloo)
    why = next((r for r in reasons if r), None)
    if why is None:
        return "grouped", GEMMS["grouped"]
    return "bmm", GEMMS["bmm"] + "; --experts grouped asked, but " + why


class Context:
    """The communicators, buffers and experts of one process, made once for every batch."""

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
        capacity = max(args.tokens)
        n = capacity * HIDDEN
        need = (n // 2 + n // BLOCK) * (self.world + 1) + 2 * self.world * n * 2 + 2 * n + (8 << 20)
        self.pool = symmcomm.Pool(self.comm, initial_bytes=need, allow_growth=False)
        self.mempool = symmcomm.torch_mem_pool(self.pool)
        with torch.cuda.use_mem_pool(self.mempool):
            self.symm_buffers = Nvfp4Buffers(self.world, capacity)
        self.packed, self.unavailable = {}, {}
        self.capacity = capacity
        self.weights = expert_standin.Weights(expert_standin.DEEPSEEK_R1, self.rank, self.world)
        self._experts = {}
        self.experts_form, self.gemm = expert_form(args.experts, self.gloo, self.world)

    def torch_buffers(self, capacity):
        """torch.distributed's buffers at this batch: plain, and from PyTorch's NCCL symmetric
        pool where it can be made."""
        self.packed = {"torch.distributed padded": Packed(self.world, capacity)}
        if "torch.distributed symmetric" in self.unavailable:
            return
        try:
            import torch.distributed._symmetric_memory as symm_mem
            if not hasattr(self, "symm_pool"):
                backend = dist.group.WORLD._get_backend(torch.device("cuda", self.device))
                self.symm_pool = torch.cuda.MemPool(
                    symm_mem.get_mempool_allocator(torch.device("cuda", self.device)))
                backend.register_mem_pool(self.symm_pool, symm=True)
            with torch.cuda.use_mem_pool(self.symm_pool):
                self.packed["torch.distributed symmetric"] = Packed(self.world, capacity)
        except Exception as e:  # noqa: BLE001 (the table says why the way is missing)
            self.unavailable["torch.distributed symmetric"] = "%s: %s" % (type(e).__name__,
                                                                          str(e)[:200])

    def experts_for(self, rows):
        if rows not in self._experts:
            self._experts.clear()
            self._experts[rows] = expert_standin.Experts(self.weights, rows, self.experts_form)
        return self._experts[rows]


def captured(fn):
    """A CUDA graph of `fn`, replayed once, after two eager runs on a side stream (plans, checks,
    NCCL's first use)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def timed(ctx, fn, args):
    """Per-replay times (us) of a graph of `fn`: args.runs runs of args.replays replays."""
    graph = captured(fn)
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(args.runs):
        dist.barrier(group=ctx.gloo)
        torch.cuda.synchronize()
        start.record()
        for _ in range(args.replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / args.replays)
    del graph
    return times


def traced(ctx, fn, path, replays=20, every_rank=False):
    """Every rank replays a graph of `fn` `replays` times, rank 0 under torch.profiler (CUDA
    activity; with `every_rank`, every rank, each writing `path` with "-r<rank>" before ".json"
    past rank 0); rank 0 writes the Chrome trace to `path` with the replay count and returns where
    the step's time went (trace_summary.summarize), or why it has no trace; other ranks return
    None. Every rank replays whatever the profiler does: its peers' collectives wait for them."""
    graph = captured(fn)
    profiler, why = None, None
    if ctx.rank == 0 or every_rank:
        try:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            profiler.start()
        except Exception as e:  # noqa: BLE001 (the trace's row says why it is missing)
            profiler, why = None, "%s: %s" % (type(e).__name__, str(e)[:200])
    dist.barrier(group=ctx.gloo)
    torch.cuda.synchronize()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    del graph
    if ctx.rank != 0:
        if profiler is not None:
            try:
                profiler.stop()
                write_trace(profiler, path[:-len(".json")] + "-r%d.json" % ctx.rank, replays)
            except Exception as e:  # noqa: BLE001 (rank 0's table is what reports)
                print("rank %d: no trace: %s: %s" % (ctx.rank, type(e).__name__, e), flush=True)
        return None
    if profiler is None:
        return {"error": why}
    try:
        profiler.stop()
        return trace_summary.summarize(write_trace(profiler, path, replays), replays)
    except Exception as e:  # noqa: BLE001
        return {"error": "%s: %s" % (type(e).__name__, str(e)[:200])}


def write_trace(profiler, path, replays):
    """The stopped profiler's Chrome trace written to `path` with its replay count
    ("symmcomm_replays", which trace_summary.py reads); returns the trace."""
    profiler.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    trace["symmcomm_replays"] = replays
    with open(path, "w") as f:
        json.dump(trace, f)
    return trace


def measure(ctx, args):
    results = []
    for tokens in args.tokens:
        ctx.torch_buffers(tokens)
        reference = None
        for way in WAYS:
            if way in ctx.unavailable:
                continue
            step = Step(way, ctx, tokens)
            row = {"ranks": ctx.world, "tokens_per_rank": tokens, "counts": step.counts_host,
                   "way": way, "expert_rows": step.experts.rows, "expert_cap": step.experts.cap}
            try:
                row["step_us"] = timed(ctx, step.whole, args)
                for name in PHASES:
                    row[name + "_us"] = timed(ctx, step.phase(name), args)
            except Exception as e:  # noqa: BLE001 (a way that cannot run is reported, not fatal)
                ctx.unavailable[way] = "%s: %s" % (type(e).__name__, str(e)[:200])
                log(ctx.rank, "%s at %d tokens: %s" % (way, tokens, ctx.unavailable[way]))
                continue
            row["paths"] = {k: "%s (%s)" % (p.path, p.why) for k, p in step.plans.items()}
            row["dropped_pairs"] = int(step.experts.dropped.item())
            # This rank's combined tokens, against the first way's (same math, other orders).
            out = step.out.view(-1, HIDDEN)[:step.mine].float()
            if reference is None:
                reference = out.clone()
            row["vs_first_way_rel"] = float((out - reference).norm() / reference.norm().clamp(
                min=1e-30))
            step_med = statistics.median(row["step_us"])
            row["tokens_per_s"] = sum(step.counts_host) / (step_med * 1e-6)
            comm = statistics.median(row["dispatch_us"]) + statistics.median(row["combine_us"])
            row["comm_share"] = comm / step_med
            if tokens == args.trace:
                row["trace"] = traced(ctx, step.whole, "%s-trace-%s.json" % (
                    args.out, way.replace(" ", "-").replace(".", "")),
                    every_rank=args.trace_every_rank)
            results.append(row)
            log(ctx.rank, "%d ranks, %d tokens/rank, %s: step %s us, paths %s, dropped %d"
                % (ctx.world, tokens, way, span(row["step_us"]), row["paths"],
                   row["dropped_pairs"]))
            del step
    return results


def stacks_on_sigusr1():
    """SIGUSR1 prints every thread's Python stack to stderr: what a rank was doing when
    scripts/common.sh's symmcomm_watch_ranks found the run silent."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def parse_args(doc, step=False):
    """The step benchmarks' arguments (OUT prefix, --tokens, --runs >= 5, --replays; with `step`,
    the expert stand-in's form and the batch to trace)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    if step:
        parser.add_argument("--experts", choices=expert_standin.FORMS, default="grouped",
                            help="the expert FFN's form (bench/python/expert_standin.py)")
        parser.add_argument("--trace", type=int, default=0, metavar="TOKENS",
                            help="also trace each way's whole step at this batch (rank 0, "
                                 "torch.profiler): OUT-trace-<way>.json, OUT-trace.md")
        parser.add_argument("--trace-every-rank", action="store_true",
                            help="with --trace, every rank writes its trace too "
                                 "(OUT-trace-<way>-r<rank>.json past rank 0)")
    parser.add_argument("out", help="output prefix (.json and .md are written)")
    parser.add_argument("--tokens", default="1,4,16,64,256",
                        type=lambda s: [int(v) for v in s.split(",")])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--replays", type=int, default=10)
    args = parser.parse_args()
    if min(args.tokens) < 1 or args.runs < 5 or args.replays < 1:
        parser.error("--tokens must be >= 1 each, --runs >= 5, --replays >= 1")
    return args


def save(prefix, ctx, results, text, **extra):
    """Rank 0 writes prefix.json (the machine, versions, command and every run) and prefix.md
    (`text`), and prints the table."""
    meta = {"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(),
            "gpus": torch.cuda.device_count(), "ranks": ctx.world, "sharing": ctx.sharing,
            "nccl": symmcomm.nccl_version(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d"), **extra}
    with open(prefix + ".json", "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(prefix + ".md", "w") as f:
        f.write(text + "\n")
    print(text, flush=True)


def main():
    args = parse_args(__doc__, step=True)
    stacks_on_sigusr1()
    ctx = Context(args)
    log(ctx.rank, "moe_step: %d ranks (%s), NCCL %s, PyTorch %s, %s; tokens per rank %s; "
        "experts: %s" % (ctx.world, ctx.sharing, symmcomm.nccl_version(), torch.__version__,
                         torch.cuda.get_device_name(), args.tokens, ctx.gemm))
    results = measure(ctx, args)
    if ctx.rank == 0:
        text = step_table(results, ctx.unavailable, ctx.world, ctx.sharing, ctx.gemm)
        save(args.out, ctx, results, text, unavailable=ctx.unavailable, gemm=ctx.gemm)
        traced_rows = [r for r in results if r.get("trace")]
        if traced_rows:
            text = "Rank 0's GPU work per replay of the whole step at %d tokens/rank, us " \
                   "(bench/python/trace_summary.py):\n\n%s\n" % (args.trace, trace_summary.table(
                       [(r["way"], r["trace"]) for r in traced_rows if "error" not in r["trace"]]))
            text += "".join("\n%s: no trace (%s)\n" % (r["way"], r["trace"]["error"])
                            for r in traced_rows if "error" in r["trace"])
            with open(args.out + "-trace.md", "w") as f:
                f.write(text)
            print(text, flush=True)
    dist.barrier(group=ctx.gloo)
    # Every pool's tensors before the pool, the pools before their communicators: PyTorch's
    # symmetric MemPool deregisters its windows on the process group's NCCL communicator, which
    # destroy_process_group aborts (its watchdog then terminated every process).
    del ctx.symm_buffers, ctx.mempool
    ctx.packed.clear()
    ctx._experts.clear()
    torch.cuda.synchronize()
    if hasattr(ctx, "symm_pool"):
        del ctx.symm_pool
    torch.cuda.empty_cache()
    ctx.pool.destroy()
    ctx.comm.release()
    dist.barrier(group=ctx.gloo)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
