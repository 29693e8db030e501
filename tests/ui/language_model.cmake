# A language model in the window: the Layers table's op rows and their reasons (autocast, op by
# op), the Precision panel's softmax and layernorm classes posted live, the Sample view from the
# evaluation events (live and reopened), and the attention-logit and layer-norm charts fed by the
# telemetry ring's op statistics.
mantissa_add_test(test_language_model_views SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_language_model_views.cpp
                  LIBS mantissa_ui LABELS ui TIMEOUT 300)
