# FindNCCL
# --------
# Finds the NVIDIA Collective Communications Library.
#
# Search order: NCCL_ROOT / NCCL_HOME (CMake or environment variables), the CUDA toolkit's
# directories, then the system paths.
#
# Result variables: NCCL_FOUND, NCCL_VERSION, NCCL_INCLUDE_DIR, NCCL_LIBRARY,
# NCCL_HAS_DEVICE_API (nccl_device.h present and compiling with this CUDA toolkit: NCCL 2.28+
# device API for our own kernels).
# Imported target: NCCL::nccl
#
# symmcomm needs NCCL >= 2.27: symmetric windows (ncclCommWindowRegister with
# NCCL_WIN_COLL_SYMMETRIC) first appeared there. Older versions are refused with that reason.

set(_nccl_hints)
foreach(_var NCCL_ROOT NCCL_HOME)
  if(DEFINED ${_var})
    list(APPEND _nccl_hints "${${_var}}")
  endif()
  if(DEFINED ENV{${_var}})
    list(APPEND _nccl_hints "$ENV{${_var}}")
  endif()
endforeach()
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
endif()
set(_nccl_cuda_hints)
if(CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _nccl_cuda_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(CUDAToolkit_LIBRARY_DIR)
  list(APPEND _nccl_cuda_hints ${CUDAToolkit_LIBRARY_DIR})
endif()

find_path(
  NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_hints}
  PATH_SUFFIXES include
  PATHS ${_nccl_cuda_hints})
find_library(
  NCCL_LIBRARY
  NAMES nccl
  HINTS ${_nccl_hints}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu
  PATHS ${_nccl_cuda_hints})

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_major REGEX "^#define NCCL_MAJOR +[0-9]+")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_minor REGEX "^#define NCCL_MINOR +[0-9]+")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_patch REGEX "^#define NCCL_PATCH +[0-9]+")
  string(REGEX REPLACE "[^0-9]*([0-9]+)$" "\\1" _nccl_major "${_nccl_major}")
  string(REGEX REPLACE "[^0-9]*([0-9]+)$" "\\1" _nccl_minor "${_nccl_minor}")
  string(REGEX REPLACE "[^0-9]*([0-9]+)$" "\\1" _nccl_patch "${_nccl_patch}")
  set(NCCL_VERSION "${_nccl_major}.${_nccl_minor}.${_nccl_patch}")
  set(NCCL_HAS_DEVICE_API FALSE)
  if(EXISTS "${NCCL_INCLUDE_DIR}/nccl_device.h")
    get_property(_nccl_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("CUDA" IN_LIST _nccl_languages)
      # The header must compile here, not only exist: from 2.29 it pulls in more headers (and
      # needs a newer toolkit than some machines have). A failure disables the device API with
      # the compiler's output in the message instead of failing the build later.
      set(_nccl_probe_includes "${NCCL_INCLUDE_DIR}")
      if(CUDAToolkit_INCLUDE_DIRS)
        list(APPEND _nccl_probe_includes ${CUDAToolkit_INCLUDE_DIRS})
      endif()
      try_compile(
        NCCL_DEVICE_API_COMPILES SOURCE_FROM_CONTENT nccl_device_probe.cu
        "#include <nccl_device.h>\n__global__ void probe(ncclDevComm c) { (void)c.lsaSize; }\nint main() { return 0; }\n"
        CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${_nccl_probe_includes}"
                    "-DCMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES}"
        CUDA_STANDARD 17
        OUTPUT_VARIABLE _nccl_probe_output)
      if(NCCL_DEVICE_API_COMPILES)
        set(NCCL_HAS_DEVICE_API TRUE)
      else()
        message(WARNING "NCCL ${NCCL_INCLUDE_DIR}/nccl_device.h does not compile with this CUDA "
                        "toolkit: symmcomm's own kernels are disabled.\n${_nccl_probe_output}")
      endif()
    else()
      # A consumer of the installed package compiles no NCCL device code.
      set(NCCL_HAS_DEVICE_API TRUE)
    endif()
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(
  NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NCCL_VERSION VERSION_LESS 2.27)
  message(
    FATAL_ERROR
      "symmcomm needs NCCL >= 2.27 (symmetric windows, ncclCommWindowRegister with "
      "NCCL_WIN_COLL_SYMMETRIC, first appeared in 2.27); found NCCL ${NCCL_VERSION} at "
      "${NCCL_INCLUDE_DIR}. Point NCCL_ROOT at a newer NCCL.")
endif()

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
