# The Python interpreter of the Python tests (the runtime's loader, the front
# end): FUSION_TEST_PYTHON where it is set (scripts/test.sh sets it to the
# virtual environment that scripts/install-deps.sh installs torch and
# transformers into), else the Python 3 found. Their tests that need torch
# skip, saying so, where it cannot be imported, unless
# FUSION_TEST_REQUIRE_TORCH is ON (CI): then they fail.
# Sets FUSION_TEST_PYTHON_EXECUTABLE (empty: none) and
# FUSION_TEST_REQUIRE_TORCH_VALUE (0 or 1, for the tests' environment).
set(FUSION_TEST_PYTHON "" CACHE FILEPATH
  "Python interpreter of the Python tests (empty: the Python 3 found)")
option(FUSION_TEST_REQUIRE_TORCH
  "Fail, not skip, the Python tests that need torch where it cannot be imported" OFF)
set(FUSION_TEST_PYTHON_EXECUTABLE "")
if(FUSION_TEST_PYTHON)
  if(EXISTS "${FUSION_TEST_PYTHON}")
    set(FUSION_TEST_PYTHON_EXECUTABLE ${FUSION_TEST_PYTHON})
  else()
    message(WARNING "FUSION_TEST_PYTHON=${FUSION_TEST_PYTHON} does not exist; the Python tests "
      "use the Python 3 found")
  endif()
endif()
if(NOT FUSION_TEST_PYTHON_EXECUTABLE)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    set(FUSION_TEST_PYTHON_EXECUTABLE ${Python3_EXECUTABLE})
  endif()
endif()
set(FUSION_TEST_REQUIRE_TORCH_VALUE 0)
if(FUSION_TEST_REQUIRE_TORCH)
  set(FUSION_TEST_REQUIRE_TORCH_VALUE 1)
endif()
