"""A Secret's name and key are shown in the human plan; a credential's value stays redacted.

The plan view of a changed ``secretKeyRef`` is drawn as ``plan`` draws it (``render_plan``
over ``Plan.to_json()``, then ``safe_text``, the filter every human line passes).
"""

from __future__ import annotations

from ftspec.cli.output import plain_markup, safe_text
from ftspec.cli.render_plan import render_plan
from ftspec.reconciler.model import Action, Change, FieldChange, Plan

TJ = "kubeflow.TrainJob.ml/llama-lora"


def _trainjob(secret: str) -> dict[str, object]:
    env = [{"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": secret,
                                                                    "key": "api-key"}}}]
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llama-lora", "namespace": "ml"},
            "spec": {"trainer": {"env": env}}}


def _view(plan: Plan) -> str:
    return safe_text(plain_markup(render_plan(plan.to_json())))


def test_changed_secret_name_is_shown() -> None:
    path = "spec.trainer.env[0].valueFrom.secretKeyRef.name"
    plan = Plan("kubernetes", (Change(TJ, Action.UPDATE, _trainjob("wandb-old"),
                                      _trainjob("wandb-new"),
                                      fields=(FieldChange(path, "wandb-old", "wandb-new"),)),))
    view = _view(plan)
    assert f'{path} = "wandb-old" -> "wandb-new"' in view.replace("~ ", "")
    assert "<redacted>" not in view


def test_created_secret_reference_is_shown() -> None:
    view = _view(Plan("kubernetes", (Change(TJ, Action.CREATE, None, _trainjob("wandb")),)))
    assert '"wandb"' in view and '"api-key"' in view and "<redacted>" not in view


def test_a_credential_value_stays_redacted() -> None:
    token = "hf_" + "a1B2c3D4" * 4
    literal = {"apiVersion": "v1", "kind": "TrainJob", "metadata": {"name": "x"},
               "spec": {"trainer": {"env": [{"name": "HF_TOKEN", "value": token}]}}}
    view = _view(Plan("kubernetes", (Change(TJ, Action.CREATE, None, literal),)))
    assert token not in view and "<redacted>" in view
    assert safe_text('env.WANDB_API_KEY = "abcdefgh12"') == 'env.WANDB_API_KEY = "<redacted>"'
