# The third-party libraries kscope's tools use, as seven targets:
#   ks_dep_jansson  JSON (jansson)
#   ks_dep_dw       DWARF and ELF (libdw, libelf and their compressors),
#                   with libstdc++ for __cxa_demangle, the C++ ABI's demangler
#   ks_dep_sqlite3  SQLite
#   ks_dep_zlib     zlib (gzip for kscope report --format pprof)
#   ks_dep_expat    expat (kscope memcheck reads Memcheck's XML as a stream)
#   ks_dep_nettle   nettle (SHA-256: the keys of kscope tune --cache)
#   ks_dep_capstone capstone (disassembly): its headers only; kscope
#                   loads the shared library with dlopen() when it
#                   disassembles (src/op/sim/simdisasm.c), because the
#                   loader would otherwise relocate capstone's ~80,000
#                   table pointers at every start of every command
#
# With KSCOPE_STATIC_DEPS (the default) the first three are linked from their
# archives when the system has every one of them (Debian's -dev packages
# ship them).  kscope then starts without the dynamic loader opening and
# relocating ten shared libraries, about 1 ms less per start here, which
# counts in what `kscope op` adds to a short program.
# Where an archive is missing, the target falls back to the shared library.
# libc's own parts (m, pthread, dl, rt) are always linked dynamically.
# None of kscope's preloaded libraries links these targets.
option(KSCOPE_STATIC_DEPS "Link jansson, libdw, SQLite and libstdc++ into kscope statically" ON)

# ks_static_archives(<out> <names...>): the full paths of lib<name>.a for
# each name, or an empty <out> if any is missing.
function(ks_static_archives out)
  set(paths "")
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^(m|pthread|dl|rt|c)$")
      list(APPEND paths ${lib})
      continue()
    endif()
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=lib${lib}.a
                    OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${path}" OR NOT EXISTS "${path}")
      set(${out} "" PARENT_SCOPE)
      return()
    endif()
    file(REAL_PATH "${path}" path)
    list(APPEND paths ${path})
  endforeach()
  list(REMOVE_DUPLICATES paths)
  set(${out} ${paths} PARENT_SCOPE)
endfunction()

# ks_dependency(<target> <PREFIX> <pkg-config module> [extra static libs...])
function(ks_dependency target prefix module)
  pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${module})
  add_library(${target} INTERFACE)
  set(archives "")
  if(KSCOPE_STATIC_DEPS)
    ks_static_archives(archives ${${prefix}_STATIC_LIBRARIES} ${ARGN})
  endif()
  if(archives)
    target_include_directories(${target} INTERFACE ${${prefix}_INCLUDE_DIRS})
    target_link_libraries(${target} INTERFACE ${archives})
    if(${prefix}_STATIC_LDFLAGS MATCHES "-pthread")
      find_package(Threads REQUIRED)
      target_link_libraries(${target} INTERFACE Threads::Threads)
    endif()
    message(STATUS "${module}: static (${archives})")
  else()
    target_link_libraries(${target} INTERFACE PkgConfig::${prefix} ${ARGN})
    message(STATUS "${module}: shared")
  endif()
endfunction()

ks_dependency(ks_dep_jansson JANSSON "jansson>=2.13")
ks_dependency(ks_dep_dw LIBDW libdw stdc++)
ks_dependency(ks_dep_sqlite3 SQLITE3 "sqlite3>=3.31")
ks_dependency(ks_dep_zlib ZLIB zlib)
ks_dependency(ks_dep_expat EXPAT expat)
ks_dependency(ks_dep_nettle NETTLE nettle)
# capstone: disassembly for kscope op --simulate (src/op/sim), opened at
# run time.
pkg_check_modules(CAPSTONE REQUIRED capstone)
add_library(ks_dep_capstone INTERFACE)
target_include_directories(ks_dep_capstone INTERFACE ${CAPSTONE_INCLUDE_DIRS})
target_link_libraries(ks_dep_capstone INTERFACE ${CMAKE_DL_LIBS})
