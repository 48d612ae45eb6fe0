# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether the framework and its tools are in a venv; reads only.

tasks/install.yml runs it with the venv's own python as the login user:
`python -c "<this file>" <distribution> [<tool> ...]`. It prints the distribution's version
(rc 1 when it is not installed), then one line naming the tools that are not installed (empty
when all are). Python 3.8 or newer, standard library only.
"""

import importlib.metadata
import sys


def normal(name):
    """A distribution's name as the installed metadata compares it."""
    return name.lower().replace("-", "_")


print(importlib.metadata.version(sys.argv[1]))
have = {normal(dist.metadata["Name"]) for dist in importlib.metadata.distributions()}
print(*(tool for tool in sys.argv[2:] if normal(tool) not in have))
