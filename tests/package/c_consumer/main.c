/* A C program a user would write against libsymmcomm_c: versions agree between the header and
 * the library loaded, and an argument error comes back as a status with text naming it. No GPU
 * needed. */
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
  printf("symmcomm_c %s (C ABI %d, version code %d) consumed from C OK\n", symmcomm_version(),
         symmcomm_abi_version(), SYMMCOMM_VERSION_CODE);
  return 0;
}
