# One run store shared by the GUI's recorder, stores it opens again (history browser, histogram
# feed) and mantissa-cli in another process (runs, show, export, train: 200 commands); and the GUI's
# outputs (chart, run export) refused on the store and the files SQLite keeps beside it.
mantissa_add_test(test_shared_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shared_store.cpp
                  LIBS mantissa_ui SQLite::SQLite3 LABELS ui store fault TIMEOUT 300)
target_compile_definitions(test_shared_store PRIVATE MANTISSA_CLI_EXE="$<TARGET_FILE:mantissa-cli>")
add_dependencies(test_shared_store mantissa-cli)
