"""Root conftest: load netregress's pytest plugins even from a checkout that was not
pip-installed (the entry points carry the same names, so nothing is registered twice),
plus pytest's own pytester, which the plugin's tests drive."""

pytest_plugins = ["netns.pytest_plugin", "packetdrill.pytest_plugin",
                  "kernels.pytest_plugin", "evidence.report_html", "pytester"]

# docs/examples holds demo scripts that fail on some kernels on purpose (docs/html-report.md).
collect_ignore = ["docs"]
