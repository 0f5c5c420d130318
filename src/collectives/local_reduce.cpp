// Local reduction of quantized shards (symmcomm/collectives/local_reduce.hpp): dequantize each
// rank's shard, accumulate in fp32 in rank order, round once. The kernel is the LSA one-shot
// reduce-scatter's (kernels/lsa.cu) over a table of local shards, so both paths agree bit for
// bit.

#include <cstdint>
#include <type_traits>

#include "kernels/lsa.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm {
namespace detail {
namespace {

void check_shards(const QuantizedShards& s, std::size_t count, const void* out, bool nvfp4) {
  SYMMCOMM_EXPECTS(s.ranks >= 1 && s.ranks <= QuantizedShards::kMaxRanks,
                   "shards.ranks " << s.ranks << " is outside 1.." << QuantizedShards::kMaxRanks);
  SYMMCOMM_EXPECTS(count % 16 == 0, "count " << count << " is not a multiple of 16");
  SYMMCOMM_EXPECTS(out != nullptr || count == 0, "out is null");
  SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(out) % 16 == 0,
                   "out " << out << " is not 16-byte aligned");
  for (int r = 0; r < s.ranks && count > 0; ++r) {
    SYMMCOMM_EXPECTS(s.data[r] != nullptr, "shards.data[" << r << "] is null");
    SYMMCOMM_EXPECTS(reinterpret_cast<std::uintptr_t>(s.data[r]) % (nvfp4 ? 8 : 16) == 0,
                     "shards.data[" << r << "] " << static_cast<const void*>(s.data[r])
                                    << " is not " << (nvfp4 ? 8 : 16) << "-byte aligned");
    SYMMCOMM_EXPECTS(s.scale[r] != nullptr, "shards.scale[" << r << "] is null");
    SYMMCOMM_EXPECTS(!nvfp4 || s.block_scales[r] != nullptr,
                     "shards.block_scales[" << r << "] is null");
  }
}

}  // namespace
}  // namespace detail

template <class Out>
static void reduce_impl(const QuantizedShards& shards, std::size_t count, DataType type, Out* out,
                        cudaStream_t stream) {
  detail::check_shards(shards, count, out, type == DataType::Nvfp4);
  if (count == 0) return;
  detail::lsa::reduce_shards(shards, type, count, out, std::is_same_v<Out, float>, stream);
}

template <class Out>
static void reduce_nvfp4_impl(const QuantizedShards& shards, std::size_t count, Out* out,
                              cudaStream_t stream) {
  reduce_impl(shards, count, DataType::Nvfp4, out, stream);
}

template <class Out>
static void reduce_fp8_impl(const QuantizedShards& shards, std::size_t count, Fp8Format format,
                            Out* out, cudaStream_t stream) {
  reduce_impl(shards, count, fp8_type(format), out, stream);
}

void reduce_nvfp4_shards(const QuantizedShards& s, std::size_t count, bf16* out, cudaStream_t st) {
  reduce_nvfp4_impl(s, count, out, st);
}
void reduce_nvfp4_shards(const QuantizedShards& s, std::size_t count, float* out, cudaStream_t st) {
  reduce_nvfp4_impl(s, count, out, st);
}
void reduce_fp8_shards(const QuantizedShards& s, std::size_t count, Fp8Format f, bf16* out,
                       cudaStream_t st) {
  reduce_fp8_impl(s, count, f, out, st);
}
void reduce_fp8_shards(const QuantizedShards& s, std::size_t count, Fp8Format f, float* out,
                       cudaStream_t st) {
  reduce_fp8_impl(s, count, f, out, st);
}

}  // namespace symmcomm
