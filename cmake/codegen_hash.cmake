# Writes OUT: a header defining TENSORSCHED_CODEGEN_HASH, a hash of the sources that decide what
# code a workload compiles to (graph, lower, schedule, runtime). The code cache is keyed by it,
# so a changed lowering or default schedule never loads code an older build compiled.
#   cmake -DOUT=... -DLIST=file-with-the-semicolon-separated-sources -P codegen_hash.cmake
file(READ "${LIST}" SOURCES)
set(all "")
list(SORT SOURCES)
foreach(f IN LISTS SOURCES)
  file(SHA256 "${f}" h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 digest "${all}")
string(SUBSTRING "${digest}" 0 12 digest)
set(text "#pragma once\n#define TENSORSCHED_CODEGEN_HASH \"${digest}\"\n")
include(${CMAKE_CURRENT_LIST_DIR}/write_if_changed.cmake)
write_if_changed("${OUT}" "${text}")
