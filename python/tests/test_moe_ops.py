"""The MoE operators' Python implementations (python/symmcomm/_moe_ops.py) on CPU tensors,
over a library group stood in for by a recording one: what reaches the group (rows padded to the
group's maximum, pairs past the rows never routed, num_tokens made from the rows), the
dispatch's tensors delivered into the caller's (copied into others, left alone when they are
the group's own), the combine's rows, and the refusals' texts (the C++ operators' too:
tests/torch_ops/check_registration.py)."""
import pytest

torch = pytest.importorskip("torch")
import symmcomm  # noqa: E402
from symmcomm import _moe_ops, moe  # noqa: E402


class RecordingNative:
    """The library group as the operators reach it: its buffers (CPU tensors here), a dispatch
    that records its arguments and fills the buffers with a pattern, a combine that writes
    every row of `out` with its row number."""

    def __init__(self, config):
        L, cap, H = config.local_experts, config.capacity, config.hidden
        bf16 = config.wire == "bf16"
        self.data = (torch.zeros(L, cap, H, dtype=torch.bfloat16) if bf16
                     else torch.zeros(L, cap, H if config.wire == "fp8e4m3" else H // 2,
                                      dtype=torch.uint8))
        self.block_scales = None if bf16 else torch.zeros(L, config.expert_scale_bytes,
                                                          dtype=torch.uint8)
        self.expert_count = torch.zeros(L, dtype=torch.int32)
        self.global_scale = torch.zeros(1)
        self.overflow = torch.zeros(1, dtype=torch.int32)
        self.error = torch.zeros(1, dtype=torch.int32)
        self.expert_out = None
        self.dispatched, self.combined = [], []

    def dispatch(self, x, global_scale, topk_idx, topk_weights, num_tokens, stream):
        self.dispatched.append(dict(x=x, global_scale=global_scale, topk_idx=topk_idx.clone(),
                                    topk_weights=topk_weights.clone(),
                                    num_tokens=num_tokens.clone()))
        self.data.view(torch.uint8).fill_(7)
        if self.block_scales is not None:
            self.block_scales.fill_(9)
        self.expert_count.copy_(torch.arange(1, self.expert_count.numel() + 1))
        self.global_scale.fill_(0.5)
        self.overflow.fill_(2)
        self.error.fill_(0)

    def combine(self, expert_out, out, stream):
        self.combined.append(expert_out)
        out.copy_(torch.arange(out.shape[0]).unsqueeze(1).expand_as(out))


class Group:
    """What the operators read of a symmcomm.moe.MoeGroup: its config and its library group."""

    def __init__(self, config):
        self.config = config
        self._native = RecordingNative(config)


def fresh(bufs):
    return tuple(torch.full_like(t, 0) for t in bufs)


def test_dispatch_pads_rows_to_the_groups_maximum_and_delivers_its_tensors():
    config = moe.MoeConfig(8, 2, 64, 8, 2, capacity=4)  # 4 experts here, 8 tokens at most
    group = Group(config)
    x = torch.ones(5, 64, dtype=torch.bfloat16)
    idx = torch.full((5, 2), 3, dtype=torch.int32)
    weights = torch.full((5, 2), 0.5)
    scale = torch.ones(1)
    own = _moe_ops.buffers_of(group)
    outs = fresh(own)
    _moe_ops.dispatch(group, x, None, scale, idx, weights, None, outs)
    got = group._native.dispatched[-1]
    # The group sees max_tokens_per_rank rows: the 5 given, then rows of no pair.
    assert got["x"].shape == (8, 64) and torch.equal(got["x"][:5], x)
    assert not got["x"][5:].float().any()
    assert torch.equal(got["topk_idx"][:5], idx) and bool((got["topk_idx"][5:] == -1).all())
    assert not got["topk_weights"][5:].any()
    assert got["num_tokens"].tolist() == [5] and got["num_tokens"].dtype == torch.int32
    assert got["global_scale"] is scale
    # Tensors other than the group's own receive its bytes.
    for name, out, mine in zip(own._fields, outs, own):
        assert torch.equal(out, mine), name
    # The group's own tensors (its buffers themselves) take the dispatch as they are; a given
    # num_tokens reaches the group unchanged.
    _moe_ops.dispatch(group, x, None, scale, idx, weights, torch.tensor([3], dtype=torch.int32),
                      own)
    assert group._native.dispatched[-1]["num_tokens"].tolist() == [3]
    assert own.expert_count.tolist() == [1, 2, 3, 4]


def test_nvfp4_tokens_are_padded_as_bytes():
    config = moe.MoeConfig(4, 1, 64, 6, 1)
    group = Group(config)
    data = torch.full((2, 32), 0x11, dtype=torch.uint8)
    scales = torch.full((2, 4), 0x38, dtype=torch.uint8)
    outs = fresh(_moe_ops.buffers_of(group))
    _moe_ops.dispatch(group, data, scales, torch.ones(1), torch.zeros(2, 1, dtype=torch.int32),
                      torch.ones(2, 1), None, outs)
    x = group._native.dispatched[-1]["x"]
    assert isinstance(x, symmcomm.Nvfp4Tensor)
    assert x.data.shape == (6, 32) and torch.equal(x.data[:2], data) and not x.data[2:].any()
    assert x.block_scales.shape == (6, 4) and not x.block_scales[2:].any()


def test_a_bf16_wire_group_has_no_block_scales_and_takes_no_global_scale():
    config = moe.MoeConfig(4, 2, 64, 4, 1, wire="bf16")
    group = Group(config)
    own = _moe_ops.buffers_of(group)
    assert own.block_scales.shape == (4, 0) and own.data.dtype == torch.bfloat16
    x = torch.ones(4, 64, dtype=torch.bfloat16)
    routing = (torch.zeros(4, 2, dtype=torch.int32), torch.ones(4, 2))
    _moe_ops.dispatch(group, x, None, None, *routing, None, fresh(own))
    assert group._native.dispatched[-1]["global_scale"] is None
    with pytest.raises(ValueError, match="global_scale must be None on a bf16 wire"):
        _moe_ops.dispatch(group, x, None, torch.ones(1), *routing, None, fresh(own))


def test_an_fp8_wire_group_takes_bf16_tokens_without_a_global_scale():
    config = moe.MoeConfig(4, 2, 256, 4, 1, capacity=6, wire="fp8e4m3")
    assert config.scale_cols == 2 and config.scale_rows == 8
    assert config.expert_scale_bytes == 2 * 8 * 4
    group = Group(config)
    own = _moe_ops.buffers_of(group)
    assert own.data.shape == (4, 6, 256) and own.block_scales.shape == (4, 64)
    x = torch.ones(3, 256, dtype=torch.bfloat16)
    routing = (torch.zeros(3, 2, dtype=torch.int32), torch.ones(3, 2))
    _moe_ops.dispatch(group, x, None, None, *routing, None, fresh(own))
    assert group._native.dispatched[-1]["global_scale"] is None
    with pytest.raises(ValueError, match="global_scale must be None on a fp8e4m3 wire"):
        _moe_ops.dispatch(group, x, None, torch.ones(1), *routing, None, fresh(own))
    with pytest.raises(ValueError, match="x is NVFP4 .* the group's wire is fp8e4m3"):
        _moe_ops.dispatch(group, torch.zeros(3, 128, dtype=torch.uint8),
                          torch.zeros(3, 16, dtype=torch.uint8), torch.ones(1), *routing, None,
                          fresh(own))
    with pytest.raises(ValueError, match=r"out_data has shape \[4, 6, 128\]"):
        bad = fresh(own)
        _moe_ops.dispatch(group, x, None, None, *routing, None,
                          (torch.zeros(4, 6, 128, dtype=torch.uint8),) + bad[1:])


def test_fp8_scales_views_the_column_major_scales_as_the_gemm_reads_them():
    config = moe.MoeConfig(4, 2, 256, 4, 1, capacity=6, wire="fp8e4m3")
    columns = torch.arange(4 * 2 * 8, dtype=torch.float32).view(4, 2, 8)  # [L, blocks, rows]
    view = moe.fp8_scales(config, columns.view(torch.uint8).view(4, 64))
    assert view.shape == (4, 6, 2) and view.stride() == (16, 1, 8)
    assert view[1, 5, 1].item() == columns[1, 1, 5].item()
    with pytest.raises(ValueError, match="fp8_scales needs an fp8e4m3 wire"):
        moe.fp8_scales(moe.MoeConfig(4, 2, 256, 4, 1), columns)
    with pytest.raises(ValueError, match="not a multiple of 128"):
        moe.MoeConfig(4, 2, 192, 4, 1, wire="fp8e4m3")


def test_combine_returns_the_rows_asked_for():
    config = moe.MoeConfig(8, 2, 64, 8, 2, capacity=4)
    group = Group(config)
    y = torch.zeros(4, 4, 64, dtype=torch.float32)
    out = _moe_ops.combine(group, y, torch.zeros(4, dtype=torch.int32), 5)
    assert out.shape == (5, 64) and out.dtype == torch.bfloat16
    assert out[:, 0].tolist() == [0, 1, 2, 3, 4]
    assert group._native.combined[-1].dtype == torch.bfloat16  # float32 outputs rounded first
    assert _moe_ops.combine(group, y.to(torch.bfloat16), torch.zeros(4, dtype=torch.int32),
                            8).shape == (8, 64)


@pytest.mark.parametrize("call, text", [
    (lambda g, o: _moe_ops.dispatch(g, torch.ones(9, 64, dtype=torch.bfloat16), None,
                                    torch.ones(1), torch.zeros(9, 2, dtype=torch.int32),
                                    torch.ones(9, 2), None, o),
     "x has 9 rows; the group takes at most max_tokens_per_rank = 8"),
    (lambda g, o: _moe_ops.dispatch(g, torch.ones(5, 64, dtype=torch.bfloat16), None, None,
                                    torch.zeros(5, 2, dtype=torch.int32), torch.ones(5, 2),
                                    None, o),
     "global_scale: bf16 x is quantized in the dispatch with the layer's static NVFP4 scale"),
    (lambda g, o: _moe_ops.dispatch(g, torch.ones(5, 64, dtype=torch.bfloat16), None,
                                    torch.ones(1), torch.zeros(5, 3, dtype=torch.int32),
                                    torch.ones(5, 2), None, o),
     r"topk_idx has shape \[5, 3\]; expected \[5, 2\]"),
    (lambda g, o: _moe_ops.dispatch(g, torch.ones(5, 64, dtype=torch.bfloat16), None,
                                    torch.ones(1), torch.zeros(5, 2, dtype=torch.int32),
                                    torch.ones(5, 2), None,
                                    o[:2] + (torch.zeros(4, dtype=torch.int64),) + o[3:]),
     "out_expert_count has dtype int64; expected int32"),
    (lambda g, o: _moe_ops.combine(g, torch.zeros(4, 4, 64, dtype=torch.bfloat16),
                                   torch.zeros(4, dtype=torch.int32), 9),
     r"num_rows must be in 0..max_tokens_per_rank \(8\), got 9"),
    (lambda g, o: _moe_ops.combine(g, torch.zeros(4, 4, 32, dtype=torch.bfloat16),
                                   torch.zeros(4, dtype=torch.int32), 4),
     r"expert_out has shape \[4, 4, 32\]; expected \[4, 4, 64\]"),
])
def test_refusals_name_the_argument_as_the_cpp_operators_do(call, text):
    group = Group(moe.MoeConfig(8, 2, 64, 8, 2, capacity=4))
    with pytest.raises(ValueError, match=text):
        call(group, fresh(_moe_ops.buffers_of(group)))
    assert not group._native.dispatched  # nothing reached the group
