# fingerprint: every recorded table of 37 short CPU runs hashed (tests/bench/fingerprint), against
# the total recorded for this CPU; skipped (77) on a CPU without one. A speed change that is meant
# to keep every result is held to it here, not only by hand.
add_test(NAME fingerprint COMMAND ${CMAKE_CURRENT_LIST_DIR}/fingerprint/check.sh ${PROJECT_BINARY_DIR})
set_tests_properties(fingerprint PROPERTIES SKIP_RETURN_CODE 77 LABELS bench TIMEOUT 600)
