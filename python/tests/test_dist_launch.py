"""The multi-host launch files agree with each other and with the script they start."""

from __future__ import annotations

import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LAUNCH = os.path.join(ROOT, "examples", "dist")


def _kubernetes_objects() -> dict:
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(LAUNCH, "k8s-job.yaml"), encoding="utf-8") as file:
        return {doc["kind"]: doc for doc in yaml.safe_load_all(file)}


def test_the_kubernetes_job_gives_every_pod_its_rank_and_the_first_pods_store():
    objects = _kubernetes_objects()
    service, job = objects["Service"], objects["Job"]
    name = job["metadata"]["name"]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    # Pod i is <job>-<i>.<service>: an indexed Job whose pods sit under a headless Service that
    # selects them (the Job controller labels its pods job-name: <job>).
    assert spec["completionMode"] == "Indexed"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"job-name": name}
    assert pod["subdomain"] == service["metadata"]["name"]
    container = pod["containers"][0]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["MASTER"] == f"{name}-0.{service['metadata']['name']}"
    assert int(env["HOSTS"]) == spec["completions"] == spec["parallelism"]
    assert int(env["PORT"] if "PORT" in env else 29500) == service["spec"]["ports"][0]["port"]
    command = " ".join(container["command"] + container["args"])
    assert "NODE_RANK=$JOB_COMPLETION_INDEX" in command
    script = re.search(r"(examples/dist/\S+\.sh)", command).group(1)
    assert os.path.isfile(os.path.join(ROOT, script)), script
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert env["PARTS"].startswith(mounts["data"] + "/")


def test_every_launch_file_starts_the_torchrun_script_that_trains():
    with open(os.path.join(LAUNCH, "torchrun.sh"), encoding="utf-8") as file:
        torchrun = file.read()
    assert "dist_train_sage.py" in torchrun
    assert os.path.isfile(os.path.join(ROOT, "examples", "dist_train_sage.py"))
    with open(os.path.join(LAUNCH, "slurm.sbatch"), encoding="utf-8") as file:
        assert "examples/dist/torchrun.sh" in file.read()
