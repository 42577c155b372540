"""GossipOptimizer as PyTorch code expects an optimizer to be: a torch.optim.Optimizer that LR
schedulers, gradient scalers, step hooks and checkpoint code take unchanged; finish() at any
time; shard() for streams and token runs. Each test runs a lone peer (no seeds) on loopback."""

import time
import warnings

import pytest

torch = pytest.importorskip("torch")
import murmur.torch as mt  # noqa: E402

FAST = dict(plaintext=True, log_level="error", probe_interval_ms=100, probe_timeout_ms=40,
            finish_wait_s=5)


def tiny(seed, opt_class=torch.optim.SGD, **opt_keys):
    torch.manual_seed(seed)
    print(f"seed {seed}")
    model = torch.nn.Linear(4, 1)
    return model, opt_class(model.parameters(), **opt_keys)


def one_step(model, opt, **step_keys):
    opt.zero_grad()
    loss = model(torch.ones(8, 4)).pow(2).mean()
    loss.backward()
    opt.step(**step_keys)
    return loss


def test_it_is_a_torch_optimizer_whose_groups_and_state_are_the_wrapped_ones():
    model, inner = tiny(1, lr=0.1, momentum=0.9)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    assert isinstance(opt, torch.optim.Optimizer)
    assert opt.param_groups is inner.param_groups and opt.defaults is inner.defaults
    one_step(model, opt, loss=0.5, samples=8)
    assert opt.state is inner.state and len(opt.state) == 2  # the momentum buffers
    assert "SGD" in repr(opt)
    with pytest.raises(ValueError, match="add the group to the wrapped optimizer"):
        opt.add_param_group({"params": [torch.zeros(2, requires_grad=True)]})
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    opt.stop()
    opt.finish()


def test_torch_lr_schedulers_steer_it_as_they_steer_the_wrapped_optimizer():
    model, inner = tiny(2, lr=0.02)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    seen = []
    while opt.running:
        one_step(model, opt, loss=0.0, samples=8)
        seen.append(inner.param_groups[0]["lr"])
        scheduler.step()
    opt.finish()
    assert seen[:6] == pytest.approx([0.02, 0.02, 0.01, 0.01, 0.005, 0.005]), seen
    # Cosine annealing over 8 steps, from Adadelta's own rate (the public example).
    model, inner = tiny(3, torch.optim.Adadelta, lr=1.0)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "scheduler.step() before optimizer.step()" warning
        while opt.running:
            one_step(model, opt, loss=0.0, samples=8)
            seen.append(inner.param_groups[0]["lr"])
            scheduler.step()
    opt.finish()
    assert seen[0] == pytest.approx(1.0) and seen[4] == pytest.approx(0.5), seen
    assert seen[7] < 0.05, seen


def test_a_gradient_scaler_skips_a_step_with_an_inf_and_murmur_counts_only_the_taken_ones():
    # torch.cuda.amp.GradScaler's contract (its step() unscales through param_groups and calls
    # optimizer.step only when no gradient is inf); on a machine without CUDA the real scaler
    # disables itself, so both it and the contract itself are run.
    model, inner = tiny(4, lr=0.01)
    opt = mt.GossipOptimizer(inner, time_limit_s=60, **FAST)
    scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
    opt.zero_grad()
    scaler.scale(model(torch.ones(8, 4)).sum()).backward()
    scaler.step(opt, loss=1.0, samples=8)
    scaler.update()
    assert opt.progress().local_steps == 1

    def scaled_step(scale, poison):
        opt.zero_grad()
        (model(torch.ones(8, 4)).sum() * scale).backward()
        if poison:
            next(model.parameters()).grad[0, 0] = float("inf")
        grads = [p.grad for g in opt.param_groups for p in g["params"] if p.grad is not None]
        if not all(torch.isfinite(g).all() for g in grads):
            return False  # skipped: optimizer.step is not called
        for g in grads:
            g.div_(scale)
        opt.step(loss=1.0, samples=8)
        return True

    before = [p.detach().clone() for p in model.parameters()]
    assert not scaled_step(1024.0, poison=True)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert scaled_step(1024.0, poison=False)
    assert opt.progress().local_steps == 2 and opt.progress().samples == 16
    opt.stop()
    opt.finish()


def test_step_hooks_run_around_every_step_until_removed():
    model, inner = tiny(5, lr=0.01)
    opt = mt.GossipOptimizer(inner, time_limit_s=60, samples_per_step=8, **FAST)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o.progress().local_steps)))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o.progress().local_steps)))
    one_step(model, opt)
    pre.remove()
    one_step(model, opt)
    assert calls == [("pre", 0), ("post", 1), ("post", 2)], calls
    assert opt.progress().samples == 16  # samples_per_step counted each step
    opt.stop()
    opt.finish()


def test_a_budget_in_epochs_needs_the_steps_samples():
    model, inner = tiny(6, lr=0.01)
    opt = mt.GossipOptimizer(inner, epochs=1, epoch_samples=64, **FAST)
    with pytest.raises(ValueError, match="samples=len"):
        one_step(model, opt)
    with pytest.raises(ValueError, match="samples_per_step"):
        mt.GossipOptimizer(tiny(8, lr=0.1)[1], samples_per_step=0, time_limit_s=1, **FAST)
    opt.stop()
    opt.finish()


def test_finish_before_the_budget_ends_the_training_said_once(capfd):
    # A program whose own loop ends first: finish() ends this peer's training at once, as a
    # spent budget does (the consensus finish), instead of draining an unspent budget step by
    # empty step.
    model, inner = tiny(7, torch.optim.Adadelta)
    opt = mt.GossipOptimizer(inner, epochs=10000, epoch_samples=64, **FAST)
    for _ in range(5):
        one_step(model, opt, loss=0.5, samples=8)
    started = time.perf_counter()
    with pytest.warns(RuntimeWarning, match="finish\\(\\) after 5 steps, before the run's end"):
        result = opt.finish()
    assert time.perf_counter() - started < 10
    assert result.end_reason == "program" and result.samples == 40, result
    assert result.finish == "averaged", result  # alone: the average of its one model
    assert not opt.running
    err = capfd.readouterr().err
    assert err.count("skipped") == 0, err[-2000:]


def test_shard_splits_streams_and_token_runs():
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

    assert list(mt.shard(Stream(), 1, 3)) == [1, 4, 7]
    with pytest.raises(ValueError, match="stream"):
        mt.shard(Stream(), 0, 2, contiguous=True)
    tokens = torch.arange(10)
    parts = [mt.shard(tokens, r, 3).tolist() for r in range(3)]
    assert parts == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert mt.shard(list(range(6)), 1, 2, contiguous=False) == [1, 3, 5]
    data = torch.utils.data.TensorDataset(torch.arange(6))
    assert [int(x) for (x,) in mt.shard(data, 1, 2, contiguous=True)] == [3, 4, 5]
