"""A small moving particle system with hhg: contact pairs every step, a
neighbour query, and a plot saved to PNG.

    python examples/python/particles.py [--particles 2000] [--steps 100] [--out particles.png]

Particles are discs of different radii bouncing in the unit square. Each step
moves them (a batch move of their bounding boxes), asks the hash grid for the
overlapping boxes, keeps the pairs whose discs really touch (the narrow phase,
in numpy), and pushes those apart. At the end one neighbour query counts the
particles within 0.05 of each particle, and the plot shows the final state
coloured by that count next to the number of contacts per step.
"""
import argparse

import numpy as np

import hhg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--particles", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--out", default="particles.png")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.particles
    pos = rng.uniform(0.05, 0.95, (n, 2))
    vel = rng.normal(0, 0.002, (n, 2))
    rad = 0.002 * 10 ** rng.uniform(0, 0.6, n)  # radii over a factor of 4

    def bounds():
        return np.hstack([pos - rad[:, None], pos + rad[:, None]])

    grid = hhg.HashGrids(dim=2)
    ids = grid.insert(bounds())
    # id = (generation << 32) | slot; slots are dense, so a plain array maps them to particles
    slot = ids & 0xFFFFFFFF
    particle_of = np.empty(slot.max() + 1, dtype=np.int64)
    particle_of[slot] = np.arange(n)
    contacts = []
    for _ in range(args.steps):
        pos += vel
        for axis in range(2):  # bounce off the walls
            low, high = pos[:, axis] < rad, pos[:, axis] > 1 - rad
            vel[low | high, axis] *= -1
            pos[:, axis] = np.clip(pos[:, axis], rad, 1 - rad)
        grid.move(ids, bounds())
        pairs = grid.pairs()  # broad phase: overlapping bounding boxes (ids)
        a = particle_of[pairs[:, 0] & 0xFFFFFFFF]
        b = particle_of[pairs[:, 1] & 0xFFFFFFFF]
        d = pos[b] - pos[a]
        dist = np.linalg.norm(d, axis=1)
        touch = dist < rad[a] + rad[b]  # narrow phase: the discs themselves
        a, b, d, dist = a[touch], b[touch], d[touch], dist[touch]
        normal = d / np.maximum(dist, 1e-12)[:, None]
        rel = np.sum((vel[b] - vel[a]) * normal, axis=1)
        closing = rel < 0  # exchange the normal velocity of approaching pairs (equal masses)
        impulse = (rel[closing])[:, None] * normal[closing]
        np.add.at(vel, a[closing], impulse)
        np.add.at(vel, b[closing], -impulse)
        contacts.append(int(touch.sum()))

    idx, off = hhg.neighbors(pos, 0.05)  # the particles within 0.05 of each one
    crowd = np.diff(off)
    print(f"{n} particles, {args.steps} steps: {np.mean(contacts):.1f} contacts per step, "
          f"{crowd.mean():.1f} neighbours within 0.05 on average")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5))
    sc = left.scatter(pos[:, 0], pos[:, 1], s=(rad * 900) ** 2, c=crowd, cmap="viridis")
    fig.colorbar(sc, ax=left, label="neighbours within 0.05")
    left.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", title="final state")
    right.plot(contacts)
    right.set(xlabel="step", ylabel="touching pairs", title="contacts per step (hhg.HashGrids.pairs)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
