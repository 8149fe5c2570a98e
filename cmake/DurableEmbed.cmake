# durable_embed_files(<target> FUNCTION <namespace::function> BASE <folder> FILES <file>...)
#
# Compiles text files (SQL statements, migrations) into <target>: a generated source defines
# `std::span<const durable::detail::EmbeddedFile> <namespace::function>()`, one entry per file,
# named by its path under BASE without the extension, sorted by name. Editing a file rebuilds the
# source; the files themselves stay plain SQL that reviewers and psql can read.
set(DURABLE_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/durable_embed.cmake)

function(durable_embed_files target)
  cmake_parse_arguments(E "" "FUNCTION;BASE" "FILES" ${ARGN})
  string(REPLACE "::" "_" stem "${E_FUNCTION}")
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embedded/${stem}.cpp)
  list(SORT E_FILES)
  string(REPLACE ";" "|" files_arg "${E_FILES}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFUNCTION=${E_FUNCTION} -DBASE=${E_BASE} "-DFILES=${files_arg}"
            -P ${DURABLE_EMBED_SCRIPT}
    DEPENDS ${E_FILES} ${DURABLE_EMBED_SCRIPT}
    COMMENT "Embedding ${E_FUNCTION} (${E_BASE})"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
