"""Every Kubernetes request path is built by ``Resource.path``: namespaces and names are
checked (DNS-1123) and percent-encoded there, once (issue 34: a ConfigMap named
``victim?dryRun=All#`` in a plan deleted the ConfigMap ``victim``). The applier's own
guard refuses kinds a deploy target does not manage and objects at another address."""

from __future__ import annotations

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.applier import _guard
from ftspec.reconciler.kubernetes.resources import KINDS, object_path
from ftspec.reconciler.model import Action, Change

OWNED = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "a"}


def test_valid_names_make_the_paths_they_always_made() -> None:
    assert KINDS["ConfigMap"].path("ml", "files.v2") == "/api/v1/namespaces/ml/configmaps/files.v2"
    assert KINDS["TrainJob"].path("ml") == \
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs"
    assert KINDS["Namespace"].path(name="ml") == "/api/v1/namespaces/ml"
    assert KINDS["CustomResourceDefinition"].path(name="trainjobs.trainer.kubeflow.org") == \
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainjobs.trainer.kubeflow.org"


@pytest.mark.parametrize("namespace, name, message", [
    ("ml", "victim?dryRun=All#", "configmaps name 'victim?dryRun=All#' is not a valid"),
    ("ml", "../secrets/x", "configmaps name '../secrets/x'"),
    ("ml", "Victim", "configmaps name 'Victim'"),
    ("ml", "a" * 254, "at most 253 characters"),
    ("ml", 7, "configmaps name 7"),
    ("kube-system/secrets", "x", "namespace 'kube-system/secrets'"),
    ("ml%2f", "x", "namespace 'ml%2f'"),
    ("a.b", "x", "namespace 'a.b' is not a valid Kubernetes name (a DNS-1123 label"),
])
def test_names_outside_dns_1123_make_no_request(namespace: object, name: object,
                                                message: str) -> None:
    with pytest.raises(BackendError, match="no request was made") as err:
        object_path({"kind": "ConfigMap", "metadata": {"namespace": namespace, "name": name}})
    assert message in str(err.value)


def _change(address: str, obj: dict[str, object], action: Action = Action.CREATE) -> Change:
    if action is Action.DELETE:
        return Change(address, action, obj, None)
    return Change(address, action, None, obj)


@pytest.mark.parametrize("change, message", [
    (_change("kubeflow.Secret.kube-system/x", {"kind": "Secret", "metadata": {
        "name": "x", "namespace": "kube-system", "labels": OWNED}}),
     "ftspec does not manage 'Secret' objects for deploy.target 'kubeflow'"),
    (_change("kubeflow.Namespace._/ml", {"kind": "Namespace", "metadata": {"name": "ml"}},
             Action.DELETE), "ftspec does not manage 'Namespace' objects"),
    (_change("kuberay.TrainJob.ml/j", {"kind": "TrainJob", "metadata": {
        "name": "j", "namespace": "ml", "labels": OWNED}}),
     "ftspec does not manage 'TrainJob' objects for deploy.target 'kuberay'"),
    (_change("kubeflow.ConfigMap.ml/a", {"kind": "ConfigMap", "metadata": {
        "name": "b", "namespace": "ml", "labels": OWNED}}),
     "the object is ConfigMap ml/b, not the one the address names"),
    (_change("kubeflow.ConfigMap.ml/a", {"kind": "ConfigMap", "metadata": {
        "name": "a", "namespace": "ml"}}), "does not carry ftspec's ownership labels"),
])
def test_the_applier_refuses_what_ftspec_does_not_manage(change: Change, message: str) -> None:
    with pytest.raises(BackendError, match="nothing was changed") as err:
        _guard(change)
    assert message in str(err.value)


def test_the_applier_lets_its_own_objects_through() -> None:
    obj = {"kind": "TrainJob", "metadata": {"name": "j", "namespace": "ml", "labels": OWNED}}
    _guard(_change("kubeflow.TrainJob.ml/j", obj))
    _guard(_change("kubeflow.TrainJob.ml/j", obj, Action.DELETE))
