# Run history (docs/gui.md, "Run history"): the run browser, the run viewer and following, compare, export.
# Both suites make their store in a temp dir (short spirals runs trained by the engine, and
# synthetic runs fed to a Recorder). test_history_compare also writes docs/screenshots/browser.png
# and compare.png when MANTISSA_SCREENSHOT_DIR is set.
mantissa_add_test(test_history_browser SOURCES test_history_browser.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
mantissa_add_test(test_history_compare SOURCES test_history_compare.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
# One case follows a run that `mantissa-cli train` records from its own process.
target_compile_definitions(test_history_browser PRIVATE MANTISSA_CLI_EXE="$<TARGET_FILE:mantissa-cli>")
add_dependencies(test_history_browser mantissa-cli)
