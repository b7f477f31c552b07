#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The testbed's kubelet admission: what kwok does not simulate.

A kubelet admits the pods bound to its node one at a time, in creation order, and refuses a
pod whose requests do not fit into the node's allocatable minus the requests of the pods it
already admitted and that are not terminal (pkg/kubelet/lifecycle/predicate.go): the pod
turns Failed with reason OutOf<resource> (OutOfnvidia.com/gpu, OutOfcpu, ...), message
"Pod was rejected: Node didn't have enough resource: R, requested: N, used: U, capacity: C"
and a Warning Event; it never runs. kwok starts every pod it sees. This daemon plays the
admission half of every kwok node's kubelet: kwok's pod-create stage
(tests/testbed/kwok/stages.yaml) only selects pods that carry the condition
testbed.slurm-k8s-bridge.io/KubeletAdmitted=True, which this daemon sets once it admitted
the pod, so no pod is ever Running before admission decided.

What it checks, as the kubelet does: the pod count; cpu, memory and ephemeral-storage
(0 when the node does not list them); every other resource the node's allocatable lists,
whatever its name (nvidia.com/gpu, amd.com/gpu, ...). An extended resource the node does
not list is dropped from the pod's requests (removeMissingExtendedResources), and so is one
served by DRA (a container's resource named in status.extendedResourceClaimStatus's
requestMappings: nvidia.com/gpu on a node whose GPUs a DRA driver offers). The pod's
request is max(sum of its containers, largest init container) plus its overhead.

Dynamic Resource Allocation: an admitted pod starts only once the kubelet prepared its
claims (spec.resourceClaims, and the claim of status.extendedResourceClaimStatus); that
fails while a claim is missing, unallocated or not reserved for the pod
(pkg/kubelet/cm/dra/manager.go PrepareResources). Such a pod counts against the node as
admitted but stays Pending, with a Warning Event FailedPrepareDynamicResources ("Failed to
prepare dynamic resources: ..."), and starts once its claims are allocated and reserved
for it (claims are watched). Preparing itself (the driver's NodePrepareResources) always
succeeds here.

Kubelet restart (scripts/testbed kubelet-restart NODE): the node annotation
testbed.slurm-k8s-bridge.io/kubelet-restart=TOKEN makes it re-admit every non-terminal
pod on the node from scratch, in creation order, against the node's allocatable now; those
that no longer fit turn Failed (OutOf<resource>). With
testbed.slurm-k8s-bridge.io/kubelet-restart-devices=late the device plugin has not
registered again when the pods are re-admitted: every pod asking a device resource fails
with UnexpectedAdmissionError (kubernetes/kubernetes#118559). Done, it sets
testbed.slurm-k8s-bridge.io/kubelet-restarted=TOKEN.

Talks to the apiserver with kwok's client certificate (it plays the kubelets kwok plays).

  kubelet_admission.py --server https://127.0.0.1:16443 --ca CA --cert CRT --key KEY
"""

import argparse
import datetime
import fractions
import itertools
import http.client
import json
import queue
import re
import ssl
import sys
import threading
import time
import urllib.parse

ADMITTED = "testbed.slurm-k8s-bridge.io/KubeletAdmitted"
RESTART = "testbed.slurm-k8s-bridge.io/kubelet-restart"
RESTART_DEVICES = "testbed.slurm-k8s-bridge.io/kubelet-restart-devices"
RESTARTED = "testbed.slurm-k8s-bridge.io/kubelet-restarted"
KWOK_NODE = "kwok.x-k8s.io/node"
NATIVE_ZERO_WHEN_MISSING = ("cpu", "memory", "ephemeral-storage")
ALL_KINDS = {"node", "pod", "claim"}

_SUFFIX = {
    "n": fractions.Fraction(1, 10**9), "u": fractions.Fraction(1, 10**6),
    "m": fractions.Fraction(1, 1000), "": 1, "k": 10**3, "M": 10**6, "G": 10**9,
    "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
    "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


def log(*args):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    print(stamp, *args, flush=True)


def quantity(text):
    """A Kubernetes quantity as an exact fraction (0 when unreadable)."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        return fractions.Fraction(0)
    value = fractions.Fraction(m.group(1))
    if m.group(2):
        exp = int(m.group(2)[1:])
        return value * (fractions.Fraction(10) ** exp)
    return value * _SUFFIX[m.group(3) or ""]


def is_extended(name):
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def as_int(name, q):
    """How the kubelet prints an amount: milli-CPU for cpu, whole units otherwise."""
    if name == "cpu":
        return int(q * 1000)
    return int(q)


def pod_requests(pod):
    """The pod's effective requests (kubelet's resourcehelper.PodRequests, simplified)."""
    spec = pod.get("spec", {})

    def of(container):
        res = container.get("resources", {})
        req = dict(res.get("limits", {}))
        req.update(res.get("requests", {}))  # requests default to limits
        return {k: quantity(v) for k, v in req.items()}

    by_dra = dra_backed(pod)
    total = {}
    for c in spec.get("containers", []):
        for k, v in of(c).items():
            if (c.get("name"), k) not in by_dra:
                total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers", []):
        for k, v in of(c).items():
            if (c.get("name"), k) not in by_dra:
                total[k] = max(total.get(k, 0), v)
    for k, v in spec.get("overhead", {}).items():
        total[k] = total.get(k, 0) + quantity(v)
    return total


def dra_backed(pod):
    """(container, resource) pairs served by DRA: status.extendedResourceClaimStatus."""
    ers = pod.get("status", {}).get("extendedResourceClaimStatus") or {}
    return {(m.get("containerName"), m.get("resourceName"))
            for m in ers.get("requestMappings", []) or []}


def claim_names(pod):
    """The ResourceClaims the pod's kubelet prepares, or (None, error) while one has no name
    yet (resourceclaim.Name: a template's claim not yet recorded in the pod's status)."""
    spec, status = pod.get("spec", {}), pod.get("status", {})
    recorded = {s.get("name"): s.get("resourceClaimName")
                for s in status.get("resourceClaimStatuses", []) or []}
    names = []
    for c in spec.get("resourceClaims", []) or []:
        if c.get("resourceClaimName"):
            names.append(c["resourceClaimName"])
        elif c.get("resourceClaimTemplateName"):
            if c.get("name") not in recorded:
                return None, (f'pod "{pod["metadata"]["namespace"]}/{pod["metadata"]["name"]}": '
                              "no ResourceClaim for it yet")
            if recorded[c["name"]]:
                names.append(recorded[c["name"]])
    ers = status.get("extendedResourceClaimStatus") or {}
    if ers.get("resourceClaimName"):
        names.append(ers["resourceClaimName"])
    return names, None


def terminal(pod):
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def creation_key(pod, seen):
    """Creation order. creationTimestamp has whole seconds; within one second the order the
    watch delivered the pods in (the apiserver's write order) decides, then the name (pods
    listed before this process started)."""
    meta = pod["metadata"]
    return (meta.get("creationTimestamp", ""), seen.get(meta.get("uid"), -1),
            meta.get("namespace", ""), meta.get("name", ""))


def has_admitted_condition(pod):
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == ADMITTED and c.get("status") == "True":
            return True
    return False


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    def __init__(self, server, ca, cert, key):
        url = urllib.parse.urlparse(server)
        self.host, self.port = url.hostname, url.port or 443
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def connect(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, content_type="application/json"):
        conn = self.connect(30)
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read()
            return resp.status, (json.loads(text) if text else {})
        finally:
            conn.close()


class Watcher(threading.Thread):
    """List, then watch from the list's resourceVersion; relist on 410 and on any error.
    Every list and event goes to `out` as (kind, event_type, object); a list is sent as
    ("SYNC", [objects]) so the consumer can drop what disappeared."""

    def __init__(self, api, kind, path, out):
        super().__init__(daemon=True)
        self.api, self.kind, self.path, self.out = api, kind, path, out

    def run(self):
        while True:
            try:
                self.list_and_watch()
            except Exception as e:  # apiserver restarts are routine in the tests
                log(f"{self.kind} watch: {e!r}; relisting in 1 s")
            time.sleep(1)

    def list_and_watch(self):
        status, body = self.api.request("GET", self.path)
        if status != 200:
            raise RuntimeError(f"list {self.path}: HTTP {status}")
        rv = body["metadata"]["resourceVersion"]
        self.out.put((self.kind, "SYNC", body.get("items", [])))
        while True:
            conn = self.api.connect(330)
            try:
                q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv,
                                            "allowWatchBookmarks": "true",
                                            "timeoutSeconds": "300"})
                conn.request("GET", f"{self.path}?{q}", headers={"Accept": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    raise RuntimeError(f"watch {self.path}: HTTP {resp.status}")
                while True:
                    line = resp.readline()
                    if not line:
                        break  # the server ended the watch: resume from rv
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":
                        if obj.get("code") == 410:
                            return  # expired: relist
                        raise RuntimeError(f"watch error: {obj.get('message')}")
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if ev.get("type") != "BOOKMARK":
                        self.out.put((self.kind, ev["type"], obj))
            finally:
                conn.close()


class Admission:
    def __init__(self, api):
        self.api = api
        self.nodes = {}  # name -> node object (managed nodes only)
        self.by_node = {}  # node -> {uid: pod}: bound pods
        self.decided = {}  # uid -> "admitted" | "rejected": our write, not yet seen back;
        #                    "unprepared": admitted, its claims not ready (no write yet)
        self.claims = {}  # (namespace, name) -> ResourceClaim
        self.restarted = {}  # node -> token handled
        self.seen = {}  # uid -> the order this process first saw the pod in
        self.sightings = itertools.count()

    def apply(self, kind, event, obj):
        """Updates the cache; returns the nodes whose admission must be looked at again."""
        if kind == "claim":
            return self.apply_claim(event, obj)
        if kind == "node":
            if event == "SYNC":
                self.nodes = {n["metadata"]["name"]: n for n in obj
                              if n["metadata"].get("annotations", {}).get(KWOK_NODE)}
                return set(self.nodes)
            name = obj["metadata"]["name"]
            if event == "DELETED" or not obj["metadata"].get("annotations", {}).get(KWOK_NODE):
                self.nodes.pop(name, None)
                return set()
            self.nodes[name] = obj
            return {name}
        if event == "SYNC":
            self.by_node = {}
            for p in obj:
                self.seen.setdefault(p["metadata"]["uid"], next(self.sightings))
                node = p.get("spec", {}).get("nodeName")
                if node:
                    self.by_node.setdefault(node, {})[p["metadata"]["uid"]] = p
            return set(self.by_node)
        uid = obj["metadata"]["uid"]
        node = obj.get("spec", {}).get("nodeName")
        if event == "DELETED":
            self.by_node.get(node, {}).pop(uid, None)
            self.decided.pop(uid, None)
            self.seen.pop(uid, None)
            return {node} if node else set()
        self.seen.setdefault(uid, next(self.sightings))
        if not node:
            return set()
        self.by_node.setdefault(node, {})[uid] = obj
        if uid in self.decided and (has_admitted_condition(obj) or terminal(obj)):
            del self.decided[uid]  # our write is visible now
        return {node}

    def apply_claim(self, event, obj):
        if event == "SYNC":
            self.claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in obj}
            return set(self.by_node)
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if event == "DELETED":
            self.claims.pop(key, None)
        else:
            self.claims[key] = obj
        # The nodes of the pods waiting for their claims in that namespace.
        return {node for node, pods in self.by_node.items() for p in pods.values()
                if p["metadata"]["namespace"] == key[0]
                and self.decided.get(p["metadata"]["uid"]) == "unprepared"}

    def claims_unready(self, pod):
        """None when every claim of the pod is allocated and reserved for it, else why not
        (worded as the kubelet's PrepareResources error)."""
        names, err = claim_names(pod)
        if err:
            return err
        meta = pod["metadata"]
        for name in names:
            claim = self.claims.get((meta["namespace"], name))
            if claim is None:
                return f'fetch ResourceClaim {name}: resourceclaims "{name}" not found'
            status = claim.get("status", {})
            if not any(r.get("uid") == meta["uid"] for r in status.get("reservedFor", []) or []):
                return (f"pod {meta['name']} ({meta['uid']}) is not allowed to use ResourceClaim "
                        f"{name} ({claim['metadata']['uid']})")
            if not status.get("allocation"):
                return f"ResourceClaim {name}: not allocated"
        return None

    def start(self, pod):
        """An admitted pod runs once its claims are ready; until then it waits, admitted."""
        uid = pod["metadata"]["uid"]
        why = self.claims_unready(pod)
        if why is None:
            self.admit(pod)
            return
        if self.decided.get(uid) != "unprepared":
            self.decided[uid] = "unprepared"
            meta = pod["metadata"]
            log(f"waiting {meta['namespace']}/{meta['name']} on {pod['spec']['nodeName']}: {why}")
            self.event(pod, "FailedPrepareDynamicResources",
                       f"Failed to prepare dynamic resources: {why}")

    def admitted(self, pod):
        uid = pod["metadata"]["uid"]
        if self.decided.get(uid) in ("admitted", "unprepared") or has_admitted_condition(pod):
            return True
        # Started before this daemon ran (or before kwok's stages asked for the condition).
        status = pod.get("status", {})
        return bool(status.get("podIP")) or status.get("phase") == "Running"

    def active(self, pod):
        uid = pod["metadata"]["uid"]
        return not terminal(pod) and self.decided.get(uid) != "rejected"

    def reconcile(self, node_name):
        node = self.nodes.get(node_name)
        if node is None:
            return
        annotations = node["metadata"].get("annotations", {})
        token = annotations.get(RESTART)
        if token and token != annotations.get(RESTARTED) and self.restarted.get(node_name) != token:
            self.restart(node_name, node, token, annotations.get(RESTART_DEVICES) == "late")
            return
        on_node = list(self.by_node.get(node_name, {}).values())
        running = [p for p in on_node if self.active(p) and self.admitted(p)]
        for p in running:
            if self.decided.get(p["metadata"]["uid"]) == "unprepared" and \
                    not p["metadata"].get("deletionTimestamp"):
                self.start(p)
        waiting = sorted((p for p in on_node if self.active(p) and not self.admitted(p)
                          and not p["metadata"].get("deletionTimestamp")),
                         key=lambda p: creation_key(p, self.seen))
        if not waiting:
            return
        alloc = {k: quantity(v) for k, v in node.get("status", {}).get("allocatable", {}).items()}
        used = {}
        for p in running:
            for k, v in pod_requests(p).items():
                used[k] = used.get(k, 0) + v
        count = len(running)
        for p in waiting:
            verdict = self.fits(p, alloc, used, count)
            if verdict is None:
                self.start(p)
                for k, v in pod_requests(p).items():
                    used[k] = used.get(k, 0) + v
                count += 1
            else:
                self.reject(p, *verdict)

    def fits(self, pod, alloc, used, count):
        """None when the pod fits, else (reason, message) as the kubelet words them."""
        pods_allowed = int(alloc.get("pods", 0))
        if count + 1 > pods_allowed:
            return ("OutOfpods", "Node didn't have enough resource: pods, requested: 1, "
                    f"used: {count}, capacity: {pods_allowed}")
        req = pod_requests(pod)
        names = [n for n in NATIVE_ZERO_WHEN_MISSING if req.get(n, 0) > 0]
        names += sorted(n for n in req if n not in NATIVE_ZERO_WHEN_MISSING and n != "pods"
                        and req[n] > 0 and (n in alloc or not is_extended(n)))
        for name in names:
            have, taken = alloc.get(name, 0), used.get(name, 0)
            if req[name] > have - taken:
                return (f"OutOf{name}",
                        f"Node didn't have enough resource: {name}, requested: "
                        f"{as_int(name, req[name])}, used: {as_int(name, taken)}, "
                        f"capacity: {as_int(name, have)}")
        return None

    def path(self, pod, sub=""):
        meta = pod["metadata"]
        return f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}{sub}"

    def admit(self, pod):
        uid = pod["metadata"]["uid"]
        patch = {"metadata": {"uid": uid},
                 "status": {"conditions": [{"type": ADMITTED, "status": "True",
                                            "reason": "Admitted",
                                            "lastTransitionTime": now_rfc3339()}]}}
        status, body = self.api.request("PATCH", self.path(pod, "/status"), patch,
                                        "application/strategic-merge-patch+json")
        if status == 200:
            self.decided[uid] = "admitted"
            log(f"admitted {pod['metadata']['namespace']}/{pod['metadata']['name']} "
                f"on {pod['spec']['nodeName']}")
        elif status not in (404, 409):  # gone, or another pod of that name: nothing to do
            raise RuntimeError(f"admitting {pod['metadata']['name']}: HTTP {status} "
                               f"{body.get('message')}")

    def reject(self, pod, reason, message):
        """Fails the pod as kubelet.rejectPod does: phase Failed, reason, message, Event."""
        uid = pod["metadata"]["uid"]
        patch = {"metadata": {"uid": uid},
                 "status": {"phase": "Failed", "reason": reason,
                            "message": f"Pod was rejected: {message}"}}
        status, body = self.api.request("PATCH", self.path(pod, "/status"), patch,
                                        "application/strategic-merge-patch+json")
        meta = pod["metadata"]
        if status in (404, 409):
            return
        if status != 200:
            raise RuntimeError(f"rejecting {meta['name']}: HTTP {status} {body.get('message')}")
        self.decided[uid] = "rejected"
        log(f"rejected {meta['namespace']}/{meta['name']} on {pod['spec']['nodeName']}: "
            f"{reason}: {message}")
        self.event(pod, reason, message)

    def event(self, pod, reason, message):
        """A Warning Event on the pod from its node's kubelet."""
        meta, uid = pod["metadata"], pod["metadata"]["uid"]
        now = now_rfc3339()
        event = {"metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
                 "involvedObject": {"kind": "Pod", "namespace": meta["namespace"],
                                    "name": meta["name"], "uid": uid, "apiVersion": "v1"},
                 "reason": reason, "message": message, "type": "Warning",
                 "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
                 "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        self.api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/events", event)

    def restart(self, node_name, node, token, devices_late):
        """A kubelet restart: every non-terminal pod is admitted again from scratch."""
        log(f"kubelet restart on {node_name} (token {token}, device plugin "
            f"{'late' if devices_late else 'registered'})")
        alloc = {k: quantity(v) for k, v in node.get("status", {}).get("allocatable", {}).items()}
        on_node = sorted((p for p in self.by_node.get(node_name, {}).values()
                          if self.active(p)),
                         key=lambda p: creation_key(p, self.seen))
        used, count = {}, 0
        for p in on_node:
            req = pod_requests(p)
            devices = sorted(n for n in req if is_extended(n) and req[n] > 0 and n in alloc)
            if devices_late and devices:
                self.reject(p, "UnexpectedAdmissionError",
                            "Allocate failed due to no healthy devices present; cannot "
                            f"allocate unhealthy devices {devices[0]}, which is unexpected")
                continue
            verdict = self.fits(p, alloc, used, count)
            if verdict is not None:
                self.reject(p, *verdict)
                continue
            if not self.admitted(p) or self.decided.get(p["metadata"]["uid"]) == "unprepared":
                self.start(p)
            for k, v in req.items():
                used[k] = used.get(k, 0) + v
            count += 1
        self.restarted[node_name] = token
        patch = {"metadata": {"annotations": {RESTARTED: token}}}
        self.api.request("PATCH", f"/api/v1/nodes/{node_name}", patch,
                         "application/strategic-merge-patch+json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    args = ap.parse_args()
    api = Api(args.server, args.ca, args.cert, args.key)
    events = queue.Queue()
    Watcher(api, "node", "/api/v1/nodes", events).start()
    Watcher(api, "pod", "/api/v1/pods", events).start()
    Watcher(api, "claim", "/apis/resource.k8s.io/v1/resourceclaims", events).start()
    admission = Admission(api)
    synced, retry = set(), set()
    log("kubelet admission started")
    while True:
        dirty = set()
        try:
            item = events.get(timeout=1)
        except queue.Empty:
            dirty, retry = retry, set()  # nodes whose last decision failed to be written
            item = None
        while item is not None:
            kind, event, obj = item
            dirty |= admission.apply(kind, event, obj)
            if event == "SYNC":
                if synced != ALL_KINDS and (synced | {kind}) == ALL_KINDS:
                    log(f"synced: {len(admission.nodes)} nodes, "
                        f"{sum(len(p) for p in admission.by_node.values())} bound pods")
                synced.add(kind)
            try:
                item = events.get_nowait()
            except queue.Empty:
                item = None
        if synced != ALL_KINDS:
            continue  # decide only on a whole picture
        for node in sorted(dirty):
            try:
                admission.reconcile(node)
            except Exception as e:  # an apiserver restart mid-write: retried in 1 s
                log(f"node {node}: {e!r}")
                retry.add(node)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
