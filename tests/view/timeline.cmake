# The timeline: the model, the Trace Event reader and the unit/* handlers
# (src/view/view_timeline.c, view_trace.c, view_api_timeline.c).
ks_unit_test(view_timeline unit/test_timeline.c ks_view)
target_compile_definitions(test_view_timeline PRIVATE
  KS_VIEW_SAMPLES="${CMAKE_CURRENT_SOURCE_DIR}/samples")
