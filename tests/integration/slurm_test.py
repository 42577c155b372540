#!/usr/bin/env python3
"""murmur under a real Slurm controller (ctest `slurm_controller`; root, Debian's slurm-wlm).

  python3 tests/integration/slurm_test.py build/murmur

Starts munged, slurmctld and slurmd on this machine with a configuration of its own (one node,
4 CPUs, loopback ports it picked, state in a temporary folder; nothing of the machine's own Slurm
or munge configuration is read or changed), then submits ops/slurm/murmur.sbatch:
  1. 4 tasks, CURVE with a key from `murmur keygen`: every task trains its shard and the job
     ends on one model within a point of `murmur local --nodes 4` with the same settings (run
     here too; both printed as one table); and the same job as one srun step (--one-step);
  2. 4 tasks, one of them cancelled mid-run with `scancel JOB.STEP`: the others mark it dead,
     finish without it on one model, and the job completes (summary: cancelled, not failed);
  3. 3 tasks of a library program (--exec, tests/python/tiny_program.py) with a straggler
     injected into one task: every program ends on the averaged model, the injection slept in
     that task only;
  4. refusals: the script outside a job, and a --straggle naming a node the job does not have
     (the job fails with the reason, before any task starts).
Everything it started is stopped and its folder removed, pass or fail. Without root or without
the packages it prints why and exits 77 (ctest: skipped).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from harness import free_ports, poll_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SBATCH = os.path.join(ROOT, "ops", "slurm", "murmur.sbatch")
TOOLS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "scancel", "squeue",
         "scontrol", "sinfo")
JOB_DEADLINE_S = 240


def log(msg):
    print(msg, flush=True)


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def wait_for(what, cond, deadline_s=60, every=0.2):
    return poll_for(what, cond, deadline_s, every)


class Slurm:
    """munged + slurmctld + slurmd of this test's own, in `tmp`."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(tmp, "slurm.conf"))
        for var in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[var]  # a job of the machine's own Slurm around this test is not ours

    def run(self, *args, check=True, timeout=60):
        r = subprocess.run(args, text=True, capture_output=True, timeout=timeout, env=self.env)
        if check and r.returncode != 0:
            fail(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        return r

    def start(self):
        t = self.tmp
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(t, d), mode=0o700, exist_ok=True)
        key = os.path.join(t, "munge", "munge.key")
        self.run("mungekey", "--create", f"--keyfile={key}")
        self.munge_socket = os.path.join(t, "munge", "munge.sock")
        self.run("munged", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
                 f"--pid-file={t}/munge/munged.pid", f"--log-file={t}/munge/munged.log",
                 f"--seed-file={t}/munge/munged.seed")
        host = socket.gethostname().split(".")[0]
        ctld_port, slurmd_port = free_ports(2)
        conf = f"""ClusterName=murmurtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
NodeName={host} NodeAddr=127.0.0.1 NodeHostname={host} CPUs=4 State=UNKNOWN
PartitionName=murmur Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.env["SLURM_CONF"], "w") as f:
            f.write(conf)
        # In the foreground (-D), so that they are this test's children and stop with it.
        for daemon in ("slurmctld", "slurmd"):
            self.procs.append(subprocess.Popen(
                [daemon, "-D", "-f", self.env["SLURM_CONF"]], env=self.env,
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(t, "log", daemon + ".err"), "w")))
        wait_for("the node idle in sinfo", lambda: self._idle(), deadline_s=60)
        log(f"slurm: slurmctld :{ctld_port}, slurmd :{slurmd_port}, node {host} with 4 CPUs idle")

    def _idle(self):
        for p in self.procs:
            if p.poll() is not None:
                fail(f"{p.args[0]} exited {p.returncode}: " + self.logs())
        r = self.run("sinfo", "-h", "-o", "%T", check=False)
        return r.stdout.strip() == "idle", r.stdout.strip() or r.stderr.strip()

    def logs(self):
        out = []
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.err", "slurmd.err"):
            try:
                out.append(f"--- {name}\n" + open(os.path.join(self.tmp, "log", name)).read()[-1500:])
            except OSError:
                pass
        return "\n".join(out)

    def submit(self, *args):
        r = self.run("sbatch", "--parsable", *args)
        return r.stdout.strip().split(";")[0]

    def job(self, job_id):
        r = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        return dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)

    def wait_job(self, job_id, deadline_s=JOB_DEADLINE_S, every=0.5):
        def ended():
            state = self.job(job_id).get("JobState", "?")
            return state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"), state
        return wait_for(f"job {job_id} to end", ended, deadline_s=deadline_s, every=every)

    def steps(self, job_id):
        r = self.run("squeue", "-h", "-s", "-j", job_id, "-o", "%i %j", check=False)
        return dict(reversed(line.split(None, 1)) for line in r.stdout.splitlines() if " " in line)

    def stop(self):
        self.run("scancel", "--full", "--user=root", check=False, timeout=20)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        pid_file = os.path.join(self.tmp, "munge", "munged.pid")
        if os.path.exists(pid_file):
            try:
                os.kill(int(open(pid_file).read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass


def final_reports(job_dir):
    out = {}
    for name in sorted(os.listdir(os.path.join(job_dir, "reports"))):
        for line in open(os.path.join(job_dir, "reports", name)):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if obj.get("kind") == "final":
                out[int(name.split("-")[1].split(".")[0])] = obj
    return out


def read_summary(job_dir, output):
    path = os.path.join(job_dir, "summary.json")
    if not os.path.exists(path):
        fail(f"no summary.json in {job_dir}; the job printed:\n{output}")
    return json.load(open(path))


def job_output(path):
    try:
        return open(path).read()
    except OSError:
        return "(no output)"


def task_log_tails(run_dir, lines=25):
    """The end of every task's log in `run_dir`, for a failure's reason."""
    out = []
    logs = os.path.join(run_dir, "logs")
    for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
        tail = open(os.path.join(logs, name), errors="replace").read().splitlines()[-lines:]
        out.append(f"--- {name}\n" + "\n".join(tail))
    return "\n".join(out)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    murmur = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        log("SKIPPED: starts slurmctld, slurmd and munged of its own, which needs root")
        return 77
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        log(f"SKIPPED: {', '.join(missing)} not installed (ops/install-deps.sh installs "
            "slurmctld, slurmd, slurm-client and munge)")
        return 77
    tmp = tempfile.mkdtemp(prefix="murmur-slurm-test-")
    os.chmod(tmp, 0o755)
    slurm = Slurm(tmp)
    try:
        slurm.start()
        key = os.path.join(tmp, "cluster.key")
        subprocess.run([murmur, "keygen", "--out", key], check=True, capture_output=True)
        env_bin = dict(slurm.env, MURMUR_BIN=murmur)
        slurm.env = env_bin

        # 4. Refusals first (cheap): outside a job, and a straggler the job does not have.
        r = subprocess.run(["bash", SBATCH, "--plaintext"], capture_output=True, text=True,
                           env={k: v for k, v in env_bin.items() if not k.startswith("SLURM_J")})
        if r.returncode != 2 or "not inside a Slurm job" not in r.stderr:
            fail(f"outside a job: exit {r.returncode}, {r.stderr.strip()}")
        log("ok   outside a job: exit 2, " + r.stderr.strip())
        out = os.path.join(tmp, "bad.out")
        job = slurm.submit("--ntasks=2", f"--output={out}", SBATCH, "--plaintext",
                           "--dir", os.path.join(tmp, "bad"), "--straggle", "node=5,slowdown=4")
        state = slurm.wait_job(job)
        text = job_output(out)
        if state != "FAILED" or "node 5 is not in [1, 2]" not in text or \
                os.path.exists(os.path.join(tmp, "bad", "tasks.tsv")):
            fail(f"a straggler on node 5 of 2: job {state}, output:\n{text}")
        log(f"ok   --straggle node=5 on 2 tasks: job {state} before any task, " + text.strip())

        # 1. The main job's settings under Slurm, against murmur local.
        out = os.path.join(tmp, "main.out")
        main_dir = os.path.join(tmp, "main")
        t0 = time.monotonic()
        job = slurm.submit("--ntasks=4", f"--output={out}", SBATCH, "--cluster-key-file", key,
                           "--dir", main_dir, "--", "--epochs", "3")
        state = slurm.wait_job(job, every=0.1)
        job_wall = time.monotonic() - t0
        text = job_output(out)
        log(text.rstrip())
        summary = read_summary(main_dir, text)
        if state != "COMPLETED" or not summary["one_model"] or summary["finished"] != 4:
            fail(f"the 4-task job: {state}, summary {json.dumps(summary)[:1500]}\n" +
                 task_log_tails(main_dir))
        t0 = time.monotonic()
        r = subprocess.run([murmur, "local", "--nodes", "4", "--epochs", "3", "--json",
                            "--progress", "none"], capture_output=True, text=True, timeout=300)
        local_wall = time.monotonic() - t0
        if r.returncode != 0:
            fail(f"murmur local: exit {r.returncode}: {r.stderr[-2000:]}")
        local = json.loads(r.stdout.strip().splitlines()[-1])
        # Wall: the whole command (sbatch until Slurm says COMPLETED; murmur local until it exits),
        # and the tasks' own span (first start to last end: the job's script, local's report).
        rows = [("run", "tasks", "accuracy", "MB sent", "command s", "tasks s"),
                ("slurm (sbatch, CURVE)", "4", f"{summary['cluster_accuracy']:.4f}",
                 f"{summary['bytes_sent_total'] / 1e6:.1f}", f"{job_wall:.1f}",
                 f"{summary['wall_s']:.1f}"),
                ("murmur local", str(local["nodes"]), f"{local['cluster_accuracy']:.4f}",
                 f"{local['bytes_sent_total'] / 1e6:.1f}", f"{local_wall:.1f}",
                 f"{local.get('wall_s', float('nan')):.1f}")]
        for row in rows:
            log("  ".join(c.ljust(22 if i == 0 else 9) for i, c in enumerate(row)))
        if abs(summary["cluster_accuracy"] - local["cluster_accuracy"]) > 0.01:
            fail("the Slurm job's model is more than a point from murmur local's")
        targets = json.load(open(os.path.join(main_dir, "prometheus-targets.json")))
        admins = sorted(t["targets"][0] for t in targets)
        if len(admins) != 4 or len(set(admins)) != 4 or \
                sorted(int(t["labels"]["node"]) for t in targets) != [1, 2, 3, 4]:
            fail(f"prometheus-targets.json: {targets}")
        log(f"ok   4 tasks on one model within a point of murmur local; targets {admins}")
        main_accuracy = summary["cluster_accuracy"]

        # 2. One task cancelled mid-run (its own step).
        out = os.path.join(tmp, "cancel.out")
        cancel_dir = os.path.join(tmp, "cancel")
        job = slurm.submit("--ntasks=4", f"--output={out}", SBATCH, "--cluster-key-file", key,
                           "--dir", cancel_dir, "--", "--epochs", "12")

        def training():
            steps = slurm.steps(job)
            try:
                lines = open(os.path.join(cancel_dir, "reports", "node-3.jsonl")).read().splitlines()
                step = json.loads(lines[-2]).get("step", 0) if len(lines) > 1 else 0
            except (OSError, ValueError):
                step = 0
            return "murmur-task-2" in steps and step >= 200, (steps, step)
        steps, step = wait_for("task 2 training (200 steps)", training, deadline_s=120)
        slurm.run("scancel", steps["murmur-task-2"])
        log(f"scancel {steps['murmur-task-2']} (task 2, node 3) at its step {step}")
        state = slurm.wait_job(job)
        text = job_output(out)
        log(text.rstrip())
        summary = read_summary(cancel_dir, text)
        survivors = [t for t in summary["per_task"] if t["task"] != 2]
        if state != "COMPLETED" or summary["cancelled"] != [2] or summary["failed"] or \
                not summary["one_model"] or any(t["contributors"] != 3 for t in survivors):
            fail(f"the cancelled-task job: {state}, summary {json.dumps(summary)[:2000]}")
        for t in survivors:
            node_log = open(os.path.join(cancel_dir, "logs", f"task-{t['task']}.log")).read()
            if "member 3 dead" not in node_log and "member 3 left" not in node_log:
                fail(f"task {t['task']} never marked node 3 dead or gone")
        log("ok   task 2 cancelled: the other 3 marked it dead and ended on one model "
            f"({summary['cluster_accuracy']:.4f}), the job COMPLETED")

        # 1b. The same job as one srun step of 4 tasks (--one-step), on the same model.
        out = os.path.join(tmp, "one-step.out")
        one_dir = os.path.join(tmp, "one-step")
        job = slurm.submit("--ntasks=4", f"--output={out}", SBATCH, "--cluster-key-file", key,
                           "--one-step", "--dir", one_dir, "--", "--epochs", "3")
        state = slurm.wait_job(job)
        text = job_output(out)
        log(text.rstrip())
        one = read_summary(one_dir, text)
        if state != "COMPLETED" or not one["one_model"] or one["finished"] != 4 or \
                abs(one["cluster_accuracy"] - main_accuracy) > 0.01:
            fail(f"--one-step: {state}, summary {json.dumps(one)[:1500]}")
        log(f"ok   --one-step: 4 tasks of one srun step on one model ({one['cluster_accuracy']:.4f})")

        # 3. A library program per task, node 2 a straggler.
        module = os.path.join(os.path.dirname(murmur), "python", "murmur")
        if not os.path.isdir(module):
            log(f"SKIPPED part 3: no Python module at {module} (pybind11 not found at build)")
        else:
            out = os.path.join(tmp, "exec.out")
            exec_dir = os.path.join(tmp, "exec")
            program = f"/usr/bin/python3 {os.path.join(ROOT, 'tests', 'python', 'tiny_program.py')}"
            job = slurm.submit("--ntasks=3", f"--output={out}", SBATCH, "--plaintext",
                               "--dir", exec_dir, "--exec", program,
                               "--straggle", "node=2,slowdown=3", "--", "--epochs", "4")
            state = slurm.wait_job(job)
            text = job_output(out)
            log(text.rstrip())
            summary = read_summary(exec_dir, text)
            finals = final_reports(exec_dir)
            results = []
            for task in range(3):
                lines = [l for l in open(os.path.join(exec_dir, "logs", f"task-{task}.log"))
                         if l.startswith("{")]
                results.append(json.loads(lines[-1]) if lines else None)
            injected = {k: v["phases"]["injected_s"] for k, v in finals.items()}
            if state != "COMPLETED" or not summary["one_model"] or \
                    any(r is None or r["finish"] != "averaged" for r in results) or \
                    not injected.get(2, 0) > 0 or injected.get(1) or injected.get(3):
                fail(f"the --exec job: {state}, programs {results}, injected {injected}, "
                     f"summary {json.dumps(summary)[:1500]}")
            log(f"ok   --exec: 3 programs on the averaged model ({summary['cluster_accuracy']}), "
                f"injected sleep per node {injected}")
    except BaseException:
        log(slurm.logs())
        raise
    finally:
        slurm.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
