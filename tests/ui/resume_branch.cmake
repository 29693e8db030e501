# Resume and branch (docs/gui.md, "Resume and branch"): continuing a stored run from its latest
# checkpoint through the RunController (the same run, its earlier steps in the series, bit for bit
# on the CPU), branching from a middle checkpoint with a changed setting, the run browser's Resume
# and Branch… actions and the family they show, a chart's branch entry, compare aligned at the
# branch step, and a damaged checkpoint. Its store is in a temp dir. With MANTISSA_SCREENSHOT_DIR
# set it also writes docs/screenshots/resume.png and branch.png.
mantissa_add_test(test_resume_branch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_resume_branch.cpp LIBS mantissa_ui SQLite::SQLite3 LABELS ui TIMEOUT 300)
