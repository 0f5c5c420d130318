/* symmcomm C ABI: the symmetric pool and collectives for engines that are not C++ (Python via
 * ctypes, PyTorch's pluggable allocator), in the shared library libsymmcomm_c.so.
 *
 * Conventions
 * - Every function returns a symmcomm_status_t; on failure symmcomm_last_error() gives the text
 *   (thread-local: the last failure of the calling thread). No C++ exception crosses the ABI.
 * - Handles are opaque. Pools are thread-safe; communicators follow NCCL's rules (one thread
 *   issues a communicator's collectives at a time, in the same order on every rank).
 * - Collective calls (comm init/wrap with probing, pool creation with initial bytes, reserve,
 *   growth, verify, every collective) must be made by all ranks in the same order.
 * - Collectives are stream-ordered and do not synchronise the host.
 */
#ifndef SYMMCOMM_C_API_H
#define SYMMCOMM_C_API_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symmcomm/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A CUDA stream and an NCCL communicator, named by their struct types so that this header
 *  needs neither CUDA's nor NCCL's headers: the same types as cudaStream_t and ncclComm_t, which
 *  callers pass as they are (NULL is CUDA's legacy default stream). */
typedef struct CUstream_st* symmcomm_stream_t;
typedef struct ncclComm* symmcomm_nccl_comm_t;

/** Result of every symmcomm C call. */
typedef enum {
  SYMMCOMM_SUCCESS = 0,
  SYMMCOMM_ERROR_INVALID_ARGUMENT = 1, /* bad argument or state; see symmcomm_last_error() */
  SYMMCOMM_ERROR_CUDA = 2,
  SYMMCOMM_ERROR_NCCL = 3,
  SYMMCOMM_ERROR_OUT_OF_MEMORY = 4,
  SYMMCOMM_ERROR_NOT_SYMMETRIC = 5, /* symmcomm_verify found ranks that differ */
  SYMMCOMM_ERROR_INTERNAL = 6,
  SYMMCOMM_ERROR_TIMEOUT =
      7 /* a bounded wait expired (SYMMCOMM_WAIT_TIMEOUT_S): a peer may be gone */
} symmcomm_status_t;

/** Version of this C ABI: bumped whenever a declaration here changes incompatibly (bindings
 *  such as the Python package check it at load time). */
#define SYMMCOMM_C_ABI_VERSION 3

/** Path requested for a collective (symmcomm::PathChoice). */
typedef enum {
  SYMMCOMM_PATH_AUTO = 0,
  SYMMCOMM_PATH_NCCL_SYMMETRIC = 1,
  SYMMCOMM_PATH_LSA_KERNEL = 2,
  SYMMCOMM_PATH_FALLBACK = 3
} symmcomm_path_t;

/** Path a collective took (symmcomm::Path), written to *path_taken when not NULL. */
typedef enum {
  SYMMCOMM_TOOK_NCCL_SYMMETRIC = 0,
  SYMMCOMM_TOOK_LSA_KERNEL = 1,
  SYMMCOMM_TOOK_FALLBACK = 2
} symmcomm_path_taken_t;

/** FP8 encodings. */
typedef enum { SYMMCOMM_FP8_E4M3 = 0, SYMMCOMM_FP8_E5M2 = 1 } symmcomm_fp8_format_t;

typedef struct symmcomm_comm_s* symmcomm_comm_t; /**< a communicator (owned or borrowed) */
typedef struct symmcomm_pool_s* symmcomm_pool_t; /**< a symmetric memory pool */

/** An NVFP4 tensor: packed e2m1 data (count/2 bytes), e4m3 block scales (count/16 bytes) and
 *  the fp32 global scale (comm size floats for gathered tensors). */
typedef struct {
  uint8_t* data;
  uint8_t* block_scales;
  float* global_scale;
  size_t count;
} symmcomm_nvfp4_t;

/** An FP8 tensor: codes, its fp32 dequantization scale(s), count and format. */
typedef struct {
  uint8_t* data;
  float* scale;
  size_t count;
  symmcomm_fp8_format_t format;
} symmcomm_fp8_t;

/** Text of the calling thread's last failure ("" when none). Valid until the thread's next
 *  failing call. */
const char* symmcomm_last_error(void);
/** Library version, "major.minor.patch". */
const char* symmcomm_version(void);
/** SYMMCOMM_C_ABI_VERSION of the library loaded (compare with the header a binding expects). */
int symmcomm_abi_version(void);
/** Plan::reason() of the calling thread's last successful collective ("path: why"; "" before
 *  the first). Valid until the thread's next collective. */
const char* symmcomm_last_plan_reason(void);

/* ---- communicators ------------------------------------------------------------------------ */

/** Size of an NCCL unique id (NCCL_UNIQUE_ID_BYTES). */
size_t symmcomm_unique_id_bytes(void);
/** Writes a fresh NCCL unique id (symmcomm_unique_id_bytes() bytes) for symmcomm_comm_init. */
symmcomm_status_t symmcomm_get_unique_id(void* id_out);
/** Creates an owned communicator: rank `rank` of `nranks` on CUDA device `device`, from the id
 *  made by rank 0 and shared by the caller (e.g. a torch.distributed broadcast). Collective. */
symmcomm_status_t symmcomm_comm_init(int nranks, const void* id, int rank, int device,
                                     symmcomm_comm_t* out);
/** Wraps an engine's NCCL communicator without taking ownership. Collective when probe != 0.
 *  A value that cannot be the address of an ncclComm_t (NULL, below 4096, or not aligned to a
 *  pointer) is refused with SYMMCOMM_ERROR_INVALID_ARGUMENT naming it; any other value is
 *  trusted: an arbitrary address cannot be validated, and a wrong one is undefined behaviour. */
symmcomm_status_t symmcomm_comm_wrap(symmcomm_nccl_comm_t nccl_comm, int probe,
                                     symmcomm_comm_t* out);
/** Releases the handle (destroys an owned communicator once its pools are gone). NULL is a
 *  no-op that succeeds, as free(NULL). */
symmcomm_status_t symmcomm_comm_release(symmcomm_comm_t comm);
/** Rank, size, device and symmetric-memory support (any output may be NULL). */
symmcomm_status_t symmcomm_comm_info(symmcomm_comm_t comm, int* rank, int* size, int* device,
                                     int* symmetric);

/* ---- pool ---------------------------------------------------------------------------------- */

/** Creates a pool; reserves `initial_bytes` now (collective when > 0). `growth_bytes` is the
 *  least an on-demand arena adds (growth is collective); allow_growth 0 disables it. */
symmcomm_status_t symmcomm_pool_create(symmcomm_comm_t comm, size_t initial_bytes,
                                       size_t growth_bytes, int allow_growth, symmcomm_pool_t* out);
/** Destroys the pool (collective: arenas are deregistered). NULL is a no-op that succeeds. */
symmcomm_status_t symmcomm_pool_destroy(symmcomm_pool_t pool);
/** Adds an arena of `bytes`. Collective. */
symmcomm_status_t symmcomm_pool_reserve(symmcomm_pool_t pool, size_t bytes);
/** Allocates `bytes` aligned to `alignment` (0: 256). `stream` is checked for graph capture. */
symmcomm_status_t symmcomm_pool_allocate(symmcomm_pool_t pool, size_t bytes, size_t alignment,
                                         symmcomm_stream_t stream, void** out);
/** Returns an allocation (an error for foreign or already freed pointers). */
symmcomm_status_t symmcomm_pool_free(symmcomm_pool_t pool, void* ptr);
/** Stream-ordered return (SymmAllocator::deallocate(ptr, stream)): memory reused from it is
 *  used only after `stream` has passed this call. NULL is the legacy default stream; `stream`
 *  must not be capturing. */
symmcomm_status_t symmcomm_pool_free_async(symmcomm_pool_t pool, void* ptr,
                                           symmcomm_stream_t stream);
/** Statistics (any output may be NULL). */
symmcomm_status_t symmcomm_pool_stats(symmcomm_pool_t pool, size_t* reserved_bytes,
                                      size_t* in_use_bytes, size_t* arenas,
                                      size_t* live_allocations);
/** Collective check that every rank holds the same windows and allocations;
 *  SYMMCOMM_ERROR_NOT_SYMMETRIC names the first difference. */
symmcomm_status_t symmcomm_verify(symmcomm_comm_t comm, symmcomm_stream_t stream);

/** Whether [ptr, ptr + bytes) lies in a symmetric window of `comm`, and at which offset. */
symmcomm_status_t symmcomm_provenance(symmcomm_comm_t comm, const void* ptr, size_t bytes,
                                      int* symmetric, size_t* window_offset);

/* ---- codecs -------------------------------------------------------------------------------- */

/** BF16 -> NVFP4; compute_scale != 0 computes and stores the global scale. */
symmcomm_status_t symmcomm_quantize_nvfp4(const void* src_bf16, const symmcomm_nvfp4_t* dst,
                                          int compute_scale, symmcomm_stream_t stream);
/** NVFP4 -> BF16. */
symmcomm_status_t symmcomm_dequantize_nvfp4(const symmcomm_nvfp4_t* src, void* dst_bf16,
                                            symmcomm_stream_t stream);

/** BF16 -> FP8 of dst->format; compute_scale != 0 computes and stores the scale. */
symmcomm_status_t symmcomm_quantize_fp8(const void* src_bf16, const symmcomm_fp8_t* dst,
                                        int compute_scale, symmcomm_stream_t stream);
/** FP8 -> BF16. */
symmcomm_status_t symmcomm_dequantize_fp8(const symmcomm_fp8_t* src, void* dst_bf16,
                                          symmcomm_stream_t stream);

/* ---- collectives (path_taken may be NULL) -------------------------------------------------- */

/** Fused quantize + all-gather: this rank's `count` bf16 elements quantized with the device
 *  scale at `scale` (NULL: computed from the data) into every rank's `recv` (count x size
 *  elements, size scales). */
symmcomm_status_t symmcomm_quantize_all_gather_nvfp4(symmcomm_comm_t comm, const void* input_bf16,
                                                     size_t count, const symmcomm_nvfp4_t* recv,
                                                     const float* scale, symmcomm_path_t path,
                                                     symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_quantize_all_gather_fp8(symmcomm_comm_t comm, const void* input_bf16,
                                                   size_t count, const symmcomm_fp8_t* recv,
                                                   const float* scale, symmcomm_path_t path,
                                                   symmcomm_stream_t stream, int* path_taken);

symmcomm_status_t symmcomm_all_gather_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                           size_t send_count, symmcomm_path_t path,
                                           symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_all_gather_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                          const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                          symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_all_gather_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                            const symmcomm_nvfp4_t* recv, symmcomm_path_t path,
                                            symmcomm_stream_t stream, int* path_taken);
/** All-gathers with `counts[r]` elements from rank r (symmcomm::all_gatherv): `counts` is a host
 *  array of comm size entries, the same on every rank; send holds counts[rank] elements, recv
 *  their sum, rank r's part after ranks 0..r-1 (NVFP4: counts multiples of 16; FP8 and NVFP4
 *  recv: comm size scales). */
symmcomm_status_t symmcomm_all_gatherv_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                            const size_t* counts, symmcomm_path_t path,
                                            symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_all_gatherv_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                           const symmcomm_fp8_t* recv, const size_t* counts,
                                           symmcomm_path_t path, symmcomm_stream_t stream,
                                           int* path_taken);
symmcomm_status_t symmcomm_all_gatherv_nvfp4(symmcomm_comm_t comm, const symmcomm_nvfp4_t* send,
                                             const symmcomm_nvfp4_t* recv, const size_t* counts,
                                             symmcomm_path_t path, symmcomm_stream_t stream,
                                             int* path_taken);
/** NVFP4 gathers writing recv->block_scales in the swizzled 128x4 layout NVFP4 GEMMs read
 *  (symmcomm::ScaleLayout::Swizzled128x4): the gathered tensor is rows of `row_elements`
 *  elements (a multiple of 16; every rank's count whole rows), and recv->block_scales holds
 *  swizzled_scale_bytes(rows, row_elements / 16) bytes (symmcomm/formats/scale_layout.hpp),
 *  4-byte aligned. Otherwise as the functions without _swizzled. */
symmcomm_status_t symmcomm_all_gather_nvfp4_swizzled(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send,
                                                     const symmcomm_nvfp4_t* recv,
                                                     size_t row_elements, symmcomm_path_t path,
                                                     symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_all_gatherv_nvfp4_swizzled(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      const size_t* counts, size_t row_elements,
                                                      symmcomm_path_t path,
                                                      symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_quantize_all_gather_nvfp4_swizzled(
    symmcomm_comm_t comm, const void* input_bf16, size_t count, const symmcomm_nvfp4_t* recv,
    const float* scale, size_t row_elements, symmcomm_path_t path, symmcomm_stream_t stream,
    int* path_taken);
symmcomm_status_t symmcomm_reduce_scatter_bf16(symmcomm_comm_t comm, const void* send, void* recv,
                                               size_t recv_count, symmcomm_path_t path,
                                               symmcomm_stream_t stream, int* path_taken);
/** NVFP4 sum into BF16 (fp32 accumulation, one rounding). */
symmcomm_status_t symmcomm_reduce_scatter_nvfp4_bf16(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, void* recv_bf16,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     symmcomm_stream_t stream, int* path_taken);
/** FP8 sum into BF16 (fp32 accumulation, one rounding). */
symmcomm_status_t symmcomm_reduce_scatter_fp8_bf16(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   void* recv_bf16, size_t recv_count,
                                                   symmcomm_path_t path, symmcomm_stream_t stream,
                                                   int* path_taken);

/** NVFP4 / FP8 sums into fp32 (fp32 accumulation, no rounding). */
symmcomm_status_t symmcomm_reduce_scatter_nvfp4_fp32(symmcomm_comm_t comm,
                                                     const symmcomm_nvfp4_t* send, float* recv,
                                                     size_t recv_count, symmcomm_path_t path,
                                                     symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_reduce_scatter_fp8_fp32(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                   float* recv, size_t recv_count,
                                                   symmcomm_path_t path, symmcomm_stream_t stream,
                                                   int* path_taken);
/** NVFP4 / FP8 sums re-quantized to the input's format (recv->count elements; its one scale
 *  computed from this rank's fp32 sum). */
symmcomm_status_t symmcomm_reduce_scatter_nvfp4_nvfp4(symmcomm_comm_t comm,
                                                      const symmcomm_nvfp4_t* send,
                                                      const symmcomm_nvfp4_t* recv,
                                                      symmcomm_path_t path,
                                                      symmcomm_stream_t stream, int* path_taken);
symmcomm_status_t symmcomm_reduce_scatter_fp8_fp8(symmcomm_comm_t comm, const symmcomm_fp8_t* send,
                                                  const symmcomm_fp8_t* recv, symmcomm_path_t path,
                                                  symmcomm_stream_t stream, int* path_taken);

/* ---- PyTorch pluggable allocator ----------------------------------------------------------- */

/** Routes symmcomm_torch_alloc/free for `pool`'s device to `pool`. NULL is refused
 *  (SYMMCOMM_ERROR_INVALID_ARGUMENT: a NULL pool names no device); symmcomm_pool_destroy stops
 *  the routing of its device. A pool used
 *  this way should not grow on demand (growth is collective: allocate in the same order on
 *  every rank, or reserve enough and create it with allow_growth 0). */
symmcomm_status_t symmcomm_torch_set_pool(symmcomm_pool_t pool);
/** torch.cuda.memory.CUDAPluggableAllocator entry points. alloc returns NULL on failure (the
 *  reason is in symmcomm_last_error()); free of a foreign pointer is logged and ignored. free
 *  is stream-ordered (symmcomm_pool_free_async) on any stream that is not capturing, stream 0
 *  (PyTorch's default stream, CUDA's legacy stream) included. */
void* symmcomm_torch_alloc(ssize_t size, int device, symmcomm_stream_t stream);
void symmcomm_torch_free(void* ptr, ssize_t size, int device, symmcomm_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* SYMMCOMM_C_API_H */
