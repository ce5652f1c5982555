# Compresses each generated man page, DIR/kscope*.1 -> OUT/kscope*.1.gz,
# with gzip -9n (no name or time stamp, so a build is reproducible): the
# form Debian installs man pages in, and that man reads anywhere.
#
#   cmake -DDIR=build/man/man1 -DOUT=build/man/gz -P gzip_man.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
file(GLOB pages "${DIR}/kscope*.1")
if(NOT pages)
  message(FATAL_ERROR "no man pages in ${DIR}")
endif()
foreach(page ${pages})
  get_filename_component(name "${page}" NAME)
  execute_process(COMMAND gzip -9n -c "${page}" OUTPUT_FILE "${OUT}/${name}.gz"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page}: ${rc}")
  endif()
endforeach()
