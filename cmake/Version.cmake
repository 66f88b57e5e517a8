# The version: the project's, plus `git describe` when built from a checkout.
set(RLOCK_VERSION_STRING ${PROJECT_VERSION})
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.git)
  execute_process(
    COMMAND ${GIT_EXECUTABLE} describe --always --dirty
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    OUTPUT_VARIABLE RLOCK_GIT_DESCRIBE
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
  if(RLOCK_GIT_DESCRIBE)
    set(RLOCK_VERSION_STRING "${PROJECT_VERSION} (${RLOCK_GIT_DESCRIBE})")
  endif()
endif()
configure_file(src/rlock/version.hpp.in
  ${CMAKE_CURRENT_BINARY_DIR}/generated/rlock/version.hpp @ONLY)
