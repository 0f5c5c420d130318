"""symmcomm.shapes: the output shapes a fake implementation returns, checked without a GPU
against the rules the collectives enforce (and the library's own swizzled size)."""
import pytest

import symmcomm
from symmcomm import shapes


def test_swizzled_bytes_equal_the_librarys_for_every_small_shape():
    for rows in (0, 1, 127, 128, 129, 300, 1000):
        for cols in (0, 1, 3, 4, 5, 448):
            assert shapes.swizzled_scale_bytes(rows, cols) == symmcomm.swizzled_scale_bytes(rows, cols)


def test_all_gather_shapes_per_format():
    assert shapes.all_gather("bf16", 7168, 8) == {"data": ((57344,), "bfloat16")}
    assert shapes.all_gather("fp8", 32, 4) == {"data": ((128,), "float8"),
                                               "scale": ((4,), "float32")}
    nv = shapes.all_gather("nvfp4", 128 * 7168, 8)
    assert nv["data"] == ((8 * 128 * 7168 // 2,), "uint8")
    assert nv["block_scales"] == ((8 * 128 * 7168 // 16,), "float8_e4m3fn")
    assert nv["global_scale"] == ((8,), "float32")


def test_swizzled_scales_are_padded_to_whole_tiles():
    # 3 ranks x 1 row of 7168 elements: 3 rows padded to 128, 448 scale columns (whole tiles).
    nv = shapes.all_gather("nvfp4", 7168, 3, row_elements=7168)
    assert nv["block_scales"] == ((128 * 448,), "float8_e4m3fn")
    # 100-element-wide rows are no NVFP4 rows; 48 elements are not whole rows of 32.
    with pytest.raises(ValueError, match="row_elements 100 is not a multiple of 16"):
        shapes.all_gather("nvfp4", 200, 2, row_elements=100)
    with pytest.raises(ValueError, match="count 96 is not whole rows of row_elements 64"):
        shapes.all_gather("nvfp4", 48, 2, row_elements=64)


def test_all_gatherv_sums_the_counts():
    assert shapes.all_gatherv("bf16", [3, 0, 5]) == {"data": ((8,), "bfloat16")}
    nv = shapes.all_gatherv("nvfp4", [32, 0, 64], row_elements=32)
    assert nv["block_scales"] == ((shapes.swizzled_scale_bytes(3, 2),), "float8_e4m3fn")
    assert nv["global_scale"] == ((3,), "float32")
    with pytest.raises(ValueError, match=r"counts\[1\] 8 is not a multiple of 16"):
        shapes.all_gatherv("nvfp4", [16, 8])


def test_reduce_scatter_outputs():
    assert shapes.reduce_scatter("bf16", 4096, 4, "bf16") == {"data": ((1024,), "bfloat16")}
    assert shapes.reduce_scatter("nvfp4", 4096, 4, "fp32") == {"data": ((1024,), "float32")}
    assert shapes.reduce_scatter("nvfp4", 4096, 4, "nvfp4")["block_scales"] == (
        (64,), "float8_e4m3fn")
    with pytest.raises(ValueError, match="re-quantized output has the send's format"):
        shapes.reduce_scatter("fp8", 4096, 4, "nvfp4")
    with pytest.raises(ValueError, match="not divisible by ranks 3"):
        shapes.reduce_scatter("bf16", 4096, 3, "bf16")
    with pytest.raises(ValueError, match="shard 8 is not a multiple of 16"):
        shapes.reduce_scatter("nvfp4", 32, 4, "bf16")


def test_codecs_and_bad_kinds():
    assert shapes.quantize("nvfp4", 64)["data"] == ((32,), "uint8")
    assert shapes.quantize_all_gather("fp8", 16, 2)["scale"] == ((2,), "float32")
    assert shapes.dequantize(64) == {"data": ((64,), "bfloat16")}
    with pytest.raises(ValueError, match="kind must be one of"):
        shapes.all_gather("int8", 16, 2)
    with pytest.raises(ValueError, match="count_per_rank must be a non-negative int, got -1"):
        shapes.all_gather("bf16", -1, 2)


class SymInt:
    """Stands for torch.SymInt (matched by type name, as shapes does without importing torch):
    arithmetic gives another symbol; asking its value (a guard under torch.compile, which would
    specialise the graph on it) fails the test."""

    def __init__(self, expr):
        self.expr = expr

    def _op(self, other, fmt):
        return SymInt(fmt % (self.expr, getattr(other, "expr", other)))

    def __floordiv__(self, other):
        return self._op(other, "(%s//%s)")

    def __mul__(self, other):
        return self._op(other, "(%s*%s)")

    def __add__(self, other):
        return self._op(other, "(%s+%s)")

    def __neg__(self):
        return SymInt("-%s" % self.expr)

    def _guard(self, *_):
        raise AssertionError("guarded on a symbolic size: %s" % self.expr)

    __bool__ = __eq__ = __lt__ = __mod__ = __rmod__ = __int__ = __index__ = _guard


def test_symbolic_sizes_pass_through_without_guards():
    # opcheck's dynamic-shape pass traces the fakes with symbolic row counts (found on the H200:
    # "rows must be a non-negative int, got ((s26*s49)//256)").
    rows = SymInt("s0")
    got = shapes.swizzled_scale_bytes(rows, 448)
    assert isinstance(got, SymInt) and "s0" in got.expr
    nv = shapes.tensor_parts("nvfp4", SymInt("n"), 1, row_elements=7168)
    assert isinstance(nv["block_scales"][0][0], SymInt)
    # Concrete values are still checked.
    with pytest.raises(ValueError, match="rows must be a non-negative int, got -1"):
        shapes.swizzled_scale_bytes(-1, 4)


def test_pytorchs_symbolic_ints_are_symbolic():
    # torch.SymInt (2.x) and torch.SymIntNode (1.13, Debian's) both pass through unguarded.
    torch = pytest.importorskip("torch")
    symbolic_shapes = pytest.importorskip("torch.fx.experimental.symbolic_shapes")
    env = symbolic_shapes.ShapeEnv()
    if hasattr(env, "create_symint"):
        rows = env.create_symint("s0", 300)
    else:
        from torch._subclasses.fake_tensor import FakeTensorMode
        rows = FakeTensorMode(shape_env=env).from_tensor(torch.empty(300)).shape[0]
    assert shapes.is_symbolic(rows) and not shapes.is_symbolic(300)
    got = shapes.swizzled_scale_bytes(rows, 448)
    assert shapes.is_symbolic(got)
    assert shapes.swizzled_scale_bytes(300, 448) == 384 * 448
