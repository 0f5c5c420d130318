"""The library's MoE group (private: symmcomm.moe.MoeGroup drives it unless path="python"): the
C ABI's symmcomm_moe_* over symmcomm::MoeGroup - its LSA kernels, each routed row sent only to
its expert's rank and written straight into the masked layout, or its fallback over NCCL - with
the group's buffers viewed as PyTorch tensors."""
import ctypes

from . import _capi
from ._core import _check, _fail, _lib
from ._tensors import Nvfp4Tensor, _nvfp4, _plain, _stream_arg


class _Window:
    """A range of the group's window as a CUDA array (torch.as_tensor reads the interface and
    keeps this object, and through it the group, alive while the tensor lives)."""

    def __init__(self, owner, ptr, shape, typestr):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "version": 3, "strides": None}


class NativeGroup:
    """One symmcomm_moe_t and the views of its dispatch tensors."""

    _PATHS = {"auto": "auto", "lsa": "lsa-kernel", "fallback": "fallback"}

    def __init__(self, comm, config, device, stream, path="auto"):
        import torch
        c = _capi.MoeConfigC(config.num_experts, config.top_k, config.hidden,
                             config.max_tokens_per_rank, config.capacity,
                             _capi.PATHS[self._PATHS[path]], _capi.DTYPES[config.wire],
                             int(config.combine_in_place))
        self.handle = ctypes.c_void_p()
        _check(_lib.symmcomm_moe_create(comm._h(), ctypes.byref(c),
                                        ctypes.c_void_p(_stream_arg(stream, device)),
                                        ctypes.byref(self.handle)))
        b = _capi.MoeBuffersC()
        _check(_lib.symmcomm_moe_buffers(self.handle, ctypes.byref(b)))
        if b.capacity != config.capacity or b.local_experts != config.local_experts:
            _fail("MoeGroup: the library's group has %d experts of capacity %d here, the "
                  "config %d of %d" % (b.local_experts, b.capacity, config.local_experts,
                                       config.capacity))
        L, cap, H = config.local_experts, config.capacity, config.hidden
        dev = torch.device("cuda", device)

        def view(ptr, shape, typestr):
            return torch.as_tensor(_Window(self, ptr, shape, typestr), device=dev)

        self.wire = config.wire
        if self.wire == "bf16":  # bf16 has no array-interface type string: bytes viewed as bf16
            self.data = view(b.data, (L, cap, 2 * H), "|u1").view(torch.bfloat16)
            self.block_scales = None
        else:  # scales as bytes on both wires (moe.fp8_scales views fp8e4m3's as float32)
            self.data = view(b.data, (L, cap, H if self.wire == "fp8e4m3" else H // 2), "|u1")
            self.block_scales = view(b.block_scales, (L, b.expert_scale_bytes), "|u1")
        self.expert_count = view(b.expert_count, (L,), "<i4")
        self.global_scale = view(b.global_scale, (1,), "<f4")
        self.overflow = view(b.overflow, (1,), "<i4")
        self.error = view(b.error, (1,), "<i4")
        self.expert_out = None  # bf16 [L, capacity, hidden] where config.combine_in_place
        if b.expert_out:
            self.expert_out = view(b.expert_out, (L, cap, 2 * H), "|u1").view(torch.bfloat16)
        self.device = device
        self.path = "lsa" if _capi.TAKEN.get(b.path) == "lsa-kernel" else "fallback"

    def reason(self):
        needed = ctypes.c_size_t()
        _check(_lib.symmcomm_moe_reason(self.handle, None, 0, ctypes.byref(needed)))
        text = ctypes.create_string_buffer(needed.value)
        _check(_lib.symmcomm_moe_reason(self.handle, text, needed.value, None))
        return text.value.decode()

    def dispatch(self, x, global_scale, topk_idx, topk_weights, num_tokens, stream):
        """x: the tokens, an Nvfp4Tensor, or bf16 quantized in the dispatch with global_scale
        (shapes checked by the caller)."""
        if isinstance(x, Nvfp4Tensor):
            t, scale = _nvfp4(x, "x", self.device, 1), None
        else:
            t = _plain(x, "x", ("bfloat16",), self.device)
            scale = ctypes.c_void_p(global_scale.data_ptr()) if self.wire == "nvfp4" else None
        _check(_lib.symmcomm_moe_dispatch(
            self.handle, ctypes.byref(t), scale, ctypes.c_void_p(topk_idx.data_ptr()),
            ctypes.c_void_p(topk_weights.data_ptr()), ctypes.c_void_p(num_tokens.data_ptr()),
            ctypes.c_void_p(_stream_arg(stream, self.device))))

    def combine(self, expert_out, out, stream):
        y = _plain(expert_out, "expert_out", ("bfloat16",), self.device)
        o = _plain(out, "out", ("bfloat16",), self.device)
        _check(_lib.symmcomm_moe_combine(self.handle, ctypes.byref(y), ctypes.byref(o),
                                         ctypes.c_void_p(_stream_arg(stream, self.device))))

    def destroy(self):
        if self.handle is not None and self.handle.value:
            _check(_lib.symmcomm_moe_destroy(self.handle))
        self.handle = None
