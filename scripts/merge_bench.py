#!/usr/bin/env python3
"""Merges the raw files of scripts/refresh_benchmarks.sh.

  merge_bench.py alone OUT SCENARIO
      With --lanes N the refresh runs each scenario in two parts: the lane
      (the peers and the other methods, one core each, beside the other lanes)
      into OUT/raw/SCENARIO.lane.{json,csv,txt}, then, alone on the machine,
      the methods that use every core and those the targets are judged on
      (refresh_benchmarks.sh's alone_list names them) into OUT/raw/SCENARIO.alone.{json,csv,txt}
      (absent when none apply). This writes OUT/raw/SCENARIO.{json,csv,txt}:
      the lane's runs with the alone results appended to the run of the same
      N, and removes the parts. The scenes are seeded, so every method must
      find the same pairs per step as the lane's reference (the method
      hhg_bench compared the others with: the first that ran). A difference
      refuses the merge (exit 1, the parts kept), as hhg_bench itself reports
      a mismatch.

  merge_bench.py split OUT SCENARIO METHOD,...
      The inverse, for a refresh that runs the alone methods again (the
      engine changed, the peers did not): OUT/raw/SCENARIO.{json,csv,txt}
      back into the lane's part OUT/raw/SCENARIO.lane.{json,csv,txt}, without
      the runs of the METHODs (those run alone) and the alone tables of the
      txt, and the merged files removed. Exit 3 (NO_LANE_RUNS), changing
      nothing, when the merged files hold no run of a lane method (a scenario
      run alone whole: the refresh reruns it whole).

  merge_bench.py all OUT SCENARIO...
      OUT/results.json (a list of runs), OUT/results.csv (one header) and
      OUT/summary.txt (the tables) from every scenario's raw files.
"""
import csv as csvlib
import json
import os
import sys


# split's exit status when a scenario has no lane runs to keep (refresh_benchmarks.sh reruns it whole)
NO_LANE_RUNS = 3

# where the alone methods' tables start in a merged txt (split cuts there)
ALONE_MARK = ("\n(the methods run alone afterwards: those that use every core, and hhg's engine and the grid "
              "baseline; their pairs per step agree with the lane's:)\n")


def ran(r):
    return bool(r.get("pairs_per_step")) and not r.get("note", "").startswith(("skipped", "failed"))


def read_raw(base):
    """BASE.json (the runs), BASE.csv (its lines) and BASE.txt."""
    with open(base + ".json") as f:
        runs = json.load(f)
    with open(base + ".csv") as f:
        csv = f.read().splitlines()
    with open(base + ".txt") as f:
        text = f.read()
    return runs, csv, text


def write_raw(base, runs, csv, text):
    with open(base + ".json", "w") as f:
        json.dump(runs, f, indent=1)
    with open(base + ".csv", "w") as f:
        f.write("\n".join(csv) + "\n")
    with open(base + ".txt", "w") as f:
        f.write(text)


def merge_alone(out, sc):
    base = os.path.join(out, "raw", sc)
    lane, csv, text = read_raw(base + ".lane")
    if os.path.exists(base + ".alone.json"):
        alone, alone_csv, alone_text = read_raw(base + ".alone")
        alone_csv = alone_csv[1:]
        header = csv[0].split(",")
        col_sc, col_n = header.index("scenario"), header.index("n")
        errors = []
        for run in alone:
            match = [r for r in lane if (r["scenario"], r["n"]) == (run["scenario"], run["n"])]
            if len(match) != 1:
                errors.append(f"{sc}: n={run['n']}: {len(match)} lane runs of this size")
                continue
            refs = [r for r in match[0]["results"] if ran(r)]
            for r in run["results"]:
                if refs and ran(r) and r["pairs_per_step"] != refs[0]["pairs_per_step"]:
                    errors.append(f"{sc}: n={run['n']}: {r['method']} (alone) found pairs per step "
                                  f"{r['pairs_per_step']}, {refs[0]['method']} (lane) found {refs[0]['pairs_per_step']}")
            # (each row run alone keeps its run's rounds, and whether its methods
            # took turns: refresh_benchmarks.sh --rounds, hhg_bench --interleave;
            # a row that says so itself, split from a merge, keeps its own)
            match[0]["results"].extend({"rounds": run.get("rounds", 1),
                                        "interleaved": run.get("interleaved_turns", 0) > 0, **r}
                                       for r in run["results"])
        if errors:
            for e in errors:
                print("merge_bench.py: MISMATCH: " + e, file=sys.stderr)
            print(f"merge_bench.py: {sc}: not merged (the parts are kept in {os.path.dirname(base)})", file=sys.stderr)
            sys.exit(1)
        # the csv rows in the json's order: each size's lane rows, then its alone rows
        rows = {}
        for line in csv[1:] + alone_csv:
            fields = line.split(",")
            rows.setdefault((fields[col_sc], int(fields[col_n])), []).append(line)
        csv = csv[:1] + [line for run in lane for line in rows.pop((run["scenario"], run["n"]), [])]
        if rows:
            sys.exit(f"merge_bench.py: {sc}: csv rows of runs the json lacks: {sorted(rows)}")
        text += ALONE_MARK + alone_text
    write_raw(base, lane, csv, text)
    for part in ("lane", "alone"):
        for ext in ("json", "csv", "txt"):
            if os.path.exists(f"{base}.{part}.{ext}"):
                os.remove(f"{base}.{part}.{ext}")


def split(out, sc, alone_methods):
    base = os.path.join(out, "raw", sc)
    runs, csv, text = read_raw(base)
    lane = [dict(r, results=[x for x in r["results"] if x["method"] not in alone_methods]) for r in runs]
    if not any(r["results"] for r in lane):
        print(f"merge_bench.py: {sc}: no lane runs to keep (run alone whole): not split", file=sys.stderr)
        sys.exit(NO_LANE_RUNS)
    col = csv[0].split(",").index("method")
    csv = csv[:1] + [line for line in csv[1:] if line.split(",")[col] not in alone_methods]
    cut = text.find(ALONE_MARK[:40])  # (the start of the line: its wording has changed)
    if cut >= 0:
        text = text[:cut]
    write_raw(base + ".lane", lane, csv, text)
    for ext in ("json", "csv", "txt"):
        os.remove(f"{base}.{ext}")


def merge_all(out, names):
    # Raw files written by different hhg_bench versions may have different
    # columns (keys are added, never renamed): the merged CSV has every
    # column, in the order first seen, each row's values under its own names
    # and empty where its file lacks the column.
    runs, tables, text = [], [], []
    for sc in names:
        with open(os.path.join(out, "raw", sc + ".json")) as f:
            runs.extend(json.load(f))
        with open(os.path.join(out, "raw", sc + ".csv"), newline="") as f:
            tables.append(list(csvlib.reader(f)))
        with open(os.path.join(out, "raw", sc + ".txt")) as f:
            text.append(f.read())
    header = []
    for t in tables:
        header.extend(c for c in t[0] if c not in header)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(runs, f, indent=1)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csvlib.writer(f, lineterminator="\n")
        w.writerow(header)
        for t in tables:
            for row in t[1:]:
                by_name = dict(zip(t[0], row))
                w.writerow([by_name.get(c, "") for c in header])
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(text))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "alone":
        merge_alone(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "split":
        split(sys.argv[2], sys.argv[3], set(sys.argv[4].split(",")))
    elif len(sys.argv) >= 4 and sys.argv[1] == "all":
        merge_all(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: merge_bench.py alone OUT SCENARIO | merge_bench.py split OUT SCENARIO METHOD,... | "
                 "merge_bench.py all OUT SCENARIO...")


if __name__ == "__main__":
    main()
