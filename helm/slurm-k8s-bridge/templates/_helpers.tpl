{{- /* SPDX-License-Identifier: Apache-2.0 */ -}}
{{/*
Names. Kubernetes names are DNS labels: at most 63 characters, so every generated name is
truncated there (and a trailing "-" left by the cut is trimmed).
*/}}

{{/* The chart's base name: .Values.nameOverride or the chart name. */}}
{{- define "skb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The fully qualified name of the release's objects: .Values.fullnameOverride, else
"<release>-<name>", or just the release name when it already contains the chart name.
*/}}
{{- define "skb.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<suffix>", still at most 63 characters (the suffix is kept whole). */}}
{{- define "skb.suffixedName" -}}
{{- $suffix := index . 1 -}}
{{- $base := include "skb.fullname" (index . 0) | trunc (int (sub 62 (len $suffix))) | trimSuffix "-" -}}
{{- printf "%s-%s" $base $suffix -}}
{{- end -}}

{{- define "skb.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "skb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "skb.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries (Kubernetes recommended labels). */}}
{{- define "skb.labels" -}}
helm.sh/chart: {{ include "skb.chart" . }}
{{ include "skb.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: slurm-k8s-bridge
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The bridge Deployment's selector: never change it (selectors are immutable). */}}
{{- define "skb.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "skb.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
The bridge's JSON config: the structured .Values.config block, plus what the chart knows
better than the user (each only when the user did not set it):
  apiVersion                  slurm-k8s-bridge/v1 (the format this chart writes)
  kubernetes.namespace        the release namespace
  server.http_address         ":<http.port>" (probes and Prometheus reach the pod IP)
  server.socket_path          <pluginSocket.mountPath>/bridge.sock
  slurm.conf                  <slurm.confDir.mountPath>/slurm.conf
  lending.priority_classes    the PriorityClasses this chart creates (names and values)
  lending.inference_threshold the example inference class's value
  leader_election.*           leaderElection.leaseDuration/renewDeadline/retryPeriod, if set
Rendered as a dict; callers serialise it.
*/}}
{{- define "skb.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if not (get $cfg "apiVersion") -}}{{- $_ := set $cfg "apiVersion" "slurm-k8s-bridge/v1" -}}{{- end -}}
{{- $k8s := get $cfg "kubernetes" | default dict -}}
{{- if not (hasKey $k8s "namespace") -}}{{- $_ := set $k8s "namespace" .Release.Namespace -}}{{- end -}}
{{- $_ := set $cfg "kubernetes" $k8s -}}
{{- $server := get $cfg "server" | default dict -}}
{{- if not (hasKey $server "http_address") -}}{{- $_ := set $server "http_address" (printf ":%d" (int .Values.http.port)) -}}{{- end -}}
{{- if not (hasKey $server "socket_path") -}}{{- $_ := set $server "socket_path" (printf "%s/bridge.sock" .Values.pluginSocket.mountPath) -}}{{- end -}}
{{- $_ := set $cfg "server" $server -}}
{{- if .Values.slurm.confDir.enabled -}}
{{- $slurm := get $cfg "slurm" | default dict -}}
{{- if not (hasKey $slurm "conf") -}}{{- $_ := set $slurm "conf" (printf "%s/slurm.conf" .Values.slurm.confDir.mountPath) -}}{{- end -}}
{{- $_ := set $cfg "slurm" $slurm -}}
{{- end -}}
{{- $lendingNs := get $cfg "lending" | default dict -}}
{{- if not (hasKey $lendingNs "namespace") -}}{{- $_ := set $lendingNs "namespace" (include "skb.reservationNamespace" .) -}}{{- end -}}
{{- /* A terminating reservation asks the bridge's Service whether it is released (a kubelet
projects no annotation into a terminating pod): cluster DNS, the Service's port. */ -}}
{{- if not (hasKey $lendingNs "release_url") -}}{{- $_ := set $lendingNs "release_url" (printf "http://%s.%s.svc:%d/reservation-released" (include "skb.fullname" .) .Release.Namespace (int .Values.service.port)) -}}{{- end -}}
{{- $_ := set $cfg "lending" $lendingNs -}}
{{- if .Values.priorityClasses.create -}}
{{- $lending := get $cfg "lending" | default dict -}}
{{- $pc := .Values.priorityClasses -}}
{{- if not (hasKey $lending "priority_classes") -}}
{{- $_ := set $lending "priority_classes" (dict "idle" (dict "name" $pc.idle.name "value" (int $pc.idle.value)) "preemptible" (dict "name" $pc.preemptible.name "value" (int $pc.preemptible.value)) "protected" (dict "name" $pc.protected.name "value" (int $pc.protected.value))) -}}
{{- end -}}
{{- if and $pc.inference.create (not (hasKey $lending "inference_threshold")) -}}
{{- $_ := set $lending "inference_threshold" (int $pc.inference.value) -}}
{{- end -}}
{{- $_ := set $cfg "lending" $lending -}}
{{- end -}}
{{- $le := .Values.leaderElection -}}
{{- if or $le.leaseDuration $le.renewDeadline $le.retryPeriod -}}
{{- $lec := get $cfg "leader_election" | default dict -}}
{{- with $le.leaseDuration -}}{{- $_ := set $lec "lease_duration" . -}}{{- end -}}
{{- with $le.renewDeadline -}}{{- $_ := set $lec "renew_deadline" . -}}{{- end -}}
{{- with $le.retryPeriod -}}{{- $_ := set $lec "retry_period" . -}}{{- end -}}
{{- $_ := set $cfg "leader_election" $lec -}}
{{- end -}}
{{- toJson $cfg -}}
{{- end -}}

{{/*
The namespace of the reservation pods: config.lending.namespace, else
reservationNamespace.name, else "<release namespace>-reservations". Never the release's own
namespace by default: that one must admit hostPath (socket, munge) for the bridge, and a
stolen bridge token that may create pods there could start a privileged one.
*/}}
{{- define "skb.reservationNamespace" -}}
{{- $lending := (.Values.config | default dict).lending | default dict -}}
{{- $lending.namespace | default .Values.reservationNamespace.name | default (printf "%s-reservations" .Release.Namespace) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
"<uid>:<gid>" the plugin socket's directory is given to: the daemon's runAsUser and runAsGroup
(podSecurityContext, else the image's 64030, Debian's slurm).
*/}}
{{- define "skb.socketOwner" -}}
{{- $psc := .Values.podSecurityContext | default dict -}}
{{- printf "%d:%d" (int (dig "runAsUser" 64030 $psc)) (int (dig "runAsGroup" (dig "runAsUser" 64030 $psc) $psc)) -}}
{{- end -}}

{{/*
A volume source from {hostPath, volume}: `volume` when set, else a hostPath of the given
type. Call with (list .Values.slurm.confDir "Directory").
*/}}
{{- define "skb.volumeSource" -}}
{{- $v := index . 0 -}}
{{- if $v.volume -}}
{{- toYaml $v.volume -}}
{{- else -}}
hostPath:
  path: {{ required "hostPath or volume is required" $v.hostPath }}
  type: {{ index . 1 }}
{{- end -}}
{{- end -}}

{{/*
The CEL variables of the swap guard and the failed-reservation guard, on a pod create or a
pods/binding: binding (a binding), target (the node the pod goes to, '' for none) and gpuPod
(a binding, whose pod the apiserver does not show, or a pod asking the GPU extended resource
or any ResourceClaim).
*/}}
{{- define "skb.bindingTargetVariables" -}}
{{- $gpu := .Values.config.gpu_sharing.extended_resource | default "nvidia.com/gpu" -}}
- name: binding
  expression: "has(request.subResource) && request.subResource == 'binding'"
- name: target
  expression: >-
    variables.binding ? object.target.name :
    (has(object.spec.nodeName) ? object.spec.nodeName : '')
- name: gpuPod
  expression: >-
    variables.binding ||
    (has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0) ||
    object.spec.containers.exists(c, has(c.resources) &&
      ((has(c.resources.limits) && {{ $gpu | quote }} in c.resources.limits) ||
       (has(c.resources.requests) && {{ $gpu | quote }} in c.resources.requests))) ||
    (has(object.spec.initContainers) && object.spec.initContainers.exists(c, has(c.resources) &&
      ((has(c.resources.limits) && {{ $gpu | quote }} in c.resources.limits) ||
       (has(c.resources.requests) && {{ $gpu | quote }} in c.resources.requests))))
{{- end }}
