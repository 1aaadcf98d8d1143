"""Test doubles shared by the test suite and the benchmarks: a fake OpenAI-compatible
server, a fake image server, OneBot bots and event factories, the plugin harness."""
