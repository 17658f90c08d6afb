# The emulated device in the main build (included by tests/CMakeLists.txt):
# when TANDEM_CUDA_EMU_TESTS is on, the emulated build (this folder's own
# CMake project, test-only) is built by the main build into
# ${CMAKE_BINARY_DIR}/cuda-emu with the same compilers and sanitizers, and each
# of its parts is one ctest test (label emu) running run.sh PART, so
# `ctest -L emu` runs them all and ctest -j spreads them over the cores.
# TANDEM_TEST_SCALE picks the seeds and sizes at run time (run.sh).
if(NOT TANDEM_CUDA_EMU_TESTS)
  return()
endif()
include(ExternalProject)
set(TANDEM_EMU_DIR ${CMAKE_BINARY_DIR}/cuda-emu)
set(_emu_launchers "")
foreach(lang C CXX)
  if(CMAKE_${lang}_COMPILER_LAUNCHER)
    list(APPEND _emu_launchers -DCMAKE_${lang}_COMPILER_LAUNCHER=${CMAKE_${lang}_COMPILER_LAUNCHER})
  endif()
endforeach()
ExternalProject_Add(cuda_emu
  SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu
  BINARY_DIR ${TANDEM_EMU_DIR}
  CMAKE_ARGS -DCMAKE_BUILD_TYPE=Release -DCUDA_INCLUDE=${TANDEM_CUDA_INCLUDE}
             -DEMU_SANITIZE=${TANDEM_SANITIZE} -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
             -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER} ${_emu_launchers}
  INSTALL_COMMAND ""
  # The emulated library is built from the main tree's sources: let its own
  # build decide what is out of date.
  BUILD_ALWAYS ON
  USES_TERMINAL_BUILD OFF)

# tdm_emu_test(NAME PART TIMEOUT LABELS [COST]): one part of run.sh as a
# ctest test; COST (tests/CMakeLists.txt says why) for the long ones.
function(tdm_emu_test name part timeout labels)
  add_test(NAME emu_${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu/run.sh ${TANDEM_EMU_DIR} ${part})
  set_tests_properties(emu_${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}")
  if(ARGC GREATER 4)
    set_tests_properties(emu_${name} PROPERTIES COST ${ARGV4})
  endif()
  if(TANDEM_SANITIZE)
    # The emulator's fiber stacks are not for LeakSanitizer.
    set_tests_properties(emu_${name} PROPERTIES ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
  endif()
endfunction()

# Timeouts: about three times the full tier's time on 2 cores.
math(EXPR _f "${TANDEM_TEST_TIME_FACTOR}")
math(EXPR _t "240 * ${_f}")
tdm_emu_test(selftest selftest ${_t} "emu;property" 80)
math(EXPR _t "300 * ${_f}")
tdm_emu_test(selftest-btree selftest-btree ${_t} "emu;property")
tdm_emu_test(pipeline pipeline ${_t} "emu;property")
math(EXPR _t "120 * ${_f}")
tdm_emu_test(sweep sweep ${_t} "emu;unit")
# The example inserts 2^22 keys, each claimed by a lane group of 4 with its
# collectives: about 40 s alone on 2 cores, more beside the other tests.
math(EXPR _t "300 * ${_f}")
tdm_emu_test(example example ${_t} "emu;unit")
math(EXPR _t "60 * ${_f}")
tdm_emu_test(meter meter ${_t} "emu;unit")
