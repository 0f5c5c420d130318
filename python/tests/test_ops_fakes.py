"""The torch operators' fakes (what torch.compile traces and the Python implementations size
their outputs with) on CPU tensors, no GPU needed: with random shapes, dtypes, counts, row
lengths and groups each fake returns or raises ValueError (symmcomm.LogicError) or RuntimeError,
the kinds the C++ operators raise, never IndexError, ZeroDivisionError or TypeError; a 0-d
tensor is named as the C++ operators name it."""
import random

import pytest

torch = pytest.importorskip("torch")
import symmcomm  # noqa: E402
import symmcomm.ops as so  # noqa: E402
from symmcomm import moe  # noqa: E402

GROUPS = {"one": (0, 1), "two": (1, 2), "four": (3, 4)}  # name -> (rank, size)
# The MoE groups by the same names: 8 experts, top-2, 64 tokens per rank; "one" on an nvfp4
# wire (hidden 64), "two" on a bf16 wire (64), "four" on an fp8e4m3 wire (128).
MOE_TOKENS = 64
MOE_WIRES = {"one": ("nvfp4", 64), "two": ("bf16", 64), "four": ("fp8e4m3", 128)}
MOE = {name: moe.MoeConfig(8, 2, MOE_WIRES[name][1], MOE_TOKENS, size, capacity=32,
                           wire=MOE_WIRES[name][0])
       for name, (_, size) in GROUPS.items()}
DTYPES = [torch.bfloat16, torch.float32, torch.uint8, torch.int8, torch.int32, torch.int64,
          torch.float16, torch.float64]
RIGHT = {"data": torch.uint8, "block_scales": torch.uint8, "global_scale": torch.float32,
         "scale": torch.float32, "count": torch.int32, "counts": torch.int32,
         "offsets": torch.int32, "overflow": torch.int32, "topk_idx": torch.int32,
         "topk_weights": torch.float32, "num_tokens": torch.int32, "expert_count": torch.int32,
         "out_data": torch.uint8, "out_block_scales": torch.uint8,
         "out_expert_count": torch.int32, "out_global_scale": torch.float32,
         "out_overflow": torch.int32, "out_error": torch.int32}


@pytest.fixture
def groups(monkeypatch):
    """Communicators known by name only (the fakes read a group's rank and size)."""
    def entry(group):
        if group not in GROUPS:
            raise symmcomm.LogicError("no communicator registered as %r" % group)
        return GROUPS[group]
    monkeypatch.setattr(so, "_size", lambda g: entry(g)[1])
    monkeypatch.setattr(so, "_rank", lambda g: entry(g)[0])

    def moe_shape(group):
        if group not in MOE:
            raise symmcomm.LogicError("no MoE group registered as %r" % group)
        c = MOE[group]
        return c, c.expert_scale_bytes
    monkeypatch.setattr(so, "_moe_shape", moe_shape)
    if not hasattr(torch, "_check"):  # PyTorch before 2.1 (Debian's): the same contract
        def check(cond, message=None):
            if not cond:
                raise RuntimeError(message() if message else "check failed")
        monkeypatch.setattr(torch, "_check", check, raising=False)
    if not hasattr(torch, "float8_e4m3fn"):  # shapes only: any one-byte dtype will do
        monkeypatch.setattr(torch, "float8_e4m3fn", torch.uint8, raising=False)


def signatures():
    out = {}
    for name, (schema, _, fake, _) in so.OPS.items():
        params = [p.strip() for p in schema[1:schema.rindex(") ->")].split(",") if p.strip()]
        out[name] = ([tuple(p.split("=")[0].split(" ")[:2]) for p in params], fake)
    return out


def test_fakes_raise_only_the_operators_kinds_of_error(groups):
    rng = random.Random(0)

    def tensor(name):
        dims = rng.choice([0, 1, 2, 3]) if rng.random() < 0.2 else rng.choice([1, 2, 2])
        shape = [rng.choice([0, 1, 2, 3, 4, 8, 16, 32, 64]) for _ in range(dims)]
        dtype = RIGHT.get(name, torch.bfloat16) if rng.random() < 0.85 else rng.choice(DTYPES)
        return torch.zeros(shape, dtype=dtype)

    def argument(kind, name):
        if kind.startswith("Tensor?"):
            return None if rng.random() < 0.4 else tensor(name)
        if kind.startswith("Tensor"):
            return tensor(name)
        return {"str": lambda: rng.choice(list(GROUPS) + ["no-such-group"]),
                "SymInt?": lambda: rng.choice([None, -16, -1, 0, 1, 8, 16, 32, 48]),
                "SymInt": lambda: rng.choice([-1, 0, 1, 8, 64, 65]),
                "SymInt[]": lambda: [rng.choice([-3, 0, 1, 2, 4, 8])
                                     for _ in range(rng.choice([0, 1, 2, 4]))],
                "ScalarType": lambda: rng.choice(DTYPES),
                "bool": lambda: rng.random() < 0.5}[kind]()

    sigs = signatures()
    outcomes = {"returned": 0, "ValueError": 0, "RuntimeError": 0}
    for _ in range(5000):
        name = rng.choice(sorted(sigs))
        kinds, fake = sigs[name]
        args = [argument(kind, pname) for kind, pname in kinds]
        try:
            fake(*args)
            outcomes["returned"] += 1
        except ValueError:
            outcomes["ValueError"] += 1
        except RuntimeError:
            outcomes["RuntimeError"] += 1
        except Exception as e:  # noqa: BLE001 (any other kind is the failure reported)
            described = [(tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else a
                         for a in args]
            pytest.fail("%s%r raised %s: %s" % (name, tuple(described), type(e).__name__, e))
    assert all(outcomes.values()), outcomes  # every outcome happened: the arguments vary enough


@pytest.mark.parametrize("call, text", [
    (lambda: so.OPS["all_gather"][2](torch.zeros(()), "two"), "x must have at least one"),
    (lambda: so.OPS["reduce_scatter"][2](torch.zeros(()), "two"), "x must have at least one"),
    (lambda: so.OPS["reduce_scatterv"][2](torch.zeros(()), [1, 1], "two"),
     "x must have at least one"),
    (lambda: so.OPS["dequantize_nvfp4"][2](torch.zeros((), dtype=torch.uint8),
                                           torch.zeros(1), torch.ones(1)),
     "data must have at least one"),
    (lambda: so.OPS["reduce_scatter_nvfp4_q"][2](torch.zeros(4, 8, dtype=torch.uint8),
                                                 torch.zeros(()), torch.ones(1), "two"),
     "block_scales must have at least one"),
])
def test_a_0d_tensor_is_named_as_the_cpp_operators_name_it(groups, call, text):
    with pytest.raises(ValueError, match=text + r" dimension \(rows\), got a 0-d tensor"):
        call()


# ---- symbolic sizes and counts (torch.compile's dynamic shapes) ------------------------------

class SymTensor:
    """A tensor of symbolic shape as a fake sees it (shape, dim, numel, dtype, new_empty):
    PyTorch 1.13 cannot allocate even a fake tensor of a symbolic shape."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for d in self.shape:
            n = d * n
        return n

    def new_empty(self, shape, dtype=None):
        return SymTensor(shape, self.dtype if dtype is None else dtype)


class Symbols:
    """Symbolic ints with hints from one ShapeEnv, and tensors of shapes made of them: real fake
    tensors (FakeTensorMode(shape_env=...)) where PyTorch has them for symbolic shapes (2.x),
    SymTensor stand-ins on PyTorch 1.13 (ShapeEnv.create_symint)."""

    def __init__(self):
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        self.env = ShapeEnv()
        self.mode = None
        if not hasattr(self.env, "create_symint"):  # PyTorch 2.x
            from torch._subclasses.fake_tensor import FakeTensorMode
            self.mode = FakeTensorMode(shape_env=self.env)

    def ints(self, *hints):
        if self.mode is None:
            return [self.env.create_symint("s%d" % i, h) for i, h in enumerate(hints)]
        # Every size of a fake tensor made with a ShapeEnv is a symbol (sizes 0 and 1 would be
        # specialised: hints here are >= 2 and distinct, so no two share a symbol).
        assert len(set(hints)) == len(hints) and min(hints) >= 2, hints
        return list(self.mode.from_tensor(torch.empty_strided(hints, [0] * len(hints))).shape)

    def tensor(self, shape, dtype):
        if self.mode is None:
            return SymTensor(shape, dtype)
        with self.mode:
            return torch.empty(shape, dtype=dtype)

    def specialised(self):
        """The guards that pin a symbol to one value (a graph recompiled for every batch)."""
        pinned = []
        for guard in self.env.guards:
            expr = getattr(guard, "expr", guard)
            args = getattr(expr, "args", ())
            if type(expr).__name__ == "Equality" and len(args) == 2 and any(
                    a.is_Symbol for a in args) and any(a.is_Number for a in args):
                pinned.append(str(expr))
        return pinned


def symbolic_cases(sym, t, h, counts, rank, size):
    """(operator, arguments) for every operator of OPS, valid for a group of `size` ranks: `t`
    rows per rank, hidden `h`, v-collective row counts `counts`."""
    f8 = getattr(torch, "float8_e4m3fn", torch.uint8)
    i32 = lambda n: sym.tensor((n,), torch.int32)  # noqa: E731
    x = sym.tensor((t, h), torch.bfloat16)
    xs = sym.tensor((t * size, h), torch.bfloat16)
    xv = sym.tensor((sum(counts), h), torch.bfloat16)
    data, bs = sym.tensor((t, h // 2), torch.uint8), sym.tensor((t, h // 16), f8)
    data_s, bs_s = sym.tensor((t * size, h // 2), torch.uint8), sym.tensor((t * size, h // 16), f8)
    gs, one = sym.tensor((1,), torch.float32), sym.tensor((1,), torch.float32)
    fp8, fp8_s = sym.tensor((t, h), f8), sym.tensor((t * size, h), f8)
    dev = (i32(1), i32(size), i32(size), i32(1))
    outs = (sym.tensor((t * size, h // 2), torch.uint8), sym.tensor((t * size, h // 16), f8),
            sym.tensor((size,), torch.float32))
    return [
        ("all_gather", (x, GROUP_OF[size])),
        ("all_gather_out", (x, sym.tensor((t * size, h), torch.bfloat16), GROUP_OF[size])),
        ("all_gather_nvfp4", (data, bs, gs, GROUP_OF[size], None)),
        ("all_gather_nvfp4", (data, bs, gs, GROUP_OF[size], h)),
        ("all_gather_nvfp4_out", (data, bs, gs) + outs + (GROUP_OF[size], None)),
        ("all_gather_fp8", (fp8, one, GROUP_OF[size])),
        ("all_gatherv", (x, counts, GROUP_OF[size])),
        ("all_gatherv_nvfp4", (data, bs, gs, counts, GROUP_OF[size], None)),
        ("all_gatherv_nvfp4", (data, bs, gs, counts, GROUP_OF[size], h)),
        ("all_gatherv_device", (x,) + dev + (GROUP_OF[size],)),
        ("all_gatherv_device_nvfp4", (data, bs, gs) + dev + (GROUP_OF[size], False)),
        ("all_gatherv_device_nvfp4", (data, bs, gs) + dev + (GROUP_OF[size], True)),
        ("reduce_scatterv_device", (xs,) + dev + (GROUP_OF[size],)),
        ("reduce_scatterv_device_nvfp4", (data_s, bs_s, gs) + dev + (GROUP_OF[size],)),
        ("reduce_scatter", (xs, GROUP_OF[size])),
        ("reduce_scatter_out", (xs, x, GROUP_OF[size])),
        ("reduce_scatter_nvfp4", (data_s, bs_s, gs, GROUP_OF[size], torch.bfloat16)),
        ("reduce_scatter_fp8", (fp8_s, one, GROUP_OF[size], torch.float32)),
        ("reduce_scatter_nvfp4_q", (data_s, bs_s, gs, GROUP_OF[size])),
        ("reduce_scatter_fp8_q", (fp8_s, one, GROUP_OF[size])),
        ("reduce_scatterv", (xv, counts, GROUP_OF[size])),
        ("quantize_all_gather_nvfp4", (x, None, GROUP_OF[size], None)),
        ("quantize_all_gather_nvfp4", (x, one, GROUP_OF[size], h)),
        ("quantize_nvfp4", (x, None)),
        ("dequantize_nvfp4", (data, bs, gs)),
    ] + moe_cases(sym, t, GROUP_OF[size])


def moe_cases(sym, t, group):
    """The MoE operators on `t` tokens (the group's hidden size: it is the group's, not the
    graph's)."""
    c = MOE[group]
    H, K, L = c.hidden, c.top_k, c.local_experts
    f8 = getattr(torch, "float8_e4m3fn", torch.uint8)
    routing = (sym.tensor((t, K), torch.int32), sym.tensor((t, K), torch.float32))
    one = sym.tensor((1,), torch.float32)
    counts = (sym.tensor((L,), torch.int32), sym.tensor((1,), torch.float32),
              sym.tensor((1,), torch.int32), sym.tensor((1,), torch.int32))
    if c.wire == "bf16":  # rows as they are, no block scales, no global scale
        outs = (sym.tensor((L, c.capacity, H), torch.bfloat16), sym.tensor((L, 0), torch.uint8))
        dispatches = [("moe_dispatch", (sym.tensor((t, H), torch.bfloat16), None, None) + routing
                       + (None,) + outs + counts + (group,))]
    elif c.wire == "fp8e4m3":  # bf16 tokens quantized per 128 elements, no global scale
        outs = (sym.tensor((L, c.capacity, H), f8),
                sym.tensor((L, c.expert_scale_bytes), torch.uint8))
        dispatches = [("moe_dispatch", (sym.tensor((t, H), torch.bfloat16), None, None) + routing
                       + (sym.tensor((1,), torch.int32),) + outs + counts + (group,))]
    else:
        scale_bytes = symmcomm.swizzled_scale_bytes(c.capacity, H // 16)
        outs = (sym.tensor((L, c.capacity, H // 2), torch.uint8),
                sym.tensor((L, scale_bytes), torch.uint8))
        dispatches = [
            ("moe_dispatch", (sym.tensor((t, H), torch.bfloat16), None, one) + routing + (None,)
             + outs + counts + (group,)),
            ("moe_dispatch", (sym.tensor((t, H // 2), torch.uint8), sym.tensor((t, H // 16), f8),
                              one) + routing + (sym.tensor((1,), torch.int32),) + outs + counts
             + (group,))]
    return dispatches + [
        ("moe_combine", (sym.tensor((L, c.capacity, H), torch.bfloat16),
                         sym.tensor((L,), torch.int32), t, group)),
    ]


GROUP_OF = {size: name for name, (_, size) in GROUPS.items()}


def concrete(value):
    """A symbolic int's value at its symbols' hints (without a guard)."""
    if not symmcomm.shapes.is_symbolic(value):
        return value
    if hasattr(value, "node"):  # PyTorch 2.x
        return int(value.node.hint)
    expr = value.get_pyobj()
    return int(expr.expr.xreplace(expr.shape_env.var_to_val))


@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("hidden_symbolic", [False, True])
def test_fakes_take_symbolic_sizes_and_counts(groups, group, hidden_symbolic):
    """The token dimension, the hidden size (when asked) and the v-collectives' counts are
    symbols: every fake returns without specialising any of them, and its outputs at the
    symbols' hints have the shapes and dtypes the same fake gives for plain ints."""
    rank, size = GROUPS[group]
    hints = [48, 256 if hidden_symbolic else 512] + [16 * (i + 3) for i in range(size)]
    # 48 tokens; counts 48, 64, ... would share 48's symbol: shift them past the others.
    hints[2:] = [c + 1000 for c in hints[2:]]
    sym = Symbols()
    t, h, *counts = sym.ints(*hints)
    if not hidden_symbolic:
        h = hints[1]
    cases = symbolic_cases(sym, t, h, counts, rank, size)
    assert {name for name, _ in cases} == set(so.OPS)
    plain = Symbols.__new__(Symbols)
    plain.mode = None
    plain.tensor = lambda shape, dtype: torch.empty(shape, dtype=dtype)
    expected = symbolic_cases(plain, hints[0], hints[1], hints[2:], rank, size)
    for (name, args), (_, args_plain) in zip(cases, expected):
        fake = so.OPS[name][2]
        got = fake(*args)
        pinned = sym.specialised()
        assert not pinned, (name, pinned)
        want = fake(*args_plain)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            if w is None:
                assert g is None, name
                continue
            assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
            assert [concrete(d) for d in g.shape] == list(w.shape), (name, g.shape, w.shape)
        # Outputs sized by the token dimension stay symbolic (no graph per batch size).
        if got[0] is not None and name not in ("all_gatherv", "reduce_scatterv"):
            assert symmcomm.shapes.is_symbolic(got[0].shape[0]) or got[0].dim() == 1 and not \
                any(symmcomm.shapes.is_symbolic(d) for a in args if hasattr(a, "shape")
                    for d in a.shape), (name, got[0].shape)
