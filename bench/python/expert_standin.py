"""The decode step's experts (bench/python/moe_step.py): DeepSeek-V3's group-limited routing on the
device, then each routed row through its expert's FFN (H -> I -> H, SiLU) in BF16 - the stand-in
for the NVFP4 grouped GEMM that Hopper lacks - and the rows weighted back into token order.

Two forms of the FFN, the same arithmetic per row:
  "grouped": the routed rows packed expert after expert, then torch._grouped_mm with the experts'
      row offsets on the device (PyTorch >= 2.8). An expert no row chose is a group of no rows:
      its weights are not read, as in an engine's grouped GEMM at decode.
  "bmm": the masked expert-major layout [L, cap, H] through torch.bmm at capacity: every local
      expert's weights are read whatever its load (the stand-in's first form).
Both keep at most `cap` rows per expert (2x the mean load, at least 8), as the masked layout
holds, drop the rest and count them. Plain PyTorch on any device, CUDA-graph capturable (no host
sync); tests pass their own grouped matmul (tests/unit/bench/test_expert_standin.py).
"""
import collections

import torch
import torch.nn.functional as F

Shape = collections.namedtuple("Shape", "hidden experts top_k groups top_groups intermediate")
DEEPSEEK_R1 = Shape(hidden=7168, experts=256, top_k=8, groups=8, top_groups=4, intermediate=2048)
FORMS = ("grouped", "bmm")


def grouped_mm(a, b, offs):
    """[M, K] x [G, K, N] -> [M, N]: rows offs[g-1]..offs[g] of `a` times b[g] (torch._grouped_mm;
    rows past offs[-1] are left undefined)."""
    return torch._grouped_mm(a, b, offs=offs)


def grouped_mm_reference(a, b, offs):
    """grouped_mm group by group with torch.mm (offs read on the host: no CUDA graph); rows past
    offs[-1] are NaN, so that a use of them shows."""
    out = torch.full((a.shape[0], b.shape[-1]), float("nan"), dtype=a.dtype, device=a.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = a[start:end] @ b[g]
        start = end
    return out


def grouped_unavailable(device="cuda"):
    """Why the grouped form cannot run here (None when it can): torch._grouped_mm missing, failing,
    disagreeing with grouped_mm_reference, or not capturable in a CUDA graph."""
    if not hasattr(torch, "_grouped_mm"):
        return "torch._grouped_mm is missing (PyTorch %s)" % torch.__version__
    try:
        g = torch.Generator(device=device).manual_seed(3)
        a = torch.randn(40, 64, generator=g, device=device).to(torch.bfloat16)
        b = torch.randn(4, 64, 32, generator=g, device=device).to(torch.bfloat16)
        offs = torch.tensor([8, 8, 24, 33], dtype=torch.int32, device=device)  # group 1: no rows
        want = grouped_mm_reference(a, b, offs)[:33].float()
        got = grouped_mm(a, b, offs)[:33].float()
        if not torch.allclose(got, want, rtol=2e-2, atol=2e-2):
            return "torch._grouped_mm differs from torch.mm group by group"
        if device == "cuda":
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = grouped_mm(a, b, offs)
            graph.replay()
            torch.cuda.synchronize()
            if not torch.equal(out[:33], grouped_mm(a, b, offs)[:33]):
                return "torch._grouped_mm in a CUDA graph differs from eager"
    except Exception as e:  # noqa: BLE001 (the reason is reported, the step takes bmm)
        return "torch._grouped_mm failed: %s: %s" % (type(e).__name__, str(e)[:200])
    return None


class Weights:
    """One rank's experts and the router (random: timing, not a model's answer)."""

    def __init__(self, shape, rank, world, device="cuda"):
        self.shape = shape
        self.local = shape.experts // world
        self.first = rank * self.local
        g = torch.Generator(device=device).manual_seed(7)  # the router is the same everywhere
        self.router = (torch.randn(shape.hidden, shape.experts, generator=g, device=device)
                       * 0.02).to(torch.bfloat16)
        g.manual_seed(100 + rank)
        self.w1 = (torch.randn(self.local, shape.hidden, shape.intermediate, generator=g,
                               device=device) * 0.02).to(torch.bfloat16)
        self.w2 = (torch.randn(self.local, shape.intermediate, shape.hidden, generator=g,
                               device=device) * 0.02).to(torch.bfloat16)


class Experts:
    """The stand-in's buffers for `rows` gathered rows on a rank's Weights; `tokens` [rows, H] is
    filled by the caller before run()."""

    def __init__(self, weights, rows, form="grouped", matmul=grouped_mm):
        if form not in FORMS:
            raise ValueError("form must be one of %s, got %r" % (FORMS, form))
        self.shape, self.form, self.matmul = weights.shape, form, matmul
        self.local, self.first = weights.local, weights.first
        self.router, self.w1, self.w2 = weights.router, weights.w1, weights.w2
        self.rows = rows
        device = self.router.device
        s = self.shape
        self.cap = max(8, -(-2 * rows * s.top_k // s.experts))
        self.tokens = torch.zeros(rows, s.hidden, dtype=torch.bfloat16, device=device)
        # The masked layout (bmm) or the packed rows (grouped), then one zero row: where the
        # pairs that are not this rank's, or were dropped, land.
        self.slots = torch.zeros(self.local * self.cap + 1, s.hidden, dtype=torch.bfloat16,
                                 device=device)
        self.dropped = torch.zeros(1, dtype=torch.int64, device=device)
        self.offs = torch.zeros(self.local, dtype=torch.int32, device=device)  # grouped only

    def route(self, valid):
        """Expert ids and weights [rows, top_k] of DeepSeek-V3's group-limited routing."""
        s = self.shape
        scores = torch.sigmoid((self.tokens @ self.router).float())
        grouped = scores.view(self.rows, s.groups, s.experts // s.groups)
        group_score = grouped.topk(2, dim=-1).values.sum(-1)
        keep = torch.zeros_like(group_score).scatter_(
            1, group_score.topk(s.top_groups, dim=-1).indices, 1.0)
        masked = (grouped * keep.unsqueeze(-1)).view(self.rows, s.experts)
        weights, ids = masked.topk(s.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        return ids, weights * valid.unsqueeze(-1)

    def place(self, ids, valid):
        """Each (row, k) pair's slot (the zero row where it is not kept) and whether it is kept:
        the pairs of this rank's experts in row order, at most `cap` per expert."""
        local = ids - self.first
        mine = (local >= 0) & (local < self.local) & (valid.unsqueeze(-1) > 0)
        local = local.clamp(0, self.local - 1).view(-1)
        onehot = F.one_hot(local, self.local) * mine.view(-1, 1)
        position = (onehot.cumsum(0) * onehot).sum(-1) - 1  # the pair's row in its expert
        kept = mine.view(-1) & (position < self.cap)
        self.dropped.copy_((mine.view(-1) & ~kept).sum().view(1))
        if self.form == "bmm":
            start = torch.arange(self.local, device=ids.device) * self.cap
        else:
            counts = (onehot * kept.view(-1, 1)).sum(0)
            self.offs.copy_(counts.cumsum(0))
            start = self.offs.long() - counts
        zero_row = torch.full_like(position, self.local * self.cap)
        return torch.where(kept, start[local] + position, zero_row), kept

    def ffn(self):
        """Every slot row through its expert's FFN, then the zero row: [L * cap + 1, H]."""
        end = self.local * self.cap
        if self.form == "bmm":
            x = self.slots[:end].view(self.local, self.cap, self.shape.hidden)
            out = torch.bmm(F.silu(torch.bmm(x, self.w1)), self.w2).view(end, -1)
        else:
            h = F.silu(self.matmul(self.slots[:end], self.w1, self.offs))
            out = self.matmul(h, self.w2, self.offs)
        return torch.cat([out, self.slots[end:] * 0])

    def run(self, valid, y):
        """The experts' outputs for every gathered row, weighted and summed over its top_k, into
        y [rows, H] (bf16); `valid` [rows] is 1 for rows that are tokens, 0 for padding."""
        top_k = self.shape.top_k
        ids, weights = self.route(valid)
        slot, kept = self.place(ids, valid)
        rows = torch.arange(self.rows, device=ids.device).repeat_interleave(top_k)
        self.slots.index_copy_(0, slot, self.tokens[rows])  # pairs not kept: the zero row
        pairs = self.ffn()[slot] * (weights.view(-1) * kept).unsqueeze(-1).to(torch.bfloat16)
        torch.sum(pairs.view(self.rows, top_k, -1), dim=1, out=y)
