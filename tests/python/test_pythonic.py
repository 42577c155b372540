"""The package as a Python user meets it: a clean namespace, its version, errors in keyword
names, a lone peer that starts at once, GossipOptimizer's rate taken from the wrapped
optimizer, murmur.torch.shard, state_dict, and `python -m murmur.run`."""

import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import murmur

HERE = os.path.dirname(os.path.abspath(__file__))
FAST = dict(plaintext=True, log_level="error", probe_interval_ms=100, probe_timeout_ms=40,
            finish_wait_s=5)


def test_the_namespace_holds_murmurs_names_only_and_the_binarys_version():
    public = {n for n in dir(murmur) if not n.startswith("_")} - {"torch"}
    assert public == {"Error", "Peer", "Progress", "Turn", "binary", "config_text", "known_keys"}
    out = subprocess.run([murmur.binary(), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.split()[:2] == ["murmur", murmur.__version__], out


def test_errors_name_keys_as_python_keywords():
    x = np.zeros(16, dtype=np.float32)
    with pytest.raises(ValueError) as e:
        murmur.Peer(x, epochs=1, epoch_samples=64)  # neither a key file nor plaintext
    text = str(e.value)
    assert "cluster_key_file=" in text and "plaintext=True" in text, text
    assert "--cluster-key-file" not in text and "--plaintext" not in text, text
    # A command to run stays as the command line has it.
    assert "`murmur keygen --out FILE`" in text, text
    assert murmur._peer.pythonic("seeds: --seeds and --no-such-key") == \
        "seeds: seeds=... and --no-such-key"


def test_a_lone_peer_without_seeds_starts_at_once():
    x = np.zeros(16, dtype=np.float32)
    peer = murmur.Peer(x, epochs=1, epoch_samples=64, **FAST)
    started = time.perf_counter()
    turn = peer.next()
    waited = time.perf_counter() - started
    assert turn.step and waited < 1.0, waited
    while turn.step:
        peer.done(0.0, 8)
        turn = peer.next()
    result = peer.finish()
    assert result.samples >= 64 and "Progress(step=" in repr(result)


def test_gossip_optimizer_takes_its_rate_from_the_wrapped_optimizer():
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    model = torch.nn.Linear(4, 1)
    inner = torch.optim.SGD(model.parameters(), lr=0.03)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=256, lr_schedule="cosine", **FAST)
    rates = []
    while opt.running:
        opt.zero_grad()
        model(torch.ones(8, 4)).sum().backward()
        opt.step(loss=0.0, samples=8)
        rates.append(inner.param_groups[0]["lr"])
    opt.finish()
    # murmur's cosine schedule over the optimizer's own 0.03: starts there, ends near 0.
    assert rates[0] == pytest.approx(0.03, rel=0.05) and rates[-1] < 0.01, rates
    assert max(rates) <= 0.03 * 1.0001
    # Without a schedule the optimizer keeps its rate; a torch LR scheduler steers it.
    model = torch.nn.Linear(4, 1)
    inner = torch.optim.SGD(model.parameters(), lr=0.02)
    scheduler = torch.optim.lr_scheduler.StepLR(inner, step_size=4, gamma=0.5)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    seen = []
    while opt.running:
        opt.zero_grad()
        model(torch.ones(8, 4)).sum().backward()
        opt.step(loss=0.0, samples=8)
        seen.append(inner.param_groups[0]["lr"])
        scheduler.step()
    opt.finish()
    assert seen[:5] == pytest.approx([0.02] * 4 + [0.01]), seen


def test_shard_splits_a_dataset_among_the_launchers_ranks(monkeypatch):
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    data = torch.utils.data.TensorDataset(torch.arange(10))
    parts = [[int(x) for (x,) in mt.shard(data, r, 3)] for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    monkeypatch.setenv("MURMUR_RANK", "1")
    monkeypatch.setenv("MURMUR_WORLD_SIZE", "2")
    assert [int(x) for (x,) in mt.shard(data)] == [1, 3, 5, 7, 9]
    with pytest.raises(ValueError, match="rank"):
        mt.shard(data, 2, 2)


def test_state_dict_round_trips_the_model_and_the_optimizer():
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    torch.manual_seed(3)
    print("seed 3")
    model = torch.nn.Linear(4, 2)
    opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                             epochs=1, epoch_samples=64, **FAST)
    saved = None
    while opt.running:
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).sum().backward()
        opt.step(loss=0.0, samples=8)
        if saved is None and opt.progress().step >= 3:  # mid-run: the momentum is there
            saved = opt.state_dict()
            model_state = {k: v.clone() for k, v in model.state_dict().items()}
            at = [p.detach().clone() for p in model.parameters()]
    opt.finish()
    assert saved["murmur"]["step"] >= 3
    # As PyTorch checkpoints are written: the model's state_dict beside the optimizer's.
    buffer = io.BytesIO()
    torch.save({"model": model_state, "optimizer": saved}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer)
    other = torch.nn.Linear(4, 2)
    inner = torch.optim.SGD(other.parameters(), lr=0.1, momentum=0.9)
    again = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    other.load_state_dict(checkpoint["model"])  # into the buffer murmur mixes, in place
    again.load_state_dict(checkpoint["optimizer"])
    for p, q in zip(at, other.parameters()):
        assert torch.equal(p, q)
    assert torch.equal(again.flat, torch.cat([p.reshape(-1) for p in at]))
    momenta = [s["momentum_buffer"] for s in inner.state.values()]
    assert len(momenta) == 2 and all(m is not None for m in momenta)
    # The flat-buffer form of earlier versions still loads, and a wrong size is refused.
    again.load_state_dict({"model": again.flat.clone(), "optimizer": saved})
    with pytest.raises(ValueError, match="model of"):
        again.load_state_dict({"model": torch.zeros(3), "optimizer": saved})
    again.stop()
    again.finish()


def test_help_reads_well():
    pytest.importorskip("torch")
    import murmur.torch as mt

    doc = mt.GossipOptimizer.__doc__
    for key in ("epochs (float)", "seeds (str", "lr_schedule", "expect_members (int)"):
        assert key in doc, key
    assert "**keys" in doc


def run_launcher(*args, env=None):
    return subprocess.run([sys.executable, "-m", "murmur.run", "--progress", "none", *args],
                          capture_output=True, text=True, timeout=240, env=env)


def test_the_launcher_starts_the_program_with_this_interpreter_and_relays_its_output():
    r = run_launcher("--nodes", "2", "--epochs", "4", "--json",
                     os.path.join(HERE, "tiny_program.py"))
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["ok"] and report["nodes"] == 2 and report["finish"] == ["averaged"] * 2
    # Each program's own output, prefixed by its node: it ran with this interpreter.
    for node in (1, 2):
        lines = [line for line in r.stderr.splitlines() if line.startswith(f"node {node} | {{")]
        assert lines, r.stderr[-2000:]
        assert json.loads(lines[-1].split(" | ", 1)[1])["python"] == sys.executable


def test_murmur_local_runs_python3_programs_with_the_modules_interpreter(tmp_path):
    # MURMUR_PYTHON (set by the package's `murmur` command) names the interpreter; a `python3`
    # first on PATH without murmur (here a fake one that fails) is not used.
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 97\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}", MURMUR_PYTHON=sys.executable)
    r = subprocess.run([murmur.binary(), "local", "--progress", "none", "--nodes", "2",
                        "--epochs", "2", "--json", "--exec",
                        f"python3 {os.path.join(HERE, 'tiny_program.py')}"],
                       capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"the program's python is {sys.executable} (MURMUR_PYTHON" in r.stderr, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1])["ok"]


def test_the_launcher_refuses_what_it_cannot_run():
    for nothing in ([], ["--"], ["-m"]):
        r = run_launcher("--nodes", "2", *nothing)
        assert r.returncode == 2 and "no program" in r.stderr, (nothing, r.stderr)
    r = run_launcher("--nodes", "2", "--exec", "x", "prog.py")
    assert r.returncode == 2 and "--exec" in r.stderr
    r = run_launcher("--nodes", "2", "--hidden", "32", os.path.join(HERE, "tiny_program.py"))
    assert r.returncode == 2 and "hidden: does not apply with --exec" in r.stderr
