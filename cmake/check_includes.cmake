# The include check behind the configure-time layering rules
# (scheduler/layers.cmake, server/layers.cmake), usable in script mode too.
#
# prism_check_includes fails when a C++ file under DIR (recursively; with
# TOP_ONLY, DIR's own files only) includes a "PREFIX..." header that matches
# none of the ALLOW regular expressions; RULE says what the folder may
# include, WHERE the file that states the layering.
function(prism_check_includes)
  cmake_parse_arguments(ARG "TOP_ONLY" "DIR;PREFIX;RULE;WHERE" "ALLOW"
                        ${ARGN})
  set(glob GLOB_RECURSE)
  if(ARG_TOP_ONLY)
    set(glob GLOB)
  endif()
  set(depends)
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    set(depends CONFIGURE_DEPENDS)
  endif()
  file(${glob} files ${depends} ${ARG_DIR}/*.h ${ARG_DIR}/*.cc)
  foreach(file ${files})
    file(STRINGS ${file} lines
         REGEX "^[ \t]*#[ \t]*include[ \t]*\"${ARG_PREFIX}")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" included "${line}")
      set(allowed FALSE)
      foreach(pattern ${ARG_ALLOW})
        if(included MATCHES "^${pattern}")
          set(allowed TRUE)
        endif()
      endforeach()
      if(NOT allowed)
        message(FATAL_ERROR "${file}: includes ${included}: ${ARG_RULE} "
                            "(the layering is in ${ARG_WHERE})")
      endif()
    endforeach()
  endforeach()
endfunction()
