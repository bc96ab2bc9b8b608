#!/usr/bin/env python3
"""The benchmark refresh end to end, at tiny sizes (a CTest test: bench/CMakeLists.txt).

  test_refresh_benchmarks.py HHG_BENCH WORK_DIR

Runs scripts/refresh_benchmarks.sh --lanes 2 with hhg, grid, brute, pivot and
pivot-chunked at N = 300 and 600 on the scenarios each path needs (SCENARIOS),
the plots drawn on the first refresh only (about a third of a second each),
then checks:
  - the lanes ran every method but those run alone (the every-core ones,
    hhg and grid), and those ran alone afterwards and joined the lane's runs
    of the same N with the same pairs per step (the merged txt says so); the
    hhg-only experiments ran alone whole and have no pivot;
  - raw/ holds one json, csv and txt per scenario and no parts;
  - results.json / results.csv / summary.md hold every run, in one order;
  - a second refresh on the same output runs nothing (the resume);
  - --rerun-alone runs the alone methods again and keeps the lanes' runs;
    with --rounds 2 they run two rounds each and their rows say so, and
    that they took turns (hhg_bench --interleave);
    a scenario that ran alone whole (no lane runs) runs whole again;
  - one scenario re-run (its raw files deleted, --scenarios naming it) keeps
    every other scenario in the merge, and raw CSVs of an older hhg_bench
    (fewer columns) merge by column name;
  - scripts/merge_bench.py refuses parts whose pairs differ, and keeps them;
  - scripts/plot_bench.py --update rewrites only the generated blocks, the
    same text twice, and refuses (changing no file) a file without blocks,
    an unknown block, or a begin without its end;
  - bad --lanes and --rounds values are refused before anything runs.
Exits 77 (skipped) on a machine with one core: --lanes 2 needs two.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFRESH = os.path.join(ROOT, "scripts", "refresh_benchmarks.sh")
MERGE = os.path.join(ROOT, "scripts", "merge_bench.py")
PLOT = os.path.join(ROOT, "scripts", "plot_bench.py")
PY = sys.executable
METHODS = ["hhg", "grid", "brute", "pivot", "pivot-chunked"]
ALONE = ["hhg", "grid", "pivot", "pivot-chunked"]  # scripts/refresh_benchmarks.sh alone_list
LANE = [m for m in METHODS if m not in ALONE]
HHG_ONLY = {"factor", "update", "update-jump"}
# the scenarios of scripts/plot_bench.py's GLANCE (plot_bench.py --update
# refuses results without them; sparse, one of them, also serves the older raw
# CSV below); terdiman: its own sizes; factor and update: the hhg-only
# experiments (update writes update and update-jump)
SCENARIOS = ["equal", "varied", "log-uniform", "elongated", "sparse", "terdiman", "factor", "update"]


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)


def run(args, expect=0):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit(f"FAILED: {' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p


def read(path):
    with open(path) as f:
        return f.read()


def main():
    bench, work = sys.argv[1], sys.argv[2]
    if (os.cpu_count() or 1) < 2:
        print("one core: --lanes 2 cannot run here")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "out")
    refresh = ["bash", REFRESH, "--bench", bench, "--out", out, "--sizes", "300,600", "--steps", "2",
               "--timeout", "120", "--methods", ",".join(METHODS), "--scenarios", ",".join(SCENARIOS)]

    # bad --lanes: refused, nothing written
    for bad in (["--lanes", "0"], ["--lanes", "x"], ["--lanes", "2", "--threads", "2"],
                ["--lanes", str((os.cpu_count() or 1) + 1)]):
        p = run(refresh + bad, expect=2)
        check("--lanes" in p.stderr, f"{bad}: the error names --lanes: {p.stderr}")
        check(not os.path.exists(out), f"{bad}: nothing written")
    for bad in ("0", "x", "-1", ""):
        p = run(refresh + ["--lanes", "2", "--rounds", bad], expect=2)
        check("--rounds" in p.stderr, f"--rounds {bad!r}: the error names --rounds: {p.stderr}")
        check(not os.path.exists(out), f"--rounds {bad!r}: nothing written")

    first = run(refresh + ["--lanes", "2"])
    check("(lane) at N" in first.stderr and "(alone) at N" in first.stderr, "the lanes and the alone runs ran")
    pngs = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    check(pngs == sorted([f"{kind}_{sc}.png" for sc in set(SCENARIOS) | HHG_ONLY for kind in ("per_object", "bars")]
                         + ["memory_vs_n.png", "setup_vs_n.png"]), f"the plots: {pngs}")
    # The later calls draw none (--no-plots: ~0.35 s a PNG, most of this test's time otherwise).
    refresh.append("--no-plots")

    runs = json.loads(read(os.path.join(out, "results.json")))
    scenarios = sorted({r["scenario"] for r in runs})
    raw = sorted(os.listdir(os.path.join(out, "raw")))
    labels = sorted({f.split(".")[0] for f in raw})
    check(all(f.count(".") == 1 for f in raw), f"raw/ holds no parts: {raw}")
    check(raw == sorted(f"{s}.{e}" for s in labels for e in ("csv", "json", "txt")), f"raw/: {raw}")
    check(set(scenarios) == set(SCENARIOS) | HHG_ONLY, f"scenarios {scenarios}")
    for run_ in runs:
        sc, n = run_["scenario"], run_["n"]
        got = [r["method"] for r in run_["results"]]
        if sc in HHG_ONLY:
            check(got and not {"pivot", "pivot-chunked"} & set(got), f"{sc} n={n}: no every-core method in an hhg-only experiment: {got}")
            continue
        check(got == LANE + ALONE, f"{sc} n={n}: the lane's methods, then the alone ones: {got}")
        pairs = [r["pairs_per_step"] for r in run_["results"]]
        check(all(p == pairs[0] and p for p in pairs), f"{sc} n={n}: every method finds the same pairs: {pairs}")
    for sc in labels:
        if sc not in HHG_ONLY:
            check("run alone afterwards" in read(os.path.join(out, "raw", sc + ".txt")), f"{sc}.txt: the alone tables")

    csv = read(os.path.join(out, "results.csv")).splitlines()
    header = csv[0].split(",")
    order = [(r["scenario"], str(r["n"]), x["method"]) for r in runs for x in r["results"]]
    rows = [tuple(line.split(",")[header.index(c)] for c in ("scenario", "n", "method")) for line in csv[1:]]
    check(rows == order, "results.csv holds the rows of results.json in its order")
    summary = read(os.path.join(out, "summary.md"))
    for sc in scenarios:
        check(f"| {sc}" in summary, f"summary.md has a row for {sc}")

    # the resume: nothing runs again, nothing changes
    before = {f: read(os.path.join(out, "raw", f)) for f in raw}
    again = run(refresh + ["--lanes", "2"])
    check(" at N = " not in again.stderr, f"the second refresh ran nothing: {again.stderr}")
    check(all(read(os.path.join(out, "raw", f)) == t for f, t in before.items()), "the raw files are unchanged")

    # --rerun-alone: the alone methods again (and the hhg-only experiments
    # whole), the lanes' runs kept as they were, nothing left in parts
    p = run(refresh + ["--rerun-alone"], expect=2)
    check("--rerun-alone needs --lanes" in p.stderr, f"--rerun-alone without lanes is refused: {p.stderr}")
    check(all(read(os.path.join(out, "raw", f)) == t for f, t in before.items()), "the refused call changed nothing")
    re_alone = run(refresh + ["--lanes", "2", "--rerun-alone", "--rounds", "2"])
    check("(alone) at N" in re_alone.stderr and "(lane) at N" not in re_alone.stderr,
          f"only the alone methods ran: {re_alone.stderr}")
    check("(round 2/2)" in re_alone.stderr, f"the alone methods ran two rounds: {re_alone.stderr}")
    check("(interleaved)" in re_alone.stderr, f"the alone methods took turns: {re_alone.stderr}")
    check(sorted(os.listdir(os.path.join(out, "raw"))) == raw, "raw/ holds the same files, no parts")
    rerun_runs = json.loads(read(os.path.join(out, "results.json")))
    check([(r["scenario"], r["n"]) for r in rerun_runs] == [(r["scenario"], r["n"]) for r in runs], "the same runs")
    for old, new in zip(runs, rerun_runs):
        if old["scenario"] in HHG_ONLY:
            continue
        check([r["method"] for r in new["results"]] == LANE + ALONE, f"{old['scenario']}: the lane's, then the alone")
        check([r for r in old["results"] if r["method"] in LANE] == [r for r in new["results"] if r["method"] in LANE],
              f"{old['scenario']} n={old['n']}: the lane's runs are kept as they were")
        check(all(r["rounds"] == 2 for r in new["results"] if r["method"] in ALONE)
              and all(r.get("rounds", 1) == 1 for r in old["results"]) and new["rounds"] == 1,
              f"{old['scenario']} n={old['n']}: the rows run alone say their two rounds, the lane's run its one")
        check(all(r["interleaved"] is True for r in new["results"] if r["method"] in ALONE)
              and all("interleaved" not in r for r in new["results"] if r["method"] in LANE),
              f"{old['scenario']} n={old['n']}: the rows run alone took turns (hhg_bench --interleave), the lane's not")
        check("run alone afterwards" in read(os.path.join(out, "raw", old["scenario"] + ".txt")), "the alone tables")
    for sc in labels:
        text = read(os.path.join(out, "raw", sc + ".txt"))
        check(text.count("run alone afterwards") == (0 if sc in HHG_ONLY else 1), f"{sc}.txt: one alone table")

    # --rerun-alone of a scenario that ran alone whole (--methods naming only
    # alone methods): no lane runs to keep, so it runs whole again
    only = os.path.join(work, "only_alone")
    only_refresh = ["bash", REFRESH, "--bench", bench, "--out", only, "--sizes", "300", "--steps", "2",
                    "--timeout", "120", "--methods", "hhg,grid", "--scenarios", "equal", "--lanes", "2", "--no-plots"]
    run(only_refresh)
    first = json.loads(read(os.path.join(only, "results.json")))
    check([[x["method"] for x in r["results"]] for r in first] == [["hhg", "grid"]], f"run alone whole: {first}")
    p = run(only_refresh + ["--rerun-alone"])
    check("no lane runs to keep" in p.stderr and p.stderr.count("(alone) at N") == 1
          and "(lane) at N" not in p.stderr, f"rerun whole, alone: {p.stderr}")
    again_runs = json.loads(read(os.path.join(only, "results.json")))
    check([[x["method"] for x in r["results"]] for r in again_runs] == [["hhg", "grid"]]
          and [r["results"][0]["pairs_per_step"] for r in again_runs] == [r["results"][0]["pairs_per_step"] for r in first],
          f"the same runs again: {again_runs}")
    check(sorted(os.listdir(os.path.join(only, "raw"))) == ["equal.csv", "equal.json", "equal.txt"], "no parts left")

    # one scenario re-run on top of a full refresh: its raw files deleted,
    # --scenarios naming it; the merge keeps every other scenario's runs
    for ext in ("json", "csv", "txt"):
        os.remove(os.path.join(out, "raw", "equal." + ext))
    one = run(refresh + ["--lanes", "2", "--scenarios", "equal"])
    check(one.stderr.count(" at N = ") == 2, f"only equal ran (lane and alone): {one.stderr}")
    rerun = json.loads(read(os.path.join(out, "results.json")))
    check(sorted({r["scenario"] for r in rerun}) == scenarios and len(rerun) == len(runs),
          "after one scenario re-run alone, results.json still holds every scenario")
    check([r["scenario"] for r in rerun] == [r["scenario"] for r in runs], "in the same order")
    # a raw file of an older hhg_bench (fewer columns) merges by column name
    sparse_csv = os.path.join(out, "raw", "sparse.csv")
    lines = read(sparse_csv).splitlines()
    cols = lines[0].split(",")
    drop = cols.index("caller_bytes")
    with open(sparse_csv, "w") as f:
        f.write("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != drop) for line in lines) + "\n")
    run([PY, MERGE, "all", out] + [sc for sc in dict.fromkeys(r["scenario"] for r in runs) if sc in labels])
    merged = read(os.path.join(out, "results.csv")).splitlines()
    check(merged[0].split(",") == cols, f"the merged header has every column: {merged[0]}")
    for line in merged[1:]:
        f = line.split(",")
        check(len(f) == len(cols), f"every row has every column: {line}")
        if f[0] == "sparse":
            check(f[cols.index("caller_bytes")] == "" and f[cols.index("method")] in METHODS,
                  f"an older file's row: empty where it lacks the column, the rest in place: {line}")
    summary = read(os.path.join(out, "summary.md"))  # (the re-run's)

    # merge_bench.py refuses parts whose pairs differ, and keeps them
    bad = os.path.join(work, "bad")
    os.makedirs(os.path.join(bad, "raw"))
    equal = json.loads(read(os.path.join(out, "raw", "equal.json")))
    lane = [dict(r, results=[x for x in r["results"] if x["method"] in LANE]) for r in equal]
    alone = [dict(r, results=[x for x in r["results"] if x["method"] in ALONE]) for r in equal]
    alone[-1]["results"][0]["pairs_per_step"] = [p + 1 for p in alone[-1]["results"][0]["pairs_per_step"]]
    csv_lines = read(os.path.join(out, "raw", "equal.csv")).splitlines()
    parts = {"lane": (lane, [csv_lines[0]] + [c for c in csv_lines[1:] if c.split(",")[4] in LANE]),
             "alone": (alone, [csv_lines[0]] + [c for c in csv_lines[1:] if c.split(",")[4] in ALONE])}
    for part, (data, lines) in parts.items():
        with open(os.path.join(bad, "raw", f"equal.{part}.json"), "w") as f:
            json.dump(data, f)
        with open(os.path.join(bad, "raw", f"equal.{part}.csv"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(bad, "raw", f"equal.{part}.txt"), "w") as f:
            f.write(part + "\n")
    p = run([PY, MERGE, "alone", bad, "equal"], expect=1)
    check("MISMATCH" in p.stderr and alone[-1]["results"][0]["method"] + " (alone)" in p.stderr,
          f"the mismatch is named: {p.stderr}")
    check(sorted(os.listdir(os.path.join(bad, "raw"))) == sorted(f"equal.{p}.{e}" for p in parts
                                                                 for e in ("json", "csv", "txt")),
          "a refused merge writes nothing and keeps the parts")
    # the same parts with the pairs put right merge into what the refresh wrote
    alone[-1]["results"][0]["pairs_per_step"] = [p - 1 for p in alone[-1]["results"][0]["pairs_per_step"]]
    with open(os.path.join(bad, "raw", "equal.alone.json"), "w") as f:
        json.dump(alone, f)
    run([PY, MERGE, "alone", bad, "equal"])
    check(json.loads(read(os.path.join(bad, "raw", "equal.json"))) == equal, "the merge rebuilds the json")
    check(read(os.path.join(bad, "raw", "equal.csv")) == read(os.path.join(out, "raw", "equal.csv")),
          "the merge rebuilds the csv")
    check(sorted(os.listdir(os.path.join(bad, "raw"))) == ["equal.csv", "equal.json", "equal.txt"],
          "the parts are removed after a merge")

    # plot_bench.py --update
    results = os.path.join(out, "results.json")
    doc = os.path.join(work, "doc.md")
    text = ("# title\n\nbefore\n<!-- begin generated summary: x -->\nold\n<!-- end generated summary -->\n"
            "middle\n<!-- begin generated glance -->\n<!-- end generated glance -->\nafter\n")
    with open(doc, "w") as f:
        f.write(text)
    plots = os.path.join(work, "plots")
    run([PY, PLOT, results, plots, "--update", doc, "--no-plots"])
    check(os.listdir(plots) == ["summary.md"], f"--no-plots: summary.md, no PNG: {os.listdir(plots)}")
    once = read(doc)
    check(once.startswith("# title\n\nbefore\n<!-- begin generated summary: x -->\n\n| scenario | N |"),
          "the text before the block is kept, the table is in it")
    check("old" not in once and once.endswith("<!-- end generated glance -->\nafter\n") and "\nmiddle\n" in once,
          "only the blocks are rewritten")
    check("| equal cubes | " in once and "| sizes log-uniform over 1–1000 | " in once, "the glance table is in")
    check(summary.strip() in once, "the summary block is summary.md's table")
    run([PY, PLOT, results, plots, "--update", doc, "--no-plots"])
    check(read(doc) == once, "a second update writes the same text")
    for broken in ("no block here\n", "<!-- begin generated nosuch -->\n<!-- end generated nosuch -->\n",
                   "<!-- begin generated summary -->\nno end\n"):
        other = os.path.join(work, "broken.md")
        with open(other, "w") as f:
            f.write(broken)
        with open(doc, "w") as f:
            f.write(text)
        p = run([PY, PLOT, results, plots, "--update", doc, "--update", other, "--no-plots"], expect=1)
        check("no Markdown file changed" in p.stderr, f"the error says nothing changed: {p.stderr}")
        check(read(doc) == text and read(other) == broken, f"no file changed for {broken!r}")
    print(f"refresh with --lanes 2: {len(runs)} runs of {len(scenarios)} scenarios checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
