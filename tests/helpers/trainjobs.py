"""TrainJobs the tests build (not from a public file: the corpus holds those)."""

SDK_TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: a1b2c3d4e5f6
  namespace: ml
spec:
  runtimeRef:
    name: torchtune-llama3.2-1b
  initializer:
    dataset:
      storageUri: hf://tatsu-lab/alpaca/data
    model:
      storageUri: hf://meta-llama/Llama-3.2-1B-Instruct
  trainer:
    command: [tune, run]
    args:
      - dtype=bf16
      - batch_size=4
      - epochs=2
      - loss=torchtune.modules.loss.CEWithChunkedOutputLoss
      - dataset.data_dir=/workspace/dataset/data
      - model.lora_rank=16
      - model.lora_alpha=32
      - model.lora_attn_modules=[q_proj,v_proj,output_proj]
    numNodes: 1
    resourcesPerNode:
      requests: {nvidia.com/gpu: 2}
      limits: {nvidia.com/gpu: 2}
"""
"""The TrainJob the Kubeflow SDK writes for TorchTuneConfig(dtype, batch_size, epochs,
peft_config) on torchtune-llama3.2-1b (args in the SDK's order: see notes on the SDK)."""
