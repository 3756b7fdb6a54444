pytest_plugins = ["harness.fixtures", "helpers.golden"]
