"""Prints what CMake needs to build against the PyTorch this interpreter imports, as a CMake
list: "ok;<version>;<cxx11 abi 0|1>;<library dir>;<include dir>...", or "missing;<reason>"."""
import os
import sys

try:
    import torch
except Exception as e:  # noqa: BLE001 (any import failure means: no usable PyTorch)
    print("missing;%s: %s" % (type(e).__name__, str(e).replace(";", ",")))
    sys.exit(0)

root = os.path.dirname(os.path.abspath(torch.__file__))
includes = [os.path.join(root, "include"),
            os.path.join(root, "include", "torch", "csrc", "api", "include")]
print(";".join(["ok", torch.__version__.split("+")[0], str(int(torch._C._GLIBCXX_USE_CXX11_ABI)),
                os.path.join(root, "lib")] + includes))
