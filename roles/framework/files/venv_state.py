# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the framework role leaves in a venv, printed for cloudtpu.pod.tpu_state; reads only.

The role's record runs it, and the next run's state check again, with the venv's own python as
the login user: `python -I -B -c "<this file>" <venv>/bin/activate`. It prints one JSON object:
the interpreter, every distribution with its version (a package removed or changed, also a
dependency such as jaxlib or libtpu), the user and group it runs as (the login user's passwd
entry), and the owner, mode and text of the role's managed block in bin/activate. The same venv
gives the same line; anything the role's tasks would repair gives another.
Python 3.8 or newer, standard library only.
"""

import importlib.metadata
import json
import os
import sys

BEGIN = "# BEGIN cloudtpu.pod framework environment"
END = "# END cloudtpu.pod framework environment"


def distributions():
    """Sorted [name, version] of every distribution the interpreter sees."""
    found = set()
    for dist in importlib.metadata.distributions():
        found.add((str(dist.metadata["Name"]), str(dist.version)))
    return [list(item) for item in sorted(found)]


def managed_block(text):
    """The lines of every block between the role's markers, markers included."""
    lines, inside = [], False
    for line in text.splitlines():
        if line == BEGIN:
            inside = True
        if inside:
            lines.append(line)
        if line == END:
            inside = False
    return lines


def activate(path):
    """Owner, mode and the role's block of bin/activate; None when it cannot be read."""
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as error:
        return {"error": error.strerror}
    return {
        "uid": info.st_uid,
        "gid": info.st_gid,
        "mode": oct(info.st_mode & 0o7777),
        "block": managed_block(text),
    }


def state(activate_path):
    return {
        "python": sys.version,
        "prefix": sys.prefix,
        "ids": [os.getuid(), os.getgid()],
        "distributions": distributions(),
        "activate": activate(activate_path),
    }


if __name__ == "__main__":
    print(json.dumps(state(sys.argv[1]), sort_keys=True))
