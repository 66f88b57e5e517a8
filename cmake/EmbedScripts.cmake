# Embeds src/rlock/redis/scripts/NAME.lua into a C++ source, each with the
# SHA1 that EVALSHA needs, computed here so the binary needs no SHA1 code.
function(rlock_embed_scripts)
  cmake_parse_arguments(ARG "" "OUTPUT;TEMPLATE" "SCRIPTS" ${ARGN})
  foreach(script IN LISTS ARG_SCRIPTS)
    set(path ${CMAKE_CURRENT_SOURCE_DIR}/src/rlock/redis/scripts/${script}.lua)
    string(TOUPPER ${script} upper)
    file(READ ${path} ${upper}_SOURCE)
    file(SHA1 ${path} ${upper}_SHA1)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  endforeach()
  configure_file(${ARG_TEMPLATE} ${ARG_OUTPUT} @ONLY)
endfunction()
