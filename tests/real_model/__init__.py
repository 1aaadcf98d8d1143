"""Scenarios against a real OpenAI-compatible model server (`-m real_model`), run only when
AIMEMORY_TEST_MODEL_URL names one."""
