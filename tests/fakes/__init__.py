"""Test doubles shared by the test suite and the benchmarks: a fake OpenAI-compatible
server, a fake image server, OneBot bots and event factories, the QQ side of the content
tests, the plugin harness. None imports the plugin at module level: the benchmarks and the
suite import them before NoneBot is initialised."""
