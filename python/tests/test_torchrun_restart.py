"""A trainer killed under ``torchrun --max_restarts 1`` resumes from its checkpoints and ends with
the model an uninterrupted run ends with, bit for bit (examples/train_sage_ddp.py: CPU, gloo, two
ranks on the bundled Cora).

What it guards besides the checkpoints: torchrun's agent keeps its store across restarts, and
newer torch no longer gives each attempt a prefix of its own there, so the example prefixes its
group's keys with the attempt (else the restarted ranks read the killed rank's gloo address and
fail); and the example leaves without destroying its gloo group (torch 1.13's destructor could
deadlock the restarted rank at its very end).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import free_port, gloo_env, run_gloo_group, runs_other_interpreters

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "train_sage_ddp.py")
# Two epochs of 5 batches a rank (70 training seeds a rank, 16 a batch); small layers.
TRAINING = ["--dataset", "cora", "--epochs", "2", "--batch-size", "16", "--fanouts", "5", "5",
            "--hidden", "16", "--workers", "1"]
CHECKSUM = re.compile(r"model checksum ([0-9a-f]{16}) after (\d+) batches")


def torchrun(*args: str, timeout: float = 90) -> str:
    """Runs the example under ``torchrun`` with two ranks; its output (stdout and stderr).
    The whole process group is killed when it outlives ``timeout`` seconds."""
    import volley

    env = gloo_env(PYTHONPATH=os.path.dirname(os.path.dirname(volley.__file__)))

    def start():
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                   "--max_restarts", "1", "--master_addr", "127.0.0.1",
                   "--master_port", str(free_port()),
                   "--redirects", "1", "--tee", "1",  # (a torch 1.13 bug on Python 3.11 needs both)
                   SCRIPT, *TRAINING, *args]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, env=env, start_new_session=True)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            pytest.fail(f"torchrun ran past {timeout} s:\n{output[-4000:]}")
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        return process.returncode, output

    returncode, output = run_gloo_group(start)
    assert returncode == 0, output[-4000:]
    return output


def checksum(output: str) -> tuple:
    """(model checksum, batches) that rank 0 printed last."""
    found = CHECKSUM.findall(output)
    assert found, output[-4000:]
    return found[-1]


@runs_other_interpreters
def test_a_killed_rank_resumes_and_ends_with_the_uninterrupted_model(tmp_path):
    uninterrupted = torchrun()
    assert "resumed" not in uninterrupted
    # Checkpoints after batches 3 and 6 (epoch 2's first batch); the last rank kills itself
    # (SIGKILL) after batch 8, in the first attempt only. The group restarts and resumes at
    # batch 6: epoch 2's remaining 4 batches a rank, 108 of the 140 seeds.
    restarted = torchrun("--checkpoint", str(tmp_path / "ckpt"), "--checkpoint-every", "3",
                         "--die-at-batch", "8")
    assert "resumed from batch 6 (epoch 2, batch 1)" in restarted, restarted[-4000:]
    assert re.search(r"epoch   2 .* 108 seeds over 2 rank", restarted), restarted[-4000:]
    assert not re.search(r"epoch   1 .* seeds over", restarted.split("resumed from")[1])
    assert checksum(uninterrupted)[1] == "10"
    assert checksum(restarted) == checksum(uninterrupted)
