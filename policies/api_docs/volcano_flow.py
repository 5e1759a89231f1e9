"""Descriptions for ``flow.volcano.sh/v1alpha1`` JobFlow and JobTemplate (see :mod:`policies.api_docs`)."""

from __future__ import annotations

_JOBS = "Names of the flow's jobs that are {}."

TYPES: dict[str, str] = {
    "JobFlow": "A Volcano JobFlow: a directed acyclic graph of Volcano Jobs, each made from a JobTemplate and "
               "started once the jobs it depends on have reached the required state.",
    "JobFlowSpec": "The flow's steps and what happens to their jobs when the flow ends.",
    "Flow": "One step of the flow: a JobTemplate to instantiate, its dependencies and a patch to apply.",
    "FlowDependsOn": "What a step waits for: other steps, optionally with probes.",
    "Probe": "Extra checks a dependency must pass: HTTP endpoints, TCP ports or task phases.",
    "HttpGet": "An HTTP GET a task of the dependency must answer.",
    "TcpSocket": "A TCP port a task of the dependency must accept connections on.",
    "TaskStatus": "A phase a task of the dependency must reach.",
    "FlowPatch": "Changes applied to the template's Job spec for this step.",
    "FlowJobTemplateRef": "Caldera: the JobTemplate a step uses when its name differs from the step's name.",
    "JobFlowStatus": "The flow's observed state: its jobs by state and each job's history.",
    "JobStatusEntry": "One job of the flow, its state and restarts.",
    "JobRunningHistory": "One period a job spent in one state.",
    "FlowCondition": "A job's condition as the flow sees it.",
    "JobFlowState": "The flow's phase.",
    "JobTemplate": "A Volcano JobTemplate: a Job spec kept as a template that JobFlows instantiate.",
    "JobTemplateStatus": "The template's observed state.",
}

FIELDS: dict[str, dict[str, str]] = {
    "JobFlow": {"spec": "Specification of the flow: its steps and job retention.",
                "status": "Current status of the flow. Read-only for users."},
    "JobFlowSpec": {
        "flows": "The steps of the flow. Dependencies must form a DAG (no cycles).",
        "jobRetainPolicy": "retain keeps the flow's jobs after it ends; delete removes them. Defaults to retain.",
    },
    "Flow": {
        "name": "Name of the step; upstream also the name of the JobTemplate it instantiates.",
        "dependsOn": "Steps that must succeed (and probes that must pass) before this step's job is created.",
        "patch": "A patch merged into the template's Job spec for this step.",
        "jobTemplate": "Caldera: names the JobTemplate explicitly when it differs from the step's name.",
    },
    "FlowDependsOn": {"targets": "Names of the steps this step waits for.",
                      "probe": "Extra conditions on the targets: HTTP, TCP or task phase checks."},
    "Probe": {"httpGetList": "HTTP GET checks.", "tcpSocketList": "TCP connection checks.",
              "taskStatusList": "Task phase checks."},
    "HttpGet": {"taskName": "The task whose pods answer.", "path": "The HTTP path to request.",
                "port": "The port to connect to.", "httpHeader": "Headers to send with the request."},
    "TcpSocket": {"taskName": "The task whose pods listen.", "port": "The port to connect to."},
    "TaskStatus": {"taskName": "The task to check.", "phase": "The phase the task must be in."},
    "FlowPatch": {"spec": "A Job spec merged over the template's spec."},
    "FlowJobTemplateRef": {"name": "Name of the JobTemplate in the flow's namespace."},
    "JobFlowStatus": {
        "pendingJobs": _JOBS.format("pending"),
        "runningJobs": _JOBS.format("running"),
        "failedJobs": _JOBS.format("failed"),
        "completedJobs": _JOBS.format("completed"),
        "terminatedJobs": _JOBS.format("terminated"),
        "unKnowJobs": _JOBS.format("in an unknown state (the upstream field name is spelled this way)"),
        "jobStatusList": "Each job of the flow with its state, times and restarts.",
        "conditions": "Per job name, its condition as the flow sees it.",
        "state": "The flow's phase.",
    },
    "JobStatusEntry": {
        "name": "Name of the job.", "state": "The job's phase.",
        "startTimestamp": "When the job started.", "endTimestamp": "When the job ended.",
        "restartCount": "How many times the job restarted.",
        "runningHistories": "The periods the job spent in each state.",
    },
    "JobRunningHistory": {"startTimestamp": "When the period started.", "endTimestamp": "When it ended.",
                          "state": "The job's phase during the period."},
    "FlowCondition": {"phase": "The job's phase.", "createTime": "When the job was created.",
                      "runningDuration": "How long the job has run.",
                      "taskStatusCount": "Per task, pod counts by phase."},
    "JobFlowState": {"phase": "Pending, Running, Succeed, Failed or Terminating."},
    "JobTemplate": {"spec": "The Job spec jobs made from this template start with.",
                    "status": "Current status of the template."},
    "JobTemplateStatus": {"jobDependsOnList": "Names of the jobs created from this template."},
}
