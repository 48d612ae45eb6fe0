"""Command line: serve the emulator until interrupted.

    python -m tools.tpu_emulator --state inventories/demo/emulator-state.yml --port 0

The first line on stdout is the API URL (``http://HOST:PORT/v2``), ready for
``CLOUDTPU_API_ENDPOINT``; ``--url-file`` writes it to a file too.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType

from .model import Emulator
from .server import EmulatorServer
from .state import BACKENDS, load_backend, load_state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.tpu_emulator", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--state", help="YAML or JSON state file (projects, zones, nodes, settings, faults)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--url-file", help="also write the API URL to this file")
    parser.add_argument(
        "--operation-delay",
        type=float,
        default=None,
        help="seconds before operations complete (overrides the state)",
    )
    parser.add_argument(
        "--backend",
        default="memory",
        help=f"worker backend: {', '.join(sorted(BACKENDS))} or module:Class",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    args = parser.parse_args(argv)

    try:
        state = load_state(args.state)
        emulator = Emulator(
            state, backend=load_backend(args.backend), operation_delay=args.operation_delay
        )
        server = EmulatorServer(emulator, host=args.host, port=args.port, verbose=args.verbose)
    except (OSError, ValueError, TypeError, ImportError) as exc:
        print(f"tpu emulator: cannot start: {exc}", file=sys.stderr)
        return 2

    if args.url_file:  # written before the URL is printed, so a reader of stdout can rely on it
        tmp = Path(args.url_file + ".tmp")
        tmp.write_text(server.api_url + "\n", encoding="utf-8")
        tmp.replace(args.url_file)
    print(server.api_url, flush=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
        emulator.backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
