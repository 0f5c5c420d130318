"""MoE dispatch and combine by expert: where every routed token lands, on the device.

Expert parallelism over `world` ranks: rank r holds the L = num_experts / world experts
[r * L, (r + 1) * L). Each rank has up to `max_tokens_per_rank` tokens, `num_tokens` of them
real, each routed to up to `top_k` experts (`topk_idx`, -1 = none). Dispatch puts every routed
(token, expert) pair on the expert's rank in the **masked expert-major layout** the grouped GEMMs
read: data [L, capacity, hidden / 2], NVFP4 block scales per expert in the 128 x 4 swizzled
layout (symmcomm.swizzled_scale_bytes(capacity, hidden / 16) bytes each; padding rows zero) and
`expert_count[L]`. Rows of one expert are in a fixed order: by source rank, then token, then
top-k slot; the rows past `capacity` are dropped and counted (`overflow`). Combine weights each
expert's output row by its top-k weight and sums a token's rows in fp32.

This module holds the placement (the part that decides every row's place) twice: as the
specification, `reference_placement` (plain Python loops over host lists), and as
`placement` / `dispatch_rows` / `combine_rows` (PyTorch tensor operations of static shapes, no
host synchronisation: they run on any device and inside CUDA graphs). The tests compare the two
on random, skewed and bad routings. MoeGroup (_moe_group.py) moves the rows between ranks with
symmcomm's collectives and these (docs/moe.md).

Bad input loses nothing: an expert id outside -1..num_experts-1 or a num_tokens outside
0..max_tokens_per_rank is not placed (its pair, or the tokens past the maximum) and raises a bit
of `error` (ERROR_EXPERT_ID, ERROR_NUM_TOKENS), which the host reads when it chooses.
"""
from . import shapes
from ._core import _fail, _int_arg

__all__ = ["MoeConfig", "WIRES", "FP8_BLOCK", "fp8_scales", "reference_placement", "placement", "dispatch_rows", "combine_rows",
           "ERROR_EXPERT_ID", "ERROR_NUM_TOKENS", "ERROR_GLOBAL_SCALE", "MoeGroup", "MoeDispatch",
           "check_dispatch", "pack_routing", "unpack_routing", "routing_words", "place_gathered",
           "combine_partials"]

#: error bit: a top-k entry named an expert outside -1..num_experts-1 (the pair is not placed).
ERROR_EXPERT_ID = 1
#: error bit: a rank's num_tokens was outside 0..max_tokens_per_rank (its tokens past the
#: maximum are ignored; a negative count places none).
ERROR_NUM_TOKENS = 2

_BLOCK = shapes.NVFP4_BLOCK
#: Elements per scale on the fp8e4m3 wire (DeepSeek's per-128 activation scaling).
FP8_BLOCK = 128
#: The wire formats a MoeConfig takes.
WIRES = ("nvfp4", "fp8e4m3", "bf16")


class MoeConfig:
    """One MoE layer's expert-parallel shape, the same on every rank.

    num_experts: experts in the layer (a multiple of `world`); top_k: experts per token;
    hidden: elements per token (a multiple of 64: whole NVFP4 blocks, whole 4-column scale
    tiles); max_tokens_per_rank: the most tokens a rank dispatches in one call; world: ranks;
    capacity: rows per expert on its rank (default world * max_tokens_per_rank: no pair is ever
    dropped, since a token names an expert at most once); wire: the rows' format, "nvfp4"
    (packed codes and swizzled block scales, for NVFP4 grouped GEMMs), "fp8e4m3" (e4m3 codes
    and a float32 scale per 128 elements, column-major per expert: the layout DeepGEMM's masked
    FP8 grouped GEMM reads, see fp8_scales; hidden a multiple of 128; bf16 tokens quantized in
    the dispatch, no global scale) or "bf16" (rows as they are, for BF16 grouped GEMMs; the
    fp8e4m3 and bf16 wires on the library's paths only); combine_in_place: the
    combine reads the experts' outputs where the group holds them (MoeGroup.expert_out, where
    the GEMM may write them) instead of sending every row back first (the library's paths
    only)."""

    def __init__(self, num_experts, top_k, hidden, max_tokens_per_rank, world, capacity=None,
                 wire="nvfp4", combine_in_place=False):
        self.num_experts = _int_arg(num_experts, "num_experts", 1)
        self.top_k = _int_arg(top_k, "top_k", 1)
        self.hidden = _int_arg(hidden, "hidden", 64)
        self.max_tokens_per_rank = _int_arg(max_tokens_per_rank, "max_tokens_per_rank", 1)
        self.world = _int_arg(world, "world", 1)
        if num_experts % world:
            _fail("num_experts %d is not a multiple of world %d" % (num_experts, world))
        if top_k > num_experts:
            _fail("top_k %d is above num_experts %d" % (top_k, num_experts))
        if hidden % 64:
            _fail("hidden %d is not a multiple of 64 (whole NVFP4 blocks in whole 4-column "
                  "scale tiles)" % hidden)
        default = world * max_tokens_per_rank
        self.capacity = default if capacity is None else _int_arg(capacity, "capacity", 1)
        if wire not in WIRES:
            _fail("wire must be one of %s, got %r" % (", ".join('"%s"' % w for w in WIRES), wire))
        if wire == "fp8e4m3" and hidden % FP8_BLOCK:
            _fail("hidden %d is not a multiple of %d (one fp8e4m3 wire scale per %d elements)"
                  % (hidden, FP8_BLOCK, FP8_BLOCK))
        self.wire = wire
        if combine_in_place not in (False, True):
            _fail("combine_in_place must be a bool, got %r" % (combine_in_place,))
        self.combine_in_place = bool(combine_in_place)

    @property
    def local_experts(self):
        """L: the experts each rank holds."""
        return self.num_experts // self.world

    @property
    def scale_cols(self):
        """Scales per token: NVFP4 block scales (hidden / 16), fp8e4m3 scales (hidden / 128), or
        0 on a bf16 wire."""
        return {"nvfp4": self.hidden // _BLOCK, "fp8e4m3": self.hidden // FP8_BLOCK}.get(
            self.wire, 0)

    @property
    def scale_rows(self):
        """fp8e4m3 wire: rows of each expert's column-major scale matrix, capacity rounded up to
        4 (every column 16-byte aligned, as TMA loads need)."""
        return (self.capacity + 3) // 4 * 4

    @property
    def expert_scale_bytes(self):
        """Bytes of one expert's block scales (capacity rows, padding included; 0 on bf16)."""
        if self.wire == "fp8e4m3":
            return self.scale_cols * self.scale_rows * 4
        if self.wire == "bf16":
            return 0
        return shapes.swizzled_scale_bytes(self.capacity, self.scale_cols)

    def dispatch_shapes(self):
        """The receive tensors of a dispatch: name -> (shape, dtype name); a BF16 wire has no
        block scales. Scales are bytes (fp8_scales views an fp8e4m3 wire's as float32)."""
        L, cap, H = self.local_experts, self.capacity, self.hidden
        if self.wire == "bf16":
            return {"data": ((L, cap, H), "bfloat16"), "expert_count": ((L,), "int32")}
        row = H if self.wire == "fp8e4m3" else H // 2
        return {"data": ((L, cap, row), "uint8"),
                "block_scales": ((L, self.expert_scale_bytes), "uint8"),
                "expert_count": ((L,), "int32")}

    def __repr__(self):
        return ("MoeConfig(num_experts=%d, top_k=%d, hidden=%d, max_tokens_per_rank=%d, "
                "world=%d, capacity=%d, wire=%r)" % (self.num_experts, self.top_k, self.hidden,
                                                     self.max_tokens_per_rank, self.world,
                                                     self.capacity, self.wire))


def fp8_scales(config, block_scales):
    """An fp8e4m3 wire's dispatched scales (block_scales uint8 [L, expert_scale_bytes]) as
    float32 [L, capacity, hidden / 128] with MN-major strides (rows adjacent, each block's column
    16-byte aligned): the scale tensor DeepGEMM's m_grouped_fp8_gemm_nt_masked takes with the
    data viewed as float8_e4m3fn. A view, no copy."""
    if config.wire != "fp8e4m3":
        _fail("fp8_scales needs an fp8e4m3 wire; config.wire is %r" % (config.wire,))
    L, cols = config.local_experts, config.scale_cols
    if tuple(block_scales.shape) != (L, config.expert_scale_bytes):
        _fail("block_scales has shape %s; expected [%d, %d]"
              % (list(block_scales.shape), L, config.expert_scale_bytes))
    import torch
    columns = block_scales.view(torch.float32).view(L, cols, config.scale_rows)
    return columns.transpose(1, 2)[:, :config.capacity]


def _rank_arg(config, rank):
    _int_arg(rank, "rank")
    if rank >= config.world:
        _fail("rank %d is outside 0..%d" % (rank, config.world - 1))
    return rank


def reference_placement(config, rank, topk_idx, num_tokens):
    """The specification of where rows land on `rank`, in plain Python: `topk_idx[s]` is source
    rank s's list of max_tokens_per_rank lists of top_k ints, `num_tokens[s]` its token count.
    Returns {"rows": per local expert, the (source rank, token, top-k slot) of its rows in
    order; "expert_count"; "overflow" (pairs past capacity); "error" (bits)}."""
    _rank_arg(config, rank)
    L, first = config.local_experts, rank * config.local_experts
    rows = [[] for _ in range(L)]
    overflow = error = 0
    for src in range(config.world):
        n = num_tokens[src]
        if n < 0 or n > config.max_tokens_per_rank:
            error |= ERROR_NUM_TOKENS
            n = min(max(n, 0), config.max_tokens_per_rank)
        for t in range(max(n, 0)):
            for j, e in enumerate(topk_idx[src][t]):
                if e < -1 or e >= config.num_experts:
                    error |= ERROR_EXPERT_ID
                    continue
                if e == -1 or not first <= e < first + L:
                    continue
                if len(rows[e - first]) < config.capacity:
                    rows[e - first].append((src, t, j))
                else:
                    overflow += 1
    return {"rows": rows, "expert_count": [len(r) for r in rows], "overflow": overflow,
            "error": error}


def placement(config, rank, topk_idx, num_tokens):
    """Where every (source rank, token, top-k slot) pair lands on `rank`, as tensors of static
    shapes on topk_idx's device: topk_idx int [world, max_tokens_per_rank, top_k] (every rank's,
    gathered), num_tokens int [world]. Returns (slot, expert_count, overflow, error): slot int64
    [world * max_tokens_per_rank * top_k], local_expert * capacity + row for a placed pair and
    L * capacity (one past the last row) otherwise; expert_count int32 [L]; overflow and error
    int32 [1]."""
    import torch
    _rank_arg(config, rank)
    W, T, K = config.world, config.max_tokens_per_rank, config.top_k
    L, cap = config.local_experts, config.capacity
    if tuple(topk_idx.shape) != (W, T, K):
        _fail("topk_idx has shape %s; expected [world, max_tokens_per_rank, top_k] = [%d, %d, %d]"
              % (list(topk_idx.shape), W, T, K))
    if tuple(num_tokens.shape) != (W,):
        _fail("num_tokens has shape %s; expected [world] = [%d]" % (list(num_tokens.shape), W))
    device = topk_idx.device
    ids = topk_idx.to(torch.int64)
    counts = num_tokens.to(torch.int64)
    too_many = (counts > T) | (counts < 0)
    real = torch.arange(T, device=device).unsqueeze(0) < counts.clamp(0, T).unsqueeze(1)
    real = real.unsqueeze(-1).expand(W, T, K)
    bad_id = real & ((ids < -1) | (ids >= config.num_experts))
    local = ids - rank * L
    mine = real & (ids >= 0) & (local >= 0) & (local < L)
    local = local.clamp(0, L - 1).reshape(-1)
    mine = mine.reshape(-1)
    # A pair's row in its expert: how many earlier pairs (in source, token, slot order) went to
    # the same expert.
    onehot = torch.nn.functional.one_hot(local, L) * mine.unsqueeze(1)
    before = onehot.cumsum(0) - onehot
    row = before.gather(1, local.unsqueeze(1)).squeeze(1)
    placed = mine & (row < cap)
    slot = torch.where(placed, local * cap + row, torch.full_like(row, L * cap))
    expert_count = onehot.sum(0).clamp(max=cap).to(torch.int32)
    overflow = (mine & ~placed).sum().reshape(1).to(torch.int32)
    error = (bad_id.any().to(torch.int32) * ERROR_EXPERT_ID
             + too_many.any().to(torch.int32) * ERROR_NUM_TOKENS).reshape(1)
    return slot, expert_count, overflow, error


def _swizzled_offsets(config, slot, device):
    """Byte offsets, in the [L, expert_scale_bytes] scale tensor, of every pair's scale columns
    ([pairs, scale_cols]; a pair not placed points one past the end)."""
    import torch
    cap, cols = config.capacity, config.scale_cols
    expert = slot // cap
    row = slot % cap
    col = torch.arange(cols, device=device)
    tiles_per_row = (cols + 3) // 4
    tile = (row // 128).unsqueeze(1) * tiles_per_row + (col // 4).unsqueeze(0)
    i, j = (row % 128).unsqueeze(1), (col % 4).unsqueeze(0)
    within = tile * 512 + (i % 32) * 16 + (i // 32) * 4 + j
    offsets = expert.unsqueeze(1) * config.expert_scale_bytes + within
    end = config.local_experts * config.expert_scale_bytes
    return torch.where((slot < config.local_experts * cap).unsqueeze(1), offsets,
                       torch.full_like(offsets, end))


def dispatch_rows(config, slot, data, block_scales):
    """The masked expert-major tensors of this rank from every rank's tokens: data uint8
    [world * max_tokens_per_rank, hidden / 2] and block_scales uint8 (or float8_e4m3fn)
    [world * max_tokens_per_rank, hidden / 16], in gathered order, and `slot` from placement().
    Returns (data [L, capacity, hidden / 2], block_scales [L, expert_scale_bytes] swizzled),
    rows and scales past each expert's count zero."""
    import torch
    W, T, K = config.world, config.max_tokens_per_rank, config.top_k
    L, cap = config.local_experts, config.capacity
    rows_in = W * T
    if tuple(data.shape) != (rows_in, config.hidden // 2):
        _fail("data has shape %s; expected [%d, %d]" % (list(data.shape), rows_in,
                                                        config.hidden // 2))
    if tuple(block_scales.shape) != (rows_in, config.scale_cols):
        _fail("block_scales has shape %s; expected [%d, %d]" % (list(block_scales.shape), rows_in,
                                                                config.scale_cols))
    source_row = torch.arange(rows_in, device=data.device).repeat_interleave(K)
    out = torch.zeros(L * cap + 1, config.hidden // 2, dtype=data.dtype, device=data.device)
    out.index_copy_(0, slot, data[source_row])  # unplaced pairs all write the row past the end
    scales = block_scales.view(torch.uint8) if block_scales.element_size() == 1 else block_scales
    flat = torch.zeros(L * config.expert_scale_bytes + 1, dtype=torch.uint8, device=data.device)
    offsets = _swizzled_offsets(config, slot, data.device)
    flat.index_copy_(0, offsets.reshape(-1), scales[source_row].reshape(-1))
    return (out[:L * cap].view(L, cap, config.hidden // 2),
            flat[:L * config.expert_scale_bytes].view(L, config.expert_scale_bytes))


def combine_rows(config, slot, expert_out, topk_weights):
    """Every gathered token's weighted sum over this rank's experts, in fp32: expert_out
    [L, capacity, hidden] (the experts' outputs in the dispatch layout), topk_weights
    [world * max_tokens_per_rank, top_k] in gathered order, `slot` from placement(). Returns
    float32 [world * max_tokens_per_rank, hidden] (zero for tokens with no expert here); summed
    over the ranks (a reduce-scatter in fp32) it is each token's combined output."""
    import torch
    W, T, K = config.world, config.max_tokens_per_rank, config.top_k
    L, cap, H = config.local_experts, config.capacity, config.hidden
    if tuple(expert_out.shape) != (L, cap, H):
        _fail("expert_out has shape %s; expected [L, capacity, hidden] = [%d, %d, %d]"
              % (list(expert_out.shape), L, cap, H))
    if tuple(topk_weights.shape) != (W * T, K):
        _fail("topk_weights has shape %s; expected [%d, %d]" % (list(topk_weights.shape), W * T, K))
    rows = torch.cat([expert_out.reshape(L * cap, H).float(),
                      torch.zeros(1, H, dtype=torch.float32, device=expert_out.device)])
    weighted = rows[slot] * topk_weights.reshape(-1, 1).float()  # row past the end: zero
    return weighted.view(W * T, K, H).sum(1)


# After the placement: the group builds on it (and imports this module).
from ._moe_group import (ERROR_GLOBAL_SCALE, MoeDispatch, MoeGroup, check_dispatch,  # noqa: E402
                         combine_partials, pack_routing, place_gathered, routing_words,
                         unpack_routing)
