"""The deployment files (deploy/) hold to the binary they deploy, so they cannot drift from it:

- every ASKGATE_* variable named anywhere in deploy/ (settings, comments, examples) and in the
  README's "Install and deploy" section is one `askgate serve --help` lists;
- every flag given to `askgate serve` (the unit's ExecStart, the container's args, the image's
  CMD) is one it lists;
- the systemd unit keeps its sandbox and its state directory where ASKGATE_DATA_DIR points;
- the Kubernetes manifests fit together: probes on /readyz and /healthz at the port the gateway
  listens on, a Redis store with the audit key file it requires, Secret keys that exist, files
  mounted where the variables point, a Service and a PodDisruptionBudget that select the pods;
- the image runs `serve` as a non-root user and checks /readyz at the port it listens on.

The binary is ASKGATE_BIN (else target/debug/askgate under CARGO_TARGET_DIR or the repository).
Run: ASKGATE_BIN=target/debug/askgate .venv/client/bin/python -m pytest tests/deploy -q
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "pysupport"))
from askgate_binary import binary  # noqa: E402  (after the path it is found on)
DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "askgate.service"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES = DEPLOY / "kubernetes"
README = REPO / "README.md"
README_SECTION = "## Install and deploy"

ENV_NAME = re.compile(r"\bASKGATE_[A-Z0-9_]*[A-Z0-9]\b")
OTHER_ENV = {"RUST_LOG"}
"""Variables the gateway reads that are not `serve` flags."""


# --- what the binary says ------------------------------------------------------------------------


@dataclass(frozen=True)
class Help:
    flags: frozenset[str]
    """Every long flag of `askgate serve`, with its dashes."""
    env: frozenset[str]
    """Every variable it reads, from the `[env: ...]` lines."""


def parse_help(text: str) -> Help:
    flags = set(re.findall(r"^\s*(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", text, re.MULTILINE))
    env = set(re.findall(r"\[env: (ASKGATE_[A-Z0-9_]+)\]", text))
    return Help(frozenset(flags), frozenset(env))


@cache
def serve_help() -> Help:
    text = subprocess.run(
        [str(binary()), "serve", "--help"], check=True, capture_output=True, text=True, timeout=30
    ).stdout
    found = parse_help(text)
    # What the parse must find, or it is the parse that is wrong.
    assert {"--listen", "--data-dir", "--store", "--agent-key", "--help"} <= found.flags, text
    assert {"ASKGATE_LISTEN", "ASKGATE_DATA_DIR", "ASKGATE_STORE", "ASKGATE_AGENT_KEYS"} <= found.env, text
    return found


def test_the_help_is_read_as_flags_and_variables() -> None:
    sample = (
        "Options:\n      --listen <LISTEN>\n          Address\n          [env: ASKGATE_LISTEN]\n"
        "      --recover-damaged-log\n          Start even if ... (see `askgate store check`)\n"
        "  -h, --help\n          Print help\n"
    )
    assert parse_help(sample) == Help(
        frozenset({"--listen", "--recover-damaged-log", "--help"}), frozenset({"ASKGATE_LISTEN"})
    )


def unknown_flags(args: list[str]) -> list[str]:
    """The flags among `serve`'s arguments that it does not list (`--flag=value` or `--flag`)."""
    listed = serve_help().flags
    return [arg for arg in args if arg.startswith("--") and arg.split("=", 1)[0] not in listed]


def listen_port(listen: str) -> int:
    """The port of the first address of an ASKGATE_LISTEN value (HOST:PORT, comma-separated)."""
    return int(listen.split(",", 1)[0].strip().rsplit(":", 1)[1])


def unknown_env(names: set[str]) -> list[str]:
    return sorted(name for name in names if name not in serve_help().env | OTHER_ENV)


# --- every variable named anywhere ---------------------------------------------------------------


def deploy_files() -> list[Path]:
    return sorted(path for path in DEPLOY.rglob("*") if path.is_file())


def readme_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{README_SECTION}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_every_variable_named_is_one_serve_reads() -> None:
    named: dict[str, set[str]] = {}
    sources = {str(path.relative_to(REPO)): path.read_text(encoding="utf-8") for path in deploy_files()}
    sources[f"README.md > {README_SECTION[3:]}"] = readme_section()
    for where, text in sources.items():
        for name in ENV_NAME.findall(text):
            named.setdefault(name, set()).add(where)
    assert len(named) >= 8, named  # the files do name them: the pattern finds them
    wrong = {name: sorted(named[name]) for name in unknown_env(set(named))}
    assert not wrong, f"not in `askgate serve --help`: {wrong}"


# --- the systemd unit ----------------------------------------------------------------------------


def unit_settings(text: str, *, commented: bool = False) -> dict[str, list[str]]:
    """Each `Key=value` of the unit's [Service] section, in order (keys repeat); with
    `commented`, also those written as a commented-out line (`#Key=value`, no space)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if commented and re.match(r"#[A-Z]\w*=", line):
            line = line[1:]
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_the_unit_sets_only_what_serve_reads() -> None:
    text = UNIT.read_text(encoding="utf-8")
    settings = unit_settings(text, commented=True)
    [exec_start] = settings["ExecStart"]
    program, subcommand, *args = shlex.split(exec_start)
    assert Path(program).name == "askgate" and subcommand == "serve", exec_start
    assert not unknown_flags(args), exec_start
    names = {value.split("=", 1)[0] for value in settings["Environment"]}
    assert {"ASKGATE_LISTEN", "ASKGATE_DATA_DIR", "ASKGATE_NOTIFY", "ASKGATE_AUDIT_KEY_FILE"} <= names
    assert not unknown_env(names)


def test_the_unit_is_sandboxed_and_keeps_its_store_in_its_state_directory() -> None:
    settings = unit_settings(UNIT.read_text(encoding="utf-8"))
    one = {key: values[-1] for key, values in settings.items()}
    assert one["DynamicUser"] == "yes"
    state = one["StateDirectory"]
    env = dict(value.split("=", 1) for value in settings["Environment"])
    assert env["ASKGATE_DATA_DIR"] == f"%S/{state}"  # %S: /var/lib
    for key, value in {
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "NoNewPrivileges": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert one.get(key) == value, key
    assert "@system-service" in settings["SystemCallFilter"]
    assert set(one["RestrictAddressFamilies"].split()) <= {"AF_INET", "AF_INET6", "AF_UNIX"}
    # askgate reads /proc/meminfo to size --max-open-bytes: not hidden from it.
    assert one.get("ProcSubset", "all") == "all"


# --- the image -----------------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.strip().partition(" ") for line in joined.splitlines() if line.strip())
    ]


def test_the_image_runs_serve_as_a_user_and_checks_readyz() -> None:
    instructions = dockerfile_instructions(DOCKERFILE.read_text(encoding="utf-8"))
    runtime = instructions[max(i for i, (word, _) in enumerate(instructions) if word == "FROM") :]
    by_word: dict[str, list[str]] = {}
    for word, rest in runtime:
        by_word.setdefault(word, []).append(rest)
    env = dict(pair.split("=", 1) for rest in by_word["ENV"] for pair in shlex.split(rest))
    assert not unknown_env(set(env))
    [cmd] = by_word["CMD"]
    subcommand, *args = yaml.safe_load(cmd)  # the exec form is a JSON list
    assert subcommand == "serve" and not unknown_flags(args), cmd
    [user] = by_word["USER"]
    assert user.split(":")[0] not in {"root", "0"}, user
    port = listen_port(env["ASKGATE_LISTEN"])
    [health] = by_word["HEALTHCHECK"]
    assert f"127.0.0.1:{port}/readyz" in health, health
    assert str(port) in by_word["EXPOSE"]


# --- the Kubernetes manifests --------------------------------------------------------------------


@cache
def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text(encoding="utf-8"))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for name in kustomization["resources"]:
        for document in yaml.safe_load_all((KUBERNETES / name).read_text(encoding="utf-8")):
            if document:
                found[(document["kind"], document["metadata"]["name"])] = document
    listed = {path.name for path in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == set(kustomization["resources"]), "a manifest is not in kustomization.yaml"
    return found


def gateway() -> dict[str, Any]:
    [container] = manifests()[("Deployment", "askgate")]["spec"]["template"]["spec"]["containers"]
    return container


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in container["env"]}


def test_the_deployment_sets_only_what_serve_reads() -> None:
    container = gateway()
    subcommand, *args = container["args"]
    assert subcommand == "serve" and not unknown_flags(args), container["args"]
    assert not unknown_env(set(env_of(container)))


def test_the_deployment_runs_several_replicas_on_redis() -> None:
    deployment = manifests()[("Deployment", "askgate")]
    assert deployment["spec"]["replicas"] >= 2
    env = env_of(gateway())
    assert re.match(r"rediss?://", env["ASKGATE_STORE"]["value"])
    # Required with Redis: the same audit key on every node.
    assert "ASKGATE_AUDIT_KEY_FILE" in env
    redis_host = env["ASKGATE_STORE"]["value"].split("//", 1)[1].split(":", 1)[0].split("/", 1)[0]
    if ("Service", redis_host) in manifests():
        assert ("StatefulSet", redis_host) in manifests()


def test_the_probes_ask_the_port_the_gateway_listens_on() -> None:
    container = gateway()
    port = listen_port(env_of(container)["ASKGATE_LISTEN"]["value"])
    ports = {entry["name"]: entry["containerPort"] for entry in container["ports"]}
    assert ports["http"] == port
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and ports.get(get["port"], get["port"]) == port, probe
    service = manifests()[("Service", "askgate")]
    assert {entry["targetPort"] for entry in service["spec"]["ports"]} <= set(ports) | set(ports.values())


def test_keys_and_files_come_from_the_secret() -> None:
    secret = manifests()[("Secret", "askgate")]
    keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    container = gateway()
    env = env_of(container)
    for name in ("ASKGATE_AGENT_KEYS", "ASKGATE_OPERATOR_KEYS"):
        reference = env[name]["valueFrom"]["secretKeyRef"]
        assert reference["name"] == "askgate" and reference["key"] in keys, name
    # The files the variables name are in a volume of the Secret, mounted where they point.
    volumes = {volume["name"]: volume for volume in manifests()[("Deployment", "askgate")]["spec"]["template"]["spec"]["volumes"]}
    files: dict[str, str] = {}
    for mount in container["volumeMounts"]:
        source = volumes[mount["name"]].get("secret")
        if source:
            assert source["secretName"] == "askgate"
            for item in source["items"]:
                assert item["key"] in keys, item
                files[f"{mount['mountPath']}/{item['path']}"] = item["key"]
    for name in ("ASKGATE_AUDIT_KEY_FILE", "ASKGATE_NOTIFY"):
        assert env[name]["value"] in files, name
    # The example's audit key is refused at start (not 64 hex digits): nobody ships a known key.
    audit = secret["stringData"][files[env["ASKGATE_AUDIT_KEY_FILE"]["value"]]]
    assert not re.fullmatch(r"[0-9a-fA-F]{64}\n?", audit)


def test_the_service_and_the_budget_select_the_pods() -> None:
    deployment = manifests()[("Deployment", "askgate")]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = manifests()[("Service", "askgate")]
    assert service["spec"]["selector"].items() <= labels.items()
    budget = manifests()[("PodDisruptionBudget", "askgate")]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    allowed_down = budget["spec"].get("maxUnavailable", deployment["spec"]["replicas"] - budget["spec"].get("minAvailable", 0))
    assert 0 < allowed_down < deployment["spec"]["replicas"]
