"""The seed document's Volcano, Kubernetes and Kubeflow YAML blocks, verbatim.

Copied from the seed document, ``tests/data/seed/000_592ac98742f11b8c.txt``
(``test_seed.py`` checks each block is in it verbatim). Key: ``<kind>/<name>``; values are YAML text.
"""

from __future__ import annotations

SEED_BLOCKS: dict[str, str] = {
    'PodGroup/pytorch-training-pg': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: pytorch-training-pg
spec:
  minMember: 8
  minResources:
    nvidia.com/gpu: "8"
    cpu: "64"
    memory: "256Gi"
  queue: ai-training
  priorityClassName: high-priority
""",
    'Queue/ai-training': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: ai-training
spec:
  weight: 3
  capability:
    cpu: "200"
    memory: "1024Gi"
    nvidia.com/gpu: "32"
  reclaimable: true
""",
    'Queue/inference': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: inference
spec:
  weight: 1
  capability:
    cpu: "50"
    memory: "256Gi"
    nvidia.com/gpu: "8"
  reclaimable: false
""",
    'PodGroup/llm-fine-tuning': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: llm-fine-tuning
spec:
  minMember: 4
  minResources:
    nvidia.com/gpu: "16"
    cpu: "128"
    memory: "512Gi"
  minTaskMember:
    master: 1
    worker: 3
  queue: ai-training
  priorityClassName: high-priority
""",
    'Job/pytorch-dist-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: pytorch-dist-training
spec:
  schedulerName: volcano
  queue: ai-training
  minAvailable: 4
  tasks:
    - replicas: 1
      name: master
      template:
        spec:
          containers:
            - name: master
              image: pytorch/pytorch:2.0.0-cuda11.8
              command: ["torchrun", "--nproc_per_node=1", "--nnodes=4", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 4
    - replicas: 3
      name: worker
      template:
        spec:
          containers:
            - name: worker
              image: pytorch/pytorch:2.0.0-cuda11.8
              command: ["torchrun", "--nproc_per_node=1", "--nnodes=4", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 4
  policies:
    - event: PodEvicted
      action: RestartJob
    - event: PodFailed
      action: RestartJob
""",
    'ConfigMap/volcano-scheduler-config': """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-config
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
        - name: priority
        - name: gang
        - name: conformance
    - plugins:
        - name: binpack
          arguments:
            binpack.weight: 10
            binpack.cpu: "1"
            binpack.memory: "1"
            binpack.nvidia.com/gpu: "2"
""",
    'Job/gpu-dist-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: gpu-dist-training
spec:
  schedulerName: volcano
  tasks:
    - replicas: 8
      name: worker
      template:
        spec:
          containers:
            - name: training
              resources:
                limits:
                  nvidia.com/gpu: 8
              env:
                - name: NCCL_SOCKET_IFNAME
                  value: "eth0"
                - name: NCCL_DEBUG
                  value: "INFO"
      topologyPolicy: restricted
""",
    'Job/tf-dist-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf-dist-training
spec:
  schedulerName: volcano
  minAvailable: 5
  tasks:
    - replicas: 1
      name: ps
      template:
        spec:
          containers:
            - name: parameter-server
              resources:
                limits:
                  cpu: "4"
                  memory: "16Gi"
    - replicas: 4
      name: worker
      template:
        spec:
          containers:
            - name: worker
              resources:
                limits:
                  nvidia.com/gpu: 4
      taskTopology:
        affinity:
          pod:
            - task: ps
              topologyKey: kubernetes.io/hostname
              weight: 100
""",
    'JobFlow/ml-pipeline': """\
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: ml-pipeline
spec:
  flows:
    - name: data-preprocess
      jobTemplate:
        name: preprocess-job
    - name: model-training
      dependsOn:
        targets:
          - data-preprocess
      jobTemplate:
        name: training-job
    - name: model-evaluation
      dependsOn:
        targets:
          - model-training
      jobTemplate:
        name: eval-job
    - name: model-export
      dependsOn:
        targets:
          - model-training
      jobTemplate:
        name: export-job
""",
    'Job/gpu-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: gpu-training
spec:
  schedulerName: volcano
  queue: gpu-queue
  minAvailable: 4
  tasks:
    - replicas: 4
      name: worker
      template:
        spec:
          containers:
            - name: training
              image: pytorch/pytorch:2.0.0-cuda11.8-cudnn8-devel
              command:
                - torchrun
                - --nproc_per_node=8
                - --nnodes=4
                - --node_rank=$(VC_TASK_INDEX)
                - --master_addr=$(VC_MASTER_HOST)
                - --master_port=29500
                - train.py
              resources:
                limits:
                  nvidia.com/gpu: 8
                  cpu: "64"
                  memory: "256Gi"
              env:
                - name: NCCL_SOCKET_IFNAME
                  value: "eth0"
                - name: NCCL_IB_DISABLE
                  value: "0"
                - name: NCCL_NET_GDR_LEVEL
                  value: "5"
              volumeMounts:
                - name: dataset
                  mountPath: /data
          volumes:
            - name: dataset
              persistentVolumeClaim:
                claimName: training-dataset
""",
    'Job/pytorch-ddp': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: pytorch-ddp
spec:
  schedulerName: volcano
  plugins:
    pytorch: ["--master=master", "--worker=worker"]  # Task 角色映射
  minAvailable: 4
  tasks:
    - replicas: 1
      name: master
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.0.0
              command: ["torchrun", "--nnodes=4", "train.py"]
    - replicas: 3
      name: worker
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.0.0
              command: ["torchrun", "--nnodes=4", "train.py"]
""",
    'Job/resv-example': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: resv-example
spec:
  schedulerName: volcano
  minAvailable: 8  # 8 个 Pod 必须全部预留成功才分配
  tasks:
    - replicas: 8
      name: worker
      template:
        spec:
          containers:
            - name: worker
              resources:
                limits:
                  nvidia.com/gpu: 1
""",
    'PriorityClass/high-priority': """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000
globalDefault: false
description: "高优先级 AI 训练任务"
""",
    'Job/critical-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: critical-training
spec:
  schedulerName: volcano
  queue: ai-training
  minAvailable: 4
  priorityClassName: high-priority
  tasks:
    - replicas: 4
      name: worker
      template:
        spec:
          priorityClassName: high-priority
""",
    'Job/training-with-ttl': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: training-with-ttl
spec:
  schedulerName: volcano
  minAvailable: 4
  ttlSecondsAfterFinished: 3600  # 完成后 1 小时自动清理
  maxRetry: 3                      # 最大重试次数
  tasks:
    - replicas: 4
      name: worker
      template:
        spec:
          containers:
            - name: training
              image: pytorch/pytorch:2.0.0
""",
    'Job/unnamed': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
spec:
  queue: gpu-training
  tasks:
    - replicas: 4
      template:
        spec:
          nodeSelector:
            nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB  # GFD 注入的标签
          containers:
            - name: training
              resources:
                limits:
                  nvidia.com/gpu: 8
""",
    'Job/shared-gpu-inference': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: shared-gpu-inference
spec:
  schedulerName: volcano
  queue: inference-queue
  minAvailable: 2
  tasks:
    - replicas: 2
      name: inference
      template:
        spec:
          containers:
            - name: inference
              image: vllm/vllm-openai:latest
              resources:
                limits:
                  nvidia.com/gpumem: 10  # 申请 10GB vRAM
                  nvidia.com/gpucores: 20 # 申请 20% 算力
""",
    'Queue/elastic-ai-training': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: elastic-ai-training
spec:
  weight: 2
  guarantee:
    nvidia.com/gpu: "16"
    cpu: "64"
    memory: "256Gi"
  capability:
    nvidia.com/gpu: "64"
    cpu: "256"
    memory: "1024Gi"
  reclaimable: true
""",
    'Queue/burst-inference': """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: burst-inference
spec:
  weight: 1
  guarantee:
    nvidia.com/gpu: "4"
  capability:
    nvidia.com/gpu: "32"
  reclaimable: false  # 独占弹性区间的资源，不被回收
""",
    'Job/slo-training': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: slo-training
  annotations:
    scheduling.volcano.sh/slo-deadline: "2025-06-01T00:00:00Z"
spec:
  schedulerName: volcano
  queue: ai-training
  minAvailable: 4
  tasks:
    - replicas: 4
      name: worker
      template:
        spec:
          containers:
            - name: training
              resources:
                limits:
                  nvidia.com/gpu: 8
""",
    'ConfigMap/volcano-scheduler-config-2': """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-config
data:
  volcano-scheduler-kubeconfig: |
    apiVersion: kubescheduler.config.k8s.io/v1beta3
    kind: KubeSchedulerConfiguration
    percentageOfNodesToScore: 30
""",
    'VCJob/advanced-vcjob': """\
apiVersion: batch.volcano.sh/v1alpha1
kind: VCJob
metadata:
  name: advanced-vcjob
spec:
  schedulerName: volcano
  queue: ai-training
  minAvailable: 4
  runPolicy:
    maxRetry: 3
    ttlSecondsAfterFinished: 7200
    cleanUpTaskPolicy:
      - action: Delete
        task: all
        when: Completed
  plugins:
    svc: []
    env: []
    pytorch: ["--master=master", "--worker=worker"]
  tasks:
    - replicas: 1
      name: master
      restartPolicy: OnFailure
      resources:
        limits:
          nvidia.com/gpu: 8
          cpu: "64"
          memory: "256Gi"
      lifecycle:
        postStart:
          exec:
            command: ["/bin/sh", "-c", "nvidia-smi && echo 'GPU ready'"]
        preStop:
          exec:
            command: ["/bin/sh", "-c", "kill -SIGTERM $PID"]
      pod:
        image: pytorch/pytorch:2.0.0-cuda11.8
        command: ["torchrun", "--nnodes=4", "train.py"]
        volumes:
          - name: shm
            emptyDir:
              medium: Memory
              sizeLimit: 32Gi
""",
    'PyTorchJob/pytorch-dist': """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-dist
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: volcano  # 指定 Volcano 调度器
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.0.0
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: volcano
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.0.0
              resources:
                limits:
                  nvidia.com/gpu: 8
  runPolicy:
    schedulingPolicy:
      minAvailable: 4          # Volcano Gang Scheduling
      queue: ai-training        # Volcano Queue
      priorityClass: high-priority
""",
}
