"""symmcomm.moe on CPU tensors: the tensor placement against the plain-Python specification
(reference_placement) on random, hot-expert, empty-expert, -1-slot, overflowing and bad routings;
dispatch_rows' data and swizzled scales byte for byte; combine_rows against a loop; the
configuration's refusals."""
import random

import pytest

torch = pytest.importorskip("torch")
import symmcomm  # noqa: E402
from symmcomm import moe  # noqa: E402


def swizzled_offset(row, col, cols):
    """The 128 x 4 layout (include/symmcomm/formats/scale_layout.hpp), written out here."""
    tiles_per_row = -(-cols // 4)
    tile = (row // 128) * tiles_per_row + col // 4
    i, j = row % 128, col % 4
    return tile * 512 + (i % 32) * 16 + (i // 32) * 4 + j


def routing(config, rng, kind):
    """topk_idx as nested lists [world][max_tokens][top_k] and num_tokens [world]."""
    W, T, K, E = config.world, config.max_tokens_per_rank, config.top_k, config.num_experts
    idx, counts = [], []
    for _ in range(W):
        rows = []
        for _ in range(T):
            if kind == "hot":  # every token to expert 0 and the next few
                row = [(e * 3) % E for e in range(K)]
            elif kind == "empty":  # only the first quarter of the experts used
                row = rng.sample(range(max(K, E // 4)), K)
            else:
                row = rng.sample(range(E), K)
            if kind in ("minus", "bad"):
                row = [-1 if rng.random() < 0.3 else e for e in row]
            if kind == "bad" and rng.random() < 0.2:
                row[rng.randrange(K)] = rng.choice([E, E + 5, -2, -7])
            rows.append(row)
        idx.append(rows)
        n = rng.randint(0, T)
        if kind == "bad" and rng.random() < 0.5:
            n = T + rng.randint(1, 3) if rng.random() < 0.7 else -rng.randint(1, 3)
        counts.append(n)
    return idx, counts


CONFIGS = [moe.MoeConfig(16, 4, 128, 6, 4), moe.MoeConfig(8, 2, 64, 5, 2, capacity=3),
           moe.MoeConfig(32, 8, 256, 4, 8, capacity=5), moe.MoeConfig(4, 1, 64, 9, 1)]


@pytest.mark.parametrize("config", CONFIGS, ids=repr)
@pytest.mark.parametrize("kind", ["random", "hot", "empty", "minus", "bad"])
def test_placement_is_the_specification(config, kind):
    rng = random.Random(hash((repr(config), kind)) & 0xffff)
    for trial in range(4):
        idx, counts = routing(config, rng, kind)
        ids = torch.tensor(idx, dtype=torch.int32)
        n = torch.tensor(counts, dtype=torch.int32)
        for rank in range(config.world):
            want = moe.reference_placement(config, rank, idx, counts)
            slot, expert_count, overflow, error = moe.placement(config, rank, ids, n)
            assert expert_count.tolist() == want["expert_count"]
            assert overflow.tolist() == [want["overflow"]]
            assert error.tolist() == [want["error"]]
            got = [[None] * c for c in want["expert_count"]]
            K, T, cap = config.top_k, config.max_tokens_per_rank, config.capacity
            for p, s in enumerate(slot.tolist()):
                if s == config.local_experts * cap:
                    continue
                src, rest = divmod(p, T * K)
                t, j = divmod(rest, K)
                assert got[s // cap][s % cap] is None, "two pairs in one row"
                got[s // cap][s % cap] = (src, t, j)
            assert got == want["rows"], (rank, trial)
    if kind == "bad":
        assert any(moe.reference_placement(config, 0, *routing(config, random.Random(s), kind))
                   ["error"] for s in range(20))


@pytest.mark.parametrize("config", CONFIGS[:3], ids=repr)
def test_dispatch_rows_place_every_byte(config):
    rng = random.Random(7)
    W, T, H = config.world, config.max_tokens_per_rank, config.hidden
    idx, counts = routing(config, rng, "minus")
    g = torch.Generator().manual_seed(3)
    data = torch.randint(0, 256, (W * T, H // 2), generator=g, dtype=torch.uint8)
    scales = torch.randint(1, 256, (W * T, H // 16), generator=g, dtype=torch.uint8)
    for rank in range(W):
        want = moe.reference_placement(config, rank, idx, counts)
        slot, _, _, _ = moe.placement(config, rank, torch.tensor(idx), torch.tensor(counts))
        out, out_scales = moe.dispatch_rows(config, slot, data, scales)
        assert out.shape == (config.local_experts, config.capacity, H // 2)
        assert out_scales.shape == (config.local_experts, config.expert_scale_bytes)
        assert config.expert_scale_bytes == symmcomm.swizzled_scale_bytes(config.capacity, H // 16)
        expected = torch.zeros_like(out)
        expected_scales = torch.zeros_like(out_scales)
        for e, rows in enumerate(want["rows"]):
            for m, (src, t, _) in enumerate(rows):
                expected[e, m] = data[src * T + t]
                for c in range(H // 16):
                    expected_scales[e, swizzled_offset(m, c, H // 16)] = scales[src * T + t, c]
        assert torch.equal(out, expected)
        assert torch.equal(out_scales, expected_scales)


@pytest.mark.parametrize("config", CONFIGS[:3], ids=repr)
def test_combine_rows_weight_and_sum_in_fp32(config):
    rng = random.Random(11)
    W, T, K, H = config.world, config.max_tokens_per_rank, config.top_k, config.hidden
    L, cap = config.local_experts, config.capacity
    idx, counts = routing(config, rng, "minus")
    g = torch.Generator().manual_seed(5)
    weights = torch.rand(W * T, K, generator=g)
    total = torch.zeros(W * T, H, dtype=torch.float64)
    for rank in range(W):
        y = torch.randn(L, cap, H, generator=g).to(torch.bfloat16)
        slot, _, _, _ = moe.placement(config, rank, torch.tensor(idx), torch.tensor(counts))
        got = moe.combine_rows(config, slot, y, weights)
        assert got.dtype == torch.float32 and got.shape == (W * T, H)
        want = torch.zeros(W * T, H, dtype=torch.float64)
        for e, rows in enumerate(moe.reference_placement(config, rank, idx, counts)["rows"]):
            for m, (src, t, j) in enumerate(rows):
                want[src * T + t] += float(weights[src * T + t, j]) * y[e, m].double()
        assert torch.allclose(got.double(), want, rtol=1e-6, atol=1e-6)
        total += got.double()
    # Summed over the ranks: every real token's weighted sum over all of its placed experts.
    assert torch.isfinite(total).all()


@pytest.mark.parametrize("args, text", [
    ((10, 2, 64, 4, 4), "num_experts 10 is not a multiple of world 4"),
    ((8, 9, 64, 4, 2), "top_k 9 is above num_experts 8"),
    ((8, 2, 96, 4, 2), "hidden 96 is not a multiple of 64"),
    ((8, 2, 32, 4, 2), "hidden must be >= 64, got 32"),
    ((8, 2, 64, 0, 2), "max_tokens_per_rank must be >= 1, got 0"),
    ((8, 2, 64, 4, 2, 0), "capacity must be >= 1, got 0"),
    ((8, 2, 64, 4, 2.0), "world must be an int, got 2.0"),
])
def test_the_configuration_names_what_is_wrong(args, text):
    with pytest.raises(ValueError, match=text):
        moe.MoeConfig(*args)


def test_tensors_of_the_wrong_shape_are_named():
    config = moe.MoeConfig(8, 2, 64, 4, 2)
    with pytest.raises(ValueError, match=r"topk_idx has shape \[2, 4, 3\]"):
        moe.placement(config, 0, torch.zeros(2, 4, 3, dtype=torch.int32),
                      torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="rank 2 is outside 0..1"):
        moe.placement(config, 2, torch.zeros(2, 4, 2, dtype=torch.int32),
                      torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"data has shape \[8, 31\]"):
        moe.dispatch_rows(config, torch.zeros(16, dtype=torch.int64),
                          torch.zeros(8, 31, dtype=torch.uint8), torch.zeros(8, 4, dtype=torch.uint8))
    assert config.dispatch_shapes() == {"data": ((4, 8, 32), "uint8"),
                                        "block_scales": ((4, 512), "uint8"),
                                        "expert_count": ((4,), "int32")}
