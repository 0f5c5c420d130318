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

GROUPS = {"one": (0, 1), "two": (1, 2), "four": (3, 4)}  # name -> (rank, size)
DTYPES = [torch.bfloat16, torch.float32, torch.uint8, torch.int8, torch.int32, torch.int64,
          torch.float16, torch.float64]
RIGHT = {"data": torch.uint8, "block_scales": torch.uint8, "global_scale": torch.float32,
         "scale": torch.float32, "count": torch.int32, "counts": torch.int32,
         "offsets": torch.int32, "overflow": torch.int32}


@pytest.fixture
def groups(monkeypatch):
    """Communicators known by name only (the fakes read a group's rank and size)."""
    def entry(group):
        if group not in GROUPS:
            raise symmcomm.LogicError("no communicator registered as %r" % group)
        return GROUPS[group]
    monkeypatch.setattr(so, "_size", lambda g: entry(g)[1])
    monkeypatch.setattr(so, "_rank", lambda g: entry(g)[0])
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
                "int?": lambda: rng.choice([None, -16, -1, 0, 1, 8, 16, 32, 48]),
                "int[]": lambda: [rng.choice([-3, 0, 1, 2, 4, 8])
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
