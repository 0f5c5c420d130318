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
 *  such as the Python package check it at load time). 4: collectives and codecs over tagged
 *  tensor descriptors (symmcomm_tensor_t), size-versioned options and plan out-parameters;
 *  3 had one entry point per type, layout and output combination. */
#define SYMMCOMM_C_ABI_VERSION 5

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

typedef struct symmcomm_comm_s* symmcomm_comm_t; /**< a communicator (owned or borrowed) */
typedef struct symmcomm_pool_s* symmcomm_pool_t; /**< a symmetric memory pool */

/** Element type of a tensor (symmcomm::DataType, in its order). */
typedef enum {
  SYMMCOMM_DTYPE_NVFP4 = 0,    /* packed e2m1 + e4m3 block scales (16 elements) + fp32 global */
  SYMMCOMM_DTYPE_FP8_E4M3 = 1, /* e4m3 codes + fp32 scale */
  SYMMCOMM_DTYPE_FP8_E5M2 = 2, /* e5m2 codes + fp32 scale */
  SYMMCOMM_DTYPE_BF16 = 3,
  SYMMCOMM_DTYPE_FP32 = 4
} symmcomm_dtype_t;

/** Layout of an NVFP4 tensor's block scales (symmcomm::ScaleLayout). */
typedef enum {
  SYMMCOMM_SCALE_LAYOUT_LINEAR = 0,        /* element i's block scale at byte i / 16 */
  SYMMCOMM_SCALE_LAYOUT_SWIZZLED_128X4 = 1 /* the 128 x 4 tiles NVFP4 GEMMs read, rows of
                                              row_elements (symmcomm/formats/scale_layout.hpp) */
} symmcomm_scale_layout_t;

/** Why a collective took its path (symmcomm::PlanReason, in its order). */
typedef enum {
  SYMMCOMM_REASON_ALL_SYMMETRIC = 0,
  SYMMCOMM_REASON_LSA_KERNEL_FASTER = 1,
  SYMMCOMM_REASON_FORCED_FALLBACK = 2,
  SYMMCOMM_REASON_NO_SYMMETRIC_SUPPORT = 3,
  SYMMCOMM_REASON_BUFFER_NOT_SYMMETRIC = 4,
  SYMMCOMM_REASON_VARIABLE_COUNTS = 5,
  SYMMCOMM_REASON_SCALED_REDUCTION = 6,
  SYMMCOMM_REASON_LSA_KERNEL_UNAVAILABLE = 7,
  SYMMCOMM_REASON_STAGED = 8,
  SYMMCOMM_REASON_FUSED_QUANTIZE = 9,
  SYMMCOMM_REASON_NCCL_FASTER_HERE = 10,
  SYMMCOMM_REASON_FORCED = 11,
  SYMMCOMM_REASON_NCCL_CANNOT = 12,
  SYMMCOMM_REASON_LSA_KERNEL_FUSES = 13,
  SYMMCOMM_REASON_QUANTIZED_SEND_IN_WORKSPACE = 14,
  SYMMCOMM_REASON_DEVICE_COUNTS = 15,
  SYMMCOMM_REASON_DEVICE_COUNTS_IN_ONE_LAUNCH = 16
} symmcomm_plan_reason_t;

/** One tensor of a call, tagged with its element type. Which fields a dtype uses:
 *  - BF16, FP32: data, count (block_scales and scales NULL).
 *  - FP8_E4M3, FP8_E5M2: data (count bytes), scales (its fp32 dequantization scale; a gathered
 *    tensor holds one per rank).
 *  - NVFP4: data (count / 2 bytes), block_scales (count / 16 bytes when LINEAR; when
 *    SWIZZLED_128X4, swizzled_scale_bytes(count / row_elements, row_elements / 16) bytes,
 *    4-byte aligned), scales (the fp32 global scale; a gathered tensor holds one per rank).
 *  scale_layout and row_elements apply to NVFP4 only (LINEAR and 0 otherwise); SWIZZLED_128X4
 *  is what a gather can write into its receive tensor. Build one with the symmcomm_tensor_*
 *  helpers below or a designated initializer (unset fields zero). */
typedef struct {
  symmcomm_dtype_t dtype;               /**< element type; says which fields below are used */
  symmcomm_scale_layout_t scale_layout; /**< NVFP4 block scales' layout (LINEAR otherwise) */
  void* data;                           /**< device pointer to the elements (packed codes) */
  void* block_scales;                   /**< NVFP4: device pointer to the e4m3 block scales */
  float* scales;       /**< FP8: the fp32 scale; NVFP4: the global scale (one per rank gathered) */
  size_t count;        /**< elements (not bytes) */
  size_t row_elements; /**< with SYMMCOMM_SCALE_LAYOUT_SWIZZLED_128X4: elements per row */
} symmcomm_tensor_t;

/** A BF16 tensor of `count` elements at device pointer `data`. */
static inline symmcomm_tensor_t symmcomm_tensor_bf16(void* data, size_t count) {
  symmcomm_tensor_t t = {
      SYMMCOMM_DTYPE_BF16, SYMMCOMM_SCALE_LAYOUT_LINEAR, data, NULL, NULL, count, 0};
  return t;
}
/** An FP32 tensor of `count` elements at device pointer `data`. */
static inline symmcomm_tensor_t symmcomm_tensor_fp32(float* data, size_t count) {
  symmcomm_tensor_t t = {
      SYMMCOMM_DTYPE_FP32, SYMMCOMM_SCALE_LAYOUT_LINEAR, data, NULL, NULL, count, 0};
  return t;
}
/** An FP8 tensor of `count` one-byte codes at `data` and its fp32 dequantization `scale`
 *  (device pointers); dtype: SYMMCOMM_DTYPE_FP8_E4M3 or SYMMCOMM_DTYPE_FP8_E5M2. */
static inline symmcomm_tensor_t symmcomm_tensor_fp8(symmcomm_dtype_t dtype, void* data,
                                                    float* scale, size_t count) {
  symmcomm_tensor_t t = {dtype, SYMMCOMM_SCALE_LAYOUT_LINEAR, data, NULL, scale, count, 0};
  return t;
}
/** An NVFP4 tensor of `count` elements: count / 2 bytes of packed e2m1 codes at `data`, count /
 *  16 e4m3 block scales at `block_scales` (linear layout) and the fp32 `global_scale` (device
 *  pointers; a gathered tensor holds one global scale per rank). */
static inline symmcomm_tensor_t symmcomm_tensor_nvfp4(void* data, void* block_scales,
                                                      float* global_scale, size_t count) {
  symmcomm_tensor_t t = {SYMMCOMM_DTYPE_NVFP4,
                         SYMMCOMM_SCALE_LAYOUT_LINEAR,
                         data,
                         block_scales,
                         global_scale,
                         count,
                         0};
  return t;
}
/** An NVFP4 tensor whose block scales are in the swizzled 128 x 4 layout, rows of
 *  `row_elements` elements (a multiple of 16). */
static inline symmcomm_tensor_t symmcomm_tensor_nvfp4_swizzled(void* data, void* block_scales,
                                                               float* global_scale, size_t count,
                                                               size_t row_elements) {
  symmcomm_tensor_t t = {SYMMCOMM_DTYPE_NVFP4,
                         SYMMCOMM_SCALE_LAYOUT_SWIZZLED_128X4,
                         data,
                         block_scales,
                         global_scale,
                         count,
                         row_elements};
  return t;
}

/** Execution policy of a collective (symmcomm::Options). Size-versioned: struct_size is
 *  sizeof(symmcomm_options_t) as the caller compiled it (SYMMCOMM_OPTIONS_INIT sets it). Fields
 *  a smaller (older) struct lacks take their defaults; a larger (newer) struct is accepted when
 *  the bytes this library does not know are zero. NULL options: all defaults. */
typedef struct {
  size_t struct_size;     /**< sizeof(symmcomm_options_t) as the caller compiled it */
  symmcomm_path_t path;   /**< requested path (default SYMMCOMM_PATH_AUTO) */
  int agree_plan;         /**< != 0: agree the path with every rank first (debugging; see
                               symmcomm::Options::agree_plan) */
  int pdl_fence;          /**< default 1 (symmcomm::Options::pdl_fence) */
  int allow_staging;      /**< != 0: copy plain buffers through the staging ranges below */
  void* workspace;        /**< device scratch for quantized fallbacks (NULL: the communicator's) */
  size_t workspace_bytes; /**< bytes at `workspace` */
  void* staging_send;     /**< symmetric staging scratch for the send side (symmcomm::Staging) */
  size_t staging_send_bytes; /**< bytes at `staging_send` */
  void* staging_recv;        /**< symmetric staging scratch for the receive side */
  size_t staging_recv_bytes; /**< bytes at `staging_recv` */
} symmcomm_options_t;

#define SYMMCOMM_OPTIONS_INIT \
  { sizeof(symmcomm_options_t), SYMMCOMM_PATH_AUTO, 0, 1, 0, NULL, 0, NULL, 0, NULL, 0 }

/** The plan a collective took, written when its plan argument is not NULL. Initialise with
 *  SYMMCOMM_PLAN_INIT (struct_size is how much the library may write). The reason's text is
 *  produced only when asked: symmcomm_plan_describe. */
typedef struct {
  size_t struct_size;            /**< sizeof(symmcomm_plan_t) as the caller compiled it */
  symmcomm_path_taken_t path;    /**< the path the call took */
  symmcomm_plan_reason_t reason; /**< why (symmcomm_plan_describe gives the text) */
  int staged;                    /**< plain buffers were copied through staging scratch */
  uint64_t private_data[24]; /**< the library's record of the plan, for symmcomm_plan_describe */
} symmcomm_plan_t;

#define SYMMCOMM_PLAN_INIT                                                                 \
  {                                                                                        \
    sizeof(symmcomm_plan_t), SYMMCOMM_TOOK_FALLBACK, SYMMCOMM_REASON_FORCED_FALLBACK, 0, { \
      0                                                                                    \
    }                                                                                      \
  }

/** The device-side counts of a device-count gather (symmcomm::DeviceCounts, device_counts.hpp; all
 * device pointers): this rank's row count (int32, read when the call runs), the rows every rank's
 *  send has room for, and arrays of comm size int32 the call writes with every rank's count and
 *  their exclusive prefix; `overflow` is set to 1 when a count is outside 0..capacity. */
typedef struct {
  const int32_t* count; /**< this rank's row count (one int32, read when the call runs);
                             symmcomm_reduce_scatterv_device only: NULL when `counts` already
                             holds every rank's count (gathered by the dispatch) */
  size_t capacity;      /**< rows every rank's send has room for */
  int32_t* counts;      /**< comm size int32: written with every rank's count */
  int32_t* offsets;     /**< comm size int32: written with the counts' exclusive prefix */
  int32_t* overflow;    /**< one int32, set to 1 when a count is outside 0..capacity */
} symmcomm_device_counts_t;

/** Enumerations whose names the library exports (symmcomm_enum_name). */
typedef enum {
  SYMMCOMM_ENUM_STATUS = 0,       /* symmcomm_status_t: "success", "invalid-argument", ... */
  SYMMCOMM_ENUM_PATH = 1,         /* symmcomm_path_t: "auto", "nccl-symmetric", ... */
  SYMMCOMM_ENUM_PATH_TAKEN = 2,   /* symmcomm_path_taken_t */
  SYMMCOMM_ENUM_DTYPE = 3,        /* symmcomm_dtype_t: "nvfp4", "fp8e4m3", ... */
  SYMMCOMM_ENUM_SCALE_LAYOUT = 4, /* symmcomm_scale_layout_t: "linear", "swizzled128x4" */
  SYMMCOMM_ENUM_PLAN_REASON = 5   /* symmcomm_plan_reason_t */
} symmcomm_enum_t;

/** Text of the calling thread's last failure ("" when none). Valid until the thread's next
 *  failing call. */
const char* symmcomm_last_error(void);
/** Library version, "major.minor.patch". */
const char* symmcomm_version(void);
/** SYMMCOMM_C_ABI_VERSION of the library loaded (compare with the header a binding expects). */
int symmcomm_abi_version(void);
/** What symmcomm will do on this machine (symmcomm/system_report.hpp; the symmcomm-info tool
 *  prints it): text when json is 0, else JSON of schema "symmcomm-info/1"; probe_ranks > 0 also
 *  makes that many ranks sharing GPU 0 and reports their capabilities (0: no communicator is
 *  made). Writes at most capacity bytes, NUL-terminated, and the bytes the whole report needs
 *  (with its NUL) to *needed when needed is not NULL; text may be NULL when capacity is 0.
 *  Works without a GPU (a probe then says why it could not run). The report is made anew on
 *  every call. */
symmcomm_status_t symmcomm_system_report(int json, int probe_ranks, char* text, size_t capacity,
                                         size_t* needed);

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

/* ---- plans and enumerations --------------------------------------------------------------- */

/** Writes the plan's explanation ("path: why", naming the buffer and window where that is the
 *  reason) into `text` (up to `capacity` bytes, NUL-terminated, truncated if needed; `text`
 *  may be NULL when capacity is 0) and its full length plus the NUL into *needed (may be
 *  NULL). Formatting happens here, never in the collective. */
symmcomm_status_t symmcomm_plan_describe(const symmcomm_plan_t* plan, char* text, size_t capacity,
                                         size_t* needed);
/** The name of `value` in enumeration `kind` (lowercase, as symmcomm's C++ to_string and the
 *  Python package spell it), or NULL when `value` is past the last one: bindings build their
 *  enumerations from these instead of typing them twice. */
const char* symmcomm_enum_name(symmcomm_enum_t kind, int value);

/* ---- codecs -------------------------------------------------------------------------------- */

/** Quantizes the BF16 tensor `src` into `dst` (NVFP4 or FP8, the same count);
 *  compute_scale != 0 computes dst's scale from the data and stores it, else dst's scale is
 *  read. */
symmcomm_status_t symmcomm_quantize(const symmcomm_tensor_t* src, const symmcomm_tensor_t* dst,
                                    int compute_scale, symmcomm_stream_t stream);
/** Dequantizes `src` (NVFP4 or FP8, linear scales) into the BF16 tensor `dst`. */
symmcomm_status_t symmcomm_dequantize(const symmcomm_tensor_t* src, const symmcomm_tensor_t* dst,
                                      symmcomm_stream_t stream);

/* ---- collectives ---------------------------------------------------------------------------
 * options and plan may be NULL. Every call validates its tensors (naming the argument) before
 * anything is enqueued, picks a path from the buffers' provenance (symmcomm::Plan) and is
 * stream-ordered on `stream`. The combinations each accepts are symmcomm's C++ overloads. */

/** Gathers every rank's `send` into `recv` (rank r's part at r x send->count): BF16, FP8 or
 *  NVFP4, send and recv of one dtype; recv->count = send->count x comm size, its scales one
 *  per rank. An NVFP4 recv may have SWIZZLED_128X4 block scales (send's are linear). */
symmcomm_status_t symmcomm_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                      const symmcomm_tensor_t* recv,
                                      const symmcomm_options_t* options, symmcomm_stream_t stream,
                                      symmcomm_plan_t* plan);
/** All-gather with `counts[r]` elements from rank r: `counts` a host array of comm size
 *  entries, the same on every rank; send->count = counts[rank], recv->count their sum, rank r's
 *  part after ranks 0..r-1 (NVFP4 and FP8: multiples of 16; swizzled NVFP4: whole rows). */
symmcomm_status_t symmcomm_all_gatherv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                       const symmcomm_tensor_t* recv, const size_t* counts,
                                       const symmcomm_options_t* options, symmcomm_stream_t stream,
                                       symmcomm_plan_t* plan);
/** Sums `send` over the ranks and leaves this rank's shard in `recv` (send->count = recv->count
 *  x comm size): BF16 -> BF16, FP32 -> FP32; NVFP4 or FP8 (per-rank scales, summed in fp32) ->
 *  BF16 (one rounding), FP32 (none) or send's own dtype (re-quantized, its scale computed from
 *  the sum). */
symmcomm_status_t symmcomm_reduce_scatter(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                          const symmcomm_tensor_t* recv,
                                          const symmcomm_options_t* options,
                                          symmcomm_stream_t stream, symmcomm_plan_t* plan);
/** Reduce-scatter with `counts[r]` elements for rank r (host array of comm size entries, the
 *  same on every rank; send->count their sum, recv->count = counts[rank]): BF16 -> BF16,
 *  NVFP4 -> BF16, FP8 -> BF16 (quantized: counts multiples of 16). */
symmcomm_status_t symmcomm_reduce_scatterv(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                           const symmcomm_tensor_t* recv, const size_t* counts,
                                           const symmcomm_options_t* options,
                                           symmcomm_stream_t stream, symmcomm_plan_t* plan);
/** Fused quantize + all-gather: this rank's BF16 `input` quantized with the device scale at
 *  `scale` (NULL: computed from the data) into every rank's `recv` (NVFP4 or FP8,
 *  recv->count = input->count x comm size, one scale per rank; NVFP4 block scales linear or
 *  SWIZZLED_128X4). One launch where symmcomm's LSA kernel can run. */
symmcomm_status_t symmcomm_quantize_all_gather(symmcomm_comm_t comm, const symmcomm_tensor_t* input,
                                               const float* scale, const symmcomm_tensor_t* recv,
                                               const symmcomm_options_t* options,
                                               symmcomm_stream_t stream, symmcomm_plan_t* plan);

/** All-gather of rows whose counts are on the device (DP attention without padding, one CUDA
 *  graph for every count; symmcomm/collectives/device_counts.hpp): send holds capacity rows of
 *  `row_elements` elements (the first *count are this rank's), recv room for comm size x
 *  capacity rows; rank r's rows land compactly at row offsets[r]. BF16, FP8 or NVFP4 (linear
 *  scales; row_elements a multiple of 16); scales one per rank in recv. Path as in C++:
 *  symmcomm's one-launch LSA kernel where recv, the counts and the scales lie in windows, else
 *  the fallback (rows gathered at capacity, then compacted on the device). */
symmcomm_status_t symmcomm_all_gatherv_device(symmcomm_comm_t comm, const symmcomm_tensor_t* send,
                                              const symmcomm_tensor_t* recv, size_t row_elements,
                                              const symmcomm_device_counts_t* counts,
                                              const symmcomm_options_t* options,
                                              symmcomm_stream_t stream, symmcomm_plan_t* plan);
/** Reduce-scatter whose shard sizes are on the device (MoE combine after a device-count
 *  dispatch; symmcomm::reduce_scatterv with DeviceCounts): send holds every rank's shard
 *  compactly (rank r's counts[r] rows at offsets[r]) in room for comm size x capacity rows;
 *  this rank's sum of its *count rows lands in the BF16 recv (capacity rows; the rest 0).
 *  BF16 -> BF16 or NVFP4 -> BF16: symmcomm's one-launch LSA kernel where send (NVFP4: data,
 *  block scales, global scale; data 8-byte and recv 16-byte aligned) and the counts lie in
 *  windows, else the fallback (rows laid out at capacity, then reduced). */
symmcomm_status_t symmcomm_reduce_scatterv_device(
    symmcomm_comm_t comm, const symmcomm_tensor_t* send, const symmcomm_tensor_t* recv,
    size_t row_elements, const symmcomm_device_counts_t* counts, const symmcomm_options_t* options,
    symmcomm_stream_t stream, symmcomm_plan_t* plan);
/** Whether a device-count gather saw a count outside 0..capacity since counts->overflow was last
 *  cleared (a bounded host wait for `stream`); clears it when clear != 0. */
symmcomm_status_t symmcomm_device_counts_overflowed(symmcomm_comm_t comm,
                                                    const symmcomm_device_counts_t* counts,
                                                    symmcomm_stream_t stream, int clear,
                                                    int* overflowed);

/* ---- MoE dispatch and combine by expert (symmcomm/collectives/moe.hpp) ---------------------- */

typedef struct symmcomm_moe_s* symmcomm_moe_t; /**< a MoE group (symmcomm::MoeGroup) */

/** One MoE layer's expert-parallel shape (symmcomm::MoeConfig), the same on every rank. */
typedef struct {
  int num_experts;         /**< a multiple of the comm size, <= 1024 */
  int top_k;               /**< 1..num_experts */
  int hidden;              /**< elements per token, a multiple of 64 (of 128: FP8_E4M3 wire) */
  int max_tokens_per_rank; /**< the most tokens a rank dispatches in one call */
  int capacity;            /**< rows per expert on its rank; 0: comm size x max tokens */
  symmcomm_path_t path;    /**< AUTO, LSA_KERNEL (refused where it cannot run) or FALLBACK */
  symmcomm_dtype_t wire;   /**< the rows' format (symmcomm::MoeConfig::wire): NVFP4 (0, the
                                default), FP8_E4M3 (an fp32 scale per 128 elements) or BF16 */
  int combine_in_place;    /**< 1: the combine reads the experts' outputs where the group holds
                                them (symmcomm_moe_buffers_t.expert_out); 0: sent back */
} symmcomm_moe_config_t;

/** A group's dispatch tensors on this rank (symmcomm::MoeDispatch plus their shapes): device
 *  pointers into the group's window, the same for every dispatch. */
typedef struct {
  uint8_t* data;              /**< [local_experts][capacity] rows: hidden / 2 bytes of packed
                                   e2m1, hidden e4m3 codes (FP8 wire) or hidden bf16 (BF16) */
  uint8_t* block_scales;      /**< [local_experts][expert_scale_bytes]: NVFP4 128 x 4 swizzled,
                                   FP8 float [hidden / 128][capacity rounded up to 4] per expert
                                   (column-major), NULL on a BF16 wire */
  int32_t* expert_count;      /**< [local_experts] */
  float* global_scale;        /**< [1]: every expert's alpha (rank 0's global scale) */
  int32_t* overflow;          /**< [1]: this rank's experts' pairs dropped past capacity */
  int32_t* error;             /**< [1]: SYMMCOMM_MOE_ERROR_* bits of every rank's input */
  int local_experts;          /**< experts this rank holds */
  int capacity;               /**< rows per expert (resolved) */
  size_t expert_scale_bytes;  /**< bytes of one expert's block scales */
  symmcomm_path_taken_t path; /**< the path the group's calls take */
  uint16_t* expert_out;       /**< bf16 [local_experts][capacity][hidden] where combine_in_place
                                   (else NULL): where the experts' GEMM may write its outputs */
} symmcomm_moe_buffers_t;

/** Error bits of symmcomm_moe_buffers_t.error (symmcomm::kMoeError*). */
#define SYMMCOMM_MOE_ERROR_EXPERT_ID 1    /* a top-k id outside -1..num_experts-1 */
#define SYMMCOMM_MOE_ERROR_NUM_TOKENS 2   /* num_tokens outside 0..max_tokens_per_rank */
#define SYMMCOMM_MOE_ERROR_GLOBAL_SCALE 4 /* the ranks' NVFP4 global scales differ */

/** Whether a MoE group on `comm` can take the LSA path (*supported 1 or 0); where not, the
 *  reason is symmcomm_last_error()'s text and a group takes the fallback over NCCL. */
symmcomm_status_t symmcomm_moe_supported(symmcomm_comm_t comm, int* supported);
/** Collective: creates a group (its window allocated and registered on every rank). */
symmcomm_status_t symmcomm_moe_create(symmcomm_comm_t comm, const symmcomm_moe_config_t* config,
                                      symmcomm_stream_t stream, symmcomm_moe_t* group);
/** Destroys the group (its window deregistered). NULL is a no-op that succeeds. */
symmcomm_status_t symmcomm_moe_destroy(symmcomm_moe_t group);
/** The group's dispatch tensors and their shapes. */
symmcomm_status_t symmcomm_moe_buffers(symmcomm_moe_t group, symmcomm_moe_buffers_t* out);
/** The path dispatch and combine take and why, copied into `text` (at most `size` bytes, NUL
 *  included); *needed (if not NULL) gets the size the whole text needs. */
symmcomm_status_t symmcomm_moe_reason(symmcomm_moe_t group, char* text, size_t size,
                                      size_t* needed);
/** Collective dispatch (MoeGroup::dispatch): `x` max_tokens_per_rank x hidden elements, NVFP4
 *  with linear block scales (its scales field the global scale; `global_scale` NULL) or BF16:
 *  on an NVFP4 wire quantized inside the dispatch with the device float `global_scale`, on an
 *  FP8_E4M3 wire quantized there per 128-element block (`global_scale` NULL), on a BF16 wire
 *  moved as it is (`global_scale` NULL); topk_idx int32 and
 *  topk_weights float [max_tokens_per_rank][top_k], num_tokens int32 [1]; all device
 *  pointers. */
symmcomm_status_t symmcomm_moe_dispatch(symmcomm_moe_t group, const symmcomm_tensor_t* x,
                                        const float* global_scale, const int32_t* topk_idx,
                                        const float* topk_weights, const int32_t* num_tokens,
                                        symmcomm_stream_t stream);
/** Collective combine (MoeGroup::combine): `expert_out` BF16 [local_experts][capacity][hidden],
 *  `out` BF16 [max_tokens_per_rank][hidden], written below the dispatch's num_tokens (the rest
 *  unspecified). */
symmcomm_status_t symmcomm_moe_combine(symmcomm_moe_t group, const symmcomm_tensor_t* expert_out,
                                       const symmcomm_tensor_t* out, symmcomm_stream_t stream);
/** Waits for `stream`; SYMMCOMM_ERROR_INVALID_ARGUMENT naming the argument of every error bit
 *  the last dispatch set; *overflow (if not NULL) gets the pairs dropped past capacity. */
symmcomm_status_t symmcomm_moe_check(symmcomm_moe_t group, symmcomm_stream_t stream,
                                     int32_t* overflow);

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
