#!/usr/bin/env python3
"""Runs ops/k8s/base's StatefulSet as podman containers, the way a kubelet would run its pods.

There is no Kubernetes here; this runner reads the manifests (statefulset.yaml, configmap.yaml,
service.yaml) and gives each pod what the kubelet would: the container's command and args (or
the image's CMD), its env with `valueFrom.fieldRef` and `$(VAR)` expanded, the ConfigMap and the
Secret mounted read-only with the Secret's defaultMode (group fsGroup and mode | 0440 when the
pod has an fsGroup, as the kubelet's volume ownership does; root and the bare mode otherwise),
runAsUser/runAsGroup/fsGroup, a read-only root filesystem with no tmpfs the pod did not ask for,
dropped capabilities, no privilege escalation, a hostname of the pod's name and DNS names
POD.SERVICE.NAMESPACE.svc.cluster.local and SERVICE.NAMESPACE.svc.cluster.local (the headless
Service: one name, every pod) on a podman network. It checks the containerPorts against the
image's EXPOSE, and `Probe` answers a readiness or liveness probe as the kubelet would send it.

  statefulset.py up --network NET --secrets DIR [--replicas N] [--prefix P] [--env K=V]...
  statefulset.py down [--prefix P]

The test tests/integration/container_test.py uses it to check that the manifests and the image
agree; `up` prints each pod's name, container and address as JSON.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BASE = os.path.join(REPO, "ops", "k8s", "base")
CONF = os.path.join(HERE, "containers.conf")


def podman(*args, check=True, capture=True):
    env = dict(os.environ, CONTAINERS_CONF=CONF)
    return subprocess.run(["podman", *args], check=check, text=True, env=env,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE if capture else None)


def load(name):
    with open(os.path.join(BASE, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def manifests():
    kustomization = load("kustomization.yaml")[0]
    namespace = kustomization.get("namespace", "default")
    sts = next(d for d in load("statefulset.yaml") if d["kind"] == "StatefulSet")
    configmaps = {d["metadata"]["name"]: d for d in load("configmap.yaml") if d["kind"] == "ConfigMap"}
    return namespace, sts, configmaps


def expand(value, env):
    """Kubernetes' $(VAR) expansion: only variables defined earlier; $$ escapes."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, value)


def field_ref(path, pod):
    if path == "metadata.name":
        return pod["name"]
    if path == "metadata.namespace":
        return pod["namespace"]
    m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
    if m:
        if m.group(1) not in pod["labels"]:
            raise ValueError(f"fieldRef {path}: the pod has no such label")
        return pod["labels"][m.group(1)]
    raise ValueError(f"fieldRef {path}: not modelled by this runner")


def pod_env(container, pod, extra):
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = field_ref(e["valueFrom"]["fieldRef"]["fieldPath"], pod)
        else:
            raise ValueError(f"env {e['name']}: valueFrom other than fieldRef is not modelled")
    env.update(extra)
    return env


def image_config(image):
    out = podman("image", "inspect", image).stdout
    return json.loads(out)[0]["Config"]


def check_ports(container, image):
    exposed = set(image_config(image).get("ExposedPorts", {}) or {})
    for p in container.get("ports", []):
        key = f"{p['containerPort']}/{p.get('protocol', 'TCP').lower()}"
        if key not in exposed:
            raise ValueError(f"containerPort {key} ({p.get('name')}) is not EXPOSEd by {image}: "
                             f"{sorted(exposed)}")


def volume_dirs(spec, configmaps, secrets_dir, work, fs_group):
    """Materialises configMap and secret volumes as the kubelet would; emptyDir as tmpfs."""
    out = {}
    for v in spec.get("volumes", []):
        d = os.path.join(work, v["name"])
        if "configMap" in v:
            os.makedirs(d, exist_ok=True)
            cm = configmaps[v["configMap"]["name"]]
            for key, text in cm.get("data", {}).items():
                path = os.path.join(d, key)
                with open(path, "w") as f:
                    f.write(text)
                os.chmod(path, v["configMap"].get("defaultMode", 0o644))
            out[v["name"]] = ("bind", d)
        elif "secret" in v:
            os.makedirs(d, exist_ok=True)
            mode = v["secret"].get("defaultMode", 0o644)
            for key in sorted(os.listdir(secrets_dir)):
                path = os.path.join(d, key)
                shutil.copyfile(os.path.join(secrets_dir, key), path)
                if fs_group is not None:
                    os.chown(path, 0, fs_group)
                    os.chmod(path, mode | 0o440)
                else:
                    os.chown(path, 0, 0)
                    os.chmod(path, mode)
            out[v["name"]] = ("bind", d)
        elif "emptyDir" in v:
            out[v["name"]] = ("tmpfs", None)
        else:
            raise ValueError(f"volume {v['name']}: kind not modelled by this runner")
    return out


def run_args(sts, namespace, configmaps, index, network, secrets_dir, work, prefix, extra_env):
    spec = sts["spec"]["template"]["spec"]
    container = spec["containers"][0]
    name = f"{sts['metadata']['name']}-{index}"
    service = sts["spec"]["serviceName"]
    labels = dict(sts["spec"]["template"]["metadata"].get("labels", {}))
    labels["apps.kubernetes.io/pod-index"] = str(index)
    labels["statefulset.kubernetes.io/pod-name"] = name
    pod = {"name": name, "namespace": namespace, "labels": labels}
    psc = spec.get("securityContext", {})
    csc = container.get("securityContext", {})
    user = csc.get("runAsUser", psc.get("runAsUser"))
    group = csc.get("runAsGroup", psc.get("runAsGroup"))
    fs_group = psc.get("fsGroup")
    args = ["run", "-d", "--name", f"{prefix}{name}", "--hostname", name,
            "--network", network,
            "--network-alias", f"{name}.{service}.{namespace}.svc.cluster.local",
            "--network-alias", f"{service}.{namespace}.svc.cluster.local",
            "--label", f"murmur.statefulset={prefix}",
            "--label", f"murmur.statefulset.work={work}"]
    if user is not None:
        args += ["--user", f"{user}:{group if group is not None else user}"]
    if psc.get("runAsNonRoot") and user in (None, 0):
        raise ValueError("runAsNonRoot without a non-zero runAsUser")
    if fs_group is not None:
        args += ["--group-add", str(fs_group)]
    if csc.get("readOnlyRootFilesystem"):
        args += ["--read-only", "--read-only-tmpfs=false"]
    for cap in csc.get("capabilities", {}).get("drop", []):
        args += ["--cap-drop", cap]
    if csc.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    volumes = volume_dirs(spec, configmaps, secrets_dir, os.path.join(work, name), fs_group)
    for m in container.get("volumeMounts", []):
        kind, src = volumes[m["name"]]
        if kind == "bind":
            args += ["--volume", f"{src}:{m['mountPath']}:{'ro' if m.get('readOnly') else 'rw'}"]
        else:
            args += ["--mount", f"type=tmpfs,destination={m['mountPath']},tmpfs-mode=1777"]
    for k, v in pod_env(container, pod, extra_env).items():
        args += ["--env", f"{k}={v}"]
    image = container["image"]
    check_ports(container, image)
    args.append(image)
    args += container.get("command", []) + container.get("args", [])
    return name, args


def ports_by_name(container):
    return {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}


def probe(sts, kind, address):
    """Sends the container's readinessProbe or livenessProbe (httpGet) to ADDRESS; the HTTP
    status, or None when the connection fails."""
    container = sts["spec"]["template"]["spec"]["containers"][0]
    p = container[kind]["httpGet"]
    port = p["port"]
    if isinstance(port, str):
        port = ports_by_name(container)[port]
    try:
        with urllib.request.urlopen(f"http://{address}:{port}{p['path']}", timeout=3) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def up(network, secrets_dir, replicas, prefix, extra_env):
    namespace, sts, configmaps = manifests()
    work = tempfile.mkdtemp(prefix="murmur-sts-")
    pods = []
    for i in range(replicas if replicas else sts["spec"]["replicas"]):
        name, args = run_args(sts, namespace, configmaps, i, network, secrets_dir, work, prefix,
                              extra_env)
        cid = podman(*args).stdout.strip()
        ip = podman("inspect", "--format",
                    "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", cid).stdout.strip()
        pods.append({"name": name, "container": f"{prefix}{name}", "ip": ip})
    return {"namespace": namespace, "work": work, "pods": pods}


def down(prefix):
    """Removes the pods' containers and the volume files `up` made for them."""
    ids = podman("ps", "-aq", "--filter", f"label=murmur.statefulset={prefix}").stdout.split()
    if ids:
        works = podman("inspect", "--format", '{{index .Config.Labels "murmur.statefulset.work"}}',
                       *ids, check=False).stdout.split()
        podman("rm", "-f", "-t", "2", *ids, check=False)
        for w in set(works):
            if os.path.basename(w).startswith("murmur-sts-"):
                shutil.rmtree(w, ignore_errors=True)
    return len(ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--network", required=True)
    u.add_argument("--secrets", required=True, help="directory with cluster.key and admin.token")
    u.add_argument("--replicas", type=int, default=0, help="default: the manifest's")
    u.add_argument("--prefix", default="sts-")
    u.add_argument("--env", action="append", default=[], help="KEY=VALUE added to every pod")
    d = sub.add_parser("down")
    d.add_argument("--prefix", default="sts-")
    a = ap.parse_args()
    if a.cmd == "up":
        extra = dict(kv.split("=", 1) for kv in a.env)
        print(json.dumps(up(a.network, a.secrets, a.replicas, a.prefix, extra), indent=1))
    else:
        print(f"removed {down(a.prefix)} containers")


if __name__ == "__main__":
    sys.exit(main())
