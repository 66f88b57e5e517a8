# Embeds src/rlock/redis/scripts/NAME.lua, each behind the shared prelude.lua,
# into a C++ source, with the SHA1 that EVALSHA needs computed here, so the
# binary needs no SHA1 code.
function(rlock_embed_scripts)
  cmake_parse_arguments(ARG "" "OUTPUT;TEMPLATE" "SCRIPTS" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/src/rlock/redis/scripts)
  file(READ ${dir}/prelude.lua prelude)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${dir}/prelude.lua)
  foreach(script IN LISTS ARG_SCRIPTS)
    string(TOUPPER ${script} upper)
    file(READ ${dir}/${script}.lua body)
    set(${upper}_SOURCE "${prelude}${body}")
    string(SHA1 ${upper}_SHA1 "${${upper}_SOURCE}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${dir}/${script}.lua)
  endforeach()
  configure_file(${ARG_TEMPLATE} ${ARG_OUTPUT} @ONLY)
endfunction()
