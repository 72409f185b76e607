# prism_web: the dashboard's assets, copied with uPlot's dist files into the
# web root the coordinator serves (`${PRISM_WEB_ROOT}`, `web/` next to the
# `prism` binary). Plain ES modules and CSS: no bundler. uPlot comes from npm
# through web/package-lock.json; deploy/setup.sh runs `npm ci` here.
# Included (not add_subdirectory) from the top level, so no CMake files land
# in the web root.

set(PRISM_WEB_ROOT ${CMAKE_BINARY_DIR}/web CACHE INTERNAL "Dashboard assets served by the coordinator")

set(PRISM_WEB_SOURCES
  index.html
  static/app.css
  static/js/actions.js
  static/js/api.js
  static/js/asha.js
  static/js/charts.js
  static/js/deltaplot.js
  static/js/dom.js
  static/js/download.js
  static/js/format.js
  static/js/live.js
  static/js/main.js
  static/js/staircase.js
  static/js/stats.js
  static/js/suggestions.js
  static/js/ladder.js
  static/js/ui.js
  static/js/workers.js
  static/js/pages/leaderboard.js
  static/js/pages/login.js
  static/js/pages/queue.js
  static/js/pages/schedule.js
  static/js/pages/submit.js
  static/js/pages/trial.js
  static/js/pages/trials.js
)
list(TRANSFORM PRISM_WEB_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/ OUTPUT_VARIABLE web_source_paths)

set(web_stamp ${CMAKE_BINARY_DIR}/CMakeFiles/prism_web.stamp)
add_custom_command(
  OUTPUT ${web_stamp}
  COMMAND ${CMAKE_COMMAND}
          -DWEB_SOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}
          -DWEB_ROOT=${PRISM_WEB_ROOT}
          "-DWEB_SOURCES=${PRISM_WEB_SOURCES}"
          -P ${CMAKE_CURRENT_LIST_DIR}/copy_assets.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${web_stamp}
  DEPENDS ${web_source_paths} ${CMAKE_CURRENT_LIST_DIR}/copy_assets.cmake
          ${CMAKE_CURRENT_LIST_DIR}/package-lock.json
  COMMENT "Copying dashboard assets to ${PRISM_WEB_ROOT}"
  VERBATIM)
add_custom_target(prism_web ALL DEPENDS ${web_stamp})

if(TARGET prism)
  add_dependencies(prism prism_web)
endif()
