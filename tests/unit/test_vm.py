"""The VM's static checks, which run here: shellcheck on the provisioning script, the
Vagrantfile's syntax, and the README naming the commands the script runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "provision-vm.sh"
COMMANDS = (
    "apt-get install",
    "curl ",
    'echo "deb',
    "modprobe",
    "python3 -m venv",
    ".venv/bin/python -m pip install",
    "make ",
)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.geteuid() == 0:
            pytest.fail(f"{name} is missing: make setup installs it (Debian package)")
        pytest.skip(f"{name} not installed (make setup installs it when run as root)")
    return path


def test_the_provisioning_script_passes_shellcheck() -> None:
    done = subprocess.run(
        [tool("shellcheck"), "--severity=style", str(SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.access(SCRIPT, os.X_OK)


def test_the_vagrantfile_parses() -> None:
    done = subprocess.run(
        [tool("ruby"), "-c", str(REPO / "Vagrantfile")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "Syntax OK" in done.stdout, done.stderr
    text = (REPO / "Vagrantfile").read_text()
    assert '"bento/ubuntu-24.04"' in text and "scripts/provision-vm.sh" in text
    assert 'ENV.fetch("INNET_VM_CPUS", "4")' in text
    assert 'ENV.fetch("INNET_VM_MEMORY", "8192")' in text


def script_commands() -> list[str]:
    joined = re.sub(r"\\\n\s*", "", SCRIPT.read_text())  # continuation lines joined
    lines = [line.strip() for line in joined.splitlines()]
    return [line for line in lines if line.startswith(COMMANDS)]


def readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- vm-commands:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_the_readme_names_the_commands_the_script_runs() -> None:
    script = script_commands()
    assert len(script) >= 10 and "make p4" in script and "make test" in script
    assert readme_commands() == script


def test_the_script_and_the_readme_name_the_versions_ci_proves() -> None:
    from topo.bmv2 import PROVEN_BMV2, PROVEN_P4C

    assert f"proven_p4c={PROVEN_P4C} proven_bmv2={PROVEN_BMV2}" in SCRIPT.read_text()
    readme = " ".join((REPO / "README.md").read_text().split())
    assert f"p4c {PROVEN_P4C} and BMv2 {PROVEN_BMV2}" in readme
