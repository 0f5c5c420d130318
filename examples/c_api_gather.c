/* The C ABI as a C program would use it (symmcomm/c_api.h, libsymmcomm_c): a one-rank
 * communicator, a symmetric pool, BF16 -> NVFP4 quantization, an NVFP4 all-gather whose plan is
 * described on request, and a gather with its row count on the device (DP attention). Exits 77
 * (skipped) without a GPU; 1 on a wrong result. Several ranks: one process per GPU, the unique
 * id shared by the caller, everything else the same. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <symmcomm/c_api.h>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    symmcomm_status_t const s_ = (call);                                                 \
    if (s_ != SYMMCOMM_SUCCESS) {                                                        \
      fprintf(stderr, "%s failed: %s: %s\n", #call,                                      \
              symmcomm_enum_name(SYMMCOMM_ENUM_STATUS, (int)s_), symmcomm_last_error()); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)
#define CUDA(call)                                                       \
  do {                                                                   \
    cudaError_t const e_ = (call);                                       \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

static uint16_t bf16_of(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

int main(void) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("c_api_gather: no CUDA GPU on this machine; nothing to run\n");
    return 77;
  }
  enum { kRows = 64, kHidden = 256, kCount = kRows * kHidden };
  char id[256];
  symmcomm_comm_t comm = NULL;
  symmcomm_pool_t pool = NULL;
  cudaStream_t stream = NULL;
  if (symmcomm_unique_id_bytes() > sizeof id) return 1;
  CHECK(symmcomm_get_unique_id(id));
  CHECK(symmcomm_comm_init(1, id, 0, 0, &comm));
  CHECK(symmcomm_pool_create(comm, (size_t)16 << 20, 0, 0, &pool));
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  /* Pool memory: windows where the communicator can have them, reused by every call. */
  void *x = NULL, *data = NULL, *scales = NULL, *global = NULL;
  void *gdata = NULL, *gscales = NULL, *gglobal = NULL, *ints = NULL;
  CHECK(symmcomm_pool_allocate(pool, kCount * 2, 0, stream, &x));
  CHECK(symmcomm_pool_allocate(pool, kCount / 2, 0, stream, &data));
  CHECK(symmcomm_pool_allocate(pool, kCount / 16, 0, stream, &scales));
  CHECK(symmcomm_pool_allocate(pool, 4, 0, stream, &global));
  CHECK(symmcomm_pool_allocate(pool, kCount / 2, 0, stream, &gdata));
  CHECK(symmcomm_pool_allocate(pool, kCount / 16, 0, stream, &gscales));
  CHECK(symmcomm_pool_allocate(pool, 4, 0, stream, &gglobal));
  CHECK(symmcomm_pool_allocate(pool, 4 * sizeof(int32_t), 0, stream, &ints));

  static uint16_t host[kCount];
  for (int i = 0; i < kCount; ++i) host[i] = bf16_of((float)(i % 13) - 6.0f);
  /* Inputs written on the stream the collectives use (a plain cudaMemcpy would not order). */
  CUDA(cudaMemcpyAsync(x, host, sizeof host, cudaMemcpyHostToDevice, stream));
  CUDA(cudaStreamSynchronize(stream)); /* `host` is pageable: keep it until the copy is done */

  symmcomm_tensor_t const in = symmcomm_tensor_bf16(x, kCount);
  symmcomm_tensor_t const q = symmcomm_tensor_nvfp4(data, scales, (float*)global, kCount);
  symmcomm_tensor_t const g = symmcomm_tensor_nvfp4(gdata, gscales, (float*)gglobal, kCount);
  CHECK(symmcomm_quantize(&in, &q, 1, stream));

  symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
  CHECK(symmcomm_all_gather(comm, &q, &g, NULL, stream, &plan));
  char why[512];
  CHECK(symmcomm_plan_describe(&plan, why, sizeof why, NULL));
  printf("all_gather: %s\n", why);

  /* The same gather with the row count on the device: 40 of the 64 rows this step. */
  int32_t* counts = (int32_t*)ints; /* [0] this rank's count, [1] counts, [2] offsets, [3] flag */
  int32_t const setup[4] = {40, -1, -1, 0};
  CUDA(cudaMemcpyAsync(counts, setup, sizeof setup, cudaMemcpyHostToDevice, stream));
  symmcomm_device_counts_t const dc = {counts, kRows, counts + 1, counts + 2, counts + 3};
  CUDA(cudaMemsetAsync(gdata, 0xAB, kCount / 2, stream));
  CHECK(symmcomm_all_gatherv_device(comm, &q, &g, kHidden, &dc, NULL, stream, &plan));
  int overflowed = 1;
  CHECK(symmcomm_device_counts_overflowed(comm, &dc, stream, 1, &overflowed));

  static uint8_t want[kCount / 2], got[kCount / 2];
  int32_t written[4];
  CUDA(cudaMemcpyAsync(want, data, sizeof want, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaMemcpyAsync(got, gdata, sizeof got, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaMemcpyAsync(written, counts, sizeof written, cudaMemcpyDeviceToHost, stream));
  CUDA(cudaStreamSynchronize(stream));
  int const rows_ok = memcmp(got, want, 40 * kHidden / 2) == 0;
  int const rest_ok = got[40 * kHidden / 2] == 0xAB && got[kCount / 2 - 1] == 0xAB;
  printf("all_gatherv_device: %s; counts %d, offset %d, overflow %d\n",
         symmcomm_enum_name(SYMMCOMM_ENUM_PATH_TAKEN, (int)plan.path), written[1], written[2],
         overflowed);
  int const ok = rows_ok && rest_ok && written[1] == 40 && written[2] == 0 && !overflowed;

  void* all[] = {x, data, scales, global, gdata, gscales, gglobal, ints};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) CHECK(symmcomm_pool_free(pool, all[i]));
  CHECK(symmcomm_pool_destroy(pool));
  CHECK(symmcomm_comm_release(comm));
  CUDA(cudaStreamDestroy(stream));
  printf("c_api_gather: %s\n", ok ? "OK" : "WRONG RESULT");
  return ok ? 0 : 1;
}
