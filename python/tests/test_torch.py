"""The package with PyTorch on a GPU, one rank: collectives and codecs against torch-computed
references. Skips (saying why) without PyTorch or without a GPU."""
import pytest

import symmcomm

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

from ranks_worker import e2m1_values  # noqa: E402 (beside this file; needs PyTorch)


def nvfp4_zeros(n, scales=1):
    """An NVFP4 tensor of n elements (and `scales` global scales) on the GPU, zeroed."""
    return symmcomm.Nvfp4Tensor(torch.zeros(n // 2, device="cuda", dtype=torch.uint8),
                                torch.zeros(n // 16, device="cuda", dtype=torch.uint8),
                                torch.zeros(scales, device="cuda", dtype=torch.float32))


@pytest.fixture(scope="module")
def comm():
    c = symmcomm.Communicator.init(1, symmcomm.unique_id(), 0, 0)
    yield c
    c.release()


def test_one_rank_bf16_all_gather_and_reduce_scatter_are_identities(comm):
    x = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    plan = symmcomm.all_gather(comm, x, out)
    torch.cuda.synchronize()
    assert torch.equal(out, x)
    assert plan.path in ("fallback", "nccl-symmetric", "lsa-kernel") and plan.reason
    out.zero_()
    symmcomm.reduce_scatter(comm, x, out)
    torch.cuda.synchronize()
    assert torch.equal(out, x)


def test_the_librarys_argument_errors_reach_python(comm):
    # Python leaves how counts relate to the library (validate_call): its texts, naming the
    # argument and its value, arrive as LogicError (a ValueError).
    bf = lambda n: torch.zeros(n, device="cuda", dtype=torch.bfloat16)  # noqa: E731
    cases = [
        (lambda: symmcomm.all_gather(comm, bf(64), bf(96)),
         "recv.count 96 is not send.count 64 x comm.size() 1"),
        (lambda: symmcomm.all_gatherv(comm, nvfp4_zeros(32), nvfp4_zeros(64), [48]),
         "counts[0] = 48"),
        (lambda: symmcomm.reduce_scatter(comm, nvfp4_zeros(64), bf(32)),
         "send.count 64 is not recv.count 32 x comm.size() 1"),
        (lambda: symmcomm.quantize_all_gather(comm, bf(40), nvfp4_zeros(48)),
         "input.count 40 is not a multiple of 16"),
    ]
    for call, text in cases:
        with pytest.raises(symmcomm.LogicError) as e:
            call()
        assert isinstance(e.value, ValueError)
        assert text in str(e.value), (text, str(e.value))


def reduce_like_kernel(q):
    """One rank's NVFP4 tensor summed as the reduce kernels do: code * (block scale * (1 / g))
    in fp32, rounded once to bf16. Dequantization divides instead (block scale / g, one
    rounding), so the two may differ by one bf16 step where the multipliers round apart."""
    inv_g = torch.reciprocal(q.global_scale[0:1])
    mult = q.block_scales.view(torch.float8_e4m3fn).float() * inv_g
    return (e2m1_values(q) * mult.repeat_interleave(16)).to(torch.bfloat16)


def test_nvfp4_round_trip_and_gather_match_torch(comm):
    n = 16 * 1024
    torch.manual_seed(60)
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    q = nvfp4_zeros(n)
    symmcomm.quantize_nvfp4(x, q)
    back = torch.empty_like(x)
    symmcomm.dequantize_nvfp4(q, back)
    torch.cuda.synchronize()
    # NVFP4 keeps ~1 significant bit per element plus block scales: within a block's step.
    err = (back.float() - x.float()).abs()
    assert err.max().item() <= x.float().abs().max().item() / 6 * 1.5 + 1e-3
    g = nvfp4_zeros(n)
    symmcomm.all_gather(comm, q, g)
    torch.cuda.synchronize()
    assert torch.equal(g.data, q.data) and torch.equal(g.block_scales, q.block_scales)
    assert torch.equal(g.global_scale, q.global_scale)
    # The quantized sum over one rank is the kernels' arithmetic exactly, and the dequantized
    # tensor within one bf16 step.
    out = torch.empty_like(x)
    symmcomm.reduce_scatter(comm, q, out)
    torch.cuda.synchronize()
    assert torch.equal(out, reduce_like_kernel(q))
    step = torch.finfo(torch.bfloat16).eps * back.float().abs()
    assert ((out.float() - back.float()).abs() <= step).all()


def test_a_gather_captured_in_a_cuda_graph_replays_on_new_data(comm):
    n = 16 * 256
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    q = nvfp4_zeros(n)
    g = nvfp4_zeros(n)
    symmcomm.quantize_nvfp4(x, q)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        symmcomm.quantize_nvfp4(x, q)
        symmcomm.all_gather(comm, q, g)
    x.copy_(torch.randn(n, device="cuda", dtype=torch.bfloat16) * 3)
    graph.replay()
    want = nvfp4_zeros(n)
    symmcomm.quantize_nvfp4(x, want)
    torch.cuda.synchronize()
    assert torch.equal(g.data, want.data) and torch.equal(g.block_scales, want.block_scales)
    assert torch.equal(g.global_scale, want.global_scale)


def test_all_gatherv_with_one_rank_copies_the_tensor(comm):
    x = torch.randn(48, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    symmcomm.all_gatherv(comm, x, out, [48])
    torch.cuda.synchronize()
    assert torch.equal(out, x)


def test_pool_memory_is_symmetric_where_supported(comm):
    with symmcomm.Pool(comm, initial_bytes=8 << 20) as pool:
        ptr = pool.allocate(1 << 20)
        symmetric, offset, why = symmcomm.provenance(comm, ptr, 1 << 20)
        assert symmetric, why  # in a window, whether or not NCCL's symmetric kernels can run
        pool.free(ptr, stream=torch.cuda.current_stream())
        assert pool.stats()["live_allocations"] == 0


def test_tensors_from_the_mem_pool_lie_in_windows_where_supported(comm):
    pool = symmcomm.Pool(comm, initial_bytes=64 << 20, allow_growth=False)
    mempool = symmcomm.torch_mem_pool(pool)
    with torch.cuda.use_mem_pool(mempool):
        t = torch.empty(1 << 20, dtype=torch.bfloat16, device="cuda")
    assert symmcomm.is_symmetric(comm, t)
    assert pool.stats()["live_allocations"] >= 1
    del t, mempool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    pool.destroy()


def test_every_c_entry_point_on_one_rank(comm):
    """The C ABI 4 entry points under the package, one rank: reduce_scatterv (new to Python),
    fused quantize + gather, FP8 codecs, fp32 and re-quantized outputs, the plan's reason."""
    n = 16 * 256
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    q = nvfp4_zeros(n)
    symmcomm.quantize_nvfp4(x, q)
    back = torch.empty_like(x)
    symmcomm.dequantize_nvfp4(q, back)
    out = torch.empty_like(x)
    plan = symmcomm.reduce_scatterv(comm, q, out, [n])
    torch.cuda.synchronize()
    assert torch.equal(out, back)
    assert plan.path in ("fallback", "nccl-symmetric", "lsa-kernel") and plan.why
    path, reason = plan
    assert path == plan.path and reason == plan.reason and reason
    g = nvfp4_zeros(n)
    symmcomm.quantize_all_gather(comm, x, g)
    torch.cuda.synchronize()
    assert torch.equal(g.data, q.data) and torch.equal(g.block_scales, q.block_scales)
    f = symmcomm.Fp8Tensor(torch.zeros(n, device="cuda", dtype=torch.float8_e4m3fn),
                           torch.zeros(1, device="cuda", dtype=torch.float32))
    symmcomm.quantize_fp8(x, f)
    fb = torch.empty_like(x)
    symmcomm.dequantize_fp8(f, fb)
    out32 = torch.empty(n, device="cuda", dtype=torch.float32)
    symmcomm.reduce_scatter(comm, f, out32)
    torch.cuda.synchronize()
    assert (out32.to(torch.bfloat16).float() - fb.float()).abs().max().item() <= \
        fb.float().abs().max().item() * 2.0 ** -7


@pytest.mark.parametrize("path", ["auto", "fallback"])
def test_a_moe_group_on_an_fp8_wire_quantizes_each_block_of_128_as_the_reference(comm, path):
    # bf16 tokens quantized in the dispatch: every placed row's e4m3 codes and its blocks'
    # float32 scales (through moe.fp8_scales, the view DeepGEMM reads) against torch's
    # quantization of the same blocks (scale amax / 448, 1 for a block of zeros; codes of
    # x * (1 / scale)); the combine as on the other wires.
    from symmcomm import moe
    T, H, K = 19, 256, 3
    config = moe.MoeConfig(8, K, H, T, 1, wire="fp8e4m3")
    gen = torch.Generator().manual_seed(11)
    x = (torch.randn(T, H, generator=gen) * torch.rand(T, 1, generator=gen) * 50).to(torch.bfloat16)
    x[4, 128:] = 0  # a block of zeros
    idx = torch.stack([torch.randperm(8, generator=gen)[:K] for _ in range(T)]).to(torch.int32)
    idx[2, 1] = -1
    weights = torch.rand(T, K, generator=gen)
    n = torch.tensor([T - 2], dtype=torch.int32)
    group = moe.MoeGroup(comm, config, path=path)
    try:
        d = group.dispatch(x.cuda(), idx.cuda(), weights.cuda(), n.cuda())
        y_in = torch.randn(config.local_experts, config.capacity, H, generator=gen).to(torch.bfloat16)
        y = group.combine(y_in.cuda(), d)
        torch.cuda.synchronize()
        assert group.check(d) == 0
        blocks = x.float().view(T, H // 128, 128)
        amax = blocks.abs().amax(-1)
        scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
        codes = (blocks * (1.0 / scale).unsqueeze(-1)).to(torch.float8_e4m3fn).view(torch.uint8)
        want = moe.reference_placement(config, 0, [idx.tolist()], [T - 2])
        assert d.expert_count.cpu().tolist() == want["expert_count"]
        data = d.data.cpu()
        scales = moe.fp8_scales(config, d.block_scales).cpu()
        for e, rows in enumerate(want["rows"]):
            for m, (_, t, _) in enumerate(rows):
                assert torch.equal(data[e, m], codes[t].reshape(-1)), "expert %d row %d" % (e, m)
                assert torch.equal(scales[e, m], scale[t]), "expert %d row %d's scales" % (e, m)
        exact = torch.zeros(T - 2, H, dtype=torch.float64)
        for e, rows in enumerate(want["rows"]):
            for m, (_, t, j) in enumerate(rows):
                exact[t] += weights[t, j].double() * y_in[e, m].double()
        assert torch.allclose(y.cpu().double()[:T - 2], exact, rtol=2 ** -8, atol=1e-5)
    finally:
        group.destroy()


@pytest.mark.parametrize("path, in_place", [("auto", False), ("fallback", False),
                                            ("python", False), ("auto", True),
                                            ("fallback", True)])
def test_a_moe_group_on_one_rank_places_every_row_and_combines(comm, path, in_place):
    # The group on each of its paths against the one-process specification (test_moe_group.py's
    # simulated world of one rank): placed rows and scales below each count, counts, error and
    # overflow words; the combine within one bf16 rounding of the fp64 sum.
    import random
    from symmcomm import moe
    from test_moe_group import dispatch_world, world_inputs
    config = moe.MoeConfig(8, 3, 128, 37, 1, combine_in_place=in_place)
    _, _, ranks = world_inputs(config, random.Random(7), "minus")
    want = dispatch_world(config, ranks)[0]
    mine = ranks[0]
    x = mine["x"]
    group = moe.MoeGroup(comm, config, path=path)
    try:
        d = group.dispatch(symmcomm.Nvfp4Tensor(x.data.cuda(), x.block_scales.cuda(),
                                                x.global_scale.cuda()),
                           mine["topk_idx"].cuda(), mine["topk_weights"].cuda(),
                           mine["num_tokens"].cuda())
        y_in = torch.randn(config.local_experts, config.capacity, config.hidden,
                           generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
        if in_place:  # the expert outputs written where the group holds them, read there
            group.expert_out.copy_(y_in.cuda())
            y = group.combine(group.expert_out, d)
        else:
            y = group.combine(y_in.cuda(), d)
        torch.cuda.synchronize()
        assert group.path == path if path != "auto" else group.path in ("lsa", "fallback")
        for name in ("expert_count", "overflow", "error", "global_scale"):
            assert torch.equal(getattr(d, name).cpu(), getattr(want, name)), name
        for e, n in enumerate(want.expert_count.tolist()):
            assert torch.equal(d.data.cpu()[e, :n], want.data[e, :n]), "expert %d's rows" % e
        slots = torch.cat([e * config.capacity + torch.arange(n)
                           for e, n in enumerate(want.expert_count.tolist())])
        at = moe._swizzled_offsets(config, slots, "cpu").reshape(-1)
        assert torch.equal(d.block_scales.cpu().reshape(-1)[at],
                           want.block_scales.reshape(-1)[at]), "block scales"
        # The rows of the tokens dispatched (the rest of a combine's output is unspecified).
        n = min(max(int(mine["num_tokens"].item()), 0), config.max_tokens_per_rank)
        exact = moe.combine_partials(config, want, y_in).double()[:n]
        assert torch.allclose(y.cpu().double()[:n], exact, rtol=2 ** -8, atol=1e-5), "combine"
        assert group.check(d) == 0
    finally:
        group.destroy()
