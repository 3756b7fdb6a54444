"""What the kuberay and ray targets share: the launcher's run as a Ray job.

Files: Ray's ``runtime_env`` cannot carry inline file contents (``working_dir`` and
``py_modules`` take local folders or remote zip URIs, which a KubeRay submitter pod does not
have). So the launcher's files travel as base64 JSON in the runtime_env variable
``FTSPEC_FILES`` (base64 because Ray expands ``${…}`` in runtime_env variables),
and the entrypoint starts with a short ``python -c`` (``ftspec.runtime.unpack``) that writes them into
a per-run folder ``/tmp/ftspec/<submission id>`` on the node that runs the entrypoint, refusing
a folder or file someone else prepared there; the launcher's command line reads them there
(absolute paths). runtime_env variables reach the entrypoint's
process, so this works with every submission mode and with the plain Jobs API.

A launcher that reads a local checkpoint (torchtune) names a download step
(``Launcher.download_step``: ``tune download`` of an ``hf://`` model) the entrypoint runs first.

One driver process runs the command on one node; a multi-node run's entrypoint is the
driver of ``ftspec.targets.ray_nodes`` instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from ftspec.runtime.unpack import UNPACK
from ftspec.spec.ir import Job
from ftspec.spec.ownership import ownership_labels
from ftspec.targets import get_launcher, shell
from ftspec.targets.base import Launch, without_generated_lines
from ftspec.targets.embed import relocate

FILES_ENV = "FTSPEC_FILES"
RUN_ROOT = "/tmp/ftspec"
NAME_KEY = "ftspec.dev/name"
SUBMISSION_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def launch_for(job: Job) -> Launch:
    """The launcher's run with its default paths (see ``ftspec.targets.paths``)."""
    return get_launcher(job.launcher).launch(job)


def metadata(job: Job) -> dict[str, str]:
    """Ownership marks (string values only, as Ray requires)."""
    return {**ownership_labels(job.spec_id), NAME_KEY: job.name}


def _download_step(job: Job) -> list[str]:
    return get_launcher(job.launcher).download_step(job)


def encode_files(files: Any) -> str:
    """Base64 of the files as JSON: Ray expands ``$VAR`` / ``${VAR}`` in runtime_env
    variables (``os.path.expandvars``), which would corrupt configs that use OmegaConf
    interpolation such as ``${output_dir}``."""
    text = json.dumps(dict(sorted(dict(files).items())), sort_keys=True)
    return base64.b64encode(text.encode()).decode()


def submission_id(job: Job, content: Any) -> str:
    """``<name>-<12 hex of the content hash>``: letters, digits, ``.``, ``_``, ``-`` only.
    ``content`` is what the job runs (no hash of the spec, no ftspec version), so the id
    stays while the run does."""
    digest = hashlib.sha256(
        json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:12]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", job.name)[:40].strip("-.") or "ftspec"
    return f"{stem}-{digest}"


def ray_job(job: Job, launch: Launch, env_vars: dict[str, str], pip: list[str],
            resources: dict[str, float]) -> dict[str, Any]:
    """entrypoint, submission id, runtime_env and entrypoint resources of the Ray job.

    One node: the entrypoint unpacks the files, downloads, and runs the launcher. More
    nodes: the entrypoint is the driver (``ftspec.targets.ray_nodes``), which does those
    steps on every node it reserves."""
    from ftspec.runtime.ray_nodes.wire import NODES_ENV, encode_plan
    from ftspec.targets.ray_nodes import DRIVER_MODULE, node_plan

    env = {**dict(launch.env), **env_vars}
    # the job's identity takes part: two specs running the same get two ids (a renamed
    # metadata.id is submitted before its old job is deleted)
    content: dict[str, Any] = {
        "spec_id": job.spec_id, "argv": list(launch.argv), "env": env, "pip": pip,
        "files": {name: without_generated_lines(text) for name, text in launch.files.items()},
        "resources": resources, "download": _download_step(job)}
    if job.nodes > 1:
        content["nodes"] = node_plan(job, list(launch.argv), [], "")
    sid = submission_id(job, content)
    run_dir = f"{RUN_ROOT}/{sid}"
    steps = []
    if launch.files:
        env[FILES_ENV] = encode_files(launch.files)
        env["FTSPEC_RUN_DIR"] = run_dir
        steps.append(shell.join(["python", "-c", UNPACK]))
    download = [_download_step(job)] if _download_step(job) else []
    steps += [shell.join(step) for step in download]
    argv = relocate(launch.argv, launch.files, run_dir)
    steps.append(shell.join(argv))
    if job.nodes > 1:
        env[NODES_ENV] = encode_plan(node_plan(job, argv, download, run_dir))
        steps = [shell.join(["python", "-m", DRIVER_MODULE])]
    runtime_env: dict[str, Any] = {}
    if env:
        runtime_env["env_vars"] = dict(sorted(env.items()))
    if pip:
        runtime_env["pip"] = list(pip)
    return {"entrypoint": " && ".join(steps), "submission_id": sid,
            "runtime_env": runtime_env, "resources": resources}
