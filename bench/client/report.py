"""The client-library benchmark's section of bench/client/RESULTS.md, from the result of
bench/client/run.py."""

from __future__ import annotations

from typing import Any


def ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` as ``1.23x``; ``-`` when ours is zero."""
    return f"{theirs / ours:.2f}x" if ours > 0 else "-"


def cell(summary: dict[str, float], unit: str = "s") -> str:
    """``median unit (min-max)`` of a summary."""
    digits = 0 if unit == "MB" else 3
    return (
        f"{summary['median']:.{digits}f} {unit} "
        f"({summary['min']:.{digits}f}-{summary['max']:.{digits}f})"
    )


def megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


def markdown(result: dict[str, Any]) -> str:
    wall, cpu, rss = result["wall"], result["cpu"], result["rss_mb"]
    ours, official = result["dependencies"]["ours"], result["dependencies"]["official"]
    pages = -(-result["nodes"] // result["page_size"])
    versions = result["versions"]

    def pair(label: str, table: dict[str, Any], mine: str, theirs: str, unit: str = "s") -> str:
        a, b = table[mine], table[theirs]
        return (
            f"| {label} | {cell(a, unit)} | {cell(b, unit)} | {ratio(b['median'], a['median'])} |"
        )

    def count_row(label: str, mine: Any, theirs: Any, ratio_cell: str = "") -> str:
        return f"| {label} | {mine} | {theirs} | {ratio_cell} |"

    req = result["requests"]
    lines = [
        f"{result['nodes']} nodes x 4 workers ({result['workers']} hosts) in one zone, page size "
        f"{result['page_size']} ({pages} pages); google-cloud-tpu {versions['google-cloud-tpu']} "
        f"(REST transport) against the collection's client on requests "
        f"{versions['requests']} and google-auth {versions['google-auth']}; median (min-max) of "
        f"{result['repeat']} listings and of {result['round_trips']} fresh interpreters per row, "
        f"alternating; {result['machine']}; load average {result['load_average']} at the end.",
        "",
        "| measure | collection's client | google-cloud-tpu | google-cloud-tpu / collection |",
        "|---|---|---|---|",
        pair("list every node of the zone: wall", wall, "list_ours", "list_official"),
        pair("list every node of the zone: CPU", cpu, "list_ours", "list_official"),
        pair(
            "list, as plain dicts (what hostvars take): wall",
            wall,
            "list_ours",
            "list_official_dicts",
        ),
        pair(
            "list, as plain dicts (what hostvars take): CPU",
            cpu,
            "list_ours",
            "list_official_dicts",
        ),
        count_row("API requests per listing", req["list_ours"], req["list_official"]),
        pair(
            "module round trip (start, import, one get_node): wall",
            wall,
            "ours_get",
            "official_get",
        ),
        pair("module round trip: CPU", cpu, "ours_get", "official_get"),
        pair("module round trip: peak memory", rss, "ours_get", "official_get", "MB"),
        pair(
            "module round trip with AnsibleModule imported first: wall",
            wall,
            "ours_module",
            "official_module",
        ),
        pair("module round trip with AnsibleModule: CPU", cpu, "ours_module", "official_module"),
        pair("import alone (fresh interpreter): wall", wall, "ours_import", "official_import"),
        pair("import alone: CPU", cpu, "ours_import", "official_import"),
        count_row(
            "distributions installed (the library and its requirements)",
            ours["count"],
            official["count"],
            ratio(official["count"], ours["count"]),
        ),
        count_row(
            "installed size",
            megabytes(ours["bytes"]),
            megabytes(official["bytes"]),
            ratio(official["bytes"], ours["bytes"]),
        ),
        count_row(
            "with native code (a wheel per platform and Python)",
            ", ".join(ours["compiled"]) or "none",
            ", ".join(official["compiled"]) or "none",
        ),
        "",
        f"For scale: an interpreter that does nothing (`python -c pass`) takes "
        f"{cell(wall['start'])} wall, {cell(cpu['start'])} CPU and {cell(rss['start'], 'MB')} of "
        f"memory; the `ansible` package with "
        f"its requirements is {result['dependencies']['ansible']['count']} distributions, "
        f"{megabytes(result['dependencies']['ansible']['bytes'])}.",
        "",
        f"google-cloud-tpu adds {len(result['extra'])} distributions "
        f"({megabytes(result['extra_bytes'])}) to what the collection's client needs: "
        f"{', '.join(result['extra'])}.",
    ]
    return "\n".join(lines)
