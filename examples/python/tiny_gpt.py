#!/usr/bin/python3
"""A 2-layer character-level transformer trained on attnc's own documentation,
on the CPU, twice from the same seed: once with attnc.torch.MultiheadAttention,
once with torch.nn.MultiheadAttention. Prints both loss curves side by side and
how fast each step was; exits non-zero when the curves differ by more than 1e-3.

    PYTHONPATH=build/python python3 examples/python/tiny_gpt.py [--steps 100]
"""
import argparse
import glob
import os
import sys
import time

import torch

import attnc.torch


class Block(torch.nn.Module):
    def __init__(self, width, heads, attention):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.attn = attention(width, heads, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))

    def forward(self, x, causal):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab, context, width, heads, layers, attention):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(context, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads, attention) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, idx):
        L = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(L))
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        for block in self.blocks:
            x = block(x, causal)
        return self.head(self.norm(x))


def documentation_text():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    paths = sorted(glob.glob(os.path.join(root, "docs", "*.md"))) + [os.path.join(root, "README.md")]
    return "".join(open(p, encoding="utf-8").read() for p in paths)


def train(model, data, steps, batch, context, seed):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    losses, start = [], time.perf_counter()
    for _ in range(steps):
        at = torch.randint(0, len(data) - context - 1, (batch,), generator=g)
        x = torch.stack([data[i:i + context] for i in at])
        y = torch.stack([data[i + 1:i + context + 1] for i in at])
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    args = parser.parse_args()
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    text = documentation_text()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    shape = dict(vocab=len(chars), context=64, width=64, heads=4, layers=2)

    torch.manual_seed(0)
    reference = TinyGPT(**shape, attention=torch.nn.MultiheadAttention)
    ours = TinyGPT(**shape, attention=attnc.torch.MultiheadAttention)
    ours.load_state_dict(reference.state_dict())  # the same weights, key for key
    # attnc compiles each kernel on first use (into the disk cache): warm up
    # on a copy so the timing below is of training steps only.
    warm = TinyGPT(**shape, attention=attnc.torch.MultiheadAttention)
    train(warm, data, 1, 16, shape["context"], seed=1)

    theirs, torch_step = train(reference, data, args.steps, 16, shape["context"], seed=1)
    mine, attnc_step = train(ours, data, args.steps, 16, shape["context"], seed=1)
    print("%d characters of documentation, vocabulary %d; %d steps of 16 x %d tokens"
          % (len(text), len(chars), args.steps, shape["context"]))
    print("step  torch.nn.MultiheadAttention  attnc.torch.MultiheadAttention  |diff|")
    worst = 0.0
    for step, (a, b) in enumerate(zip(theirs, mine)):
        worst = max(worst, abs(a - b))
        if step % 10 == 0 or step == args.steps - 1:
            print("%4d  %27.4f  %30.4f  %.1e" % (step, a, b, abs(a - b)))
    print("per step: torch %.1f ms, attnc %.1f ms; largest |diff| %.1e (tolerance %.0e)"
          % (torch_step * 1e3, attnc_step * 1e3, worst, args.tolerance))
    if not worst <= args.tolerance or not mine[-1] < mine[0] - 0.5:
        print("FAILED: the curves differ, or the loss did not fall")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
