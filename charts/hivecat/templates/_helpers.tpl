{{/* Name of the chart, unless overridden. */}}
{{- define "hivecat.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the release's objects: the release name, suffixed with the chart name unless it already contains it. */}}
{{- define "hivecat.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "hivecat.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "hivecat.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods; must not change between upgrades. */}}
{{- define "hivecat.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hivecat.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "hivecat.labels" -}}
{{ include "hivecat.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* ServiceAccount the operator runs as. */}}
{{- define "hivecat.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "hivecat.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Operator image reference; the tag defaults to the chart's appVersion. */}}
{{- define "hivecat.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
RBAC rules the operator needs in each namespace it watches (cluster-wide when it
watches all of them): its custom resources and their status (kopf also patches the
main object for finalizers and its annotations), events it posts, and the objects it
runs catalogs and copies with.
*/}}
{{- define "hivecat.namespacedRules" -}}
# Only what the operator uses (tests/operator/test_zz_rbac_audit.py compares these rules with the API server's
# audit log of the whole operator tier). kopf watches and patches its resources and their status (patch, never
# update); a child is created (create), then written by server-side apply (patch).
- apiGroups: [hivecatalog.io]
  resources: [hivecatalogs, clusterstorages]
  verbs: [get, list, watch, patch]
- apiGroups: [hivecatalog.io]
  resources: [tablereplicas]
  verbs: [list, watch, patch]
- apiGroups: [hivecatalog.io]
  resources: [hivecatalogs/status, clusterstorages/status, tablereplicas/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
# Metastore and client ConfigMaps, the cluster registry, the metastore Service (deleted when a catalog
# switches to Glue). Each is read before it is written or deleted: hivecat acts only on objects it made for
# that resource (label and owner reference), a name taken by another object is NameTaken. No
# serviceaccounts: resources name existing ones, from the allow-list.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, create, patch, delete]
- apiGroups: [""]
  resources: [services]
  verbs: [get, create, patch, delete]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, create, patch, delete]
# Database passwords and cloud credentials are only read, one by one.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
# Schema Jobs and copy runs (compute KubernetesJob and SparkApplication): created once, never changed (a Job's
# template cannot be); a finished run is deleted before the next one of the same name. Copy runs are watched:
# a Job's or SparkApplication's end brings its TableReplica's next pass, so no thread waits for it.
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, delete]
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications]
  verbs: [get, list, watch, create, delete]
{{- end -}}


{{/* The namespaces the operator watches: watchNamespaces, else the release's own; never kube-system. */}}
{{- define "hivecat.watchNamespaces" -}}
{{- if and .Values.clusterWide .Values.watchNamespaces -}}
{{- fail "set either clusterWide or watchNamespaces, not both" -}}
{{- end -}}
{{- $namespaces := .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- if has "kube-system" $namespaces -}}
{{- fail "the operator does not watch kube-system" -}}
{{- end -}}
{{- toJson $namespaces -}}
{{- end -}}
