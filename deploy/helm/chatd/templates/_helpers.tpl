{{- define "chatd.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name; pods are <fullname>-<ordinal>, their node ids. */}}
{{- define "chatd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "chatd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "chatd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "chatd.labels" -}}
{{ include "chatd.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "chatd.secretName" -}}
{{- default (include "chatd.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Every NATS server's URL, comma-separated, from nats.urls or nats.url. */}}
{{- define "chatd.natsURL" -}}
{{- if and .Values.nats.urls .Values.nats.url -}}
{{- fail "set nats.urls or nats.url, not both" -}}
{{- end -}}
{{- $url := .Values.nats.url -}}
{{- if .Values.nats.urls -}}
{{- $url = join "," .Values.nats.urls -}}
{{- end -}}
{{- required "set nats.urls (a list) or nats.url (comma-separated): every server of the NATS cluster" $url -}}
{{- end -}}
