#!/usr/bin/env python3
"""Plots the results of `hhg bench --json FILE` (or `hhg_bench`).

Per scenario:
  per_object_<scenario>.png  time per object per step (update + detection,
                             median) against N, log-log: a flat line is linear
                             cost. hhg, the best peer library (the fastest at
                             the largest N), the strong uniform grid `grid` and
                             brute force stand out; every other method recedes
                             (thin, grey).
  bars_<scenario>.png        ns per object per step at the largest N.
  (one-shot runs, steps 0 or the `terdiman` scenario, plot setup_ms per object)
Across scenarios:
  setup_vs_n.png             setup (bulk insert + first detection) per object, 'equal'.
  memory_vs_n.png            steady (bytes()/N) and peak (peak RSS rise / N)
                             bytes per object, 'equal'.
  summary.md                 the table at the largest N: hhg, the best peer,
                             grid, and the ratios.

Run with Debian's Python (it has matplotlib):
    /usr/bin/python3 scripts/plot_bench.py RESULTS.json [MORE.json ...] OUTPUT_DIR [--update FILE ...] [--no-plots]
Several result files (e.g. one per scenario) are merged. --no-plots writes
summary.md and the --update tables only (the plots take ~0.35 s each).

--update FILE rewrites the generated tables of a Markdown file: the lines
between `<!-- begin generated NAME ... -->` and `<!-- end generated NAME -->`,
NAME one of GENERATED below (`summary`: the table of summary.md; `glance`:
the README's speed table). The rest of the file is kept as it is. A file
without such a block, an unknown NAME, a begin without its end, or results
that lack a scenario the table needs is an error (exit 1), and then no file
is changed.
"""
import argparse
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PEER_PREFIXES = ("bullet-", "fcl-", "cgal")
BASELINES = ("grid", "brute")
ONE_SHOT_SCENARIOS = ("terdiman",)


def is_peer(m):
    # bullet-hhg and fcl-hhg are hhg behind the peer's interface (the adapters), not a peer
    return m.startswith(PEER_PREFIXES) and not m.endswith("-hhg")


def per_object_ns(r, one_shot):
    ms = r.get("setup_ms") if one_shot else r.get("step_ms_median")
    if ms is None or ms <= 0 or not r.get("n"):
        return None
    return ms * 1e6 / r["n"]


def load(names):
    runs = []
    for name in names:
        with open(name) as f:
            data = json.load(f)
        runs.extend(data if isinstance(data, list) else [data])
    rows = []
    for run in runs:
        for r in run["results"]:
            rows.append(dict(r, scenario=run["scenario"], n=run["n"], steps=run.get("steps", 1)))
    machine = runs[0].get("machine", {}) if runs else {}
    return rows, machine


def best_peer(sel, one_shot):
    """The peer with the lowest time per object at the largest N it ran."""
    best = None
    for r in sel:
        if not is_peer(r["method"]):
            continue
        t = per_object_ns(r, one_shot)
        if t is None:
            continue
        key = (-r["n"], t)
        if best is None or key < best[0]:
            best = (key, r["method"])
    return best[1] if best else None


def style(method, peer):
    if method == "hhg":
        return dict(color="tab:red", linewidth=2.8, marker="o", zorder=5)
    if method == peer:
        return dict(color="tab:blue", linewidth=2.0, marker="s", zorder=4)
    if method == "grid":
        return dict(color="tab:green", linewidth=2.0, marker="^", zorder=4)
    if method == "brute":
        return dict(color="black", linewidth=1.5, marker="x", linestyle=":", zorder=3)
    return dict(color="0.65", linewidth=0.8, marker=".", alpha=0.7, zorder=1)


def scenario_summary(sel, sc, out, machine, plots=True):
    """The scenario's row of summary.md; draws its two plots too unless not plots."""
    one_shot = sc in ONE_SHOT_SCENARIOS or all(r.get("steps", 1) == 0 for r in sel)
    peer = best_peer(sel, one_shot)
    ran = [r for r in sel if per_object_ns(r, one_shot) is not None]
    nmax = max(r["n"] for r in ran) if ran else None
    big = sorted((r for r in ran if r["n"] == nmax), key=lambda r: per_object_ns(r, one_shot))
    if plots:
        draw_scenario(sel, sc, out, machine, one_shot, peer, big)
    if not ran:
        return None

    def at(m):
        for r in big:
            if r["method"] == m:
                return per_object_ns(r, one_shot)
        return None
    return dict(scenario=sc, n=nmax, one_shot=one_shot, hhg=at("hhg"), peer=peer, peer_ns=at(peer) if peer else None,
                grid=at("grid"))


def draw_scenario(sel, sc, out, machine, one_shot, peer, big):
    methods = []
    for r in sel:
        if r["method"] not in methods:
            methods.append(r["method"])
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for m in methods:
        pts = sorted((r["n"], per_object_ns(r, one_shot)) for r in sel if r["method"] == m)
        pts = [p for p in pts if p[1] is not None]
        if not pts:
            continue
        s = style(m, peer)
        emphasised = s.get("zorder", 1) > 1
        label = m + (" (best peer)" if m == peer else "") if emphasised else m
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("objects N")
    what = "one-shot (build + detection)" if one_shot else "per step (update + detection), median"
    ax.set_ylabel(f"ns per object, {what}")
    ax.set_title(f"scenario '{sc}': flat = linear cost")
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: (style(labels[i].split(" ")[0], peer).get("zorder", 1) == 1, i))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, ncol=2)
    fig.text(0.01, 0.01, machine.get("cpu", ""), fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"per_object_{sc}.png"), dpi=110)
    plt.close(fig)

    if not big:
        return
    nmax = big[0]["n"]
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.28 * len(big)))
    ax.barh([r["method"] for r in big], [per_object_ns(r, one_shot) for r in big],
            color=[style(r["method"], peer)["color"] for r in big])
    ax.set_xscale("log")
    ax.set_xlabel(f"ns per object, {what}")
    ax.set_title(f"scenario '{sc}', N = {nmax}")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"bars_{sc}.png"), dpi=110)
    plt.close(fig)


def plot_equal(rows, out, machine):
    equal = [r for r in rows if r["scenario"] == "equal"]
    if not equal:
        return
    methods = []
    for r in equal:
        if r["method"] not in methods:
            methods.append(r["method"])
    peer = best_peer(equal, False)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for m in methods:
        pts = sorted((r["n"], r["setup_ms"] * 1e6 / r["n"]) for r in equal
                     if r["method"] == m and (r.get("setup_ms") or 0) > 0)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=m, **style(m, peer))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("objects N")
    ax.set_ylabel("setup (insert all + first detection), ns per object")
    ax.set_title("setup vs N, scenario 'equal'")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "setup_vs_n.png"), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.5, 5))
    for m in methods:
        s = style(m, peer)
        steady = sorted((r["n"], r["bytes"] / r["n"]) for r in equal if r["method"] == m and (r.get("bytes") or 0) > 0)
        peak = sorted((r["n"], r["peak_bytes"] / r["n"]) for r in equal
                      if r["method"] == m and (r.get("peak_bytes") or 0) > 0)
        if steady:
            ax.plot([p[0] for p in steady], [p[1] for p in steady], label=f"{m} steady", **s)
        if peak:
            s2 = dict(s, linestyle="--")
            ax.plot([p[0] for p in peak], [p[1] for p in peak], label=f"{m} peak", **s2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("objects N")
    ax.set_ylabel("bytes per object")
    ax.set_title("memory vs N, 'equal': steady = bytes()/N, peak = peak RSS rise / N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.text(0.01, 0.01, machine.get("cpu", ""), fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "memory_vs_n.png"), dpi=110)
    plt.close(fig)


def fmt(v):
    return "—" if v is None else f"{v:,.0f}".replace(",", " ")


def summary_table(summary):
    lines = ["| scenario | N | hhg ns/object | best peer | ns/object | hhg / peer | grid ns/object | hhg / grid |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        def ratio(a, b):
            return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"
        label = s["scenario"] + (" (one-shot)" if s["one_shot"] else "")
        # (the best peer is the fastest at the largest N it ran: at this N maybe none did)
        peer = s["peer"] or "—"
        if s["peer"] and s["peer_ns"] is None:
            peer = "— (no peer finished at this N)"
        lines.append(f"| {label} | {s['n']} | {fmt(s['hhg'])} | {peer} | {fmt(s['peer_ns'])} | "
                     f"{ratio(s['hhg'], s['peer_ns'])} | {fmt(s['grid'])} | {ratio(s['hhg'], s['grid'])} |")
    return lines


# The README's speed table: these scenarios, in this order, under these names.
GLANCE = (("equal", "equal cubes"), ("varied", "sizes over ×12"), ("log-uniform", "sizes log-uniform over 1–1000"),
          ("elongated", "10×1×1 boxes"), ("sparse", "tiny objects far apart"))


def glance_table(summary):
    by_name = {s["scenario"]: s for s in summary}
    missing = [sc for sc, _ in GLANCE if sc not in by_name or by_name[sc]["hhg"] is None]
    if missing:
        raise ValueError("the results lack hhg in scenario(s) " + ", ".join(missing))
    n = {by_name[sc]["n"] for sc, _ in GLANCE}
    lines = [f"| scenario (N = {'/'.join(str(x) for x in sorted(n))}) | hhg | best peer library | "
             "strong uniform grid |", "|---|---|---|---|"]
    for sc, label in GLANCE:
        s = by_name[sc]
        cells = [s["hhg"], s["peer_ns"], s["grid"]]
        best = min(v for v in cells if v is not None)
        text = [("**" + fmt(v) + "**") if v == best else fmt(v) for v in cells]
        if s["peer"]:
            text[1] += f" ({s['peer']})"
        lines.append(f"| {label} | " + " | ".join(text) + " |")
    return lines


GENERATED = {"summary": summary_table, "glance": glance_table}
BLOCK = re.compile(r"(<!-- begin generated ([\w-]+)[^\n]*-->\n)(.*?)(<!-- end generated \2 -->)", re.S)


def update_generated(path, summary):
    """The text of `path` with its generated blocks rewritten (ValueError on anything amiss)."""
    with open(path) as f:
        text = f.read()
    begins = re.findall(r"<!-- begin generated ([\w-]+)", text)
    if not begins:
        raise ValueError(f"{path}: no '<!-- begin generated NAME -->' block")
    for name in begins:
        if name not in GENERATED:
            raise ValueError(f"{path}: unknown generated block '{name}' (known: {', '.join(GENERATED)})")
    blocks = BLOCK.findall(text)
    if len(blocks) != len(begins):
        raise ValueError(f"{path}: a '<!-- begin generated ... -->' without its '<!-- end generated NAME -->'")
    # a blank line on each side: Markdown renders the table as a table after the comment
    return BLOCK.sub(lambda m: m.group(1) + "\n" + "\n".join(GENERATED[m.group(2)](summary)) + "\n\n" + m.group(4),
                     text)


def main():
    ap = argparse.ArgumentParser(description="Plots and tables from hhg bench --json results.")
    ap.add_argument("paths", nargs="+", metavar="RESULTS.json ... OUTPUT_DIR")
    ap.add_argument("--update", action="append", default=[], metavar="FILE",
                    help="rewrite the generated tables of this Markdown file (repeatable)")
    ap.add_argument("--no-plots", action="store_true", help="summary.md and the --update tables only, no PNG")
    args = ap.parse_args()
    if len(args.paths) < 2:
        ap.error("give one or more RESULTS.json and then OUTPUT_DIR")
    rows, machine = load(args.paths[:-1])
    out = args.paths[-1]
    os.makedirs(out, exist_ok=True)
    scenarios = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    summary = []
    for sc in scenarios:
        s = scenario_summary([r for r in rows if r["scenario"] == sc], sc, out, machine, not args.no_plots)
        if s:
            summary.append(s)
    if not args.no_plots:
        plot_equal(rows, out, machine)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(summary_table(summary)) + "\n")
    print(f"{'summary.md' if args.no_plots else 'plots and summary.md'} written to {out}")
    try:  # every file checked before any is written
        updated = [(path, update_generated(path, summary)) for path in args.update]
    except (OSError, ValueError) as e:
        sys.exit(f"plot_bench.py: {e}; no Markdown file changed")
    for path, text in updated:
        with open(path, "w") as f:
            f.write(text)
        print(f"generated tables of {path} rewritten")


if __name__ == "__main__":
    main()
