# SPDX-License-Identifier: GPL-2.0-only
"""A runner's standby engine process (:func:`packetdrill.engine_process.start_run`): it imports
the engine while the machine is idle, then waits on stdin for one run, makes it and exits.

The run is the engine's (:func:`packetdrill.engine.run_script`), not the command line's: the
runner hands over a script and its options already parsed, and reads the result from the JSON
file it names; the diagnostic also goes to stderr, as the command line prints it.
"""

import json
import os
import sys

sys.path[0] = sys.path[0].rsplit("/", 2)[0]  # this folder's place: the package's folder

from packetdrill.engine import run_script  # noqa: E402  (the warm-up: all a run imports)


def serve() -> None:
    """Make the run the runner writes to stdin, from its folder and in its environment.
    End-of-file instead of a run (the runner exited, or had no run for us): nothing to do."""
    request = sys.stdin.buffer.read()
    if not request:
        return
    run = json.loads(request)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.chdir(run["cwd"])
    os.environ.clear()
    os.environ.update(run["env"])
    try:
        result = run_script(run["script"], [(name, value) for name, value in run["options"]])
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    with open(run["result_json"], "w") as out:
        out.write(result.to_json())
    if result.message:
        print(result.message, file=sys.stderr, flush=True)
    sys.exit(0 if result.passed else 1)


if __name__ == "__main__":
    serve()
