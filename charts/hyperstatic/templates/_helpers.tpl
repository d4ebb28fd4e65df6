{{/* Name of the release's objects: "<release>" when it already says hyperstatic, else "<release>-hyperstatic". */}}
{{- define "hyperstatic.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator pods; never change them after install (Deployment selectors are immutable). */}}
{{- define "hyperstatic.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Labels on every object the chart creates. */}}
{{- define "hyperstatic.labels" -}}
{{ include "hyperstatic.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hyperstatic
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "hyperstatic.serviceAccountName" -}}
{{- default (include "hyperstatic.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* image renders repository:tag, the tag defaulting to the chart's appVersion. Call with (list .Values.x.image .). */}}
{{- define "hyperstatic.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* operatorJob is the job label of the operator's series in the rules and the dashboard: the chart's PodMonitor's
(Prometheus Operator names a PodMonitor's job <namespace>/<name>) unless monitoring.rules.operatorJob says otherwise. */}}
{{- define "hyperstatic.operatorJob" -}}
{{- default (printf "%s/%s-operator" .Release.Namespace (include "hyperstatic.fullname" .)) .Values.monitoring.rules.operatorJob -}}
{{- end -}}
