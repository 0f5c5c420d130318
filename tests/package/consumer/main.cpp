// A program a user would write against an installed symmcomm: no GPU needed to run it.
#include <symmcomm/symmcomm.hpp>

#include <cstdio>

int main() {
  if (symmcomm::encode_e2m1(1.5f) != 0x3 || symmcomm::decode_e4m3(0x7e) != 448.0f) {
    std::puts("symmcomm formats disagree with their definition");
    return 1;
  }
  try {
    symmcomm::validate(symmcomm::Nvfp4View{nullptr, nullptr, nullptr, 15}, "probe");
    std::puts("validation accepted a bad view");
    return 1;
  } catch (const symmcomm::LogicError&) {
  }
  std::printf("symmcomm %s (built against NCCL %s) consumed OK\n", symmcomm::kVersion,
              symmcomm::kNcclBuildVersion);
  return 0;
}
