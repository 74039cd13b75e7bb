#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""torch-gloo: PyTorch's gloo backend between two or more processes, over
TCP, so also under rdmashare-run (Documentation/parameter-server.rst).

  torch-gloo.py allreduce --rank R --world W --master HOST:PORT [options]
  torch-gloo.py train --rank R --world W --master HOST:PORT [options]

allreduce: each rank contributes tensors of a few sizes (1 element to
--max-size bytes) whose sum is known, SUM-allreduces them --rounds times
and checks every element of the result exactly; it prints the bytes of
the tensors it allreduced.

train: ps-train's MLP (784-H-10, ReLU) on Fashion-MNIST, data parallel
with DistributedDataParallel: the same initial weights from the seed as
ps-train's (splitmix64), rank r on the samples i with i % W == r in
ps-train's order for each epoch, batch per rank, lr, the gradients
averaged over the ranks (ps-train's sync SGD applies lr / W times their
sum).  Rank 0 prints per epoch the training loss of its batches, the test
loss and accuracy and the epoch's seconds; at the end the FNV-1a hash of
the final weights.

Rendezvous with torch's TCPStore at --master (rank 0 listens there);
gloo's own connections go from the address of --iface
(GLOO_SOCKET_IFNAME), which must be the interface with the RDMA device
for rdmashare-run to carry them.
"""
import argparse
import datetime
import gzip
import os
import struct
import sys
import time

T0 = time.monotonic()
M64 = (1 << 64) - 1


def splitmix64(state):
    """ps-train's generator: (new state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def idx_read(path, magic, want):
    """The first @want items of a gzipped IDX file (all if 0): raw bytes."""
    with gzip.open(path, "rb") as f:
        dims = magic & 0xFF
        hdr = f.read(4 + 4 * dims)
        if len(hdr) != 4 + 4 * dims or struct.unpack(">I", hdr[:4])[0] != magic:
            sys.exit(f"torch-gloo: {path}: not an IDX file of magic {magic:#x}")
        shape = struct.unpack(f">{dims}I", hdr[4:])
        n = min(shape[0], want) if want else shape[0]
        item = 1
        for d in shape[1:]:
            item *= d
        data = f.read(n * item)
        if len(data) != n * item:
            sys.exit(f"torch-gloo: {path}: short")
        return n, data


def load(torch, data, name, want):
    n, img = idx_read(f"{data}/{name}-images-idx3-ubyte.gz", 0x803, want)
    m, lab = idx_read(f"{data}/{name}-labels-idx1-ubyte.gz", 0x801, want)
    if m != n:
        sys.exit(f"torch-gloo: {name}: {n} images, {m} labels")
    x = torch.frombuffer(bytearray(img), dtype=torch.uint8).reshape(n, 784)
    return x.float() / 255.0, torch.frombuffer(bytearray(lab), dtype=torch.uint8).long()


def allreduce(torch, dist, args, rank, world):
    """Tensors whose every element's sum is known and exact in its type."""
    sizes = [1, 1000]
    s = 64 << 10
    while s < args.max_size:
        sizes.append(s // 4)
        s *= 4
    sizes.append(args.max_size // 4)
    moved = 0
    t0 = time.monotonic()
    for rnd in range(args.rounds):
        for i, n in enumerate(sizes):
            dtype = torch.int64 if i == 1 else torch.float32
            base = torch.arange(n, dtype=torch.int64) % 4099 + rnd + i
            # Rank r gives base * (r + 1) + r; the sum over W ranks is
            # base * W(W+1)/2 + W(W-1)/2, below 2^24: exact in a float.
            t = (base * (rank + 1) + rank).to(dtype)
            want = (base * (world * (world + 1) // 2) + world * (world - 1) // 2).to(dtype)
            dist.all_reduce(t)
            if not torch.equal(t, want):
                bad = (t != want).nonzero()[0].item()
                sys.exit(f"torch-gloo: rank {rank}: round {rnd}, {n} elements of {dtype}: "
                         f"element {bad} is {t[bad].item()}, not {want[bad].item()}")
            moved += t.numel() * t.element_size()
    print(f"allreduce: rank {rank} of {world}: {len(sizes)} tensors of 1 to {max(sizes)} "
          f"elements, {args.rounds} rounds, {moved} bytes, sums exact, "
          f"{time.monotonic() - t0:.2f} s", flush=True)


def model_init(torch, hidden, seed):
    """ps-train's initial MLP: weights uniform in +-sqrt(6 / (in + out))."""
    net = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(),
                              torch.nn.Linear(hidden, 10))
    s = seed
    with torch.no_grad():
        for layer in (net[0], net[2]):
            fan_out, fan_in = layer.weight.shape
            a = (6.0 / (fan_in + fan_out)) ** 0.5
            vals = []
            for _ in range(fan_out * fan_in):
                s, z = splitmix64(s)
                vals.append((z >> 40) / float(1 << 23) - 1.0)
            w = torch.tensor(vals, dtype=torch.float32) * torch.tensor(a, dtype=torch.float32)
            layer.weight.copy_(w.reshape(fan_out, fan_in))
            layer.bias.zero_()
    return net


def shard_order(seed, epoch, rank, world, n):
    """ps-train's order of this rank's samples for an epoch."""
    s = (seed * 1000003 + epoch * 7919 + rank) & M64
    order = list(range(rank, n, world))
    for i in range(len(order), 1, -1):
        s, z = splitmix64(s)
        t = z % i
        order[i - 1], order[t] = order[t], order[i - 1]
    return order


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def train(torch, dist, args, rank, world):
    xtr, ytr = load(torch, args.data, "train", args.train)
    xte, yte = load(torch, args.data, "t10k", args.test)
    net = torch.nn.parallel.DistributedDataParallel(model_init(torch, args.hidden, args.seed))
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    lossf = torch.nn.CrossEntropyLoss()
    steps = (xtr.shape[0] // world) // args.batch

    def evaluate():
        with torch.no_grad():
            out = net.module(xte)
            acc = (out.argmax(1) == yte).float().mean().item()
            return lossf(out, yte).item(), acc

    if rank == 0:
        print(f"train: mlp 784-{args.hidden}-10, {world} ranks, DDP over gloo, batch "
              f"{args.batch} per rank, lr {args.lr}, {steps} steps per epoch, "
              f"{xtr.shape[0]} training and {xte.shape[0]} test samples, "
              f"{torch.get_num_threads()} threads", flush=True)
        print("epoch 0: test_loss %.4f test_acc %.4f" % evaluate(), flush=True)
    for epoch in range(1, args.epochs + 1):
        order = torch.tensor(shard_order(args.seed, epoch, rank, world, xtr.shape[0]))
        t0 = time.monotonic()
        total = 0.0
        for s in range(steps):
            idx = order[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad()
            loss = lossf(net(xtr[idx]), ytr[idx])
            loss.backward()  # DDP averages the gradients over the ranks here
            opt.step()
            total += loss.item()
        secs = time.monotonic() - t0
        if rank == 0:
            tl, ta = evaluate()
            print(f"epoch {epoch}: train_loss {total / steps:.4f} test_loss {tl:.4f} "
                  f"test_acc {ta:.4f} time {secs:.2f} s", flush=True)
    if rank == 0:
        flat = torch.cat([p.detach().reshape(-1) for p in net.module.parameters()])
        print(f"weights fnv1a64 {fnv1a64(flat.numpy().tobytes()):016x}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("allreduce", "train"))
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--master", required=True, help="HOST:PORT of rank 0's TCPStore")
    p.add_argument("--iface", help="GLOO_SOCKET_IFNAME: the interface gloo uses")
    p.add_argument("--timeout", type=int, default=300, help="seconds (rendezvous, each call)")
    p.add_argument("--threads", type=int, help="torch's intra-op threads")
    p.add_argument("--start-after", metavar="FILE",
                   help="wait for FILE to exist before the rendezvous (torch imported)")
    p.add_argument("--max-size", type=int, default=4 << 20, help="allreduce: largest tensor, bytes")
    p.add_argument("--rounds", type=int, default=2, help="allreduce: times over the tensors")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train", type=int, default=0, help="the first N training samples (0: all)")
    p.add_argument("--test", type=int, default=0, help="the first N test samples (0: all)")
    args = p.parse_args()
    if not 0 <= args.rank < args.world or args.max_size < 4:
        p.error("needs 0 <= rank < world and --max-size of a float at least")
    if args.iface:
        os.environ["GLOO_SOCKET_IFNAME"] = args.iface

    import torch
    import torch.distributed as dist
    t_import = time.monotonic() - T0
    while args.start_after and not os.path.exists(args.start_after):
        time.sleep(0.1)
    if args.threads:
        torch.set_num_threads(args.threads)
    host, _, port = args.master.rpartition(":")
    t0 = time.monotonic()
    dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    print(f"torch-gloo: rank {args.rank}: torch {torch.__version__} imported in "
          f"{t_import:.1f} s, process group in {time.monotonic() - t0:.1f} s", flush=True)
    if args.mode == "allreduce":
        allreduce(torch, dist, args, args.rank, args.world)
    else:
        train(torch, dist, args, args.rank, args.world)
    # Nobody leaves while another still needs its connections.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
