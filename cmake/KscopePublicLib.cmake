# ks_public_library(<target> NAME <name> MAP <version script> HEADER <h>
#                   SOURCES <files...> OBJECTS <static libraries...>
#                   [LIBS <shared libraries the objects need...>])
#
# A shared library for other programs, lib<name>.so: the given sources and
# the objects of kscope's static libraries, linked with the shared jansson
# (the static archive is not position independent), exporting only what
# the version script names.  It is versioned (SOVERSION KS_SOVERSION),
# goes into build/lib, is installed into lib/ with its header under
# include/kscope/, and is exported as kscope::<export name> (NAME less its
# "kscope-") in the CMake package; cmake/package/<name>.pc.in is its
# pkg-config file.
function(ks_public_library target)
  cmake_parse_arguments(A "" "NAME;MAP;HEADER" "SOURCES;OBJECTS;LIBS" ${ARGN})
  set(objects "")
  foreach(lib IN LISTS A_OBJECTS)
    list(APPEND objects $<TARGET_OBJECTS:${lib}>)
  endforeach()
  add_library(${target} SHARED ${A_SOURCES} ${objects})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${KS_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PRIVATE PkgConfig::JANSSON ${A_LIBS} m
    -Wl,--version-script=${A_MAP})
  if(NOT KSCOPE_SANITIZE AND NOT KSCOPE_FUZZ)
    # (sanitizer runtimes come from the program that loads the library)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  string(REGEX REPLACE "^kscope-" "" export ${A_NAME})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${A_NAME}
    EXPORT_NAME ${export}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${KS_SOVERSION}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    LINK_DEPENDS ${A_MAP})
  install(TARGETS ${target} EXPORT kscopeTargets LIBRARY DESTINATION ${KS_INSTALL_LIBDIR})
  install(FILES ${A_HEADER} DESTINATION ${KS_INSTALL_INCLUDEDIR}/kscope)
endfunction()
