"""PyTorch eager reference for the Prism trainer benchmark.

An honest, idiomatic nanoGPT-style decoder (pre-LayerNorm GPT-2 blocks, fused
qkv Linear, explicit masked softmax because torch 1.13 has no
scaled_dot_product_attention, tanh GELU, tied embeddings, AdamW with weight
decay on 2-D weights only, gradient clipping at 1.0) trained on random byte
batches of the same shape our C++ trainer uses. It reports tokens/s over the
timed steps so bench/train_bench can compare side by side.

Run with Debian's python3 (torch 1.13):
  /usr/bin/python3 bench/reference/train_reference.py --d-model 256 \
      --layers 8 --heads 8 --context 256 --vocab 256 --batch 16 --steps 10
"""

import argparse
import json
import math
import os
import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, context):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.n_head
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d_model, n_head, context):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, context)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, d_model, heads, context, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(context, d_model)
        self.h = nn.ModuleList([Block(d_model, h, context) for h in heads])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * len(heads)))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def parse_schedule(text):
    heads = []
    for block in text.split(","):
        h, n = block.strip().split("x")
        heads += [int(h)] * int(n)
    return heads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--schedule", default="", help="HEADSxLAYERS blocks")
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--shards", type=int, default=1,
                    help="ablation: split each batch over this many Python "
                         "threads (torch ops release the GIL), like the C++ "
                         "trainer's shard threads; 1 is plain nanoGPT")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    heads = (parse_schedule(args.schedule) if args.schedule
             else [args.heads] * args.layers)
    model = GPT(args.d_model, heads, args.context, args.vocab)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.95))

    params = list(model.parameters())

    def shard_grads(idx, out, i):
        torch.set_num_threads(args.threads)
        rows = idx.size(0)
        loss = model(idx[:, :-1], idx[:, 1:]) * (rows / args.batch)
        out[i] = torch.autograd.grad(loss, params)

    def step():
        idx = torch.randint(0, args.vocab, (args.batch, args.context + 1))
        opt.zero_grad(set_to_none=True)
        if args.shards == 1:
            loss = model(idx[:, :-1], idx[:, 1:])
            loss.backward()
        else:
            out = [None] * args.shards
            bounds = [args.batch * i // args.shards
                      for i in range(args.shards + 1)]
            workers = [threading.Thread(
                target=shard_grads,
                args=(idx[bounds[i]:bounds[i + 1]], out, i))
                for i in range(args.shards)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            for j, p in enumerate(params):
                p.grad = sum(o[j] for o in out)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(args.warmup):
        step()
    if args.profile:
        with torch.profiler.profile() as prof:
            step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    tokens = args.steps * args.batch * args.context
    print(json.dumps({"tokens_per_second": tokens / seconds,
                      "seconds": seconds, "steps": args.steps,
                      "threads": args.threads, "shards": args.shards,
                      "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "")}))


if __name__ == "__main__":
    main()
