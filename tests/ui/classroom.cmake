# Classroom mode and the lesson presets in the window: each preset loads, trains a few steps on the
# CPU backend and shows the effect its lesson promises, on the same series the charts draw.
mantissa_add_test(test_classroom SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_classroom.cpp LIBS mantissa_ui LABELS ui TIMEOUT 300)
