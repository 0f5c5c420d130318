/* A C program a user would write against libsymmcomm_c: versions agree between the header and
 * the library loaded, an argument error comes back as a status with text naming it, and the
 * descriptors (tensors, options, plans) and their initialisers compile as C11. No GPU needed. */
#include <stdio.h>
#include <string.h>
#include <symmcomm/c_api.h>

int main(void) {
  symmcomm_comm_t comm = NULL;
  if (strcmp(symmcomm_version(), SYMMCOMM_VERSION_STRING) != 0) {
    printf("header says %s, library says %s\n", SYMMCOMM_VERSION_STRING, symmcomm_version());
    return 1;
  }
  if (symmcomm_abi_version() != SYMMCOMM_C_ABI_VERSION) {
    printf("header C ABI %d, library C ABI %d\n", SYMMCOMM_C_ABI_VERSION, symmcomm_abi_version());
    return 1;
  }
  if (symmcomm_comm_wrap(NULL, 0, &comm) != SYMMCOMM_ERROR_INVALID_ARGUMENT ||
      strstr(symmcomm_last_error(), "nccl_comm is NULL") == NULL || comm != NULL) {
    printf("a NULL communicator was not refused by name: '%s'\n", symmcomm_last_error());
    return 1;
  }
  {
    symmcomm_tensor_t const send = symmcomm_tensor_bf16(NULL, 16);
    symmcomm_tensor_t const recv = symmcomm_tensor_nvfp4_swizzled(NULL, NULL, NULL, 32, 16);
    symmcomm_options_t options = SYMMCOMM_OPTIONS_INIT;
    symmcomm_plan_t plan = SYMMCOMM_PLAN_INIT;
    options.path = SYMMCOMM_PATH_FALLBACK;
    if (symmcomm_all_gather(NULL, &send, &recv, &options, NULL, &plan) !=
            SYMMCOMM_ERROR_INVALID_ARGUMENT ||
        strstr(symmcomm_last_error(), "comm is NULL") == NULL) {
      printf("all_gather on a NULL communicator: '%s'\n", symmcomm_last_error());
      return 1;
    }
    if (strcmp(symmcomm_enum_name(SYMMCOMM_ENUM_DTYPE, SYMMCOMM_DTYPE_NVFP4), "nvfp4") != 0 ||
        symmcomm_enum_name(SYMMCOMM_ENUM_PATH, 99) != NULL ||
        symmcomm_enum_name((symmcomm_enum_t)42, 0) != NULL) {
      printf("enumeration names are wrong\n");
      return 1;
    }
  }
  printf("symmcomm_c %s (C ABI %d, version code %d) consumed from C OK\n", symmcomm_version(),
         symmcomm_abi_version(), SYMMCOMM_VERSION_CODE);
  return 0;
}
