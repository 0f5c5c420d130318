# Warning flags for symmcomm's own targets (never pushed onto consumers).
function(symmcomm_set_warnings target)
  set(_cxx -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  set(_cuda -Xcompiler=-Wall,-Wextra --Werror=all-warnings)
  if(NOT SYMMCOMM_WARNINGS_AS_ERRORS)
    set(_cuda -Xcompiler=-Wall,-Wextra)
  else()
    list(APPEND _cxx -Werror)
    set(_cuda -Xcompiler=-Wall,-Wextra,-Werror --Werror=all-warnings)
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${_cxx}>
                                           $<$<COMPILE_LANGUAGE:CUDA>:${_cuda}>)
endfunction()
