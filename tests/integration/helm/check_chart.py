#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the Helm chart helm/slurm-k8s-bridge (CTest label `integration`).

  check_chart.py lint          helm lint --strict; values the schema or the templates must refuse
  check_chart.py render        helm template (default, all options on, a 53-character release
                               name): security context, probes, least-privilege RBAC rules,
                               PriorityClasses == rendered config, names <= 63 characters
  check_chart.py dry-run       the rendered manifests applied with `kubectl apply
                               --dry-run=server` to the testbed's apiserver (schema, admission)
  check_chart.py install       helm install, helm upgrade with a changed config (--wait: the
                               rollout completes) and helm uninstall on the testbed (kwok
                               kubelets: scheduled and Running, no container runs)
  check_chart.py socket-dir    the rendered socket-dir init container run as the chart runs
                               it, on a directory made as the kubelet makes it (needs root)
  check_chart.py check-config  the rendered config.json and the Deployment's arguments accepted
                               by `slurm-k8s-bridge --check-config`; a misspelt key refused

Needs: helm and kubectl on PATH and KUBECONFIG (`eval "$(scripts/testbed env)"`), python3-yaml,
promtool (Debian's prometheus: the alerts are parsed and unit-tested with alert_tests.yaml);
check-config needs SKB_BRIDGE_BIN (the daemon binary of the build tree, set by CMake).
Exit 0 on success; on failure prints what differs and exits 1.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SKB_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "../../.."))
CHART = os.path.join(SOURCE, "helm", "slurm-k8s-bridge")
VALUES_ALL = os.path.join(HERE, "values-all.yaml")
KUBE_VERSION = "1.37.0"  # for `helm template` (no cluster); the dry run uses the real one

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.exit("check_chart.py: python3-yaml is missing (apt-get install python3-yaml)")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(cmd, ok=True, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def need(tool):
    if shutil.which(tool) is None:
        sys.exit(f"check_chart.py: {tool} not on PATH: run `eval \"$(scripts/testbed env)\"` first")


def template(release="skb", namespace="slurm-bridge", values=(), sets=(), ok=True):
    """`sets` are --set, or --set-string when prefixed with "string:"."""
    cmd = ["helm", "template", release, CHART, "--namespace", namespace,
           "--kube-version", KUBE_VERSION]
    for v in values:
        cmd += ["-f", v]
    for s in sets:
        cmd += ["--set-string", s[len("string:"):]] if s.startswith("string:") else ["--set", s]
    p = run(cmd, ok=ok)
    return p if not ok else p.stdout


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def find(objs, kind, name_suffix=""):
    return [o for o in objs if o["kind"] == kind and o["metadata"]["name"].endswith(name_suffix)]


def one(objs, kind, name_suffix=""):
    found = find(objs, kind, name_suffix)
    if len(found) != 1:
        sys.exit(f"expected exactly one {kind} *{name_suffix}, found {len(found)}")
    return found[0]


def rendered_config(objs):
    cm = one(objs, "ConfigMap", "-config")
    return json.loads(cm["data"]["config.json"])


# ---- lint ----

def cmd_lint():
    need("helm")
    for values in ([], [VALUES_ALL]):
        cmd = ["helm", "lint", "--strict", CHART, "--kube-version", KUBE_VERSION]
        for v in values:
            cmd += ["-f", v]
        p = run(cmd, ok=False)
        check(p.returncode == 0, f"helm lint {' '.join(values) or '(defaults)'} failed:\n"
              f"{p.stdout}{p.stderr}")
    # Values the schema (or a template's own check) must refuse, with a message naming them.
    refused = {
        "replicas=0": "replicas",
        "image.pullPolicy=Sometimes": "pullPolicy",
        "http.port=70000": "port",
        "leaderElection.leaseDuration=15 seconds": "leaseDuration",
        "unknownTopLevel=1": "unknownTopLevel",
        "replicas=2,leaderElection.enabled=false": "leaderElection.enabled",
        "priorityClasses.preemptible.value=500": "must rise",
        "slurmd.enabled=true": "existingSecret",
        "serviceAccount.create=false": "serviceAccount.name",
        "prometheus.rules.lendStuckSeconds=5": "lendStuckSeconds",
        "prometheus.rules.noLeaderFor=two minutes": "noLeaderFor",
        # One process serves a host's socket: no surge pod, no two replicas on one host.
        "updateStrategy.type=OnDelete": "updateStrategy/type",
        "updateStrategy.rollingUpdate.maxSurge=1": "maxSurge must be 0",
        "updateStrategy.rollingUpdate.maxSurge=25%": "maxSurge must be 0",
        "replicas=2,nodeSelector.kubernetes\\.io/hostname=ctl": "one host per replica",
        "nodeSelector.gpu=true": "/nodeSelector/gpu",  # a bool: the apiserver would refuse it
        "pluginSocket.mode=rwx": "pluginSocket/mode",
        # The daemon's config, checked by the schema the daemon prints
        # (--print-config-schema): a typo is refused at `helm install`, not in a crash loop.
        "config.slurm.pol_interval=1s": "pol_interval",
        "config.lendng.enabled=true": "lendng",
        "config.logging.level=loud": "/config/logging/level",
        "config.kubernetes.qps=0": "/config/kubernetes/qps",
        "config.kubernetes.node_names.mode=fqdn": "/config/kubernetes/node_names/mode",
        "config.lending.default_grace=60": "/config/lending/default_grace",
        "config.lending.cooldown=2 minutes": "/config/lending/cooldown",
        "config.health.cordon=drian": "/config/health/cordon",
        "config.quotas.tenants[0].nmae=vision": "nmae",
        "config.gpu_sharing.device_identity=serial": "/config/gpu_sharing/device_identity",
    }
    for s, needle in refused.items():
        p = template(sets=[s], ok=False)
        out = p.stdout + p.stderr
        check(p.returncode != 0 and needle in out,
              f"--set {s}: expected a refusal naming '{needle}', got rc={p.returncode}: "
              f"{out.strip()[:400]}")
    # And their accepted neighbours render.
    for sets in (["replicas=1", "leaderElection.enabled=false"],
                 ["serviceAccount.create=false", "serviceAccount.name=existing"],
                 ["replicas=2"], ["updateStrategy.type=Recreate"],
                 ["updateStrategy.rollingUpdate.maxSurge=0%"],
                 ["pluginSocket.volume.emptyDir.medium=Memory",
                  "updateStrategy.rollingUpdate.maxSurge=1"],
                 ["replicas=2", "string:nodeSelector.slurm-k8s-bridge\\.io/slurmctld=true"],
                 ["config.quotas.tenants[0].name=vision",
                  "config.quotas.tenants[0].slurm_accounts[0]=vision",
                  "config.quotas.tenants[0].guaranteed.h100=4"],
                 ["config.lending.preemption.qos.debug=cancel"]):
        p = template(sets=sets, ok=False)
        check(p.returncode == 0, f"--set {sets} should render: {p.stderr.strip()[:400]}")


# ---- render ----

EXPECTED_CLUSTER_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]
# With config.gpu_sharing.enabled: DRA objects (src/devices/k8s_devices.h).
EXPECTED_GPU_SHARING_RULES = [
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices", "resourceclaims"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["devicetaintrules"],
     "verbs": ["get", "list", "watch", "create", "delete", "patch"]},
]
# With config.quotas.tenants: the tenants' guarantees as ResourceQuotas.
EXPECTED_QUOTA_RULES = [
    {"apiGroups": [""], "resources": ["resourcequotas"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
     "verbs": ["get", "list", "watch"]},
]
EXPECTED_RESERVATION_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "patch"]},
]
EXPECTED_LEASE_RULES = [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "create", "update"]},
]


def check_common(objs, label, release, namespace):
    # Every object labelled; every name a DNS label (<= 63) or subdomain for cluster objects.
    for o in objs:
        md = o["metadata"]
        where = f"{label}: {o['kind']}/{md['name']}"
        check(len(md["name"]) <= 63, f"{where}: name longer than 63 characters")
        check(not md["name"].endswith("-"), f"{where}: name ends with '-'")
        labels = md.get("labels", {})
        check(labels.get("app.kubernetes.io/instance") == release,
              f"{where}: missing app.kubernetes.io/instance={release}")
        check("helm.sh/chart" in labels, f"{where}: missing helm.sh/chart label")
        if o["kind"] not in ("ClusterRole", "ClusterRoleBinding", "PriorityClass", "Namespace",
                             "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            check(md.get("namespace") in (namespace, f"{namespace}-reservations", "monitoring"),
                  f"{where}: no namespace")

    dep = one(objs, "Deployment")
    spec = dep["spec"]["template"]["spec"]
    psc = spec["securityContext"]
    check(psc.get("runAsNonRoot") is True, f"{label}: pod runAsNonRoot is not true")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
          f"{label}: pod seccompProfile is not RuntimeDefault")
    check(len(spec["containers"]) == 1, f"{label}: expected one container")
    # The socket directory's init container: root with CAP_CHOWN and CAP_FOWNER only, on the
    # plugin socket's volume, only when that is a hostPath.
    vols = {v["name"]: v for v in spec["volumes"]}
    inits = spec.get("initContainers", [])
    if "hostPath" in vols["plugin-socket"]:
        if check(len(inits) == 1, f"{label}: hostPath socket without its init container"):
            i = inits[0]
            isc = i["securityContext"]
            check(isc.get("runAsUser") == 0 and isc.get("runAsNonRoot") is False and
                  isc.get("allowPrivilegeEscalation") is False and
                  isc.get("readOnlyRootFilesystem") is True and
                  isc.get("capabilities") == {"drop": ["ALL"], "add": ["CHOWN", "FOWNER"]} and
                  not isc.get("privileged", False),
                  f"{label}: socket-dir init container's rights: {isc}")
            check([m["name"] for m in i["volumeMounts"]] == ["plugin-socket"],
                  f"{label}: socket-dir init container mounts {i['volumeMounts']}")
            owner = f"{psc.get('runAsUser', 64030)}:{psc.get('runAsGroup', 64030)}"
            sock_mount = [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]
                          if m["name"] == "plugin-socket"]
            check(f"chown {owner} " in i["command"][2] and i["command"][3:] == sock_mount and
                  i["volumeMounts"][0]["mountPath"] == sock_mount[0],
                  f"{label}: socket dir not given to {owner}: {i['command']}")
    else:
        check(not inits, f"{label}: init container without a hostPath socket: {inits}")
    c = spec["containers"][0]
    csc = c["securityContext"]
    check(csc.get("readOnlyRootFilesystem") is True, f"{label}: root filesystem not read-only")
    check(csc.get("allowPrivilegeEscalation") is False, f"{label}: privilege escalation allowed")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], f"{label}: capabilities not dropped")
    check("add" not in csc.get("capabilities", {}), f"{label}: capabilities added")
    check(not csc.get("privileged", False), f"{label}: privileged")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"},
          f"{label}: liveness probe is not /healthz on http: {c['livenessProbe']}")
    check(c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"},
          f"{label}: readiness probe is not /readyz on http: {c['readinessProbe']}")
    env = {e["name"]: e for e in c["env"]}
    check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
          == "metadata.name", f"{label}: POD_NAME (Lease identity) not from metadata.name")
    check(any(a.startswith("--config=/etc/slurm-k8s-bridge/config.json") for a in c["args"]),
          f"{label}: --config not passed")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    check(mounts.get("/etc/slurm-k8s-bridge", {}).get("readOnly") is True,
          f"{label}: config not mounted read-only")

    cfg = rendered_config(objs)
    check(cfg["server"]["http_address"] == f":{ports['http']}",
          f"{label}: config http_address {cfg['server']['http_address']} != container port "
          f"{ports['http']}")
    sock_dir = os.path.dirname(cfg["server"]["socket_path"])
    check(sock_dir in mounts, f"{label}: socket dir {sock_dir} is not a mounted (writable) volume")
    check(not mounts.get(sock_dir, {}).get("readOnly"), f"{label}: socket dir mounted read-only")
    check(cfg["kubernetes"]["namespace"] == namespace, f"{label}: config namespace")
    if "conf" in cfg.get("slurm", {}):
        check(os.path.dirname(cfg["slurm"]["conf"]) in mounts,
              f"{label}: slurm.conf directory not mounted")

    svc = one(objs, "Service")
    check(svc["spec"]["ports"][0]["targetPort"] == "http", f"{label}: service targetPort")
    check(svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"],
          f"{label}: service selector differs from the Deployment's")

    # Reservation pods in their own namespace, under Pod Security; the pod
    # writes granted there only.
    res_ns = cfg["lending"]["namespace"]
    check(res_ns != namespace, f"{label}: reservation pods share the bridge's namespace")
    for ns_obj in find(objs, "Namespace"):
        check(ns_obj["metadata"]["name"] == res_ns, f"{label}: unexpected Namespace")
        psa = {k.rsplit("/", 1)[-1]: v for k, v in ns_obj["metadata"]["labels"].items()
               if k.startswith("pod-security.kubernetes.io/")}
        check(psa.get("enforce") == "baseline" and psa.get("warn") == "restricted" and
              psa.get("audit") == "restricted",
              f"{label}: reservation namespace Pod Security labels {psa}")
    for kind in ("Role", "RoleBinding"):
        for r in find(objs, kind):
            if r["metadata"]["name"].endswith("-reservations"):
                check(r["metadata"]["namespace"] == res_ns,
                      f"{label}: {r['metadata']['name']} not in the reservation namespace")

    # Least privilege: exactly these rules, no wildcard anywhere.
    cr = one(objs, "ClusterRole")
    expected = list(EXPECTED_CLUSTER_RULES)
    if (cfg.get("quotas") or {}).get("tenants"):
        expected[4:4] = EXPECTED_QUOTA_RULES  # after pods/eviction, before events
    if cfg.get("gpu_sharing", {}).get("enabled"):
        expected += EXPECTED_GPU_SHARING_RULES
    check(cr["rules"] == expected,
          f"{label}: ClusterRole rules differ:\n{json.dumps(cr['rules'])}")
    roles = {r["metadata"]["name"].rsplit("-", 1)[-1]: r for r in find(objs, "Role")}
    check(roles.get("reservations", {}).get("rules") == EXPECTED_RESERVATION_RULES,
          f"{label}: reservation Role rules differ: {roles.get('reservations')}")
    check(roles.get("leaderelection", {}).get("rules") == EXPECTED_LEASE_RULES,
          f"{label}: lease Role rules differ: {roles.get('leaderelection')}")
    for r in [cr] + list(roles.values()):
        for rule in r["rules"]:
            check("*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"],
                  f"{label}: wildcard in {r['metadata']['name']}")
    sa = one(objs, "ServiceAccount")["metadata"]["name"]
    check(spec["serviceAccountName"] == sa, f"{label}: pod does not run as the chart's SA")
    for b in find(objs, "ClusterRoleBinding") + find(objs, "RoleBinding"):
        check(b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
              f"{label}: {b['metadata']['name']} binds {b['subjects']}")
        ref = b["roleRef"]["name"]
        check(any(r["metadata"]["name"] == ref for r in find(objs, b["roleRef"]["kind"])),
              f"{label}: {b['metadata']['name']} refers to missing {ref}")

    # PriorityClasses: what the chart creates is what the config tells the bridge to use.
    pcs = {p["metadata"]["name"]: p for p in find(objs, "PriorityClass")}
    for key, ref in cfg["lending"]["priority_classes"].items():
        pc = pcs.get(ref["name"])
        if check(pc is not None, f"{label}: PriorityClass {ref['name']} ({key}) not created"):
            check(pc["value"] == ref["value"],
                  f"{label}: PriorityClass {ref['name']} value {pc['value']} != config "
                  f"{ref['value']}")
            check(pc.get("globalDefault") is False, f"{label}: {ref['name']} is globalDefault")
    inference = [p for n, p in pcs.items()
                 if n not in [r["name"] for r in cfg["lending"]["priority_classes"].values()]]
    check(len(inference) == 1 and inference[0]["value"] == cfg["lending"]["inference_threshold"],
          f"{label}: inference class value != lending.inference_threshold")
    return dep, cfg


def cmd_render():
    need("helm")
    ns = "slurm-bridge"
    # The chart README's own command, without --kube-version: helm assumes the Kubernetes
    # version of the client-go it was built with (a helm built without its Makefile's
    # ldflags assumes v1.20, and the chart's kubeVersion refuses that).
    p = run(["helm", "template", "bridge", CHART], ok=False)
    check(p.returncode == 0,
          f"`helm template bridge <chart>` without --kube-version fails: {p.stderr.strip()}")
    # Defaults.
    objs = docs(template(namespace=ns))
    kinds = sorted(o["kind"] for o in objs)
    check(kinds == sorted(["PriorityClass"] * 4 + [
        "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding",
        "Role", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment", "Pod",
        "NetworkPolicy", "Namespace"] + ["ValidatingAdmissionPolicy",
                                         "ValidatingAdmissionPolicyBinding"] * 3),
        f"defaults: unexpected set of objects {kinds}")
    dep, cfg = check_common(objs, "defaults", "skb", ns)
    # One host: one replica, no anti-affinity, no PodDisruptionBudget (one over a single pod
    # blocks `kubectl drain` of the slurmctld host), and an update that stops the old pod
    # before its successor takes the host's socket.
    check(dep["spec"]["replicas"] == 1, "defaults: replicas != 1")
    check("affinity" not in dep["spec"]["template"]["spec"],
          f"defaults: affinity with one replica: {dep['spec']['template']['spec'].get('affinity')}")
    check(dep["spec"]["strategy"] == {"type": "RollingUpdate",
                                      "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
          f"defaults: strategy {dep['spec'].get('strategy')}")
    # Two replicas (two slurmctld hosts): one per host, a budget that lets one go at a time.
    two = docs(template(namespace=ns, sets=["replicas=2"]))
    dep2, _ = check_common(two, "two replicas", "skb", ns)
    anti = dep2["spec"]["template"]["spec"].get("affinity", {}).get("podAntiAffinity", {})
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
    check(len(terms) == 1 and terms[0]["topologyKey"] == "kubernetes.io/hostname" and
          terms[0]["labelSelector"]["matchLabels"] == dep2["spec"]["selector"]["matchLabels"],
          "two replicas: replicas sharing a hostPath socket are not spread one per host")
    pdb = one(two, "PodDisruptionBudget")
    check(pdb["spec"] == {"maxUnavailable": 1,
                          "selector": {"matchLabels": dep2["spec"]["selector"]["matchLabels"]}},
          f"two replicas: PodDisruptionBudget {pdb['spec']}")
    pdb = one(docs(template(namespace=ns, sets=["replicas=3", "podDisruptionBudget.minAvailable=2"])),
              "PodDisruptionBudget")
    check(pdb["spec"].get("minAvailable") == 2 and "maxUnavailable" not in pdb["spec"],
          f"minAvailable: PodDisruptionBudget {pdb['spec']}")
    check(not find(docs(template(namespace=ns, sets=["replicas=2",
                                                     "podDisruptionBudget.enabled=false"])),
                   "PodDisruptionBudget"), "podDisruptionBudget.enabled=false still renders it")
    rec = one(docs(template(namespace=ns, sets=["updateStrategy.type=Recreate"])), "Deployment")
    check(rec["spec"]["strategy"] == {"type": "Recreate"},
          f"updateStrategy.type=Recreate: strategy {rec['spec']['strategy']}")
    # The socket directory goes to the uid and gid the daemon runs as.
    uid = one(docs(template(namespace=ns, sets=["podSecurityContext.runAsUser=1234",
                                                "podSecurityContext.runAsGroup=1235",
                                                "pluginSocket.mode=0700"])), "Deployment")
    cmd = uid["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    check("chown 1234:1235 " in cmd and "chmod 0700 " in cmd, f"socket dir owner/mode: {cmd}")
    off = one(docs(template(namespace=ns, sets=["pluginSocket.initContainer.enabled=false"])),
              "Deployment")
    check("initContainers" not in off["spec"]["template"]["spec"],
          "pluginSocket.initContainer.enabled=false still renders it")
    check(cfg["lending"]["enabled"] is True, "defaults: lending not enabled")
    check(cfg["gpu_sharing"] == {"enabled": False, "driver": "gpu.nvidia.com",
                                 "extended_resource": "nvidia.com/gpu",
                                 "device_classes": ["gpu.nvidia.com"],
                                 "mig_device_classes": ["mig.nvidia.com"],
                                 "mig_extended_resource_prefix": "nvidia.com/mig-",
                                 "gres_order": "auto"},
          f"defaults: gpu_sharing {cfg.get('gpu_sharing')}")
    check(not any(r["apiGroups"] == ["resource.k8s.io"] for r in one(objs, "ClusterRole")["rules"]),
          "defaults: DRA rules granted with gpu_sharing off")
    kept = one(docs(template(namespace=ns, sets=["rbac.keepGpuSharingRules=true"])), "ClusterRole")
    check(any(r["apiGroups"] == ["resource.k8s.io"] and "devicetaintrules" in r["resources"] and
              "delete" in r["verbs"] for r in kept["rules"]),
          f"rbac.keepGpuSharingRules=true: no DRA rules to wind GPU sharing down: {kept['rules']}")
    # The swap guard: the bridge's ServiceAccount exempt, the nodes the bridge labels
    # (src/ownership/schema.h kSwapGuardLabel) as its parameters, bindings and pod creates.
    vap = one(objs, "ValidatingAdmissionPolicy", "-swap-guard")
    sa = one(objs, "ServiceAccount")["metadata"]["name"]
    check(f'"system:serviceaccount:{ns}:{sa}"' in vap["spec"]["matchConditions"][0]["expression"],
          f"defaults: swap guard does not exempt the bridge: {vap['spec']['matchConditions']}")
    check(vap["spec"]["paramKind"] == {"apiVersion": "v1", "kind": "Node"},
          "defaults: swap guard params are not Nodes")
    check(vap["spec"]["matchConstraints"]["resourceRules"][0]["resources"] ==
          ["pods", "pods/binding"], "defaults: swap guard does not watch pods and bindings")
    vapb = one(objs, "ValidatingAdmissionPolicyBinding", "-swap-guard")
    check(vapb["spec"]["policyName"] == vap["metadata"]["name"] and
          vapb["spec"]["validationActions"] == ["Deny"] and
          vapb["spec"]["paramRef"]["selector"]["matchLabels"] ==
          {"slurm-k8s-bridge.io/swap-guard": "true"} and
          vapb["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow",
          f"defaults: swap guard binding {vapb['spec']}")
    # The failed-reservation guard: the reservation pods of the reservation namespace are
    # its parameters (a kubelet's Failed status guards at once, before any label).
    fr = one(objs, "ValidatingAdmissionPolicy", "-failed-reservation")
    frb = one(objs, "ValidatingAdmissionPolicyBinding", "-failed-reservation")
    check(fr["spec"]["paramKind"] == {"apiVersion": "v1", "kind": "Pod"} and
          f'"system:serviceaccount:{ns}:{sa}"' in fr["spec"]["matchConditions"][0]["expression"] and
          "'Failed'" in fr["spec"]["validations"][0]["expression"] and
          "deletionTimestamp" in fr["spec"]["validations"][0]["expression"],
          f"defaults: failed-reservation guard {fr['spec'].get('paramKind')}")
    check(frb["spec"]["policyName"] == fr["metadata"]["name"] and
          frb["spec"]["validationActions"] == ["Deny"] and
          frb["spec"]["paramRef"]["namespace"] == cfg["lending"]["namespace"] and
          frb["spec"]["paramRef"]["selector"]["matchLabels"] ==
          {"slurm-k8s-bridge.io/role": "reservation"} and
          frb["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow",
          f"defaults: failed-reservation guard binding {frb['spec']}")
    off = docs(template(namespace=ns, sets=["admissionPolicies.swapGuard.enabled=false"]))
    check(not find(off, "ValidatingAdmissionPolicy", "-swap-guard") and
          not find(off, "ValidatingAdmissionPolicyBinding", "-swap-guard") and
          not find(off, "ValidatingAdmissionPolicy", "-failed-reservation"),
          "swapGuard.enabled=false still renders it")
    off = docs(template(namespace=ns, sets=["admissionPolicies.failedReservationGuard.enabled=false"]))
    check(not find(off, "ValidatingAdmissionPolicy", "-failed-reservation") and
          find(off, "ValidatingAdmissionPolicy", "-swap-guard"),
          "failedReservationGuard.enabled=false: still rendered, or the swap guard went too")
    # The device-hold guard: only with gpu_sharing on (below), on claims and templates.
    check(not find(objs, "ValidatingAdmissionPolicy", "-device-hold-guard"),
          "defaults: the device-hold guard is rendered with gpu_sharing off")
    on = docs(template(namespace=ns, sets=["config.gpu_sharing.enabled=true"]))
    dg = one(on, "ValidatingAdmissionPolicy", "-device-hold-guard")
    dgb = one(on, "ValidatingAdmissionPolicyBinding", "-device-hold-guard")
    check(dg["spec"]["matchConstraints"]["resourceRules"][0]["resources"] ==
          ["resourceclaims", "resourceclaimtemplates"] and
          "slurm-k8s-bridge.io/slurm-owned" in json.dumps(dg["spec"]["variables"]) and
          dgb["spec"]["policyName"] == dg["metadata"]["name"] and
          dgb["spec"]["validationActions"] == ["Deny"],
          f"gpu_sharing on: device-hold guard {dg['spec'].get('matchConstraints')}")
    off = docs(template(namespace=ns, sets=["config.gpu_sharing.enabled=true",
                                            "admissionPolicies.deviceHoldGuard.enabled=false"]))
    check(not find(off, "ValidatingAdmissionPolicy", "-device-hold-guard"),
          "deviceHoldGuard.enabled=false still renders it")
    # The reservation guard: bound to the reservation namespace only, the bridge's
    # ServiceAccount exempt, live reservation pods' deletes and evictions watched.
    rg = one(objs, "ValidatingAdmissionPolicy", "-reservation-guard")
    rgb = one(objs, "ValidatingAdmissionPolicyBinding", "-reservation-guard")
    check(rgb["spec"]["policyName"] == rg["metadata"]["name"] and
          rgb["spec"]["validationActions"] == ["Deny"] and
          rgb["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] ==
          {"kubernetes.io/metadata.name": cfg["lending"]["namespace"]},
          f"defaults: reservation guard binding {rgb['spec']}")
    who = {c["name"]: c["expression"] for c in rg["spec"]["matchConditions"]}
    check(f'"system:serviceaccount:{ns}:{sa}"' in who.get("not-the-bridge", ""),
          f"defaults: reservation guard does not exempt the bridge: {who}")
    check('"slurm-k8s-bridge.io/role"' in who.get("a-live-reservation", ""),
          f"defaults: reservation guard does not select reservation pods: {who}")
    check([(r["operations"], r["resources"]) for r in rg["spec"]["matchConstraints"]["resourceRules"]]
          == [(["DELETE"], ["pods"]), (["CREATE"], ["pods/eviction"])],
          "defaults: reservation guard does not watch pod deletes and evictions")
    off = docs(template(namespace=ns, sets=["admissionPolicies.reservationGuard.enabled=false"]))
    check(not find(off, "ValidatingAdmissionPolicy", "-reservation-guard") and
          not find(off, "ValidatingAdmissionPolicyBinding", "-reservation-guard") and
          find(off, "ValidatingAdmissionPolicy", "-swap-guard"),
          "reservationGuard.enabled=false: still rendered, or the swap guard went too")
    default_np = one(objs, "NetworkPolicy")
    check(default_np["spec"]["policyTypes"] == ["Ingress"] and
          default_np["spec"]["ingress"] == [{"ports": [{"port": "http", "protocol": "TCP"}]}],
          f"defaults: NetworkPolicy must admit only the http port: {default_np['spec']}")
    test_pod = one(objs, "Pod")
    check(test_pod["metadata"]["annotations"].get("helm.sh/hook") == "test",
          "the test Pod is not a helm test hook")

    # Everything on.
    objs = docs(template(namespace=ns, values=[VALUES_ALL]))
    dep, cfg = check_common(objs, "all-on", "skb", ns)
    check(dep["spec"]["replicas"] == 3, "all-on: replicas")
    check(cfg["admission"]["preemptible_qos"] == ["low"], "all-on: config block not rendered")
    check(cfg["quotas"]["tenants"][0]["guaranteed"] == 16, "all-on: quotas not rendered")
    check(cfg["kubernetes"]["node_selector"] == "gpu=true", "all-on: node_selector")
    check(cfg["gpu_sharing"]["enabled"] is True and
          cfg["gpu_sharing"]["placeholder"] == {"partition": "skb-gpu-hold"},
          f"all-on: gpu_sharing {cfg.get('gpu_sharing')}")
    check(cfg["kubernetes"]["node_names"] == {"mode": "strip_domain", "domain": "cluster.local"},
          f"all-on: node_names {cfg['kubernetes'].get('node_names')}")
    sm = one(objs, "ServiceMonitor")
    check(sm["spec"]["endpoints"][0]["port"] == "http-metrics", "ServiceMonitor port name")
    check(sm["metadata"]["labels"].get("release") == "prometheus", "ServiceMonitor labels")
    check_rules(one(objs, "PrometheusRule"), ns)
    np_ = one(objs, "NetworkPolicy")
    check(np_["spec"]["ingress"][0]["ports"] == [{"port": "http", "protocol": "TCP"}],
          "NetworkPolicy must open only the http port")
    check("Egress" in np_["spec"]["policyTypes"], "NetworkPolicy egress not rendered")
    dash = one(objs, "ConfigMap", "-dashboard")
    check(dash["metadata"]["labels"].get("grafana_dashboard") == "1", "dashboard label")
    board = json.loads(dash["data"]["slurm-k8s-bridge.json"])
    check(len(board["panels"]) > 10 and board["uid"] == "slurm-k8s-bridge", "dashboard content")
    ds = one(objs, "DaemonSet")
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    check(vols["munge-secret"]["secret"]["secretName"] == "munge-key", "slurmd munge Secret")
    slurmd = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "slurmd"][0]
    check("-Z" in slurmd["args"] and "--conf-server=slurmctld.slurm.svc:6817" in slurmd["args"],
          f"slurmd args {slurmd['args']}")
    vol = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    check(vol["slurm-conf"] == {"name": "slurm-conf", "configMap": {"name": "slurm-conf"}},
          "slurm.confDir.volume not used as given")
    check("--log-level=debug" in dep["spec"]["template"]["spec"]["containers"][0]["args"],
          "extraArgs not passed")

    # A 53-character release name (Helm's maximum) still gives <= 63-character names.
    long_release = "r" * 53
    objs = docs(template(release=long_release, namespace=ns, values=[VALUES_ALL]))
    check_common(objs, "long-release", long_release, ns)

    # A config change rolls the pods (checksum annotation); an unrelated change does not.
    def checksum(sets):
        d = one(docs(template(namespace=ns, sets=sets)), "Deployment")
        return d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    base = checksum([])
    check(checksum(["config.slurm.poll_interval=1s"]) != base, "config change keeps checksum")
    check(checksum(["resources.requests.cpu=200m"]) == base, "unrelated change alters checksum")

    # Single replica without election: the flag is passed, no Lease Role, no PDB.
    objs = docs(template(namespace=ns, sets=["replicas=1", "leaderElection.enabled=false"]))
    args = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--no-leader-election" in args, "--no-leader-election not passed")
    check(not find(objs, "Role", "-leaderelection"), "lease Role rendered without election")
    check(not find(objs, "PodDisruptionBudget"), "PDB rendered for one replica")


# ---- dry-run ----

def cmd_dry_run():
    need("helm")
    need("kubectl")
    if not os.environ.get("KUBECONFIG"):
        sys.exit("KUBECONFIG is not set: run `eval \"$(scripts/testbed env)\"` first")
    version = json.loads(run(["kubectl", "version", "-o", "json"]).stdout)["serverVersion"]
    kube_version = f"{version['major']}.{version['minor'].rstrip('+')}.0"
    # The namespace must exist for namespaced objects (a dry run creates nothing):
    # the testbed's bridge namespace, else "default".
    ns = "slurm-bridge"
    if run(["kubectl", "get", "namespace", ns], ok=False).returncode != 0:
        ns = "default"
    have_sm_crd = run(["kubectl", "get", "crd", "servicemonitors.monitoring.coreos.com"],
                      ok=False).returncode == 0
    # The reservation namespace (a chart object) must exist for the Role in it: made for the
    # dry run, removed after.
    res_ns = f"{ns}-reservations"
    made_res_ns = run(["kubectl", "get", "namespace", res_ns], ok=False).returncode != 0
    if made_res_ns:
        run(["kubectl", "create", "namespace", res_ns])
    try:
        dry_run_cases(ns, kube_version, have_sm_crd)
    finally:
        if made_res_ns:
            run(["kubectl", "delete", "namespace", res_ns, "--wait=false"], ok=False)


def exported_metrics():
    """The series names the daemon exports (bridge/observability/bridge_metrics.cc)."""
    src = open(os.path.join(SOURCE, "bridge", "observability", "bridge_metrics.cc")).read()
    names = set(re.findall(r'"(skb_[a-z0-9_]+)"', src))
    check(len(names) > 20, f"too few metric names read from bridge_metrics.cc: {sorted(names)}")
    return names


def check_rules(rule, ns):
    """The alerts: each names only series the daemon exports, scoped to the release's
    namespace, with a severity and a runbook section that exists in docs/runbook.md."""
    check(rule["metadata"]["labels"].get("release") == "prometheus", "PrometheusRule labels")
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    alerts = {r["alert"] for r in rules}
    want = {"SkbBridgeDown", "SkbNoLeader", "SkbCacheNotSynced", "SkbDrainsFailing",
            "SkbLendStuck", "SkbPluginFailingOpen", "SkbKubernetesApiErrors", "SkbRbacRefused",
            "SkbEventsLost", "SkbSharedGpuDoubleBooked", "SkbReclaimStuck"}
    check(alerts == want, f"PrometheusRule alerts {sorted(alerts)} != {sorted(want)}")
    known = exported_metrics()
    runbook = open(os.path.join(SOURCE, "docs", "runbook.md")).read()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.*)$", runbook, re.M)}
    for r in rules:
        name, expr = r["alert"], r["expr"]
        for series in re.findall(r"\b(skb_[a-z0-9_]+)", expr):
            check(series in known, f"{name}: {series} is not a metric the daemon exports")
        for selector in re.findall(r"\b(?:skb_[a-z0-9_]+|up)\{([^}]*)\}", expr):
            check(f'namespace="{ns}"' in selector,
                  f"{name}: a selector without the release's namespace: {{{selector}}}")
        check(r["labels"].get("severity") in ("critical", "warning", "info"),
              f"{name}: severity {r['labels'].get('severity')}")
        url = r["annotations"].get("runbook_url", "")
        check(url.split("#")[-1] == name.lower() and name.lower() in anchors,
              f"{name}: runbook_url {url} has no section in docs/runbook.md")
        check(r["annotations"].get("summary"), f"{name}: no summary")
    promtool_rules(rule, {r["alert"]: r for r in rules})


def promtool_rules(rule, by_name):
    """promtool (Debian's prometheus package) parses the rules and runs alert_tests.yaml."""
    need("promtool")
    with tempfile.TemporaryDirectory() as tmp:
        rules_file = os.path.join(tmp, "rules.yaml")
        with open(rules_file, "w") as f:
            yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
        p = run(["promtool", "check", "rules", rules_file], ok=False)
        if not check(p.returncode == 0, f"promtool check rules:\n{p.stdout}{p.stderr}"):
            return
        with open(os.path.join(HERE, "alert_tests.yaml")) as f:
            tests = yaml.safe_load(f)
        tests["rule_files"] = ["rules.yaml"]
        for t in tests["tests"]:
            for case in t.get("alert_rule_test", []):
                ann = by_name[case["alertname"]]["annotations"]
                for a in case.get("exp_alerts", []):
                    if "exp_annotations" not in a and not any("{{" in v for v in ann.values()):
                        a["exp_annotations"] = ann
        tests_file = os.path.join(tmp, "alert_tests.yaml")
        with open(tests_file, "w") as f:
            yaml.safe_dump(tests, f)
        p = run(["promtool", "test", "rules", tests_file], ok=False)
        check(p.returncode == 0, f"promtool test rules (alert_tests.yaml):\n{p.stdout}{p.stderr}")


def dry_run_cases(ns, kube_version, have_sm_crd):
    for label, values, sets in (
            ("defaults", [], []), ("all-on", [VALUES_ALL], []),
            ("two slurmctld hosts", [],
             ["replicas=2", "updateStrategy.type=Recreate",
              "string:nodeSelector.slurm-k8s-bridge\\.io/slurmctld=true"])):
        cmd = ["helm", "template", "skb", CHART, "--namespace", ns, "--kube-version",
               kube_version]
        for v in values:
            cmd += ["-f", v]
        for s in sets:
            cmd += (["--set-string", s[len("string:"):]] if s.startswith("string:")
                    else ["--set", s])
        objs = docs(run(cmd).stdout)
        if not have_sm_crd:
            # No prometheus-operator on the testbed: its CRDs are not ours to install. The
            # ServiceMonitor's and PrometheusRule's fields are checked by `render`.
            objs = [o for o in objs if o["kind"] not in ("ServiceMonitor", "PrometheusRule")]
        text = yaml.safe_dump_all(objs)
        p = run(["kubectl", "apply", "--dry-run=server", "-o", "json", "-f", "-"], ok=False,
                stdin=text)
        if not check(p.returncode == 0, f"{label}: kubectl apply --dry-run=server failed:\n"
                     f"{p.stderr}"):
            continue
        out = json.loads(p.stdout)
        items = out.get("items", [out])
        check(len(items) == len(objs),
              f"{label}: apiserver returned {len(items)} objects for {len(objs)}")
        # The apiserver's defaulting and admission kept our security settings.
        for o in items:
            if o["kind"] == "Deployment":
                c = o["spec"]["template"]["spec"]["containers"][0]
                check(c["securityContext"]["readOnlyRootFilesystem"] is True,
                      f"{label}: apiserver dropped readOnlyRootFilesystem")
        print(f"{label}: {len(items)} objects accepted by the apiserver (namespace {ns})")


# ---- install ----

def cmd_install():
    """helm install on the testbed, then helm upgrade with a changed config (which rolls the
    pod), then helm uninstall. The testbed's kubelets are kwok's: pods are scheduled and
    reported Running, but no container runs, so this shows the objects, the scheduling and
    the rollout (maxSurge 0: the old pod goes first, the upgrade completes), not the socket
    directory on a real node."""
    need("helm")
    need("kubectl")
    if not os.environ.get("KUBECONFIG"):
        sys.exit("KUBECONFIG is not set: run `eval \"$(scripts/testbed env)\"` first")
    ns, release = "skb-chart-install", "skbi"
    nodes = json.loads(run(["kubectl", "get", "nodes", "-o", "json"]).stdout)["items"]
    host = nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"]
    # Cluster-wide objects the testbed has already (PriorityClasses) or that would reach
    # beyond this release (the swap guard sees every pod) stay out; the dry run checks them.
    sets = [f"nodeSelector.kubernetes\\.io/hostname={host}", "priorityClasses.create=false",
            "admissionPolicies.swapGuard.enabled=false",
            "admissionPolicies.reservationGuard.enabled=false",
            "image.repository=registry.invalid/slurm-k8s-bridge"]

    def helm(verb, extra=()):
        cmd = ["helm", verb, release, CHART, "-n", ns, "--wait", "--timeout", "120s"]
        for s in sets + list(extra):
            cmd += ["--set", s]
        return run(cmd, ok=False)

    def pods():
        out = json.loads(run(["kubectl", "-n", ns, "get", "pods", "-o", "json",
                              "-l", f"app.kubernetes.io/instance={release}"]).stdout)
        return [p for p in out["items"] if not p["metadata"].get("deletionTimestamp")]

    def cleanup():
        run(["helm", "uninstall", release, "-n", ns, "--wait", "--timeout", "60s"], ok=False)
        run(["kubectl", "delete", "namespace", ns, f"{ns}-reservations", "--wait=false",
             "--ignore-not-found"], ok=False)

    cleanup()
    for _ in range(60):  # a namespace left by an earlier run must be gone first
        if run(["kubectl", "get", "namespace", ns], ok=False).returncode != 0:
            break
        time.sleep(1)
    run(["kubectl", "create", "namespace", ns])
    run(["kubectl", "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged"])
    try:
        p = helm("install")
        if not check(p.returncode == 0, f"helm install failed:\n{p.stdout}{p.stderr}"):
            return
        first = pods()
        check(len(first) == 1 and first[0]["spec"].get("nodeName") == host and
              [c["name"] for c in first[0]["spec"].get("initContainers", [])] == ["socket-dir"],
              f"install: expected one pod on {host} with the socket-dir init container: "
              f"{[(x['metadata']['name'], x['spec'].get('nodeName')) for x in first]}")
        p = helm("upgrade", ["config.slurm.poll_interval=1s"])
        check(p.returncode == 0, f"helm upgrade with a changed config did not complete:\n"
              f"{p.stdout}{p.stderr}")
        after = pods()
        check(len(after) == 1 and after[0]["metadata"]["name"] != first[0]["metadata"]["name"],
              "upgrade: the config change did not replace the pod: "
              f"{[x['metadata']['name'] for x in after]}")
        p = helm("upgrade", ["replicas=2"])
        check(p.returncode != 0 and "one host per replica" in p.stderr,
              f"upgrade to two replicas pinned to one host was not refused: {p.stderr[:300]}")
        print(f"install, upgrade ({first[0]['metadata']['name']} -> "
              f"{after[0]['metadata']['name']}) and the refused upgrade on {host}")
    finally:
        cleanup()


# ---- socket-dir ----

SYSTEM_PYTHON = "/usr/bin/python3"  # runs as the daemon's uid (a user's pyenv may be closed to it)
TRY_SOCKET = """
import errno, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.{op}(sys.argv[1])
except OSError as e:
    print(errno.errorcode[e.errno])
else:
    print("ok")
"""


def cmd_socket_dir():
    """The rendered socket-dir init container, run as the chart runs it (root, only the
    capabilities it adds, no new privileges) on a directory made as the kubelet makes it
    (root, 0755): before, the daemon's uid cannot bind its socket there; after, it can, a
    peer of another uid cannot reach it, a second run (the next pod start) works, and each
    added capability is needed. Needs root (exit 77, skipped, otherwise)."""
    need("helm")
    need("setpriv")
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        print(f"socket-dir: skipped (needs root and {SYSTEM_PYTHON})")
        sys.exit(77)
    spec = one(docs(template()), "Deployment")["spec"]["template"]["spec"]
    uid, gid = spec["securityContext"]["runAsUser"], spec["securityContext"]["runAsGroup"]
    init = spec["initContainers"][0]
    caps = init["securityContext"]["capabilities"]
    check(caps.get("drop") == ["ALL"], f"socket-dir: capabilities not all dropped: {caps}")
    added = [c.lower() for c in caps.get("add", [])]
    mode = re.search(r"chmod (\d+) ", init["command"][2]).group(1)

    def as_root(path, keep):
        bounding = ",".join(["-all"] + [f"+{c}" for c in keep])
        cmd = ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", "--no-new-privs",
               "--", *init["command"][:3], path]
        return run(cmd, ok=False)

    def as_user(u, g, op, path):
        p = run(["setpriv", f"--reuid={u}", f"--regid={g}", "--clear-groups", "--",
                 SYSTEM_PYTHON, "-c", TRY_SOCKET.format(op=op), path], ok=False)
        return p.stdout.strip() or p.stderr.strip()

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        d = os.path.join(tmp, "slurm-k8s-bridge")
        os.mkdir(d, 0o755)  # DirectoryOrCreate: root:root 0755
        sock = os.path.join(d, "bridge.sock")
        check(as_user(uid, gid, "bind", sock) == "EACCES",
              "socket-dir: the daemon's uid could bind in the kubelet's directory already")
        for c in added:  # each added capability is needed (the second run: the dir is uid's)
            if c == "chown":
                check(as_root(d, [x for x in added if x != c]).returncode != 0,
                      "socket-dir: works without CAP_CHOWN: drop it")
        p = as_root(d, added)
        if not check(p.returncode == 0, f"socket-dir: the init container failed:\n{p.stderr}"):
            return
        st = os.stat(d)
        check((st.st_uid, st.st_gid, oct(st.st_mode & 0o7777)) == (uid, gid, oct(int(mode, 8))),
              f"socket-dir: directory is {st.st_uid}:{st.st_gid} {oct(st.st_mode & 0o7777)}, "
              f"want {uid}:{gid} {mode}")
        if "fowner" in added:
            check(as_root(d, [x for x in added if x != "fowner"]).returncode != 0,
                  "socket-dir: a second run works without CAP_FOWNER: drop it")
        p = as_root(d, added)
        check(p.returncode == 0, f"socket-dir: the second run (next pod start) failed:\n{p.stderr}")
        check(as_user(uid, gid, "bind", sock) == "ok",
              "socket-dir: the daemon's uid cannot bind its socket after the init container")
        # The socket is there but nobody listens: the daemon's uid (slurmctld's) reaches it,
        # another uid is stopped at the directory.
        check(as_user(uid, gid, "connect", sock) == "ECONNREFUSED",
              "socket-dir: SlurmUser cannot reach the socket")
        check(as_user(65534, 65534, "connect", sock) == "EACCES",
              "socket-dir: another uid reaches the socket")
    print(f"socket-dir: {uid}:{gid} {mode} with {added}; another uid refused")


# ---- check-config ----

def cmd_check_config():
    need("helm")
    binary = os.environ.get("SKB_BRIDGE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        sys.exit(f"SKB_BRIDGE_BIN ({binary}) is not an executable slurm-k8s-bridge")
    with tempfile.TemporaryDirectory() as tmp:
        cases = (("defaults", [], [], True), ("all-on", [VALUES_ALL], [], True),
                 ("single", [], ["replicas=1", "leaderElection.enabled=false"], True),
                 ("misspelt key", [], ["config.slurm.pol_interval=1s"], False),
                 ("lease timing", [], ["config.leader_election.lease_duration=1s"], False),
                 ("bad value", [], ["config.logging.level=loud"], False),
                 ("node names mode", [], ["config.kubernetes.node_names.mode=fqdn"], False),
                 ("gpu sharing identity", [],
                  ["config.gpu_sharing.device_identity=serial"], False),
                 ("quotas key", [], ["config.quotas.teams=vision"], False),
                 # An older chart's values (no apiVersion): the chart writes v1.
                 ("no apiVersion", [], ["config.apiVersion=null"], True),
                 ("unknown apiVersion", [], ["config.apiVersion=slurm-k8s-bridge/v2"], False))
        for label, values, sets, want_ok in cases:
            key = sets[0].split("=")[0].removeprefix("config.") if sets else ""
            rendered = template(values=values, sets=sets, ok=False)
            if not want_ok and rendered.returncode != 0:
                # Refused by the chart's schema (the daemon's, --print-config-schema) before
                # the daemon sees it: the message names the key.
                check(key.rsplit(".", 1)[-1] in rendered.stderr,
                      f"{label}: helm refused it without naming '{key}':\n{rendered.stderr}")
                continue
            check(rendered.returncode == 0, f"{label}: helm template failed:\n{rendered.stderr}")
            objs = docs(rendered.stdout)
            path = os.path.join(tmp, label.replace(" ", "-") + ".json")
            with open(path, "w") as f:
                f.write(one(objs, "ConfigMap", "-config")["data"]["config.json"])
            # The Deployment's own arguments, with the config path pointing at the copy.
            args = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
            args = [f"--config={path}" if a.startswith("--config=") else a for a in args]
            p = run([binary, *args, "--check-config"], ok=False)
            out = p.stdout + p.stderr
            if want_ok:
                check(p.returncode == 0,
                      f"{label}: --check-config refused the rendered config:\n{out}")
                # The chart names the format: the daemon has nothing to notice.
                check("apiVersion=slurm-k8s-bridge/v1" in p.stdout and "notice:" not in out,
                      f"{label}: the rendered config is not read as an explicit v1:\n{out}")
            else:
                check(p.returncode != 0 and key in out,
                      f"{label}: --check-config should refuse naming '{key}', rc={p.returncode}:"
                      f"\n{out}")
        # The schema is never stricter than the daemon: every config the daemon accepts (the
        # config fuzzer's corpus, the examples) is a `config:` helm accepts.
        corpus = sorted(glob.glob(os.path.join(SOURCE, "src", "config", "fuzz", "corpus", "*")))
        corpus += [os.path.join(SOURCE, "bridge", "dist", "config.json")]
        corpus += sorted(glob.glob(os.path.join(SOURCE, "docs", "examples", "*.json")))
        accepted = 0
        for path in corpus:
            rel = os.path.relpath(path, SOURCE)
            if run([binary, "--config", path, "--check-config"], ok=False).returncode != 0:
                continue
            with open(path) as f:
                text = "\n".join(l for l in f.read().splitlines()
                                 if not l.lstrip().startswith("//"))
            try:
                doc = json.loads(text)
            except ValueError:
                continue  # comments within a line: not plain JSON
            values = os.path.join(tmp, "corpus-values.yaml")
            with open(values, "w") as f:
                yaml.safe_dump({"config": doc}, f)
            p = template(values=[values], ok=False)
            accepted += 1
            check(p.returncode == 0,
                  f"{rel}: the daemon accepts it, helm's schema refuses it:\n{p.stderr[:600]}")
        check(accepted >= 4, f"only {accepted} accepted configs in the corpus and examples")


def main():
    cmds = {"lint": cmd_lint, "render": cmd_render, "dry-run": cmd_dry_run,
            "install": cmd_install, "socket-dir": cmd_socket_dir,
            "check-config": cmd_check_config}
    if len(sys.argv) != 2 or sys.argv[1] not in cmds:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(cmds)}")
    cmds[sys.argv[1]]()
    if failures:
        print(f"{len(failures)} check(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        sys.exit(1)
    print(f"{sys.argv[1]}: ok")


if __name__ == "__main__":
    main()
