# The Events panel's model and view (repeats merged into one growing row), on fabricated events.
mantissa_add_test(test_event_log_model SOURCES test_event_log_model.cpp LIBS mantissa_ui LABELS ui TIMEOUT 60)
