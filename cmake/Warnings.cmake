# INTERFACE targets for the warning flags and the sanitizers.
add_library(rlock_warnings INTERFACE)
target_compile_options(rlock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-qual
  -Wformat=2 -Wimplicit-fallthrough)
if(RLOCK_WARNINGS_AS_ERRORS)
  target_compile_options(rlock_warnings INTERFACE -Werror)
endif()

add_library(rlock_sanitizers INTERFACE)
if(RLOCK_SANITIZERS)
  target_compile_options(rlock_sanitizers INTERFACE
    -fsanitize=${RLOCK_SANITIZERS} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(rlock_sanitizers INTERFACE -fsanitize=${RLOCK_SANITIZERS})
endif()
