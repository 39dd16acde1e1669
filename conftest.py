"""Root conftest: load netregress's pytest plugins even from a checkout that was not
pip-installed (the entry points carry the same names, so nothing is registered twice)."""

pytest_plugins = ["netns.pytest_plugin"]
