"""Descriptions for ``policy.karmada.io/v1alpha1`` propagation and override policies
(see :mod:`policies.api_docs`)."""

from __future__ import annotations

_PROPAGATION = ("Selects resource templates{} and says which member clusters they go to, how replicas are "
                "divided between them, and what happens on failures. On Caldera it selects Volcano Jobs, whose "
                "gangs the federation places whole.")
_OVERRIDE = ("Changes a propagated resource per member cluster before it is applied there{}: image registry, "
             "command, arguments, labels, annotations or any field.")
_OVERRIDERS = "The changes to apply: plaintext JSON patches, image, command, args, labels, annotations, fields."
_CLUSTER_PURGE = "How the copy on the cluster left behind is removed: Gracefully or Directly."
_STATE = "State to carry over to the new cluster: values read from the old copy's status, injected as labels."

TYPES: dict[str, str] = {
    "PropagationPolicy": _PROPAGATION.format(" in its own namespace"),
    "ClusterPropagationPolicy": _PROPAGATION.format(" in any namespace (and cluster-scoped ones)"),
    "OverridePolicy": _OVERRIDE.format(" (resources in the policy's namespace)"),
    "ClusterOverridePolicy": _OVERRIDE.format(" (resources in any namespace)"),
    "PropagationSpec": "Which resources the policy selects and how they are placed.",
    "ResourceSelector": "Selects resources by API version and kind, optionally narrowed by namespace, name or "
                        "labels.",
    "FieldSelector": "Selects member clusters by provider, region or zone.",
    "FieldSelectorRequirement": "One cluster field condition: key In/NotIn values.",
    "ClusterAffinity": "Which member clusters qualify: by label, by provider/region/zone, by name, minus the "
                       "excluded ones. All given conditions must hold.",
    "ClusterAffinityTerm": "One named group of clusters in the ordered clusterAffinities list.",
    "OverflowAffinityTerm": "A further group of clusters used when the main group is full.",
    "SpreadConstraint": "How many groups (clusters, regions, zones, providers) the replicas are spread over.",
    "ReplicaSchedulingStrategy": "How replicas are assigned to the chosen clusters.",
    "ClusterPreferences": "Weights for dividing replicas between clusters: static per cluster, or dynamic.",
    "StaticClusterWeight": "A weight for the clusters matching targetCluster.",
    "WorkloadAffinity": "Co-location rules between workloads that share a label value.",
    "WorkloadAffinityTerm": "Groups workloads by the value of one label key.",
    "Placement": "Where the selected resources may go and how their replicas are divided.",
    "FailoverBehavior": "How Karmada moves the workload when the application or its cluster fails.",
    "ApplicationFailoverBehavior": "Failover when the application is unhealthy on its cluster.",
    "ClusterFailoverBehavior": "Failover when the whole member cluster fails.",
    "DecisionConditions": "Conditions that must hold before an application failover starts.",
    "StatePreservation": _STATE,
    "StatePreservationRule": "One value to carry over: a JSONPath into the old copy's status and the label it "
                             "becomes.",
    "Suspension": "Pauses propagation: dispatching to all or some clusters.",
    "SuspendClusters": "The clusters dispatching is paused for.",
    "SchedulePriority": "Where the binding's scheduling priority comes from.",
    "OverrideSpec": "Which resources to change and the rules to change them by.",
    "RuleWithCluster": "Overriders applied on the clusters matching targetCluster.",
    "Overriders": _OVERRIDERS,
    "PlaintextOverrider": "A JSON patch operation on one path of the resource.",
    "ImageOverrider": "Changes one part (registry, repository or tag) of container images.",
    "ImagePredicate": "Which image in the resource to change, by path.",
    "CommandArgsOverrider": "Adds or removes command or argument entries of one container.",
    "LabelAnnotationOverrider": "Adds, removes or replaces labels or annotations.",
    "FieldOverrider": "Patches a field that itself holds JSON or YAML text (e.g. a ConfigMap's data entry).",
    "SubPatch": "One patch operation inside a JSON or YAML field.",
}

_SELECTORS = ("The resources the policy applies to. A resource matched by several policies takes the one with "
              "the highest priority, then the most specific selector.")

FIELDS: dict[str, dict[str, str]] = {
    "PropagationPolicy": {"spec": "Specification of the policy: selectors, placement, failover."},
    "ClusterPropagationPolicy": {"spec": "Specification of the policy: selectors, placement, failover."},
    "OverridePolicy": {"spec": "Specification of the overrides: selectors and rules."},
    "ClusterOverridePolicy": {"spec": "Specification of the overrides: selectors and rules."},
    "PropagationSpec": {
        "resourceSelectors": _SELECTORS + " At least one is required.",
        "propagateDeps": "Propagate the resources the selected ones depend on (ConfigMaps, Secrets, PVCs...) to "
                         "the same clusters.",
        "association": "Deprecated: use propagateDeps.",
        "placement": "Which clusters the resources go to and how replicas are divided.",
        "priority": "Priority among policies matching the same resource: the highest wins. Defaults to 0.",
        "preemption": "Always: this policy may take resources over from a lower-priority policy; Never (the "
                      "default): it only claims unclaimed resources.",
        "dependentOverrides": "OverridePolicies that must exist before this policy takes effect.",
        "schedulerName": "The scheduler that places the selected resources. Defaults to default-scheduler.",
        "failover": "How the workload is moved on application or cluster failure. Unset: no failover.",
        "conflictResolution": "What to do when a resource already exists on a target cluster: Abort (the "
                              "default, do not touch it) or Overwrite (take it over).",
        "activationPreference": "Lazy: policy changes take effect only when a resource template next changes; "
                                "empty: at once.",
        "suspension": "Pauses dispatching to all or some clusters.",
        "preserveResourcesOnDeletion": "Keep the propagated resources on member clusters when the template "
                                       "is deleted.",
        "schedulePriority": "Where the scheduling priority of the policy's bindings comes from.",
    },
    "ResourceSelector": {
        "apiVersion": "API version of the resources (e.g. batch.volcano.sh/v1alpha1).",
        "kind": "Kind of the resources (e.g. Job).",
        "namespace": "Namespace of the resources; for a PropagationPolicy, the policy's own namespace.",
        "name": "Name of the resource; empty selects every resource of the kind (narrowed by labelSelector).",
        "labelSelector": "Labels the resources must have; ignored when name is set.",
    },
    "FieldSelector": {"matchExpressions": "Conditions on the cluster's provider, region or zone; all must hold."},
    "FieldSelectorRequirement": {"key": "provider, region or zone.", "operator": "In or NotIn.",
                                 "values": "The values to compare with."},
    "ClusterAffinity": {
        "labelSelector": "Labels the member clusters must have.",
        "fieldSelector": "Provider, region or zone conditions on the member clusters.",
        "clusterNames": "Names of the member clusters that qualify.",
        "exclude": "Names of member clusters that never qualify.",
    },
    "ClusterAffinityTerm": {"affinityName": "Name of the group (1-32 characters).",
                            "overflowAffinities": "Groups to use when this group cannot take every replica."},
    "OverflowAffinityTerm": {"affinityName": "Name of the overflow group."},
    "SpreadConstraint": {
        "spreadByField": "Spread over this cluster field: cluster, region, zone or provider.",
        "spreadByLabel": "Spread over the values of this cluster label (exclusive with spreadByField).",
        "maxGroups": "The most groups to use.",
        "minGroups": "The fewest groups to use; placement fails when fewer qualify.",
    },
    "ReplicaSchedulingStrategy": {
        "replicaSchedulingType": "Duplicated: every chosen cluster runs all replicas; Divided: the replicas are "
                                 "split between the clusters. Caldera divides a gang's replicas.",
        "replicaDivisionPreference": "With Divided: Aggregated (as few clusters as possible) or Weighted (by "
                                     "weightPreference).",
        "weightPreference": "The weights used with Weighted division.",
    },
    "ClusterPreferences": {
        "staticWeightList": "Fixed weights per group of clusters.",
        "dynamicWeight": "AvailableReplicas: weigh each cluster by how many replicas it can still take "
                         "(exclusive with staticWeightList).",
    },
    "StaticClusterWeight": {"targetCluster": "The clusters this weight applies to.",
                            "weight": "The weight (at least 1): replicas are divided in proportion."},
    "WorkloadAffinity": {"affinity": "Place workloads with the same label value together.",
                         "antiAffinity": "Place workloads with the same label value apart."},
    "WorkloadAffinityTerm": {"groupByLabelKey": "The label key whose value groups workloads."},
    "Placement": {
        "clusterAffinity": "Which clusters qualify (exclusive with clusterAffinities). Unset: every cluster.",
        "clusterAffinities": "Ordered groups of clusters: the first group that can take the resource is used, "
                             "the next only when it cannot.",
        "clusterTolerations": "Cluster taints the resources tolerate.",
        "spreadConstraints": "How many clusters, regions, zones or providers to spread over.",
        "replicaScheduling": "Whether replicas are duplicated on every cluster or divided between them, and how.",
        "workloadAffinity": "Co-location rules between workloads.",
    },
    "FailoverBehavior": {"application": "Failover when the application is unhealthy. Unset: none.",
                         "cluster": "Failover when the member cluster fails."},
    "ApplicationFailoverBehavior": {
        "decisionConditions": "Conditions before failing over, such as how long to tolerate unhealthiness.",
        "purgeMode": "How the old copy is removed: Gracefully (after the new one is healthy or the grace "
                     "period), Directly, or Never.",
        "gracePeriodSeconds": "With Gracefully: the longest wait for the new copy before the old is removed. "
                              "Defaults to 600.",
        "statePreservation": _STATE,
    },
    "ClusterFailoverBehavior": {"purgeMode": _CLUSTER_PURGE, "statePreservation": _STATE},
    "DecisionConditions": {"tolerationSeconds": "How long the application may stay unhealthy before failover. "
                                                "Defaults to 300."},
    "StatePreservation": {"rules": "The values to carry over."},
    "StatePreservationRule": {
        "aliasLabelName": "The label key the value is injected under on the new cluster.",
        "jsonPath": "A JSONPath into the old copy's status (e.g. {.phase}).",
    },
    "Suspension": {"dispatching": "true: stop applying changes to every member cluster.",
                   "dispatchingOnClusters": "Stop applying changes to these clusters only."},
    "SuspendClusters": {"clusterNames": "Names of the clusters."},
    "SchedulePriority": {
        "priorityClassSource": "KubePriorityClass (a scheduling.k8s.io PriorityClass) or PodPriorityClass "
                               "(the workload's pod template's).",
        "priorityClassName": "The PriorityClass to use with KubePriorityClass.",
    },
    "OverrideSpec": {
        "resourceSelectors": "The resources to change; empty selects every resource in scope.",
        "overrideRules": "Rules, each a set of clusters and the overriders applied there.",
        "targetCluster": "Deprecated: the clusters for overriders (use overrideRules).",
        "overriders": "Deprecated: the overriders for targetCluster (use overrideRules).",
    },
    "RuleWithCluster": {"targetCluster": "The clusters this rule applies to. Unset: every cluster.",
                        "overriders": _OVERRIDERS},
    "Overriders": {
        "plaintext": "JSON patch operations (add, remove, replace) on paths of the resource.",
        "imageOverrider": "Changes to container images.",
        "commandOverrider": "Changes to a container's command.",
        "argsOverrider": "Changes to a container's arguments.",
        "labelsOverrider": "Changes to the resource's labels.",
        "annotationsOverrider": "Changes to the resource's annotations.",
        "fieldOverrider": "Patches inside fields holding JSON or YAML text.",
    },
    "PlaintextOverrider": {"path": "JSON pointer to the field (e.g. /spec/queue).",
                           "operator": "add, remove or replace.",
                           "value": "The value to add or replace with (not for remove)."},
    "ImageOverrider": {
        "predicate": "Which image to change, by path; unset: every container image of a known workload.",
        "component": "The part of the image: Registry, Repository or Tag.",
        "operator": "add, remove or replace.",
        "value": "The new value of the component.",
    },
    "ImagePredicate": {"path": "JSON pointer to the image field."},
    "CommandArgsOverrider": {"containerName": "Name of the container.", "operator": "add or remove.",
                             "value": "The entries to add or remove."},
    "LabelAnnotationOverrider": {"operator": "add, remove or replace.",
                                 "value": "The keys (and values) to add, remove or replace."},
    "FieldOverrider": {"fieldPath": "JSON pointer to the field holding JSON or YAML text.",
                       "json": "Patches to apply when the field holds JSON.",
                       "yaml": "Patches to apply when the field holds YAML."},
    "SubPatch": {"subPath": "JSON pointer inside the field's document.", "operator": "add, remove or replace.",
                 "value": "The value to add or replace with."},
}
