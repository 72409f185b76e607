# Copies the dashboard sources and uPlot's dist files into WEB_ROOT.
# Run by the prism_web target: cmake -DWEB_SOURCE_DIR=.. -DWEB_ROOT=..
# -DWEB_SOURCES=a;b -P copy_assets.cmake. Fails with the fix when npm's
# packages are not installed.

set(uplot_dist ${WEB_SOURCE_DIR}/node_modules/uplot/dist)
foreach(file uPlot.esm.js uPlot.min.css)
  if(NOT EXISTS ${uplot_dist}/${file})
    message(FATAL_ERROR
      "web: ${uplot_dist}/${file} is missing: the dashboard's npm packages are "
      "not installed. Run deploy/setup.sh (it runs `npm ci` in web/).")
  endif()
endforeach()

file(REMOVE_RECURSE ${WEB_ROOT})
foreach(source ${WEB_SOURCES})
  get_filename_component(dir ${source} DIRECTORY)
  file(COPY ${WEB_SOURCE_DIR}/${source} DESTINATION ${WEB_ROOT}/${dir})
endforeach()
file(COPY ${uplot_dist}/uPlot.esm.js ${uplot_dist}/uPlot.min.css
     DESTINATION ${WEB_ROOT}/static/vendor)
file(COPY ${WEB_SOURCE_DIR}/node_modules/uplot/LICENSE
     DESTINATION ${WEB_ROOT}/static/vendor)
