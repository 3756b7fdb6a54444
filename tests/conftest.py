import os

# Tests compile specs fresh: in-process tests patch compiler code, which the compile cache's
# key (files on disk) cannot see. tests/compiler/test_cache.py turns it on where it is tested.
os.environ["FTSPEC_COMPILE_CACHE"] = "off"

pytest_plugins = ["harness.fixtures", "helpers.golden", "helpers.area_times"]
