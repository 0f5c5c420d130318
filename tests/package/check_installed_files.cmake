# Checks an install prefix (cmake -P, with PREFIX, LIBDIR, DOCDIR and SOVERSION): the C library
# with its versioned soname, the pkg-config file, the license, the C version header.
foreach(required "${LIBDIR}/libsymmcomm_c.so" "${LIBDIR}/libsymmcomm_c.so.${SOVERSION}"
                 "${LIBDIR}/pkgconfig/symmcomm_c.pc" "${DOCDIR}/LICENSE" "include/symmcomm/version.h"
                 "include/symmcomm/c_api.h" "${LIBDIR}/cmake/symmcomm/symmcommConfig.cmake"
                 "${LIBDIR}/cmake/symmcomm/symmcommCTargets.cmake")
  if(NOT EXISTS "${PREFIX}/${required}")
    message(FATAL_ERROR "missing from the install: ${PREFIX}/${required}")
  endif()
endforeach()
file(READ_SYMLINK "${PREFIX}/${LIBDIR}/libsymmcomm_c.so" namelink)
if(NOT namelink STREQUAL "libsymmcomm_c.so.${SOVERSION}")
  message(FATAL_ERROR "libsymmcomm_c.so points to '${namelink}', not libsymmcomm_c.so.${SOVERSION}")
endif()
message(STATUS "installed files OK (libsymmcomm_c.so -> ${namelink})")
