#!/usr/bin/env python3
"""Containers for real, end to end with podman (ctest `containers`, opt-in).

  MURMUR_CONTAINER_TESTS=1 ctest --test-dir build -R containers --output-on-failure
  MURMUR_CONTAINER_TESTS=1 python3 tests/integration/container_test.py build/murmur

With MURMUR_CONTAINER_CUDA=1 as well, docker/Dockerfile.cuda is built on stand-in bases
(docker/podman/images.sh cuda) and its image checked. Without MURMUR_CONTAINER_TESTS=1 it
prints why and exits 77 (ctest: skipped): it builds the
images (about ten minutes on 2 cores, the compile included), which does not fit the README test
command's budget. Needs root and `ops/install-deps.sh --containers`. In order:
  1. docker/podman/images.sh: base images if missing, murmur:cpu and murmur-prometheus:debian
     from the Dockerfiles; the image's size, user, `murmur --version`/`--help`, HEALTHCHECK.
  2. The reference: `murmur local --nodes 3` on this host, same epochs.
  3. docker/docker-compose.yml under podman-compose on a podman network this test creates with
     its own subnet: the three nodes find each other by service name and turn healthy (the
     health check run in each container), Prometheus in its container has all three targets
     up, `murmur ctl straggle` on node2's published admin port slows it and the others mark
     it (seen in Prometheus), every node exits 0 on the cluster model, within 1 point of the
     reference.
  4. ops/k8s/base's StatefulSet run as podman pods (docker/podman/statefulset.py): the
     manifest's env, mounts, user, read-only root and probes against the image; every pod
     turns ready and trains to the end.
Everything it made (containers, network, volume, files) is removed at the end, pass or fail.
"""

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "docker", "podman"))
import statefulset  # noqa: E402
from harness import poll_for  # noqa: E402

CONF = os.path.join(ROOT, "docker", "podman", "containers.conf")
ENV = dict(os.environ, CONTAINERS_CONF=CONF)
EPOCHS = 30
STEP_DEADLINE_S = 180


def log(msg):
    print(msg, flush=True)


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def sh(*args, check=True, timeout=600, env=None):
    r = subprocess.run(args, text=True, capture_output=True, timeout=timeout, env=env or ENV)
    if check and r.returncode != 0:
        fail(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def wait_for(what, cond, deadline_s=STEP_DEADLINE_S, every=0.5):
    return poll_for(what, cond, deadline_s, every)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def free_subnet():
    routes = subprocess.run(["ip", "-4", "route"], text=True, capture_output=True).stdout
    nets = sh("podman", "network", "ls", "--format", "{{range .Subnets}}{{.Subnet}} {{end}}").stdout
    for _ in range(50):
        prefix = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}."
        if prefix not in routes and prefix not in nets:
            return prefix + "0/24"
    fail("no free 10.x.y.0/24 subnet")


def http_json(url):
    with urllib.request.urlopen(url, timeout=3) as r:
        return json.load(r)


def prom_query(port, query):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        return http_json(url)["data"]["result"]
    except OSError as e:
        return f"unreachable ({e})"


def reports(logs):
    """The JSON report lines of a node's output (MURMUR_REPORT=json)."""
    return [json.loads(line) for line in logs.splitlines() if line.startswith("{")]


def final_report(logs):
    """The last `kind: final` report of a node's output."""
    finals = [r for r in reports(logs) if r.get("kind") == "final"]
    return finals[-1] if finals else None


def check_image(murmur):
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(ROOT, "docker", "podman", "images.sh")], text=True,
                       stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, timeout=3600)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        fail("docker/podman/images.sh failed")
    log(f"images built in {time.monotonic() - t0:.0f} s")
    size = int(sh("podman", "image", "inspect", "--format", "{{.Size}}", "murmur:cpu").stdout)
    log(f"murmur:cpu is {size / 1e6:.0f} MB")
    uid = sh("podman", "run", "--rm", "murmur:cpu", "id", "-u").stdout.strip()
    if uid != "10001":
        fail(f"the image runs as uid {uid}, not the non-root 10001")
    version = sh("podman", "run", "--rm", "murmur:cpu", "murmur", "--version").stdout.strip()
    host_version = sh(murmur, "--version").stdout.strip()
    # The same release; the suffix says which backends were built (the image has no CUDA).
    if version.split()[:2] != host_version.split()[:2]:
        fail(f"the image's murmur --version is '{version}', this build's '{host_version}'")
    helptext = sh("podman", "run", "--rm", "murmur:cpu", "murmur", "--help").stdout
    if "node" not in helptext or "local" not in helptext:
        fail(f"murmur --help in the image does not list its commands:\n{helptext}")
    image = json.loads(sh("podman", "image", "inspect", "murmur:cpu").stdout)[0]
    config = image["Config"]
    health = (image.get("Healthcheck") or config.get("Healthcheck") or {}).get("Test") or []
    if "health" not in health:
        fail(f"the image has no HEALTHCHECK running `murmur ctl health`: {health}")
    if config.get("Cmd") != ["murmur", "node"] or config.get("Entrypoint"):
        fail(f"the image should run `murmur node` by CMD with no ENTRYPOINT: {config}")
    log(f"ok: murmur:cpu ({size / 1e6:.0f} MB) runs as 10001: {version}; --help lists the "
        f"commands; HEALTHCHECK {health}")
    return size


def check_cuda_image():
    """docker/Dockerfile.cuda on the stand-in bases (MURMUR_CONTAINER_CUDA=1): it builds, the
    binary has the CUDA backend, trains on the CPU when told to, and without a GPU refuses
    --device cuda with exit 2 and the reason (never a silent CPU run)."""
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(ROOT, "docker", "podman", "images.sh"), "cuda"], text=True,
                       stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, timeout=3600)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        fail("docker/podman/images.sh cuda failed")
    version = sh("podman", "run", "--rm", "murmur:cuda", "murmur", "--version").stdout.strip()
    if "cuda" not in version:
        fail(f"murmur:cuda's murmur --version says '{version}'")
    train = sh("podman", "run", "--rm", "murmur:cuda", "murmur", "train", "--device", "cpu",
               "--epochs", "1", "--max-train-samples", "6000", "--json", "--progress", "none")
    acc = json.loads(train.stdout.strip().splitlines()[-1])["test_accuracy"]
    gpu = sh("podman", "run", "--rm", "murmur:cuda", "murmur", "train", "--device", "cuda",
             "--epochs", "1", check=False)
    has_gpu = os.path.exists("/dev/nvidia0")
    if not has_gpu and (gpu.returncode != 2 or "no CUDA device" not in gpu.stderr):
        fail(f"murmur:cuda without a GPU: --device cuda gave {gpu.returncode}: {gpu.stderr}")
    log(f"ok: murmur:cuda built in {time.monotonic() - t0:.0f} s: '{version}', trains on the "
        f"CPU ({acc:.4f} after 1 epoch of 6000 rows), --device cuda without a GPU: exit "
        f"{gpu.returncode} ({gpu.stderr.strip().splitlines()[-1][:120]})")


def reference(murmur, work):
    r = sh(murmur, "local", "--nodes", "3", "--epochs", str(EPOCHS), "--json", "--run-dir",
           os.path.join(work, "reference"), env=dict(os.environ), timeout=300)
    result = json.loads(r.stdout.strip().splitlines()[-1])
    acc = result["cluster_accuracy"]
    log(f"reference: murmur local --nodes 3 --epochs {EPOCHS}: cluster model {acc:.4f}")
    return acc


def run_compose(murmur, work, network, secrets, reference_acc):
    project = f"murmur-e2e-{os.getpid()}"
    p0, p1, p2, pp = free_ports(4)
    compose_env = dict(ENV, MURMUR_COMPOSE_PROJECT=project, NODE0_ADMIN_PORT=str(p0),
                       NODE1_ADMIN_PORT=str(p1), NODE2_ADMIN_PORT=str(p2),
                       PROMETHEUS_PORT=str(pp), MURMUR_EPOCHS=str(EPOCHS), MURMUR_REPORT="json")

    def compose(*args, check=True):
        return sh(os.path.join(ROOT, "docker", "podman", "compose.sh"), "-f", override, *args,
                  check=check, env=compose_env)
    override = os.path.join(work, "override.yml")
    with open(override, "w") as f:
        f.write(f"""networks:
  train: {{external: true, name: {network}}}
secrets:
  cluster_key: {{file: {secrets}/cluster.key}}
  admin_token: {{file: {secrets}/admin.token}}
""")
    nodes = [f"{project}_node{i}_1" for i in range(3)]
    try:
        t0 = time.monotonic()
        compose("up", "-d")
        log(f"compose up: {time.monotonic() - t0:.1f} s")
        running = sh("podman", "ps", "--format", "{{.Names}}",
                     "--filter", f"label=io.podman.compose.project={project}").stdout.split()
        if sorted(running) != sorted(nodes + [f"{project}_prometheus_1"]):
            fail(f"compose started {running}")
        if any("grafana" in n for n in running):
            fail("grafana should not start here")
        targets = f"127.0.0.1:{p0},127.0.0.1:{p1},127.0.0.1:{p2}"

        def joined():
            r = sh(murmur, "ctl", "health", "--targets", targets, check=False)
            return r.returncode == 0, (r.stdout + r.stderr).strip()[-300:]
        wait_for("the three nodes healthy on their published admin ports", joined)
        t_joined = time.monotonic() - t0
        for n in nodes:  # the HEALTHCHECK itself, run in the container as the engine runs it
            r = sh("podman", "healthcheck", "run", n, check=False)
            if r.returncode != 0:
                fail(f"podman healthcheck run {n}: {r.returncode} {r.stdout} {r.stderr}")
        def prom_healthy():
            r = sh("podman", "healthcheck", "run", f"{project}_prometheus_1", check=False)
            return r.returncode == 0, (r.stdout + r.stderr).strip()[-300:]
        wait_for("Prometheus' health check (GET /-/healthy in its container)", prom_healthy)
        log(f"ok: node0..2 joined by service name and healthy {t_joined:.1f} s after up "
            f"(the image's health check passes in each container, and Prometheus')")

        token = os.path.join(secrets, "admin.token")
        r = sh(murmur, "ctl", "straggle", "--target", f"127.0.0.1:{p2}", "--slowdown", "4",
               "--for", "30s", check=False)
        if r.returncode == 0:
            fail("murmur ctl straggle without the admin token was accepted")
        sh(murmur, "ctl", "straggle", "--token-file", token, "--target", f"127.0.0.1:{p2}",
           "--slowdown", "4", "--for", "8s")
        log("ok: murmur ctl straggle on node2's published admin port (refused without the token)")

        def up3():
            res = prom_query(pp, 'up{job="murmur"}')
            if isinstance(res, str):
                return False, res
            return sorted(x["metric"]["node"] for x in res if x["value"][1] == "1") == \
                ["0", "1", "2"], res
        wait_for("Prometheus in its container reporting node0..2 up", up3)
        log("ok: Prometheus (Debian's, in its container) reports all three targets up")

        def marked():
            res = prom_query(pp, 'murmur_stragglers_detected_total{node!="2"} > 0')
            if isinstance(res, str) or not res:
                alive = sh("podman", "ps", "-q", "--filter", f"name={nodes[0]}").stdout.strip()
                if not alive:
                    fail("the nodes finished before Prometheus saw node2 marked")
                return False, res
            return True, res
        res = wait_for("node0 or node1 marking node2 a straggler, seen by Prometheus", marked)
        log(f"ok: the straggler was marked by node(s) {sorted(x['metric']['node'] for x in res)} "
            "(murmur_stragglers_detected_total, via Prometheus)")

        accs = []
        for i, n in enumerate(nodes):
            code = sh("podman", "wait", n, timeout=300).stdout.strip()
            logs = sh("podman", "logs", n).stdout
            final = final_report(logs)
            # node2 is id 3: each of the others listed it among the peers it stopped waiting for.
            if i != 2 and not any(3 in (r.get("stragglers") or []) for r in reports(logs)):
                fail(f"{n} never marked node2 (id 3) a straggler")
            if code != "0" or final is None:
                fail(f"{n} exited {code} with final report {final}; its log ends:\n{logs[-2000:]}")
            if (final.get("finish") or {}).get("outcome") != "averaged":
                fail(f"{n} did not end on the cluster model: {final.get('finish')}")
            accs.append(final["accuracy"])
        log(f"compose cluster: cluster model {accs} after {time.monotonic() - t0:.1f} s; "
            f"reference {reference_acc:.4f}")
        if max(abs(a - reference_acc) for a in accs) > 0.01:
            fail(f"the compose cluster's accuracy {accs} is not within 1 point of "
                 f"murmur local --nodes 3 ({reference_acc:.4f})")
        log("ok: node0 and node1 each marked node2 (their reports); every compose node exited 0 "
            "on the cluster model, within 1 point of murmur local --nodes 3")
    finally:
        compose("down", "-v", check=False)
        left = sh("podman", "ps", "-aq", "--filter",
                  f"label=io.podman.compose.project={project}").stdout.split()
        vols = [v for v in sh("podman", "volume", "ls", "-q").stdout.split() if project in v]
        if left or vols:
            sh("podman", "rm", "-f", *left, check=False)
            sh("podman", "volume", "rm", "-f", *vols, check=False)
            fail(f"compose down left containers {left} and volumes {vols}")
    log("ok: compose down removed the containers and the Prometheus volume")


def run_statefulset(network, secrets):
    prefix = f"sts-{os.getpid()}-"
    replicas = 3
    namespace, sts, _ = statefulset.manifests()
    try:
        # The manifest's own values but for its size (replicas) and the run's length (its 3
        # epochs can end before every pod's readiness has been probed).
        out = statefulset.up(network, secrets, replicas, prefix, {
            "MURMUR_EXPECT_MEMBERS": str(replicas), "MURMUR_SHARD_COUNT": str(replicas),
            "MURMUR_EPOCHS": "10"})
        pods = out["pods"]
        log(f"statefulset: {[p['name'] for p in pods]} in namespace {namespace} at "
            f"{[p['ip'] for p in pods]}")
        for p in pods:
            def ready(p=p):
                live = sh("podman", "ps", "-q", "--filter", f"name={p['container']}").stdout
                if not live.strip():
                    logs = sh("podman", "logs", p["container"], check=False)
                    fail(f"pod {p['name']} exited before ready:\n{logs.stdout[-1500:]}"
                         f"{logs.stderr[-1500:]}")
                code = statefulset.probe(sts, "readinessProbe", p["ip"])
                return code == 200, code
            wait_for(f"pod {p['name']} ready (readinessProbe)", ready)
            live = statefulset.probe(sts, "livenessProbe", p["ip"])
            if live != 200:
                fail(f"pod {p['name']}: livenessProbe answered {live}")
        log("ok: every pod ready and live by the manifest's probes")
        for p in pods:
            code = sh("podman", "wait", p["container"], timeout=300).stdout.strip()
            logs = sh("podman", "logs", p["container"]).stdout + \
                sh("podman", "logs", p["container"]).stderr
            if code != "0":
                fail(f"pod {p['name']} exited {code}:\n{logs[-2000:]}")
            for bad in ("cannot read", "not written", "can be read by other users"):
                if bad in logs:
                    fail(f"pod {p['name']} logged '{bad}':\n{logs[-2000:]}")
        log("ok: every pod trained to the end and exited 0, reading its secrets as uid 10001 "
            "on a read-only root filesystem without a warning")
    finally:
        statefulset.down(prefix)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: container_test.py MURMUR")
    murmur = os.path.abspath(sys.argv[1])
    if os.environ.get("MURMUR_CONTAINER_TESTS") != "1":
        print("SKIP: container tests are opt-in (MURMUR_CONTAINER_TESTS=1): they build the "
              "images, about ten minutes on 2 cores")
        return 77
    if os.geteuid() != 0:
        fail("needs root (rootful podman)")
    for tool in ("podman", "podman-compose", "debootstrap", "runc"):
        if shutil.which(tool) is None:
            fail(f"{tool} is missing: run ops/install-deps.sh --containers")
    seed = int(os.environ.get("MURMUR_TEST_SEED", "1"))
    random.seed(seed)
    log(f"seed {seed}")
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="murmur-containers-")
    network = f"murmur-e2e-{os.getpid()}"
    try:
        check_image(murmur)
        if os.environ.get("MURMUR_CONTAINER_CUDA") == "1":
            check_cuda_image()
        acc = reference(murmur, work)
        secrets = os.path.join(work, "secrets")
        sh(os.path.join(ROOT, "docker", "make-secrets.sh"), secrets,
           env=dict(os.environ, MURMUR=murmur))
        subnet = free_subnet()
        sh("podman", "network", "create", "--subnet", subnet, network)
        log(f"network {network} ({subnet})")
        run_compose(murmur, work, network, secrets, acc)
        run_statefulset(network, secrets)
    finally:
        sh("podman", "network", "rm", "-f", network, check=False)
        shutil.rmtree(work, ignore_errors=True)
    if network in sh("podman", "network", "ls", "--format", "{{.Name}}").stdout.split():
        fail(f"network {network} was not removed")
    log(f"PASS: containers end to end in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
