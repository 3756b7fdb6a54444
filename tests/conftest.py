pytest_plugins = ["helpers.golden"]
