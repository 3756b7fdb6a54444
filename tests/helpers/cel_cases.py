"""One object per CEL rule of the upstream CRDs that the rule refuses.

Each ``RuleCase`` names the rule (the schema path that carries it and the rule's text), a
valid object and the change that breaks the rule: on create (``before`` is None) or, for a
transition rule (``oldSelf``), on update from ``before`` to ``after``. ``tests`` use them
twice: against the real API server (which enforces the CRDs' rules itself) and
with ``ftspec.compiler.crd_rules`` directly, for every CRD file of the upstream folder.
``NOT_VIOLABLE`` lists the rules no write can break, with the reason.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

TRAINJOB = "trainjobs.trainer.kubeflow.org"
RUNTIME = "trainingruntimes.trainer.kubeflow.org"
CLUSTER_RUNTIME = "clustertrainingruntimes.trainer.kubeflow.org"
RAYJOB = "rayjobs.ray.io"
RAYCLUSTER = "rayclusters.ray.io"
PATCH_POD = ("spec.runtimePatches.[].trainingRuntimeSpec.template.spec.replicatedJobs.[]"
             ".template.spec.template.spec")


@dataclass(frozen=True)
class RuleCase:
    crd: str
    path: str
    """Schema path of the rule (``[]`` for list items), as ``rules_of`` spells it."""
    rule: str
    message: str
    """What the refusal says (the rule's message)."""
    field: str
    """Where the refusal points (the object's field)."""
    after: dict[str, Any]
    """Merged over the kind's base object: the object that breaks the rule."""
    before: dict[str, Any] | None = None
    """Merged over the base object and created first (transition rules)."""
    versions: tuple[str, ...] = field(default=("master",))

    @property
    def id(self) -> str:
        return f"{self.crd.split('.')[0]}:{self.path or '<root>'}:{self.rule[:40]}"


def merge(base: Any, change: Any) -> Any:
    if isinstance(base, dict) and isinstance(change, dict):
        out = copy.deepcopy(base)
        for key, value in change.items():
            if value is None:
                out.pop(key, None)  # None deletes the key
            else:
                out[key] = merge(out.get(key), value)
        return out
    return copy.deepcopy(change)


def base_object(crd: str, name: str, namespace: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace and crd != CLUSTER_RUNTIME:
        meta["namespace"] = namespace
    if crd == TRAINJOB:
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": meta, "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}}}
    if crd in (RUNTIME, CLUSTER_RUNTIME):
        kind = "TrainingRuntime" if crd == RUNTIME else "ClusterTrainingRuntime"
        pod = {"containers": [{"name": "node", "image": "busybox"}]}
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
                "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
                    "replicatedJobs": [{"name": "node", "template": {"spec": {
                        "template": {"spec": pod}}}}]}}}}
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.41.0"}]}}}
    if crd == RAYCLUSTER:
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta,
                "spec": {"headGroupSpec": head}}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta,
            "spec": {"entrypoint": "python -c pass", "rayClusterSpec": {"headGroupSpec": head}}}


def _patch_pod(pod: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"runtimePatches": [{"manager": "example.com/tool", "trainingRuntimeSpec": {
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
            "template": {"spec": pod}}}}]}}}}]}}


def _runtime_jobset(jobset: dict[str, Any], jobs: list[dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    node = {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [
        {"name": "node", "image": "busybox"}]}}}}}
    spec = dict(jobset)
    spec["replicatedJobs"] = jobs or [node]
    return {"spec": {"template": {"spec": spec}}}


def _two_jobs(status: str) -> list[dict[str, Any]]:
    def job(name: str) -> dict[str, Any]:
        return {"name": name, "template": {"spec": {"template": {"spec": {"containers": [
            {"name": "node", "image": "busybox"}]}}}}}
    return [job("init"), {**job("node"), "dependsOn": [{"name": "init", "status": status}]}]


IMMUTABLE = "field is immutable"
RFC1035 = "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"
URI_RULE = "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')"
URI_MESSAGE = "storageUri may be empty, or it must be a valid URI"
TRAINJOB_MANAGERS = "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"
RAY_MANAGERS = "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']"
# "master" is the default slot of the upstream folder: the pinned releases' CRDs
# (harness.upstream_modules), so it holds the same rules as "v2.3.0" while that is the pin.
ALL = ("master", "v2.3.0", "v2.1.0")
NEWER = ("master", "v2.3.0")


def _trainjob_cases() -> list[RuleCase]:
    tj = TRAINJOB
    cases = [
        RuleCase(tj, "", RFC1035, "metadata.name must match RFC 1035", "metadata.name",
                 {"metadata": {"name": "9-starts-with-a-digit"}}, versions=ALL),
        RuleCase(tj, "", "size(self.metadata.name) <= 63", "no more than 63 characters",
                 "metadata.name", {"metadata": {"name": "a" * 64}}, versions=ALL),
        RuleCase(tj, "spec.managedBy", TRAINJOB_MANAGERS, "ManagedBy must be",
                 "spec.managedBy", {"spec": {"managedBy": "example.com/other"}}, versions=ALL),
        RuleCase(tj, "spec.managedBy", "self == oldSelf", "immutable", "spec.managedBy",
                 {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}},
                 {"spec": {"managedBy": "trainer.kubeflow.org/trainjob-controller"}},
                 versions=ALL),
        RuleCase(tj, "spec.runtimeRef", "self == oldSelf", "immutable", "spec.runtimeRef",
                 {"spec": {"runtimeRef": {"name": "torchtune-llama3.2-3b"}}}, {},
                 versions=ALL),
        RuleCase(tj, "spec.initializer.model.storageUri", URI_RULE, URI_MESSAGE,
                 "spec.initializer.model.storageUri",
                 {"spec": {"initializer": {"model": {"storageUri": "no-scheme"}}}},
                 versions=NEWER),
        RuleCase(tj, "spec.initializer.dataset.storageUri", URI_RULE, URI_MESSAGE,
                 "spec.initializer.dataset.storageUri",
                 {"spec": {"initializer": {"dataset": {"storageUri": "/local/path"}}}},
                 versions=NEWER),
        RuleCase(tj, "spec.activeDeadlineSeconds", "self == oldSelf", IMMUTABLE,
                 "spec.activeDeadlineSeconds", {"spec": {"activeDeadlineSeconds": 7200}},
                 {"spec": {"activeDeadlineSeconds": 3600}}, versions=NEWER),
        RuleCase(tj, "spec.initializer", "self == oldSelf", IMMUTABLE, "spec.initializer",
                 {"spec": {"initializer": {"model": {"storageUri": "hf://b/c"}}}},
                 {"spec": {"initializer": {"model": {"storageUri": "hf://a/b"}}}},
                 versions=NEWER),
        RuleCase(tj, "spec.trainer", "self == oldSelf", IMMUTABLE, "spec.trainer",
                 {"spec": {"trainer": {"numNodes": 2}}}, {"spec": {"trainer": {"numNodes": 1}}},
                 versions=NEWER),
    ]
    pod_changes = {
        "containers": ([{"name": "node", "env": [{"name": "A", "value": "1"}]}],
                       [{"name": "node", "env": [{"name": "A", "value": "2"}]}]),
        "imagePullSecrets": ([{"name": "a"}], [{"name": "b"}]),
        "initContainers": ([{"name": "init", "env": [{"name": "A", "value": "1"}]}],
                           [{"name": "init", "env": [{"name": "A", "value": "2"}]}]),
        "securityContext": ({"runAsUser": 1000}, {"runAsUser": 1001}),
        "serviceAccountName": ("a", "b"),
        "terminationGracePeriodSeconds": (30, 60),
        "volumes": ([{"name": "v", "emptyDir": {}}], [{"name": "v", "hostPath": {"path": "/x"}}]),
    }
    for key, (old, new) in pod_changes.items():
        cases.append(RuleCase(
            tj, f"{PATCH_POD}.{key}", "self == oldSelf", IMMUTABLE,
            f"spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
            f".template.spec.template.spec.{key}", _patch_pod({key: new}),
            _patch_pod({key: old}), versions=NEWER))
    return cases


def _runtime_cases(crd: str) -> list[RuleCase]:
    vcp = [{"templates": [{"metadata": {"name": "cache"},
                           "spec": {"accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "1Gi"}}}}]}]
    vcp_ns = [{"templates": [{"metadata": {"name": "cache", "namespace": "other"},
                              "spec": {"accessModes": ["ReadWriteOnce"]}}]}]
    startup = ("!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' "
               "&& self.replicatedJobs.exists(x, has(x.dependsOn)))")
    one_of = ("[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),"
              "has(self.flux)].filter(x, x).size() <= 1")
    tmpl = "spec.template.spec"
    return [
        RuleCase(crd, "spec.mlPolicy", one_of, "Only one of the policy", "spec.mlPolicy",
                 {"spec": {"mlPolicy": {"torch": {}, "flux": {"numProcPerNode": 1}}}}),
        RuleCase(crd, "spec.mlPolicy.flux.numProcPerNode", "self >= 1", "fluxPolicy must be >= 1",
                 "spec.mlPolicy.flux.numProcPerNode",
                 {"spec": {"mlPolicy": {"torch": None, "flux": {"numProcPerNode": 0}}}}),
        RuleCase(crd, "spec.mlPolicy.torch.envInjection.targets.[].containerNames",
                 "!self.exists(c, c == 'node')", "must not include the main node container",
                 "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
                 {"spec": {"mlPolicy": {"torch": {"envInjection": {"targets": [
                     {"jobName": "node", "containerNames": ["sidecar", "node"]}]}}}}}),
        RuleCase(crd, tmpl, startup, "mutually exclusive", tmpl,
                 _runtime_jobset({"startupPolicy": {"startupPolicyOrder": "InOrder"}},
                                 _two_jobs("Ready"))),
        RuleCase(crd, f"{tmpl}.volumeClaimPolicies.[]",
                 "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
                 "namespace cannot be set", f"{tmpl}.volumeClaimPolicies[0].templates",
                 _runtime_jobset({"volumeClaimPolicies": vcp_ns})),
        RuleCase(crd, f"{tmpl}.failurePolicy", "self == oldSelf", "Value is immutable",
                 f"{tmpl}.failurePolicy", _runtime_jobset({"failurePolicy": {"maxRestarts": 2}}),
                 _runtime_jobset({"failurePolicy": {"maxRestarts": 1}})),
        RuleCase(crd, f"{tmpl}.network", "self == oldSelf", "Value is immutable",
                 f"{tmpl}.network", _runtime_jobset({"network": {"enableDNSHostnames": False}}),
                 _runtime_jobset({"network": {"enableDNSHostnames": True}})),
        RuleCase(crd, f"{tmpl}.replicatedJobs.[].dependsOn", "self == oldSelf",
                 "Value is immutable", f"{tmpl}.replicatedJobs[1].dependsOn",
                 _runtime_jobset({}, _two_jobs("Complete")), _runtime_jobset({}, _two_jobs("Ready"))),
        RuleCase(crd, f"{tmpl}.startupPolicy", "self == oldSelf", "Value is immutable",
                 f"{tmpl}.startupPolicy",
                 _runtime_jobset({"startupPolicy": {"startupPolicyOrder": "InOrder"}}),
                 _runtime_jobset({"startupPolicy": {"startupPolicyOrder": "AnyOrder"}})),
        RuleCase(crd, f"{tmpl}.successPolicy", "self == oldSelf", "Value is immutable",
                 f"{tmpl}.successPolicy", _runtime_jobset({"successPolicy": {"operator": "Any"}}),
                 _runtime_jobset({"successPolicy": {"operator": "All"}})),
        RuleCase(crd, f"{tmpl}.volumeClaimPolicies", "self == oldSelf", "Value is immutable",
                 f"{tmpl}.volumeClaimPolicies",
                 _runtime_jobset({"volumeClaimPolicies": vcp + vcp}),
                 _runtime_jobset({"volumeClaimPolicies": vcp})),
    ]


def _nest(prefix: str, value: dict[str, Any]) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for prefix ``a.b``."""
    out: dict[str, Any] = value
    for part in reversed(prefix.split(".")):
        out = {part: out}
    return out


def _ray_cases() -> list[RuleCase]:
    deletion = "spec.deletionStrategy"
    cond = f"{deletion}.deletionRules.[].condition"
    rule_at = f"{deletion}.deletionRules[0].condition"
    cases = [
        RuleCase(RAYJOB, deletion,
                 "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
                 "cannot be used together", deletion,
                 {"spec": {"deletionStrategy": {
                     "onSuccess": {"policy": "DeleteCluster"},
                     "onFailure": {"policy": "DeleteNone"},
                     "deletionRules": [{"condition": {"jobStatus": "FAILED"},
                                        "policy": "DeleteCluster"}]}}}),
        RuleCase(RAYJOB, deletion,
                 "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
                 "requires either BOTH onSuccess and onFailure", deletion,
                 {"spec": {"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}}}),
        RuleCase(RAYJOB, cond, "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
                 "cannot be used together", rule_at,
                 {"spec": {"deletionStrategy": {"deletionRules": [{"condition": {
                     "jobStatus": "FAILED", "jobDeploymentStatus": "Failed"},
                     "policy": "DeleteCluster"}]}}}),
        RuleCase(RAYJOB, cond, "has(self.jobStatus) || has(self.jobDeploymentStatus)",
                 "requires either the JobStatus", rule_at,
                 {"spec": {"deletionStrategy": {"deletionRules": [{"condition": {
                     "ttlSeconds": 10}, "policy": "DeleteCluster"}]}}}),
    ]
    for crd, prefix in ((RAYJOB, "spec.rayClusterSpec"), (RAYJOB, "spec"),
                        (RAYCLUSTER, "spec")):
        def at(value: dict[str, Any], prefix: str = prefix) -> dict[str, Any]:
            return _nest(prefix, value)

        cases += [
            RuleCase(crd, f"{prefix}.managedBy", RAY_MANAGERS, "must be either",
                     f"{prefix}.managedBy", at({"managedBy": "example.com/other"})),
            RuleCase(crd, f"{prefix}.managedBy", "self == oldSelf", "immutable",
                     f"{prefix}.managedBy", at({"managedBy": "kueue.x-k8s.io/multikueue"}),
                     at({"managedBy": "ray.io/kuberay-operator"})),
        ]
    return cases


CASES: list[RuleCase] = (_trainjob_cases() + _runtime_cases(RUNTIME)
                         + _runtime_cases(CLUSTER_RUNTIME) + _ray_cases())

NOT_VIOLABLE: dict[tuple[str, str, str], str] = {
    (TRAINJOB, "spec.runtimePatches.[].manager", "self == oldSelf"):
        "manager is the key of the runtimePatches map list: a changed manager is another "
        "entry, so oldSelf is always the same value",
}
STATUS_ONLY: dict[tuple[str, str, str], str] = {
    (TRAINJOB, "status.trainerStatus", "has(self.lastUpdatedTime)"):
        "a status rule: the harness's webhook sees the main resource only, so it is proven "
        "with the evaluator alone",
}


def rules_of(crd: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(schema path, rule, message) of every CEL rule in the CRD's served versions."""
    out: list[tuple[str, str, str]] = []

    def walk(node: Any, path: list[str]) -> None:
        if not isinstance(node, dict):
            return
        for rule in node.get("x-kubernetes-validations") or []:
            out.append((".".join(path), str(rule["rule"]), str(rule.get("message", ""))))
        for key, child in (node.get("properties") or {}).items():
            walk(child, path + [key])
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + ["[]"])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], path + ["{}"])

    for version in crd["spec"]["versions"]:
        walk(version["schema"]["openAPIV3Schema"], [])
    return out
