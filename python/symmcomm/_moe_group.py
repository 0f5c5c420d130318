"""MoE dispatch and combine over a communicator (private: symmcomm.moe re-exports MoeGroup).

One API, the library's group by default: MoeGroup drives the C ABI's MoE group (_moe_native.py:
symmcomm::MoeGroup), which takes its LSA kernels where they can run (an LSA team spanning the
communicator: NCCL 2.28+ symmetric memory, or 2.30's several ranks per GPU) - each routed row
written once, straight into its expert's rank in the masked layout, each expert output sent back
to its token's rank - and its fallback over NCCL elsewhere. path="python" takes this package's
own fallback, built from symmcomm's collectives and the placement of symmcomm.moe: dispatch
all-gathers every rank's NVFP4 tokens and routing (two all-gathers, the routing packed into
one), then each rank places the pairs routed to its experts (placement, dispatch_rows); combine
weights and sums each token's rows held here in fp32 (combine_rows) and reduce-scatters those
partial sums in fp32, rounding once to bf16. None synchronises with the host: a dispatch and a
combine can be captured in a CUDA graph and replayed with new routing. MoeGroup.path and
MoeGroup.reason say which path runs and why.

The "python" path's steps between the collectives are module functions (pack_routing,
unpack_routing, place_gathered, combine_partials) so that a CPU test can run a whole world of
ranks in one process, standing in for the collectives with concatenation and sums.
"""
import collections

from ._core import _fail
from ._tensors import Nvfp4Tensor, _dtype_name, _is_tensor
from . import moe as _moe
from . import _moe_native

#: error bit: the ranks' NVFP4 global scales differ (a grouped GEMM applies one alpha per
#: expert; MoeGroup quantizes with one static scale). The rows are placed all the same.
ERROR_GLOBAL_SCALE = 4

#: What a dispatch leaves on this rank, all on the device: `data` uint8 [L, capacity, hidden/2]
#: and `block_scales` uint8 [L, expert_scale_bytes] (swizzled 128 x 4 per expert) in the masked
#: expert-major layout (an fp8e4m3 wire: data uint8 [L, capacity, hidden] e4m3 codes, scales
#: column-major per expert, symmcomm.moe.fp8_scales; a bf16 wire: data bf16, no scales) (rows and scales past an expert's count: zero on path="python"; on the
#: library's paths zero when the group is made, then as an earlier dispatch left them - there
#: the tensors are views of the group's buffers, the same for every dispatch), `expert_count` int32 [L], `global_scale` float32 [1] (rank 0's, the one
#: alpha of every expert), `overflow` int32 [1] (pairs past capacity), `error` int32 [1] (bits
#: ERROR_EXPERT_ID, ERROR_NUM_TOKENS, ERROR_GLOBAL_SCALE); `slot` and `weights` are what the
#: fallback's combine needs (each gathered pair's place here and its top-k weight; None on the
#: LSA path, whose group keeps them).
MoeDispatch = collections.namedtuple(
    "MoeDispatch", ["data", "block_scales", "expert_count", "global_scale", "overflow", "error",
                    "slot", "weights"])

_ERRORS = ((_moe.ERROR_EXPERT_ID, "topk_idx", "an expert id outside -1..num_experts-1 on some "
            "rank (that pair was not placed)"),
           (_moe.ERROR_NUM_TOKENS, "num_tokens", "outside 0..max_tokens_per_rank on some rank "
            "(its tokens past the maximum were not placed)"),
           (ERROR_GLOBAL_SCALE, "x.global_scale", "not the same on every rank (rows of one expert "
            "need one NVFP4 global scale; quantize with one static scale per layer)"))


def routing_words(config):
    """int32 words of one rank's packed routing: topk_idx, topk_weights' bits, num_tokens."""
    return 2 * config.max_tokens_per_rank * config.top_k + 1


def _check_routing(config, topk_idx, topk_weights, num_tokens):
    T, K = config.max_tokens_per_rank, config.top_k
    _check_tensor(topk_idx, "topk_idx", (T, K), ("int32",))
    _check_tensor(topk_weights, "topk_weights", (T, K), ("float32",))
    _check_tensor(num_tokens, "num_tokens", (1,), ("int32",))
    for t, name in ((topk_idx, "topk_idx"), (topk_weights, "topk_weights"),
                    (num_tokens, "num_tokens")):
        if not t.is_contiguous():
            _fail("%s must be contiguous" % name)


def pack_routing(config, topk_idx, topk_weights, num_tokens):
    """One rank's routing as one int32 tensor of routing_words(config) (one all-gather moves
    it): topk_idx int32 [T, top_k], topk_weights float32 [T, top_k] (its bits), num_tokens int32
    [1], T = max_tokens_per_rank."""
    import torch
    _check_routing(config, topk_idx, topk_weights, num_tokens)
    return torch.cat([topk_idx.reshape(-1), topk_weights.reshape(-1).view(torch.int32),
                      num_tokens.reshape(-1)])


def unpack_routing(config, gathered):
    """Every rank's routing from the gathered words (world x routing_words, rank-major): topk_idx
    int32 [world, T, top_k], weights float32 [world * T, top_k], num_tokens int32 [world]."""
    import torch
    W, T, K = config.world, config.max_tokens_per_rank, config.top_k
    words = gathered.view(W, routing_words(config))
    idx = words[:, :T * K].reshape(W, T, K)
    weights = words[:, T * K:2 * T * K].contiguous().view(torch.float32).reshape(W * T, K)
    return idx, weights, words[:, 2 * T * K].contiguous()


def place_gathered(config, rank, data, block_scales, global_scales, routing):
    """The dispatch on `rank` from everything gathered: data uint8 [world * T, hidden / 2],
    block_scales [world * T, hidden / 16] (linear, rank-major), global_scales float32 [world],
    routing as all-gathered pack_routing words. Returns the MoeDispatch."""
    import torch
    idx, weights, num_tokens = unpack_routing(config, routing)
    slot, expert_count, overflow, error = _moe.placement(config, rank, idx, num_tokens)
    rows = config.world * config.max_tokens_per_rank
    out, scales = _moe.dispatch_rows(config, slot, data.view(torch.uint8).reshape(rows, -1),
                                     block_scales.reshape(rows, -1))
    g = global_scales.reshape(-1)
    mismatch = (g != g[:1]).any().to(torch.int32) * ERROR_GLOBAL_SCALE
    return MoeDispatch(out, scales, expert_count, g[:1].clone(), overflow,
                       error | mismatch.reshape(1), slot, weights)


def combine_partials(config, dispatch, expert_out):
    """This rank's fp32 share of every gathered token's combined output: [world * T, hidden],
    its experts' rows weighted and summed; summed over the ranks it is the combine."""
    return _moe.combine_rows(config, dispatch.slot, expert_out, dispatch.weights)


def check_dispatch(dispatch):
    """Raises symmcomm.Error naming the argument of every error bit a dispatch set (reads the
    device's error word, so it waits for the dispatch: call it where a host synchronisation is
    acceptable, e.g. after a step). Returns the pairs dropped past capacity (dispatch.overflow)."""
    bits = int(dispatch.error.item())
    problems = ["%s: %s" % (name, what) for bit, name, what in _ERRORS if bits & bit]
    if problems:
        _fail("MoE dispatch: " + "; ".join(problems))
    return int(dispatch.overflow.item())


def _check_tensor(t, name, shape, dtypes):
    if not _is_tensor(t):
        _fail("%s must be a tensor, got %s" % (name, type(t).__name__))
    if tuple(t.shape) != tuple(shape):
        _fail("%s has shape %s; expected %s" % (name, list(t.shape), list(shape)))
    if _dtype_name(t) not in dtypes:
        _fail("%s has dtype %s; expected %s" % (name, _dtype_name(t), " or ".join(dtypes)))


_PATHS = ("auto", "lsa", "fallback", "python")


class MoeGroup:
    """Expert-parallel dispatch and combine of one MoE layer shape (a symmcomm.moe.MoeConfig
    with world = comm.size) over `comm`, on every rank alike.

    `global_scale`: a float32 device tensor of 1 element, the layer's static NVFP4 global scale,
    the same on every rank; needed to dispatch bf16 tokens (quantized with it), optional for
    tokens already NVFP4 (then each rank's own is checked equal to rank 0's on the device:
    ERROR_GLOBAL_SCALE).

    `path`: "auto" (the library's group: its LSA kernels where they can run, else its fallback
    over NCCL), "lsa" (refused, saying why, where it cannot run), "fallback" (the library's
    fallback) or "python" (this package's own fallback, built from its collectives and the
    placement of symmcomm.moe). The library's group owns its buffers (on the LSA path one
    symmetric window per rank), made collectively here: release them with destroy(), on every
    rank; its dispatch tensors are views of them, the same for every dispatch. The "python"
    path allocates per call from PyTorch's allocator."""

    def __init__(self, comm, config, global_scale=None, path="auto", stream=None):
        rank, size, device, _ = comm.info()
        if not isinstance(config, _moe.MoeConfig):
            _fail("config must be a symmcomm.moe.MoeConfig, got %s" % type(config).__name__)
        if config.world != size:
            _fail("config.world %d is not comm.size %d" % (config.world, size))
        if global_scale is not None:
            _check_tensor(global_scale, "global_scale", (1,), ("float32",))
        if path not in _PATHS:
            _fail("path must be one of %s, got %r" % (", ".join('"%s"' % p for p in _PATHS),
                                                     path))
        if path == "python" and config.combine_in_place:
            _fail("path=\"python\" sends partial sums back; config.combine_in_place needs the "
                  "library's paths")
        if path == "python" and config.wire != "nvfp4":
            _fail("path=\"python\" moves NVFP4 rows only; config.wire is %r (take the library's "
                  "paths)" % (config.wire,))
        self.comm, self.config, self.rank = comm, config, rank
        self.global_scale = global_scale
        self.plans = {}
        self._native = None
        if path != "python":
            self._native = _moe_native.NativeGroup(comm, config, device, stream, path)

    @property
    def expert_out(self):
        """bf16 [L, capacity, hidden], where the experts' GEMM may write its outputs for a
        combine that reads them in place (config.combine_in_place; else None)."""
        return self._native.expert_out if self._native is not None else None

    @property
    def path(self):
        """The path dispatch and combine take: "lsa", "fallback" (the library's) or "python"."""
        return self._native.path if self._native is not None else "python"

    @property
    def reason(self):
        """Which path dispatch and combine take, and why."""
        if self._native is not None:
            return self._native.reason()
        return ("python: every rank's tokens and routing all-gathered (%s), placed on each "
                "expert's rank, partial sums reduce-scattered in fp32 (%s); path=\"python\" was "
                "asked for" % (self.plans["dispatch"].path if "dispatch" in self.plans else "not run",
                               self.plans["combine"].path if "combine" in self.plans else "not run"))

    def destroy(self):
        """Releases the library group's buffers (collective: on every rank); nothing on the
        "python" path. Its dispatch tensors must not be used after it; the names
        symmcomm.ops.register_moe_group gave it are forgotten first."""
        if self._native is not None:
            import sys
            ops = sys.modules.get("symmcomm.ops")  # its operators must not reach a freed group
            if ops is not None:
                ops._forget_moe_group(self)
            self._native.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def _check_tokens(self, x):
        """x's shapes and dtypes: an Nvfp4Tensor or bf16 of max_tokens_per_rank rows (bf16
        needs the group's static global scale)."""
        c = self.config
        T, H = c.max_tokens_per_rank, c.hidden
        if isinstance(x, Nvfp4Tensor) and c.wire != "nvfp4":
            _fail("x is an Nvfp4Tensor but config.wire is \"%s\": pass bf16 tokens" % c.wire)
        if isinstance(x, Nvfp4Tensor):
            _check_tensor(x.data, "x.data", (T, H // 2), ("uint8", "float4_e2m1fn_x2"))
            _check_tensor(x.block_scales, "x.block_scales", (T, H // 16),
                          ("uint8", "float8_e4m3fn"))
            _check_tensor(x.global_scale, "x.global_scale", (1,), ("float32",))
            return
        _check_tensor(x, "x", (T, H), ("bfloat16",))
        if self.global_scale is None and c.wire == "nvfp4":
            _fail("x is bf16: the group needs its static global_scale to quantize it (one NVFP4 "
                  "alpha per expert); pass MoeGroup(..., global_scale=...) or NVFP4 tokens")

    def _quantized(self, x, stream):
        """x as an Nvfp4Tensor of max_tokens_per_rank rows."""
        import torch
        from ._collectives import quantize_nvfp4
        c = self.config
        T, H = c.max_tokens_per_rank, c.hidden
        self._check_tokens(x)
        if isinstance(x, Nvfp4Tensor):
            return x
        q = Nvfp4Tensor(torch.empty(T, H // 2, dtype=torch.uint8, device=x.device),
                        torch.empty(T, H // 16, dtype=torch.uint8, device=x.device),
                        self.global_scale)
        quantize_nvfp4(x.reshape(-1), Nvfp4Tensor(q.data.reshape(-1), q.block_scales.reshape(-1),
                                                 q.global_scale),
                       compute_scale=False, stream=stream)
        return q

    def dispatch(self, x, topk_idx, topk_weights, num_tokens, stream=None):
        """Sends every token's row to the ranks of its top-k experts: x bf16 [T, hidden] or an
        Nvfp4Tensor (data [T, hidden/2], block_scales [T, hidden/16], global_scale [1]),
        topk_idx int32 [T, top_k] (-1: none), topk_weights float32 [T, top_k], num_tokens int32
        [1] on the device (rows past it are ignored); T = max_tokens_per_rank. Every step runs
        on `stream` (None: PyTorch's current stream). Returns the MoeDispatch of this rank's
        experts."""
        with _on(stream, getattr(topk_idx, "device", None)):
            return self._dispatch(x, topk_idx, topk_weights, num_tokens, stream)

    def _dispatch(self, x, topk_idx, topk_weights, num_tokens, stream):
        import torch
        from ._collectives import all_gather
        c = self.config
        if self._native is not None:
            _check_routing(c, topk_idx, topk_weights, num_tokens)
            self._check_tokens(x)  # bf16 is quantized inside the dispatch
            self._native.dispatch(x, self.global_scale, topk_idx, topk_weights, num_tokens,
                                  stream)
            n = self._native
            return MoeDispatch(n.data, n.block_scales, n.expert_count, n.global_scale,
                               n.overflow, n.error, None, None)
        routing = pack_routing(c, topk_idx, topk_weights, num_tokens)  # checks the routing
        q = self._quantized(x, stream)
        W, T, H = c.world, c.max_tokens_per_rank, c.hidden
        dev = topk_idx.device
        gathered = Nvfp4Tensor(torch.empty(W * T * H // 2, dtype=torch.uint8, device=dev),
                               torch.empty(W * T * H // 16, dtype=torch.uint8, device=dev),
                               torch.empty(W, dtype=torch.float32, device=dev))
        words = torch.empty(W * routing.numel(), dtype=torch.int32, device=dev)
        # The routing's words move as bf16 pairs: an all-gather copies bytes.
        self.plans["routing"] = all_gather(self.comm, routing.view(torch.bfloat16),
                                           words.view(torch.bfloat16), stream=stream)
        self.plans["dispatch"] = all_gather(
            self.comm, Nvfp4Tensor(q.data.reshape(-1).view(torch.uint8),
                                   q.block_scales.reshape(-1).view(torch.uint8), q.global_scale),
            gathered, stream=stream)
        return place_gathered(c, self.rank, gathered.data, gathered.block_scales,
                              gathered.global_scale, words)

    def combine(self, expert_out, dispatch, stream=None):
        """Each of this rank's tokens' combined output, bf16 [T, hidden] (the rows past the
        dispatch's num_tokens: zero on path="python", unspecified on the library's paths, which
        write only the tokens dispatched): the outputs of its top-k experts (expert_out bf16 or float32 [L, capacity, hidden] on every rank, in the
        dispatch's layout) weighted by topk_weights and summed in fp32, rounded once (the LSA
        path sends bf16 rows back: float32 outputs are rounded to bf16 first there). Runs on
        `stream` as dispatch does."""
        import torch
        from ._collectives import reduce_scatter
        c = self.config
        if not isinstance(dispatch, MoeDispatch):
            _fail("dispatch must be what MoeGroup.dispatch returned, got %s"
                  % type(dispatch).__name__)
        _check_tensor(expert_out, "expert_out", (c.local_experts, c.capacity, c.hidden),
                      ("bfloat16", "float32"))
        with _on(stream, expert_out.device):
            if self._native is not None:
                out = torch.empty(c.max_tokens_per_rank, c.hidden, dtype=torch.bfloat16,
                                  device=expert_out.device)
                self._native.combine(expert_out.to(torch.bfloat16), out, stream)
                return out
            partial = combine_partials(c, dispatch, expert_out)
            mine = torch.empty(c.max_tokens_per_rank, c.hidden, dtype=torch.float32,
                               device=expert_out.device)
            self.plans["combine"] = reduce_scatter(self.comm, partial.reshape(-1),
                                                   mine.reshape(-1), stream=stream)
            return mine.to(torch.bfloat16)

    def check(self, dispatch):
        """check_dispatch(dispatch)."""
        return check_dispatch(dispatch)


class _on:
    """Runs PyTorch's work of a block on `stream` (a torch.cuda.Stream, a raw handle or None:
    the current stream), so that it is ordered with the collectives' work on that stream."""

    def __init__(self, stream, device):
        self.ctx = None
        if stream is not None and getattr(device, "type", "cpu") == "cuda":
            import torch
            if not isinstance(stream, torch.cuda.Stream):
                stream = torch.cuda.ExternalStream(int(stream), device=device)
            self.ctx = torch.cuda.stream(stream)

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
