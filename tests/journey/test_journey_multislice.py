"""The README's "Multislice" journey, run as a user runs it: two slices of two workers (v4-16)
requested as one queued resource from the emulator, the inventory's view of the job, a bootstrap,
a run that prints the MEGASCALE_* environment each worker saw, and the teardown.

The bootstrap is ``site.yml --tags python,libtpu``, not the whole ``site.yml`` the Day two demo
runs: run.yml needs only the login user's venv (the python role; run.yml's own refusal names it)
and the TPU lock helper (the libtpu role; else every run needs ``-e tpu_run_unlock=false``).
Both are documented tags of site.yml (playbooks/bootstrap.yml), so this is a bootstrap a user can
type; the whole site.yml (framework wheels, NFS, remote shell) on four workers adds much more and
proves nothing more about multislice. Measured on a shared 2-core machine under a load of 40 to
70: up 88 s, inventory 3 s, bootstrap 443 s (python3.10 from the image's apt repository, uv and
the venv on four workers), run 46 s, teardown 29 s; 611 s in all. The bootstrap is most of it.

The emulator's workers have no TPU and no libtpu, so the slices never really join: what is
checked is what every worker's command saw, read from each worker's own run record.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.journey.harness import LABEL, PROJECT, ZONE, Journey, docker, journey_pod, ok, run_id

pytestmark = pytest.mark.journey_step

STEPS = ("up", "inventory", "bootstrap", "run", "teardown")
NAME = "ms"
WORKERS = {f"{NAME}-{s}-w{w}": (s, w) for s in (0, 1) for w in (0, 1)}
RUNS_DIR = "/home/tpu/cloudtpu-runs"  # the demo's login user is tpu


@pytest.fixture(scope="module")
def journey() -> Iterator[Journey]:
    with journey_pod("multislice", steps=STEPS, before_env=(), node_id=f"{NAME}-0") as state:
        yield state


def container(journey: Journey, host: str) -> str:
    """The container of an inventory host ms-<slice>-w<worker>, found by the backend's labels."""
    slice_id, worker = WORKERS[host]
    names = docker(
        "ps",
        "--filter",
        f"label={LABEL}={journey.emulator_id}",
        "--filter",
        f"label=cloudtpu.node={PROJECT}/{ZONE}/{NAME}-{slice_id}",
        "--filter",
        f"label=cloudtpu.worker={worker}",
        "--format",
        "{{.Names}}",
    ).split()
    assert len(names) == 1, f"{host}: containers {names}"
    return names[0]


def test_up(journey: Journey) -> None:
    ok(journey.run("up", timeout=600))
    zone = journey.zone()
    queued = [q for q in zone["queued_resources"] if q["name"].endswith(f"/queuedResources/{NAME}")]
    assert len(queued) == 1, f"not one queued resource {NAME}: {zone['queued_resources']}"
    assert queued[0]["state"]["state"] == "ACTIVE", queued[0]["state"]
    specs = queued[0]["tpu"]["nodeSpec"]
    assert [s.get("multisliceParams", {}).get("nodeCount") for s in specs] == [2], specs
    for slice_id in (0, 1):
        node = journey.node(f"{NAME}-{slice_id}")
        assert node["state"] == "READY", node
        assert node.get("queuedResource", "").endswith(f"/queuedResources/{NAME}"), node
        assert len(journey.addresses(f"{NAME}-{slice_id}")) == 2


def test_inventory(journey: Journey) -> None:
    run = ok(journey.run("inventory"))
    for host in WORKERS:
        assert f"--{host}" in run.stdout, f"{host} not in tpu_multislice_{NAME}:\n{run.tail()}"
    for line in ('"tpu_slice_id": 1', '"tpu_num_slices": 2', f'"tpu_queued_resource": "{NAME}"'):
        assert line in run.stdout, f"ms-1-w0 lacks {line}:\n{run.tail()}"
    assert f'"tpu_pod_job_coordinator": "{NAME}-0-w0"' in run.stdout, run.tail()


def test_bootstrap(journey: Journey) -> None:
    ok(journey.run("bootstrap", timeout=1500))


def test_run(journey: Journey) -> None:
    run = ok(journey.run("run"))
    ident = run_id(run)
    coordinator = journey.addresses(f"{NAME}-0")[0]
    seen = {}
    for host in WORKERS:
        log = docker("exec", container(journey, host), "cat", f"{RUNS_DIR}/{ident}/{host}.log")
        seen[host] = dict(line.split("=", 1) for line in log.splitlines() if "=" in line)
    for host, (slice_id, _worker) in WORKERS.items():
        assert seen[host] == {
            "JAX_COORDINATOR_ADDRESS": f"{coordinator}:8476",
            "MEGASCALE_COORDINATOR_ADDRESS": f"{coordinator}:8080",
            "MEGASCALE_NUM_SLICES": "2",
            "MEGASCALE_PORT": "8080",
            "MEGASCALE_SLICE_ID": str(slice_id),
        }, f"{host} saw {seen[host]}:\n{run.tail()}"


def test_teardown(journey: Journey) -> None:
    ok(journey.run("teardown", timeout=600))
    assert not any(journey.leftovers().values()), journey.leftovers()
    assert journey.emulator_pid() is None, "the emulator still has its pid file"
