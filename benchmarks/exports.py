"""Exports benchmark: bytes and CPU time of ``simforge export`` on the demo-sized matrix.

Run: ``python benchmarks/exports.py [--out DIR] [--repeat 3]``.

The store is ``simforge demo``'s (every shipped scenario; 3 seeds x 2 trials; with and without
faults, each fault kind also alone), built once into ``--out``. Exported: the careful client's
run (SFT) and that run with the careless client's (DPO: their episodes of one cell pair up).

- *inline*: every row carries its task's tool list, the only layout before ``tools_id``
  (``--tools inline``, still what OpenAI's fine-tuning format wants);
- *ref*: the default, each distinct tool list once in ``OUT.tools.json``; the figure is rows
  plus that file;
- *hf-dataset*: the Parquet folder (``sft`` and ``dpo``), and what ``load_dataset`` makes of it in
  its cache (Arrow, a tool string per row).

CPU time is the exporting process's (``time.process_time``), the contenders interleaved in
rotating order, ``--repeat`` times; the table gives the median and the spread.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from simforge.demo import run_demo
from simforge.runs.export import export_runs, tools_path
from simforge.runs.store import RunStore


def size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    extra = tools_path(path)
    return path.stat().st_size + (extra.stat().st_size if extra.exists() else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="simforge-exports-"))
    demo = run_demo(out / "demo")
    store = RunStore(demo.store, create=False)
    careful, careless = demo.runs["retrying"], demo.runs["no-retry"]
    sft_n, dpo_n = store.count(careful), store.count(careful) + store.count(careless)

    def job(fmt: str, runs: list[str], name: str, **kw: str) -> Callable[[], Path]:
        def run() -> Path:
            target = out / name
            export_runs(store, runs, fmt, target, **kw)
            return target
        return run

    jobs = {
        "openai-jsonl, inline": job("openai-jsonl", [careful], "inline.openai.jsonl",
                                    tools="inline"),
        "openai-jsonl, ref": job("openai-jsonl", [careful], "ref.openai.jsonl"),
        "dpo-pairs, inline": job("dpo-pairs", [careful, careless], "inline.dpo.jsonl",
                                 tools="inline"),
        "dpo-pairs, ref": job("dpo-pairs", [careful, careless], "ref.dpo.jsonl"),
        "hf-dataset (sft + dpo)": job("hf-dataset", [careful, careless], "both.hf"),
    }
    cpu: dict[str, list[float]] = {name: [] for name in jobs}
    names = list(jobs)
    paths: dict[str, Path] = {}
    for r in range(args.repeat):
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = time.process_time()
            paths[name] = jobs[name]()
            cpu[name].append(time.process_time() - start)

    import datasets

    cache = out / "hf-cache"
    for config in ("sft", "dpo"):
        datasets.load_dataset(str(paths["hf-dataset (sft + dpo)"]), config, cache_dir=str(cache))
    print(f"episodes: {sft_n:,} (SFT, one run), {dpo_n:,} (DPO and hf-dataset, two runs)")
    print("| export | bytes | CPU s (median, min-max) |")
    print("|---|---:|---:|")
    for name in names:
        times = cpu[name]
        print(f"| {name} | {size(paths[name]):,} | {statistics.median(times):.2f} "
              f"({min(times):.2f}-{max(times):.2f}) |")
    print(f"| hf-dataset, load_dataset cache | {size(cache):,} | |")


if __name__ == "__main__":
    main()
