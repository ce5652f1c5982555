# kscope view's import and API (docs/view.md "The API").
#   view_request_driver  imports PATH, answers one request per stdin line
#                        (no server: ks_view_request directly)
#   unit/view_import     cmocka: the import of malformed inputs, messages
#   view/api             api_test.py: every command on the bundled sample
#                        results (tests/view/samples), over the real server,
#                        and each one's errors
#   view/api_causal      causal_test.py: causal/curves on a fresh kscope
#                        causal run, and on malformed copies of its CSV
add_executable(view_request_driver ${CMAKE_CURRENT_SOURCE_DIR}/view_request_driver.c)
target_link_libraries(view_request_driver PRIVATE ks_view)

ks_unit_test(view_import ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_view_import.c ks_view
             ks_format)

add_test(NAME view/api
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/api_test.py
                 $<TARGET_FILE:kscope> $<TARGET_FILE:view_request_driver>
                 ${CMAKE_CURRENT_SOURCE_DIR}/samples)
set_tests_properties(view/api PROPERTIES TIMEOUT 120)

# view/api_perfetto: perfetto_test.py, a Perfetto trace kscope wrote (a
# fresh run of examples/sample/regions) against the same run's trace.json
# and profile.db, over the real server; damaged and foreign traces.
add_test(NAME view/api_perfetto
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/perfetto_test.py
                 $<TARGET_FILE:kscope> $<TARGET_FILE:view_request_driver>
                 ${CMAKE_BINARY_DIR}/examples/sample)
set_tests_properties(view/api_perfetto PROPERTIES TIMEOUT 180)

# view/api_causal: causal_test.py, a fresh kscope causal run of
# examples/causal/balance.c: causal/curves against causal.csv field by
# field, its errors, and malformed copies of causal.csv (messages naming
# the file and the line).
add_test(NAME view/api_causal
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/causal_test.py
                 $<TARGET_FILE:kscope> $<TARGET_FILE:view_request_driver>
                 ${PROJECT_SOURCE_DIR}/examples/causal ${PROJECT_SOURCE_DIR}/include
                 ${CMAKE_CURRENT_SOURCE_DIR}/samples)
set_tests_properties(view/api_causal PROPERTIES TIMEOUT 180)
