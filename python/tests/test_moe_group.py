"""symmcomm.moe's MoeGroup steps on CPU tensors, a whole world of ranks in one process: the
collectives stood in for by concatenation (all-gather) and a sum then a slice (reduce-scatter),
the rest exactly what MoeGroup runs. Every placed data and scale byte against the plain-Python
placement, the routing's words and weights' bits through the packing, the combine against an
fp64 loop and rounded once, the error bits (expert ids, num_tokens, global scales) named by
check_dispatch, and the group's refusals."""
import random

import pytest

torch = pytest.importorskip("torch")
import symmcomm  # noqa: E402
from symmcomm import _moe_native, moe  # noqa: E402

from test_moe import routing, swizzled_offset  # noqa: E402


def world_inputs(config, rng, kind, scales_equal=True):
    """Every rank's dispatch inputs as MoeGroup.dispatch takes them (NVFP4 tokens)."""
    W, T, K, H = config.world, config.max_tokens_per_rank, config.top_k, config.hidden
    idx, counts = routing(config, rng, kind)
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    ranks = []
    for r in range(W):
        data = torch.randint(0, 256, (T, H // 2), generator=g, dtype=torch.uint8)
        scales = torch.randint(1, 256, (T, H // 16), generator=g, dtype=torch.uint8)
        glob = torch.tensor([0.5 if scales_equal or r == 0 else 0.25], dtype=torch.float32)
        weights = torch.rand(T, K, generator=g)
        ranks.append(dict(x=symmcomm.Nvfp4Tensor(data, scales, glob),
                          topk_idx=torch.tensor(idx[r], dtype=torch.int32),
                          topk_weights=weights,
                          num_tokens=torch.tensor([counts[r]], dtype=torch.int32)))
    return idx, counts, ranks


def dispatch_world(config, ranks):
    """What MoeGroup.dispatch leaves on every rank, its two all-gathers as concatenations."""
    words = torch.cat([moe.pack_routing(config, r["topk_idx"], r["topk_weights"],
                                        r["num_tokens"]) for r in ranks])
    data = torch.cat([r["x"].data.reshape(-1) for r in ranks])
    scales = torch.cat([r["x"].block_scales.reshape(-1) for r in ranks])
    glob = torch.cat([r["x"].global_scale for r in ranks])
    return [moe.place_gathered(config, rank, data, scales, glob, words)
            for rank in range(config.world)]


CONFIGS = [moe.MoeConfig(16, 4, 128, 6, 4), moe.MoeConfig(8, 2, 64, 5, 2, capacity=3),
           moe.MoeConfig(32, 8, 256, 4, 8, capacity=5)]


def test_the_routing_words_carry_ids_weight_bits_and_counts_exactly():
    config = moe.MoeConfig(16, 4, 64, 3, 2)
    idx = torch.tensor([[0, 5, -1, 15], [3, -1, -1, -1], [7, 8, 9, 10]], dtype=torch.int32)
    weights = torch.tensor([[0.1, -0.0, float("inf"), 1e-30]] * 3, dtype=torch.float32)
    words = moe.pack_routing(config, idx, weights, torch.tensor([2], dtype=torch.int32))
    assert words.dtype == torch.int32 and words.numel() == moe.routing_words(config) == 25
    other = moe.pack_routing(config, idx.flip(0), weights * 2, torch.tensor([3], dtype=torch.int32))
    got_idx, got_w, got_n = moe.unpack_routing(config, torch.cat([words, other]))
    assert torch.equal(got_idx[0], idx) and torch.equal(got_idx[1], idx.flip(0))
    assert torch.equal(got_w.view(torch.int32)[:3], weights.view(torch.int32))
    assert torch.equal(got_w[3:], weights * 2)
    assert got_n.tolist() == [2, 3]


@pytest.mark.parametrize("config", CONFIGS, ids=repr)
@pytest.mark.parametrize("kind", ["random", "hot", "empty", "minus", "bad"])
def test_every_rank_gets_its_experts_rows_and_scales_byte_for_byte(config, kind):
    rng = random.Random(hash((repr(config), kind, "group")) & 0xffff)
    idx, counts, ranks = world_inputs(config, rng, kind)
    T, H = config.max_tokens_per_rank, config.hidden
    for rank, d in enumerate(dispatch_world(config, ranks)):
        want = moe.reference_placement(config, rank, idx, counts)
        assert d.expert_count.tolist() == want["expert_count"]
        assert d.overflow.tolist() == [want["overflow"]]
        assert d.error.tolist() == [want["error"]]
        assert d.global_scale.tolist() == [0.5]
        expected = torch.zeros_like(d.data)
        expected_scales = torch.zeros_like(d.block_scales)
        for e, rows in enumerate(want["rows"]):
            for m, (src, t, _) in enumerate(rows):
                expected[e, m] = ranks[src]["x"].data[t]
                for c in range(H // 16):
                    expected_scales[e, swizzled_offset(m, c, H // 16)] = \
                        ranks[src]["x"].block_scales[t, c]
        assert torch.equal(d.data, expected), (rank, kind)
        assert torch.equal(d.block_scales, expected_scales), (rank, kind)
        assert d.data.shape == (config.local_experts, config.capacity, H // 2)
        assert T * config.world * config.top_k == d.slot.numel()


@pytest.mark.parametrize("config", CONFIGS, ids=repr)
def test_the_combine_is_each_tokens_weighted_fp32_sum_rounded_once(config):
    rng = random.Random(21)
    idx, counts, ranks = world_inputs(config, rng, "minus")
    W, T, H = config.world, config.max_tokens_per_rank, config.hidden
    L, cap = config.local_experts, config.capacity
    dispatched = dispatch_world(config, ranks)
    g = torch.Generator().manual_seed(9)
    outs = [torch.randn(L, cap, H, generator=g).to(torch.bfloat16) for _ in range(W)]
    # The reduce-scatter in fp32: the partial sums added over the ranks, rank r's T rows kept.
    summed = sum(moe.combine_partials(config, d, y) for d, y in zip(dispatched, outs))
    for r in range(W):
        got = summed[r * T:(r + 1) * T].to(torch.bfloat16)  # what MoeGroup.combine returns
        want = torch.zeros(T, H, dtype=torch.float64)
        for owner in range(W):
            rows = moe.reference_placement(config, owner, idx, counts)["rows"]
            for e, placed in enumerate(rows):
                for m, (src, t, j) in enumerate(placed):
                    if src == r:
                        w = float(ranks[r]["topk_weights"][t, j])
                        want[t] += w * outs[owner][e, m].double()
        assert torch.allclose(summed[r * T:(r + 1) * T].double(), want, rtol=1e-5, atol=1e-5)
        # One rounding: bf16 of the fp32 sum is within half a bf16 unit of the exact sum.
        assert torch.allclose(got.double(), want, rtol=2 ** -8, atol=1e-5)
        for t in range(counts[r], T):
            assert not got[t].any(), "a token past num_tokens has no rows to combine"


def test_error_bits_are_named_by_check_dispatch():
    config = moe.MoeConfig(8, 2, 64, 4, 2)
    rng = random.Random(3)
    _, _, ranks = world_inputs(config, rng, "random", scales_equal=False)
    ranks[1]["topk_idx"][0, 0] = 99
    ranks[0]["num_tokens"][0] = 7
    d = dispatch_world(config, ranks)[0]
    assert d.error.tolist() == [moe.ERROR_EXPERT_ID | moe.ERROR_NUM_TOKENS |
                                moe.ERROR_GLOBAL_SCALE]
    with pytest.raises(ValueError) as e:
        moe.check_dispatch(d)
    text = str(e.value)
    assert "topk_idx: an expert id outside -1..num_experts-1" in text
    assert "num_tokens: outside 0..max_tokens_per_rank" in text
    assert "x.global_scale: not the same on every rank" in text
    _, _, clean = world_inputs(config, random.Random(4), "random")
    assert moe.check_dispatch(dispatch_world(config, clean)[1]) == 0


class FakeComm:
    """What MoeGroup asks of a communicator before any collective: comm.info()."""

    def __init__(self, rank, size):
        self._info = (rank, size, -1, 0)

    def info(self):
        return self._info


class FakeNative:
    """The library's group as MoeGroup sees it, without a library call (a fake comm has no
    handle): the path it would take, and the refusal of a forced LSA path."""

    def __init__(self, comm, config, device, stream, path="auto"):
        if path == "lsa":
            raise symmcomm.LogicError("MoeGroup: path LsaKernel cannot be taken: no LSA team "
                                      "(fake)")
        self.path = "fallback"
        self.destroyed = False

    def reason(self):
        return "fallback: fake (%s)" % self.path

    def destroy(self):
        self.destroyed = True


def test_a_destroyed_group_is_forgotten_by_the_operators(monkeypatch):
    ops = pytest.importorskip("symmcomm.ops")
    monkeypatch.setattr(_moe_native, "NativeGroup", FakeNative)
    config = moe.MoeConfig(8, 2, 64, 4, 2)
    group = moe.MoeGroup(FakeComm(0, 2), config)
    ops.register_moe_group("layer-x", group)
    assert ops._moe_group("layer-x") is group
    group.destroy()
    assert group._native.destroyed
    with pytest.raises(ValueError, match="no MoE group registered as 'layer-x'"):
        ops._moe_group("layer-x")
    with pytest.raises(ValueError, match="path=\"python\", which has no buffers"):
        ops.register_moe_group("p", moe.MoeGroup(FakeComm(0, 2), config, path="python"))
    with pytest.raises(ValueError, match="group must be a symmcomm.moe.MoeGroup"):
        ops.register_moe_group("p", object())


def test_the_group_refuses_what_does_not_fit_and_names_it(monkeypatch):
    monkeypatch.setattr(_moe_native, "NativeGroup", FakeNative)
    config = moe.MoeConfig(8, 2, 64, 4, 2)
    with pytest.raises(ValueError, match="config.world 2 is not comm.size 4"):
        moe.MoeGroup(FakeComm(0, 4), config)
    with pytest.raises(ValueError, match="config must be a symmcomm.moe.MoeConfig"):
        moe.MoeGroup(FakeComm(0, 2), (8, 2, 64, 4, 2))
    with pytest.raises(ValueError, match=r"global_scale has shape \[2\]"):
        moe.MoeGroup(FakeComm(0, 2), config, global_scale=torch.ones(2))
    with pytest.raises(ValueError, match="path LsaKernel cannot be taken: no LSA team"):
        moe.MoeGroup(FakeComm(1, 2), config, path="lsa")
    with pytest.raises(ValueError, match="path must be one of"):
        moe.MoeGroup(FakeComm(1, 2), config, path="nccl")
    with pytest.raises(ValueError, match="combine_in_place must be a bool, got 'yes'"):
        moe.MoeConfig(8, 2, 64, 4, 2, combine_in_place="yes")
    with pytest.raises(ValueError, match="config.combine_in_place needs the library's paths"):
        moe.MoeGroup(FakeComm(1, 2), moe.MoeConfig(8, 2, 64, 4, 2, combine_in_place=True),
                     path="python")
    native = moe.MoeGroup(FakeComm(1, 2), config)
    assert native.path == "fallback" and native.reason.startswith("fallback: fake")
    group = moe.MoeGroup(FakeComm(1, 2), config, path="python")
    assert group.path == "python" and "not run" in group.reason
    assert "path=\"python\" was asked for" in group.reason
    bf16 = torch.zeros(4, 64, dtype=torch.bfloat16)
    args = (torch.zeros(4, 2, dtype=torch.int32), torch.zeros(4, 2),
            torch.zeros(1, dtype=torch.int32))
    with pytest.raises(ValueError, match="needs its static global_scale"):
        group.dispatch(bf16, *args)
    with pytest.raises(ValueError, match=r"x has shape \[3, 64\]"):
        group.dispatch(torch.zeros(3, 64, dtype=torch.bfloat16), *args)
    with pytest.raises(ValueError, match=r"topk_idx has shape \[4, 3\]"):
        group.dispatch(bf16, torch.zeros(4, 3, dtype=torch.int32), *args[1:])
    with pytest.raises(ValueError, match="topk_weights has dtype float64"):
        group.dispatch(symmcomm.Nvfp4Tensor(torch.zeros(4, 32, dtype=torch.uint8),
                                            torch.zeros(4, 4, dtype=torch.uint8),
                                            torch.ones(1)),
                       args[0], torch.zeros(4, 2, dtype=torch.float64), args[2])
    with pytest.raises(ValueError, match="dispatch must be what MoeGroup.dispatch returned"):
        group.combine(torch.zeros(4, 8, 64, dtype=torch.bfloat16), "handle")
