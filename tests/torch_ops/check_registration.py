"""Registers libsymmcomm_torch.so's operators against symmcomm.ops' schemas in a PyTorch without
a GPU (scripts/check_torch_ops_cpu.sh builds the library for it): every C++ signature must match
its schema, the library must name the operators it implements, a mismatching schema must be
refused with the dispatcher's text, and the communicator registry must forget what is removed.
Exits non-zero on the first failure."""
import ctypes
import sys

import torch

import symmcomm
import symmcomm.ops as so

EXPECTED = {"all_gather", "all_gather_out", "all_gather_nvfp4", "all_gather_nvfp4_out",
            "all_gather_fp8", "reduce_scatter", "reduce_scatter_out", "reduce_scatter_nvfp4",
            "reduce_scatter_fp8", "quantize_all_gather_nvfp4"}


def check(cond, what):
    if not cond:
        sys.exit("check_registration: FAILED: " + what)
    print("ok:", what)


where = so.native_library()
check("error" not in where, "the library loads (%s)" % where)
check(set(where["operators"]) == EXPECTED, "it implements %s" % sorted(EXPECTED))
check(set(where["operators"]) <= set(so.OPS), "each is an operator of symmcomm.ops.OPS")
lib = so._native_library().lib
err = ctypes.create_string_buffer(4096)

schemas = torch.library.Library("symmcomm_schema_check", "DEF")
for name, (schema, _, _, _) in so.OPS.items():
    schemas.define(name + schema)
rc = lib.symmcomm_torch_register(b"symmcomm_schema_check", err, len(err))
check(rc == 0, "every C++ signature matches its schema (PyTorch %s): %s"
      % (torch.__version__, err.value.decode()))
check(lib.symmcomm_torch_register(b"symmcomm_schema_check", err, len(err)) == 0,
      "registering a namespace again does nothing")

wrong = torch.library.Library("symmcomm_schema_wrong", "DEF")
wrong.define("all_gather(Tensor x, int group) -> Tensor")
rc = lib.symmcomm_torch_register(b"symmcomm_schema_wrong", err, len(err))
text = err.value.decode()
check(rc == 1 and "all_gather" in text and "str" in text,
      "a mismatching schema is refused, naming the operator and type: %s" % text.splitlines()[0])
check(lib.symmcomm_torch_register(b"", err, len(err)) == 1 and "ns" in err.value.decode(),
      "an empty namespace is refused, naming ns")

check(lib.symmcomm_torch_remove_communicator(b"absent") == 0, "removing an unknown name: 0")
rc = lib.symmcomm_torch_set_communicator(b"x", None, err, len(err))
check(rc == 1 and err.value, "a NULL communicator is refused: %s" % err.value.decode())
print("check_registration: all passed (PyTorch %s, %s)" % (torch.__version__, where["path"]))
