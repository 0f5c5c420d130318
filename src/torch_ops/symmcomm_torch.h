/* libsymmcomm_torch.so: symmcomm's PyTorch operators implemented in C++ (ops.cpp), for the
 * Python package (symmcomm.ops), which defines the operators' schemas and fakes and calls these
 * through ctypes. The operators call libsymmcomm_c.so's C ABI; this library needs the PyTorch it
 * was built against loaded first (import torch).
 *
 * Functions returning int return 0 on success and otherwise 1 with the reason written, NUL-
 * terminated and truncated to `capacity` bytes, into `error` (which may be NULL when capacity is
 * 0). No C++ exception crosses these functions. */
#ifndef SYMMCOMM_TORCH_H
#define SYMMCOMM_TORCH_H

#include <stddef.h>

#include "symmcomm/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The library is built with hidden symbols: these entry points are its only exports. */
#if defined(__GNUC__)
#define SYMMCOMM_TORCH_API __attribute__((visibility("default")))
#else
#define SYMMCOMM_TORCH_API
#endif

/** Bumped whenever a declaration here changes: the Python package checks it when loading. */
#define SYMMCOMM_TORCH_ABI_VERSION 2

/** SYMMCOMM_TORCH_ABI_VERSION of the library loaded. */
SYMMCOMM_TORCH_API int symmcomm_torch_abi_version(void);
/** The PyTorch version the library was built against ("2.11.0", from torch/version.h). */
SYMMCOMM_TORCH_API const char* symmcomm_torch_built_against(void);
/** The address of symmcomm_abi_version as this library bound it: the package compares it with
 *  the one it loaded, so that both use one copy of libsymmcomm_c.so (one communicator table). */
SYMMCOMM_TORCH_API const void* symmcomm_torch_c_library(void);
/** The operators implemented here, comma-separated, by their names in symmcomm.ops.OPS. */
SYMMCOMM_TORCH_API const char* symmcomm_torch_operators(void);
/** Registers this library's implementations of its operators, on PyTorch's CUDA dispatch key,
 *  in `ns` (whose schemas must be defined already; an implementation whose signature does not
 *  match its schema is refused with the dispatcher's text). Once per namespace; later calls for
 *  the same namespace do nothing. */
SYMMCOMM_TORCH_API int symmcomm_torch_register(const char* ns, char* error, size_t capacity);
/** Makes `comm` reachable from the operators as `name` (replacing any communicator of that
 *  name). `comm` must stay valid until removed. */
SYMMCOMM_TORCH_API int symmcomm_torch_set_communicator(const char* name, symmcomm_comm_t comm,
                                                       char* error, size_t capacity);
/** Forgets `name` (after every call using it has returned); 1 when it was registered, else 0. */
SYMMCOMM_TORCH_API int symmcomm_torch_remove_communicator(const char* name);
/** Makes the MoE group `group` (of shape `config`, as it was created, on CUDA device `device`)
 *  reachable from the MoE operators (moe_dispatch, moe_combine) as `name`, replacing any group
 *  of that name. `group` must stay valid until removed. */
SYMMCOMM_TORCH_API int symmcomm_torch_set_moe_group(const char* name, symmcomm_moe_t group,
                                                    const symmcomm_moe_config_t* config, int device,
                                                    char* error, size_t capacity);
/** Forgets the MoE group `name` (after every call using it has returned); 1 when it was
 *  registered, else 0. */
SYMMCOMM_TORCH_API int symmcomm_torch_remove_moe_group(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* SYMMCOMM_TORCH_H */
