"""DistributedDataParallel over attnc attention (docs/python.md): two processes
(gloo, loopback only) each train on half of every batch and must end with the
weights of one process trained on the whole batch. DDP averages the gradients,
so with a mean loss the two runs take the same SGD steps."""
import os
import socket

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
import attnc.torch  # noqa: E402

STEPS, BATCH, L, E, H = 4, 8, 6, 16, 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.inp = torch.nn.Linear(4, E)
        self.attn = attnc.torch.MultiheadAttention(E, H, batch_first=True)
        self.out = torch.nn.Linear(E, 1)

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        a, _ = self.attn(h, h, h, attn_mask=causal, need_weights=False)
        return self.out(a + h).squeeze(-1)


def data(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(BATCH, L, 4, generator=g)
    return x, x.sum(-1).cumsum(-1) / 4


def train(model, rank=0, world=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    share = BATCH // world
    for step in range(STEPS):
        x, y = data(step)
        x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def worker(rank, world, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(Model())
        weights = train(ddp, rank, world)
        if rank == 0:
            torch.save({n[len("module."):]: w for n, w in weights.items()}, results)
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ddp_processes_end_with_the_weights_of_one_full_batch_process(tmp_path):
    results = str(tmp_path / "ddp.pt")
    torch.multiprocessing.spawn(worker, args=(2, free_port(), results), nprocs=2, join=True)
    distributed = torch.load(results)
    single = train(Model())
    assert list(distributed) == list(single)
    for name, w in single.items():
        err = (distributed[name] - w).abs().max().item()
        assert err <= 1e-5 * max(1.0, w.abs().max().item()), (name, err)
    # The run changed the weights: the comparison is not between two copies
    # of the initialisation.
    assert (single["attn.in_proj_weight"] - Model().attn.in_proj_weight).abs().max() > 1e-3
