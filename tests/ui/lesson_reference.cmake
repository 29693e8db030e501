# A lesson's reference run: trained at full speed into the store when the lesson is opened, overlaid
# on the charts, found again the next time; cancelled with the lesson (blobs, CPU, offscreen).
mantissa_add_test(test_lesson_reference SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lesson_reference.cpp
                  LIBS mantissa_ui LABELS ui TIMEOUT 240)
