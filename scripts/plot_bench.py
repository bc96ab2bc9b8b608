#!/usr/bin/env python3
"""Plots the results of `hhg bench --json FILE` in the style of the thesis'
figures: per scenario, time per step against N on log-log axes (one line per
method), and a bar chart of the time per object per step at the largest N;
setup time (inserting all objects) against N for the 'equal' scenario (thesis
Fig. 21, 27); peak memory per object against N.

Run with Debian's Python (it has matplotlib):
    /usr/bin/python3 scripts/plot_bench.py RESULTS.json [MORE.json ...] OUTPUT_DIR
Several result files (e.g. a run at 10^3-10^5 and one at 10^6) are merged.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: plot_bench.py RESULTS.json [MORE.json ...] OUTPUT_DIR")
    # each file: a list of runs {"scenario", "n", "results": [per method]} (or one run)
    runs = []
    for name in sys.argv[1:-1]:
        with open(name) as f:
            data = json.load(f)
        runs.extend(data if isinstance(data, list) else [data])
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    rows = []
    for run in runs:
        for r in run["results"]:
            if r["step_ms_median"] > 0:
                rows.append(dict(r, scenario=run["scenario"], n=run["n"]))
    machine = runs[0].get("machine", {}) if runs else {}
    scenarios = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    def loglog(sel, key, scale, ylabel, title, name):
        methods = []
        for r in sel:
            if r["method"] not in methods:
                methods.append(r["method"])
        fig, ax = plt.subplots(figsize=(7, 5))
        for m in methods:
            pts = sorted((r["n"], r[key] * scale(r)) for r in sel if r["method"] == m and r.get(key, 0) > 0)
            if not pts:
                continue
            style = "-o" if m.startswith("hhg") else "--."
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=m, linewidth=2 if m == "hhg" else 1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("objects N")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        fig.text(0.01, 0.01, machine.get("cpu", ""), fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)

    equal = [r for r in rows if r["scenario"] == "equal"]
    if equal:
        loglog(equal, "setup_ms", lambda r: 1.0, "setup (insert all objects + first detection), ms",
               "setup vs N, scenario 'equal'", "setup_vs_n.png")
        loglog(equal, "peak_bytes", lambda r: 1.0 / r["n"], "peak memory growth per object, bytes",
               "peak memory vs N, scenario 'equal'", "memory_vs_n.png")
    for sc in scenarios:
        sel = [r for r in rows if r["scenario"] == sc]
        loglog(sel, "step_ms_median", lambda r: 1.0, "time per step (update + detection), ms, median",
               f"scenario '{sc}'", f"time_vs_n_{sc}.png")
        nmax = max(r["n"] for r in sel)
        big = [r for r in sel if r["n"] == nmax]
        big.sort(key=lambda r: r["step_ms_median"])
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.barh([r["method"] for r in big], [r["step_ms_median"] * 1e6 / r["n"] for r in big],
                color=["tab:red" if r["method"] == "hhg" else "tab:blue" for r in big])
        ax.set_xscale("log")
        ax.set_xlabel("ns per object per step (median)")
        ax.set_title(f"scenario '{sc}', N = {nmax}")
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"bars_{sc}.png"), dpi=110)
        plt.close(fig)
    print(f"plots written to {out}")


if __name__ == "__main__":
    main()
