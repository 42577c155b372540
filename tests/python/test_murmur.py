"""The Python binding (python/): murmur.Peer and murmur.torch.GossipOptimizer over real sockets
on loopback. Run by ctest (`python_binding`) with PYTHONPATH=build/python, MURMUR_BINARY=build/murmur."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import murmur

FAST = dict(plaintext=True, log_level="error", probe_interval_ms=100, probe_timeout_ms=40,
            finish_wait_s=5)


def run(peer, step):
    """Drives `peer` to its end; step(x) does one local step on its array."""
    steps = 0
    while (turn := peer.next()).step:
        step(peer.params)
        peer.done(0.0, 8)
        steps += 1
    return steps


def test_bad_arguments_raise_value_error_naming_the_problem():
    x = np.zeros(16, dtype=np.float32)
    with pytest.raises(ValueError, match="unknown key 'sedes': did you mean 'seeds'"):
        murmur.Peer(x, sedes="127.0.0.1:1", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="'hidden' does not apply"):
        murmur.Peer(x, hidden=[32], time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="compress"):
        murmur.Peer(x, compress="zip", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="no budget"):
        murmur.Peer(x, **FAST)
    with pytest.raises(ValueError, match="float32"):
        murmur.Peer(np.zeros(16), time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="1-D"):
        murmur.Peer(np.zeros((4, 4), dtype=np.float32), time_limit_s=1, **FAST)
    assert "seeds" in murmur.known_keys() and "epoch_samples" in murmur.known_keys()


def test_an_unreachable_seed_raises_murmur_error():
    x = np.zeros(16, dtype=np.float32)
    peer = murmur.Peer(x, seeds="127.0.0.1:9", join_timeout_s=1, time_limit_s=60, **FAST)
    with pytest.raises(murmur.Error, match=r"no other member answered .*127\.0\.0\.1:9"):
        run(peer, lambda p: None)


def test_a_cluster_key_mismatch_raises_murmur_error(tmp_path):
    binary = os.environ["MURMUR_BINARY"]
    keys = []
    for name in ("a.key", "b.key"):
        path = tmp_path / name
        subprocess.run([binary, "keygen", "--out", str(path)], check=True, capture_output=True)
        keys.append(str(path))
    fast = dict(FAST, plaintext=False)
    a = murmur.Peer(np.zeros(16, dtype=np.float32), cluster_key_file=keys[0], time_limit_s=3,
                    **fast)
    b = murmur.Peer(np.zeros(16, dtype=np.float32), cluster_key_file=keys[1],
                    seeds=a.progress().endpoint, join_timeout_s=1, time_limit_s=30, **fast)
    with pytest.raises(murmur.Error, match="cluster key"):
        run(b, lambda p: None)
    run(a, lambda p: None)
    assert a.finish().live_members == 1


class FakeGpuArray:
    """Says it is GPU memory (__cuda_array_interface__) without being any."""

    def __init__(self, typestr="<f4", shape=(16,), readonly=False, strides=None):
        self.__cuda_array_interface__ = dict(typestr=typestr, shape=shape, strides=strides,
                                             data=(0x10000, readonly), version=3)


def test_a_gpu_array_is_checked_and_never_trained_on_the_cpu():
    with pytest.raises(ValueError, match="device='cuda:N'"):
        murmur.Peer(FakeGpuArray(), time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="float32"):
        murmur.Peer(FakeGpuArray(typestr="<f8"), device="cuda:0", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="1-D"):
        murmur.Peer(FakeGpuArray(shape=(4, 4)), device="cuda:0", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="writeable"):
        murmur.Peer(FakeGpuArray(readonly=True), device="cuda:0", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="contiguous"):
        murmur.Peer(FakeGpuArray(strides=(8,)), device="cuda:0", time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="device: auto"):
        murmur.Peer(np.zeros(16, dtype=np.float32), device="auto", time_limit_s=1, **FAST)
    # Not GPU memory at all: refused on a machine with a GPU (the pointer is checked), and where
    # there is none (or this build has no CUDA) refused as such, naming CUDA.
    with pytest.raises((ValueError, murmur.Error), match="CUDA|not memory of cuda:0|host memory"):
        murmur.Peer(FakeGpuArray(), device="cuda:0", time_limit_s=1, **FAST)


def train_two_torch_models_to_one(torch, device):
    import murmur.torch as mt

    seed = 7
    print(f"seed {seed}")
    torch.manual_seed(seed)
    w_true = torch.randn(8, 1)
    data = []
    for rank in range(2):
        g = torch.Generator().manual_seed(seed + rank)
        xs = torch.randn(512, 8, generator=g)
        data.append((xs, xs @ w_true))
    data = [(xs.to(device), ys.to(device)) for xs, ys in data]
    models = [torch.nn.Linear(8, 1).to(device) for _ in range(2)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())  # one initial model: same_init
    # About 128 steps each: an outer round every 16 of them (the default's 80 would leave a run
    # this short with one or two, and the checks below without gossip). With half as many steps the
    # fit ranged 0.001-0.05 and once, under load, ended above the bound.
    config = dict(FAST, compress="topk:0.25", epochs=8, epoch_samples=1024, expect_members=2,
                  same_init=True, outer="nesterov:every=16")
    first = mt.GossipOptimizer(torch.optim.SGD(models[0].parameters(), lr=0.05, momentum=0.9),
                               **config)
    second = [None]
    results = [None, None]
    losses = [[], []]

    def train(rank, opt):
        xs, ys = data[rank]
        i = 0
        while opt.running:
            xb, yb = xs[i % 512:i % 512 + 32], ys[i % 512:i % 512 + 32]
            i += 32
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(models[rank](xb), yb)
            loss.backward()
            losses[rank].append(loss.item())
            opt.step(loss=loss.item(), samples=len(yb))
        results[rank] = opt.finish()

    def start_second():
        second[0] = mt.GossipOptimizer(
            torch.optim.SGD(models[1].parameters(), lr=0.05, momentum=0.9),
            seeds=first.progress().endpoint, **config)
        train(1, second[0])

    t = threading.Thread(target=start_second)
    t.start()
    train(0, first)
    t.join()
    assert results[0].finish == "averaged" and results[1].finish == "averaged"
    assert results[0].finish_contributors == 2 and results[1].finish_contributors == 2
    assert results[0].bytes_sent > 0 and results[0].rounds > 0
    assert sum(r.samples for r in results) >= 8 * 1024
    # The parameters are views of the buffer murmur mixed into: after the finish both models
    # are the cluster's average, bit for bit, and fit the data.
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        assert torch.equal(p, q)
    assert losses[0][-1] < 0.1 * losses[0][0]
    with torch.no_grad():
        fit = torch.nn.functional.mse_loss(models[0](data[0][0]), data[0][1]).item()
    print(f"steps {len(losses[0])} and {len(losses[1])}, fit of the averaged model {fit:.2e}")
    assert fit < 0.05, fit
    return first


def test_gossip_optimizer_trains_two_torch_models_to_one():
    torch = pytest.importorskip("torch")
    train_two_torch_models_to_one(torch, "cpu")


def test_gossip_optimizer_trains_two_cuda_models_in_gpu_memory():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch: CUDA tensors not run")
    opt = train_two_torch_models_to_one(torch, "cuda:0")
    # The buffer murmur mixed into is the parameters' own GPU memory.
    assert opt.flat.is_cuda and opt.peer.params is opt.flat


def test_gossip_optimizer_refuses_what_it_cannot_train():
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    model = torch.nn.Linear(4, 1).double()
    with pytest.raises(ValueError, match="float64"):
        mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), time_limit_s=1, **FAST)
    meta = torch.nn.Linear(4, 1, device="meta")
    with pytest.raises(ValueError, match="CPU or CUDA"):
        mt.GossipOptimizer(torch.optim.SGD(meta.parameters(), lr=0.1), time_limit_s=1, **FAST)


def test_a_peer_survives_its_neighbour_being_killed():
    x = np.zeros(64, dtype=np.float32)
    peer = murmur.Peer(x, time_limit_s=4, **FAST)
    endpoint = peer.progress().endpoint
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import numpy as np, murmur
        x = np.zeros(64, dtype=np.float32)
        p = murmur.Peer(x, seeds={endpoint!r}, time_limit_s=60, plaintext=True, log_level="error",
                        probe_interval_ms=100, probe_timeout_ms=40)
        print("joined", flush=True)
        while p.next().step:
            x += 1.0
            p.done(0.0, 8)
        """)], stdout=subprocess.PIPE, text=True, env=os.environ)
    try:
        assert child.stdout.readline().strip() == "joined"
        killed = False
        steps = 0
        while (turn := peer.next()).step:
            peer.params[:] -= 0.01
            peer.done(0.0, 8)
            steps += 1
            if not killed and peer.progress().live_members >= 2 and peer.progress().rounds >= 5:
                child.send_signal(signal.SIGKILL)
                killed = True
        result = peer.finish()
    finally:
        child.kill()
        child.wait()
    assert killed, "the neighbour never joined"
    assert result.end_reason and steps > 0


def test_a_dimension_mismatch_between_processes_raises_murmur_error():
    a = murmur.Peer(np.zeros(16, dtype=np.float32), time_limit_s=4, expect_members=2, **FAST)
    b = murmur.Peer(np.zeros(32, dtype=np.float32), time_limit_s=4, expect_members=2,
                    seeds=a.progress().endpoint, **FAST)
    errors = []

    def drive(peer):
        try:
            run(peer, lambda p: None)
        except murmur.Error as e:
            errors.append(str(e))

    t = threading.Thread(target=drive, args=(b,))
    t.start()
    drive(a)
    t.join()
    # The first to count 16 refusals fails and leaves; the other may then be alone.
    assert errors, "neither process noticed the other's model size"
    assert all("another size" in e and "same model" in e for e in errors), errors


def test_sigterm_stops_the_live_peers_and_then_terminates_as_by_default(tmp_path):
    # Under murmur local --exec (MURMUR_PEER_CONFIG set) SIGTERM stops a live peer's run; once no
    # peer is alive it must terminate the process again, not be swallowed.
    launcher = tmp_path / "node-1.toml"
    launcher.write_text("")  # the launcher gave no keys
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import gc, os, signal, numpy as np, murmur
        x = np.zeros(16, dtype=np.float32)
        p = murmur.Peer(x, time_limit_s=60, plaintext=True, log_level="error")
        steps = 0
        while p.next().step:
            p.done(0.0, 8)
            steps += 1
            if steps == 5:
                os.kill(os.getpid(), signal.SIGTERM)
        print("ended", p.finish().end_reason, flush=True)
        del p
        gc.collect()
        os.kill(os.getpid(), signal.SIGTERM)
        print("survived SIGTERM", flush=True)
        """)], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, MURMUR_PEER_CONFIG=str(launcher)))
    assert "ended stopped" in child.stdout, child.stdout + child.stderr[-2000:]
    assert "survived" not in child.stdout
    assert child.returncode == -signal.SIGTERM, child.returncode


def lone(tmp_path, **keys):
    """A peer that trains alone at once, checkpointing into tmp_path as node 11."""
    return dict(FAST, id=11, expect_members=1, checkpoint_dir=str(tmp_path), **keys)


def test_a_restarted_torch_process_resumes_its_optimizer_from_the_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    torch.manual_seed(0)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    model = torch.nn.Linear(8, 1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt = mt.GossipOptimizer(sgd, **lone(tmp_path, epochs=100, epoch_samples=256,
                                         checkpoint_every=4))
    steps = 0
    while opt.running:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[:8]), y[:8])
        loss.backward()
        opt.step(loss=loss.item(), samples=8)
        steps += 1
        if steps == 30:
            opt.stop()  # as SIGTERM stops a node: its own model, no finish, a checkpoint
            # (the step already asked for still runs)
    assert opt.finish().end_reason == "stopped"
    params = [p.detach().clone() for p in model.parameters()]
    momentum = [sgd.state[p]["momentum_buffer"].clone() for p in model.parameters()]
    assert (tmp_path / "checkpoint.mck").exists()

    # Another process's start: another initial model, an empty optimizer; the same node and dir.
    torch.manual_seed(1)
    model2 = torch.nn.Linear(8, 1)
    sgd2 = torch.optim.SGD(model2.parameters(), lr=0.05, momentum=0.9)
    opt2 = mt.GossipOptimizer(sgd2, **lone(tmp_path, epochs=100, epoch_samples=256))
    for p, saved in zip(model2.parameters(), params):
        assert torch.equal(p, saved)
    for p, saved in zip(model2.parameters(), momentum):
        assert torch.equal(sgd2.state[p]["momentum_buffer"], saved)
    assert opt2.running
    assert opt2.progress().local_steps == steps
    opt2.stop()
    opt2.finish()


def test_the_consensus_finish_drops_the_wrapped_optimizers_momentum():
    torch = pytest.importorskip("torch")
    import murmur.torch as mt

    model = torch.nn.Linear(8, 1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt = mt.GossipOptimizer(sgd, epochs=1, epoch_samples=64, expect_members=1, **FAST)
    x, y = torch.randn(8, 8), torch.randn(8, 1)
    momentum = []
    while opt.running:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        momentum.append(bool(sgd.state))
        opt.step(samples=8)
    assert all(momentum[1:]) and len(momentum) == 8, momentum
    assert opt.finish().finish == "averaged"
    assert not sgd.state, "the adopted average has no momentum of its own"


def test_checkpoint_callbacks_are_checked_and_their_errors_raised(tmp_path):
    x = np.zeros(16, dtype=np.float32)
    with pytest.raises(ValueError, match="together"):
        murmur.Peer(x, save_state=lambda: {}, time_limit_s=1, **FAST)
    with pytest.raises(ValueError, match="checkpoint_dir"):
        murmur.Peer(x, checkpoint_dir=str(tmp_path), time_limit_s=1, **FAST)
    peer = murmur.Peer(x, save_state=lambda: {"lr": 0.1}, restore_state=lambda s: None,
                       **lone(tmp_path, epochs=1, epoch_samples=64, checkpoint_every=1))
    with pytest.raises(murmur.Error, match="'lr' is a float"):
        run(peer, lambda a: None)
    peer.stop()
