"""The README's "Queued resources" journey, run as a user runs it: the emulator alone, a spot
node requested through a queued resource (the default for spot capacity), a flex-start request
whose first attempt FAILS (the emulator is told to fail the zone's next request) and is
re-queued, v5e, v5p and v6e nodes with their generation's image and a mismatched pair refused,
and the teardown that deletes both requests with their nodes. One-worker nodes
(v4-8) and no site.yml: what is checked is the emulator's state and what provision reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.journey.harness import Journey, journey_pod, ok

pytestmark = pytest.mark.journey_step

STEPS = ("up", "spot", "flex-requeue", "generations", "mismatch", "teardown")


@pytest.fixture(scope="module")
def journey() -> Iterator[Journey]:
    with journey_pod("queued", project=False, steps=STEPS, before_env=(), node_id="qspot") as state:
        yield state


def queued(journey: Journey, name: str) -> dict[str, Any]:
    found = [q for q in journey.zone()["queued_resources"] if q["name"].endswith("/" + name)]
    assert len(found) == 1, f"not one queued resource {name}: {journey.zone()['queued_resources']}"
    return found[0]


def test_up(journey: Journey) -> None:
    ok(journey.run("up", timeout=300))
    assert journey.emulator_pid() is not None
    assert journey.zone()["queued_resources"] == []


def test_spot(journey: Journey) -> None:
    run = ok(journey.run("spot", timeout=600))
    assert "spot capacity is requested through a queued resource" in run.stdout, run.tail()
    request = queued(journey, "qspot")
    assert request["state"]["state"] == "ACTIVE" and "spot" in request, request
    node = journey.node("qspot")
    assert node["state"] == "READY" and node["schedulingConfig"].get("spot") is True, node
    assert node["queuedResource"] == request["name"]
    assert len(journey.addresses("qspot")) == 1


def test_flex_requeue(journey: Journey) -> None:
    run = ok(journey.run("flex-requeue", timeout=600))
    assert "created FAILED, requeued ACTIVE" in run.stdout, run.tail()
    request = queued(journey, "qflex")
    assert request["state"]["state"] == "ACTIVE", request
    assert request["runDuration"] == {"maxRunDuration": "3600s"}, request
    assert request["queueingPolicy"] == {"validUntilDuration": "600s"}, request
    assert "spot" not in request and "guaranteed" not in request
    node = journey.node("qflex")
    assert node["state"] == "READY", node
    assert node["schedulingConfig"].get("provisioningModel") == "FLEX_START", node


# The image each generation gets by default, as the public docs name them; the emulator keeps
# its own table and refuses other pairs, so a wrong client table could not pass this step.
IMAGES = {
    "gen-v5litepod": "v2-alpha-tpuv5-lite",
    "gen-v5p": "v2-alpha-tpuv5",
    "gen-v6e": "v2-alpha-tpuv6e",
}


def test_generations(journey: Journey) -> None:
    run = ok(journey.run("generations", timeout=600))
    for name, image in IMAGES.items():
        node = journey.node(name)
        assert node["state"] == "READY", node
        assert node["runtimeVersion"] == image, f"{name}: {node['runtimeVersion']}\n{run.tail()}"
        assert "queuedResource" not in node, f"on-demand {name} went through a queued resource"


def test_mismatch(journey: Journey) -> None:
    run = ok(journey.run("mismatch", timeout=300))
    assert "refused, as it should be" in run.stdout, run.tail()
    assert "INVALID_ARGUMENT" in run.output and "tpu-ubuntu2204-base" in run.output, run.tail()
    names = [n["name"].rsplit("/", 1)[-1] for n in journey.zone()["nodes"]]
    assert "gen-wrong" not in names, names


def test_teardown(journey: Journey) -> None:
    ok(journey.run("teardown", timeout=600))
    assert not any(journey.leftovers().values()), journey.leftovers()
    assert journey.emulator_pid() is None, "the emulator still has its pid file"
