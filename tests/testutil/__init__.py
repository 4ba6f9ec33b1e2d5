"""Helpers the tests share: tiny data, models and runs, numeric bounds, tools run as
processes. Imported as `tests.testutil.<module>`."""
