"""symmcomm.ops on a GPU with PyTorch, one rank, for both implementations (the C++ operators of
libsymmcomm_torch.so where it is built, and the Python ones): torch.library.opcheck of every
operator, the fakes' shapes against the real outputs, torch.compile(fullgraph=True) giving
eager's bytes, the compiled function captured in a CUDA graph and replayed on new inputs, and
the two implementations giving the same bytes and the same errors. Skips (saying why) without
PyTorch or a GPU, and the C++ half without libsymmcomm_torch.so."""
import os

import pytest

import symmcomm

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

import symmcomm.ops  # noqa: E402 (needs torch)

GROUP = "symmcomm-test-solo"
MOE = "symmcomm-test-moe"  # a MoE group on the same communicator: 8 experts, top-2, 32 tokens


#: The operators that must have a C++ implementation: every one.
NATIVE = set(symmcomm.ops.OPS)
NAMESPACES = {"c++": "symmcomm_test_cpp", "python": "symmcomm_test_py"}


def native_or_skip():
    where = symmcomm.ops.native_library()
    if "error" in where:
        pytest.skip("C++ operators: " + where["error"])


@pytest.fixture(scope="module")
def comm():
    from symmcomm import moe
    c = symmcomm.Communicator.init(1, symmcomm.unique_id(), 0, 0)
    symmcomm.ops.register_communicator(GROUP, c)
    group = moe.MoeGroup(c, moe.MoeConfig(8, 2, 256, 32, 1))
    symmcomm.ops.register_moe_group(MOE, group)
    yield c
    symmcomm.ops.unregister_moe_group(MOE)
    group.destroy()
    symmcomm.ops.unregister_communicator(GROUP)
    c.release()


def namespace_ops(implementation):
    if implementation == "c++":
        native_or_skip()
    return symmcomm.ops.register_ops(NAMESPACES[implementation], implementation)


@pytest.fixture(scope="module", params=["c++", "python"])
def ops(request, comm):
    return namespace_ops(request.param)


def bf16(rows, hidden=256, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16, generator=g)


def cases(ops):
    """(operator, arguments) for every functional and out operator, at one rank."""
    x = bf16(32)
    data, bs, gs = ops.quantize_nvfp4(x, None)
    f8 = x.to(torch.float8_e4m3fn)
    one = torch.ones(1, device="cuda", dtype=torch.float32)
    i32 = lambda v: torch.tensor(v, device="cuda", dtype=torch.int32)  # noqa: E731
    # This rank's count at capacity: every output row is written, so eager and traced outputs
    # compare equal (rows past the count are unspecified; test_device_counts_place_rows).
    dev = (i32([32]), i32([0]), i32([0]), i32([0]))
    return [
        (ops.all_gatherv_device, (x, *dev, GROUP)),
        (ops.all_gatherv_device_nvfp4, (data, bs, gs, *dev, GROUP)),
        (ops.all_gatherv_device_nvfp4, (data, bs, gs, *dev, GROUP, True)),
        (ops.reduce_scatterv_device, (x, *dev, GROUP)),
        (ops.reduce_scatterv_device_nvfp4, (data, bs, gs, *dev, GROUP)),
        (ops.all_gather, (x, GROUP)),
        (ops.all_gather_out, (x, torch.empty_like(x), GROUP)),
        (ops.all_gather_nvfp4, (data, bs, gs, GROUP, None)),
        (ops.all_gather_nvfp4, (data, bs, gs, GROUP, 256)),
        (ops.all_gather_nvfp4_out, (data, bs, gs, torch.empty_like(data), torch.empty_like(bs),
                                    torch.empty_like(gs), GROUP, None)),
        (ops.all_gather_fp8, (f8, one, GROUP)),
        (ops.all_gatherv, (x, [32], GROUP)),
        (ops.all_gatherv_nvfp4, (data, bs, gs, [32], GROUP, None)),
        (ops.reduce_scatter, (x, GROUP)),
        (ops.reduce_scatter_out, (x, torch.empty_like(x), GROUP)),
        (ops.reduce_scatter_nvfp4, (data, bs, gs, GROUP, torch.bfloat16)),
        (ops.reduce_scatter_nvfp4, (data, bs, gs, GROUP, torch.float32)),
        (ops.reduce_scatter_fp8, (f8, one, GROUP, torch.bfloat16)),
        (ops.reduce_scatter_nvfp4_q, (data, bs, gs, GROUP)),
        (ops.reduce_scatter_fp8_q, (f8, one, GROUP)),
        (ops.reduce_scatterv, (x, [32], GROUP)),
        (ops.quantize_all_gather_nvfp4, (x, None, GROUP, None)),
        (ops.quantize_all_gather_nvfp4, (x, None, GROUP, 256)),
        (ops.quantize_nvfp4, (x, None)),
        (ops.dequantize_nvfp4, (data, bs, gs)),
    ] + moe_cases(ops, x, data, bs, gs)


def routing(tokens, seed=0, experts=8, top_k=2):
    """Top-k of random router scores: topk_idx int32 and topk_weights float32 [tokens, top_k]."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    scores = torch.rand(tokens, experts, device="cuda", generator=g).softmax(-1)
    weights, idx = scores.topk(top_k, dim=-1)
    return idx.to(torch.int32), weights.float()


def fresh_moe_outs():
    """Tensors shaped as the MoE group's (not its own: the operator copies into them)."""
    return tuple(torch.empty_like(t) for t in symmcomm.ops.moe_buffers(MOE))


def moe_cases(ops, x, data, bs, gs):
    """The MoE operators (the group's last dispatch before moe_combine is the NVFP4 one)."""
    idx, w = routing(x.shape[0])
    one = torch.ones(1, device="cuda", dtype=torch.float32)
    n = torch.tensor([x.shape[0] - 4], device="cuda", dtype=torch.int32)
    y = bf16(8 * 32, seed=9).view(8, 32, 256)
    return [
        (ops.moe_dispatch, (x, None, one, idx, w, None, *fresh_moe_outs(), MOE)),
        (ops.moe_dispatch, (data, bs, gs, idx, w, n, *fresh_moe_outs(), MOE)),
        (ops.moe_combine, (y, symmcomm.ops.moe_buffers(MOE).expert_count, 28, MOE)),
    ]


FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def has_fp8(args):
    return any(isinstance(a, torch.Tensor) and a.dtype in FP8 for a in args)


def as_bytes(args):
    """`args` with every float8 tensor viewed as uint8 (the operators take FP8 codes and NVFP4
    block scales as bytes too)."""
    return tuple(a.view(torch.uint8) if isinstance(a, torch.Tensor) and a.dtype in FP8 else a
                 for a in args)


def test_opcheck_passes_for_every_operator(ops):
    checked = {op._qualified_op_name.split("::")[1] for op, _ in cases(ops)}
    assert checked == set(symmcomm.ops.OPS), set(symmcomm.ops.OPS) ^ checked
    for op, args in cases(ops):
        # Every test utility (test_aot_dispatch_dynamic among them: symbolic sizes through the
        # fakes) on every operator, float8 tensors as bytes: opcheck's schema and AOT checks
        # compare float8 tensors with arithmetic CUDA does not implement for them ("mul_cuda"
        # not implemented for 'Float8_e4m3fn', PyTorch 2.11), so with their own dtypes the
        # fakes and autograd registration are checked (and eager against compiled bytes in
        # test_fp8_operators_compile_to_eagers_bytes).
        torch.library.opcheck(op, as_bytes(args))
        if has_fp8(args):
            torch.library.opcheck(op, args,
                                  test_utils=("test_faketensor", "test_autograd_registration"))


def test_a_dynamic_token_dimension_compiles_once(ops):
    # vLLM and SGLang compile with the token dimension dynamic: three batch sizes, one graph, no
    # graph break, eager's bytes (examples/python/dynamic_shapes.py at one rank).
    import torch._dynamo
    import torch._dynamo.testing

    def step(x):
        tokens, hidden = x.shape
        data, scales, global_ = ops.quantize_nvfp4(x, None)
        return (ops.all_gatherv(x, [tokens], GROUP),
                *ops.all_gather_nvfp4(data, scales, global_, GROUP, hidden),
                *ops.all_gatherv_nvfp4(data, scales, global_, [tokens], GROUP, None),
                ops.reduce_scatterv(x, [tokens], GROUP),
                *ops.quantize_all_gather_nvfp4(x, None, GROUP, hidden))

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(step, backend=counter, fullgraph=True)
    for tokens in (16, 40, 72):
        x = bf16(tokens, seed=tokens)
        torch._dynamo.mark_dynamic(x, 0)
        got, want = compiled(x), step(x)
        torch.cuda.synchronize()
        for a, b in zip(got, want):
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), tokens
    assert counter.frame_count == 1, counter.frame_count
    assert sum(torch._dynamo.utils.counters["graph_break"].values()) == 0, \
        dict(torch._dynamo.utils.counters["graph_break"])


def test_fp8_operators_compile_to_eagers_bytes(ops):
    x = bf16(32, seed=4)
    f8 = x.to(torch.float8_e4m3fn)
    one = torch.ones(1, device="cuda", dtype=torch.float32)

    def fp8_step(data, scale):
        gathered, scales = ops.all_gather_fp8(data, scale, GROUP)
        summed, summed_scale = ops.reduce_scatter_fp8_q(data, scale, GROUP)
        return (gathered.view(torch.uint8), scales,
                ops.reduce_scatter_fp8(data, scale, GROUP, torch.bfloat16),
                summed.view(torch.uint8), summed_scale)

    eager = fp8_step(f8, one)
    got = torch.compile(fp8_step, fullgraph=True)(f8, one)
    torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(got, eager))


def test_fakes_give_the_real_shapes_and_dtypes(ops):
    from torch._subclasses.fake_tensor import FakeTensorMode
    for op, args in cases(ops):
        real = op(*args)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            fake = op(*fake_args)
        reals = real if isinstance(real, tuple) else (real,)
        fakes = fake if isinstance(fake, tuple) else (fake,)
        assert len(reals) == len(fakes), op
        for r, f in zip(reals, fakes):
            if r is None:
                continue
            assert tuple(r.shape) == tuple(f.shape) and r.dtype == f.dtype, (op, r.shape, f.shape)


def assert_same(got, want, what):
    """Bitwise equality, with where and by how much they differ when they do not."""
    if torch.equal(got, want):
        return
    diff = (got.float() - want.float()).abs()
    bad = (got != want).nonzero()
    raise AssertionError("%s: %d of %d elements differ (first at %s: %s vs %s; max |diff| %g)"
                         % (what, bad.shape[0], got.numel(), bad[0].tolist(),
                            got[tuple(bad[0])].item(), want[tuple(bad[0])].item(),
                            diff.max().item()))


def moe_step(ops, x):
    """Dispatch (fused quantize + gather), a stand-in expert, combine (NVFP4 reduce-scatter)."""
    data, bs, gs = ops.quantize_all_gather_nvfp4(x, None, GROUP, None)
    y = ops.dequantize_nvfp4(data, bs, gs) * 2
    qd, qb, qg = ops.quantize_nvfp4(y, None)
    return ops.reduce_scatter_nvfp4(qd, qb, qg, GROUP, torch.bfloat16)


def test_compiled_fullgraph_equals_eager_and_replays_in_a_cuda_graph(ops):
    x = bf16(64, seed=1)
    eager = moe_step(ops, x)
    compiled = torch.compile(lambda t: moe_step(ops, t), fullgraph=True)
    got = compiled(x)
    torch.cuda.synchronize()
    assert_same(got, eager, "compiled vs eager")
    # Captured once, replayed on new data: the replay equals eager on that data.
    static_x = x.clone()
    compiled(static_x)  # warm-up outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = compiled(static_x)
    fresh = bf16(64, seed=2)
    static_x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    assert_same(static_out, moe_step(ops, fresh), "graph replay vs eager")


def test_device_counts_place_rows_and_write_counts(ops):
    x = bf16(32, seed=3)
    i32 = lambda v: torch.tensor(v, device="cuda", dtype=torch.int32)  # noqa: E731
    count, counts, offsets, overflow = i32([20]), i32([-1]), i32([-1]), i32([7])
    overflow.zero_()
    got = ops.all_gatherv_device(x, count, counts, offsets, overflow, GROUP)
    torch.cuda.synchronize()
    assert counts.tolist() == [20] and offsets.tolist() == [0] and overflow.item() == 0
    assert torch.equal(got[:20], x[:20])
    # The combine keeps this rank's 20 rows and writes the rest of capacity as zero.
    summed = ops.reduce_scatterv_device(x, count, counts, offsets, overflow, GROUP)
    torch.cuda.synchronize()
    assert torch.equal(summed[:20], x[:20]) and bool((summed[20:] == 0).all())
    # A count above capacity raises the flag (the rows gathered are clamped to capacity).
    count.fill_(33)
    got = ops.all_gatherv_device(x, count, counts, offsets, overflow, GROUP)
    torch.cuda.synchronize()
    assert overflow.item() != 0 and torch.equal(got, x)


def moe_layer(ops, x, idx, w, scale, expert_w, bufs):
    """A MoE layer on the group's own tensors: dispatch (bf16 quantized in it), a BF16 stand-in
    expert on the dequantized masked layout, combine to [tokens, hidden]."""
    ops.moe_dispatch(x, None, scale, idx, w, None, *bufs, MOE)
    L, cap, H = bufs.data.shape[0], bufs.data.shape[1], x.shape[1]
    rows = ops.dequantize_nvfp4(bufs.data.reshape(L * cap, H // 2),
                                linear_scales(bufs.block_scales, cap, H // 16),
                                bufs.global_scale)
    y = torch.bmm(rows.view(L, cap, H), expert_w)
    return ops.moe_combine(y, bufs.expert_count, x.shape[0], MOE)


def linear_scales(swizzled, rows, cols):
    """Block scales [L, swizzled bytes] (128 x 4 tiles per expert) as [L * rows, cols]."""
    r = torch.arange(rows, device="cuda").unsqueeze(1)
    k = torch.arange(cols, device="cuda").unsqueeze(0)
    at = ((r // 128) * ((cols + 3) // 4) + k // 4) * 512 + (r % 32) * 16 + (r % 128 // 32) * 4 \
        + k % 4
    return swizzled[:, at.reshape(-1)].reshape(-1, cols)


def test_moe_dispatch_writes_the_groups_tensors_and_a_dynamic_token_layer_compiles_once(ops):
    # The MoE operators as an engine runs them: dispatch into the group's own tensors (no copy;
    # other tensors get the same bytes), then one MoE layer compiled with the token dimension
    # dynamic - three batch sizes, one graph, no graph break, eager's bytes.
    import torch._dynamo
    import torch._dynamo.testing
    bufs = symmcomm.ops.moe_buffers(MOE)
    scale = torch.full((1,), 5.0 / (6 * 448), device="cuda")
    x = bf16(20, seed=11)
    idx, w = routing(20, seed=12)
    ops.moe_dispatch(x, None, scale, idx, w, None, *bufs, MOE)
    mine = [t.clone() for t in bufs]
    outs = fresh_moe_outs()
    ops.moe_dispatch(x, None, scale, idx, w, None, *outs, MOE)
    torch.cuda.synchronize()
    assert bufs.expert_count.sum().item() == 40  # 20 tokens x top-2, none dropped
    for name, got, want in zip(bufs._fields, outs, mine):
        assert torch.equal(got, want), name
    expert_w = (bf16(8 * 256, seed=13).view(8, 256, 256) / 16).contiguous()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")

    def layer(x, idx, w, *buffers):  # the group's tensors as the graph's inputs
        return moe_layer(ops, x, idx, w, scale, expert_w, symmcomm.ops.MoeBuffers(*buffers))

    compiled = torch.compile(layer, backend=counter, fullgraph=True)
    for tokens in (8, 20, 32):
        x = bf16(tokens, seed=tokens)
        idx, w = routing(tokens, seed=tokens + 1)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(idx, 0)
        torch._dynamo.mark_dynamic(w, 0)
        got = compiled(x, idx, w, *bufs)
        want = moe_layer(ops, x, idx, w, scale, expert_w, bufs)
        torch.cuda.synchronize()
        assert got.shape == (tokens, 256)
        assert_same(got, want, "compiled vs eager at %d tokens" % tokens)
    assert counter.frame_count == 1, counter.frame_count
    assert sum(torch._dynamo.utils.counters["graph_break"].values()) == 0, \
        dict(torch._dynamo.utils.counters["graph_break"])


def test_an_unknown_group_is_named(ops):
    with pytest.raises(ValueError) as e:
        ops.all_gather(bf16(16), "no-such-group")
    assert "no communicator registered as 'no-such-group'" in str(e.value)


def test_ops_can_live_in_an_engines_namespace(ops):
    mine = symmcomm.ops.register_ops("symmcomm_engine_test")
    assert mine is symmcomm.ops.register_ops("symmcomm_engine_test")
    x = bf16(16)
    assert torch.equal(mine.all_gather(x, GROUP), x)


def test_each_namespace_runs_the_implementation_asked_for(ops):
    namespace = ops.name
    which = {n: symmcomm.ops.implementation(n, namespace) for n in symmcomm.ops.OPS}
    if namespace == NAMESPACES["c++"]:
        assert symmcomm.ops.native_operators() == NATIVE
        assert {n for n, i in which.items() if i == "c++"} == NATIVE
    else:
        assert set(which.values()) == {"python"}
    # Asking a namespace for the other implementation is refused, not silently ignored.
    other = "python" if namespace == NAMESPACES["c++"] else "c++"
    if other == "python" or "error" not in symmcomm.ops.native_library():
        with pytest.raises(symmcomm.LogicError, match="already has"):
            symmcomm.ops.register_ops(namespace, other)


def native_cases(ops):
    return [(op, args) for op, args in cases(ops)
            if op._qualified_op_name.split("::")[1] in NATIVE]


def test_both_implementations_give_the_same_bytes(comm):
    cpp, py = namespace_ops("c++"), namespace_ops("python")
    pairs = list(zip(native_cases(cpp), native_cases(py)))
    assert {a[0]._qualified_op_name.split("::")[1] for a, _ in pairs} == NATIVE
    for (op_c, args_c), (op_p, args_p) in pairs:
        name = op_c._qualified_op_name.split("::")[1]
        # Fresh outputs for *_out operators, so that each implementation writes its own.
        args_c = [a.clone() if isinstance(a, torch.Tensor) else a for a in args_c]
        args_p = [a.clone() if isinstance(a, torch.Tensor) else a for a in args_p]
        got_c, got_p = op_c(*args_c), op_p(*args_p)
        torch.cuda.synchronize()
        if got_c is None:  # an out operator: compare what it wrote
            got_c, got_p = tuple(args_c), tuple(args_p)
        got_c = got_c if isinstance(got_c, (tuple, list)) else (got_c,)
        got_p = got_p if isinstance(got_p, (tuple, list)) else (got_p,)
        for a, b in zip(got_c, got_p):
            if isinstance(a, torch.Tensor):
                assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, b.shape)
                assert_same(a.view(torch.uint8) if a.element_size() == 1 else a,
                            b.view(torch.uint8) if b.element_size() == 1 else b, name)


def bad_calls(ops):
    """(what, call, exception type) for arguments both implementations refuse."""
    x = bf16(32)
    data, bs, gs = ops.quantize_nvfp4(x, None)
    f8 = x.to(torch.float8_e4m3fn)
    one = torch.ones(1, device="cuda", dtype=torch.float32)
    strided = torch.empty(64, 256, device="cuda", dtype=torch.bfloat16)[::2]
    i32 = lambda v, dt=torch.int32: torch.tensor(v, device="cuda", dtype=dt)  # noqa: E731
    wide = (i32([32], torch.int64), i32([0]), i32([0]), i32([0]))
    short = (i32([32]), i32([0, 0]), i32([0]), i32([0]))
    zeros = (i32([0]), i32([0]), i32([0]), i32([0]))
    return [
        ("dtype", lambda: ops.all_gather(x.float(), GROUP), ValueError),
        ("group", lambda: ops.all_gather(x, "no-such-group"), ValueError),
        ("0-d", lambda: ops.reduce_scatter(x[0, 0], GROUP), ValueError),
        ("contiguity", lambda: ops.all_gather_out(x, strided, GROUP), ValueError),
        ("block scales", lambda: ops.all_gather_nvfp4(data, bs[:-1], gs, GROUP, None),
         ValueError),
        ("row_elements", lambda: ops.all_gather_nvfp4(data, bs, gs, GROUP, 0), ValueError),
        ("out dtype", lambda: ops.reduce_scatter_nvfp4(data, bs, gs, GROUP, torch.float16),
         ValueError),
        ("fp8 scale", lambda: ops.reduce_scatter_fp8(f8, one.double(), GROUP, torch.bfloat16),
         ValueError),
        ("quantize scale", lambda: ops.quantize_all_gather_nvfp4(x, one.double(), GROUP, None),
         ValueError),
        ("fused row_elements", lambda: ops.quantize_all_gather_nvfp4(x, None, GROUP, 0),
         ValueError),
        ("counts per rank", lambda: ops.all_gatherv(x, [32, 32], GROUP), ValueError),
        ("nvfp4 counts per rank", lambda: ops.all_gatherv_nvfp4(data, bs, gs, [16, 16], GROUP,
                                                                None), ValueError),
        ("own count", lambda: ops.reduce_scatterv(x, [], GROUP), ValueError),
        ("negative count", lambda: ops.all_gatherv(x, [-3], GROUP), ValueError),
        ("negative own count", lambda: ops.reduce_scatterv(x, [-3], GROUP), ValueError),
        ("device count dtype", lambda: ops.all_gatherv_device(x, *wide, GROUP), ValueError),
        ("device counts size", lambda: ops.reduce_scatterv_device(x, *short, GROUP), ValueError),
        ("rows of no element", lambda: ops.all_gatherv_device_nvfp4(data[:, :0], bs[:, :0], gs,
                                                                   *zeros, GROUP), ValueError),
        ("combine rows of no element",
         lambda: ops.reduce_scatterv_device_nvfp4(data[:, :0], bs[:, :0], gs, *zeros, GROUP),
         ValueError),
        ("moe group", lambda: ops.moe_combine(bf16(8 * 32).view(8, 32, 256), i32([0] * 8), 4,
                                              "no-such-moe"), ValueError),
        ("moe rows", lambda: ops.moe_dispatch(bf16(33), None, one, *routing(33), None,
                                              *fresh_moe_outs(), MOE), ValueError),
        ("moe routing", lambda: ops.moe_dispatch(x, None, one, routing(32)[0][:, :1],
                                                 routing(32)[1], None, *fresh_moe_outs(), MOE),
         ValueError),
        ("moe scale", lambda: ops.moe_dispatch(x, None, None, *routing(32), None,
                                               *fresh_moe_outs(), MOE), ValueError),
        ("moe out", lambda: ops.moe_dispatch(x, None, one, *routing(32), None,
                                             *fresh_moe_outs()[:5], i32([0, 0]), MOE),
         ValueError),
        ("moe num_rows", lambda: ops.moe_combine(bf16(8 * 32).view(8, 32, 256),
                                                 i32([0] * 8), 33, MOE), ValueError),
        ("re-quantized block scales",
         lambda: ops.reduce_scatter_nvfp4_q(data, bs[:, :-1], gs, GROUP), ValueError),
        ("quantize dtype", lambda: ops.quantize_nvfp4(x.float(), None), ValueError),
        ("dequantize global scale", lambda: ops.dequantize_nvfp4(data, bs, gs.double()),
         ValueError),
    ]


REFUSAL = """
import symmcomm, symmcomm.ops, torch
c = symmcomm.Communicator.init(1, symmcomm.unique_id(), 0, 0)
symmcomm.ops.register_communicator("g", c)
ops = symmcomm.ops.register_ops("symmcomm_refusal", "c++")
data, bs, gs = ops.quantize_nvfp4(torch.ones(32, 256, device="cuda", dtype=torch.bfloat16), None)
try:
    ops.all_gather_nvfp4(data, bs[:-1], gs, "g", None)
except ValueError as e:
    print("refused:", e)
"""


def test_a_refusal_formats_its_numbers_in_a_plain_python_process():
    # The operators' library used libstdc++ members of its own, bound in its own scope, whose
    # locale facet ids the runtime never registered: a refusal formatting a number crashed a
    # plain interpreter (NCCL 2.28.3 line, PyTorch 2.11) and passed only where an LD_PRELOAD had
    # put libstdc++ in the global scope. A fresh process without one, torch imported second.
    import subprocess
    import sys
    native_or_skip()
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", REFUSAL], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout + done.stderr[-3000:])
    assert "refused: send.block_scales has 496 elements; 4096 data bytes need 512" in \
        done.stdout, done.stdout


def test_the_cpp_operators_share_the_processes_cpp_runtime():
    # No local copy of what libstdc++ exports (scripts/check_runtime_copies.py): such a copy can
    # never bind to the runtime's.
    import subprocess
    import sys
    native_or_skip()
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "check_runtime_copies.py")
    done = subprocess.run([sys.executable, script, symmcomm.ops.native_library()["path"]],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_both_implementations_refuse_the_same_arguments_with_the_same_text(comm):
    cpp, py = namespace_ops("c++"), namespace_ops("python")
    for (what, call_c, kind), (_, call_p, _) in zip(bad_calls(cpp), bad_calls(py)):
        with pytest.raises(kind) as e_py:
            call_p()
        with pytest.raises(kind) as e_cpp:
            call_c()
        text_py, text_cpp = str(e_py.value), str(e_cpp.value)
        assert text_py and text_py in text_cpp, (what, text_py, text_cpp)


def test_a_released_communicator_is_forgotten(ops):
    c = symmcomm.Communicator.init(1, symmcomm.unique_id(), 0, 0)
    symmcomm.ops.register_communicator("symmcomm-test-released", c)
    x = bf16(16)
    assert torch.equal(ops.all_gather(x, "symmcomm-test-released"), x)
    c.release()
    with pytest.raises(ValueError, match="no communicator registered as 'symmcomm-test-released'"):
        ops.all_gather(x, "symmcomm-test-released")
