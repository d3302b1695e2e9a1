{{- define "im.labels" -}}
app.kubernetes.io/part-of: interference-monitoring
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "im.prometheus" -}}{{ .Release.Name }}-prometheus{{- end -}}

{{/* Runs on the workers only: the probe measures what an app would get. */}}
{{- define "im.workersOnly" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: node-role.kubernetes.io/control-plane
              operator: DoesNotExist
{{- end -}}

{{- define "im.restricted" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}
