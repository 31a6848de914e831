"""Peak memory of the builder's training epochs against the size of the dataset.

    python bench/memory.py --data_dir ../shared/data/fsdd/recordings [--copies 10]

Two sources: FSDD's 2,400 training files, and FSDD's 3,000 files linked
`--copies` times under new names (30,000 files with 10), both as manifests of
training files. For each, one new process runs a cold epoch (decoding and
writing the disk cache) and another new process a warm epoch (replaying it);
each reports its peak resident memory (ru_maxrss). Target: the large
dataset's peaks within 1.2x of the small one's.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("copies", 10, "Times FSDD is linked for the large dataset.", lower_bound=2)
flags.DEFINE_string("child", None, "Internal: MANIFEST,CACHE_DIR of one epoch to run and measure.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
FLAGS = flags.FLAGS


def one_epoch(manifest: str, cache_dir: str) -> dict:
    """Reads one epoch of the training split; returns the examples read and this process's peak RSS."""
    from compat import data

    config = data.PipelineConfig(sample_rate=8000, cache_dir=cache_dir, batch_size=64)
    index = data.index(manifest, config)
    batches = -(-index.size("train") // config.batch_size)
    iterator = iter(data.build_dataset(index, config, "train"))
    seen = sum(int(next(iterator)[1].shape[0]) for _ in range(batches))
    return {"examples": seen, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def write_manifest(folder: str, recordings: list[str], copies: int) -> str:
    """A manifest of training files; with copies > 1, each recording linked under new names."""
    rows = []
    for copy in range(copies):
        for path in recordings:
            if copies > 1:
                link = os.path.join(folder, f"c{copy}_{os.path.basename(path)}")
                os.symlink(path, link)
                path = link
            rows.append((path, os.path.basename(path).split("_")[-3][-1], "train"))
    manifest = os.path.join(folder, "manifest.csv")
    with open(manifest, "w", newline="") as stream:
        csv.writer(stream).writerows(rows)
    return manifest


def measure(manifest: str, cache_dir: str) -> dict:
    command = [sys.executable, __file__, f"--data_dir={FLAGS.data_dir}", f"--child={manifest},{cache_dir}"]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main(argv) -> None:
    del argv
    if FLAGS.child:
        print(json.dumps(one_epoch(*FLAGS.child.split(","))))
        return
    recordings = sorted(os.path.join(FLAGS.data_dir, name) for name in os.listdir(FLAGS.data_dir)
                        if name.endswith(".wav"))
    train_files = [p for p in recordings if int(os.path.basename(p)[:-4].split("_")[2]) >= 10]
    work = tempfile.mkdtemp(prefix="bench-memory-")
    results = {}
    for name, files, copies in (("fsdd train", train_files, 1), (f"fsdd x{FLAGS.copies}", recordings, FLAGS.copies)):
        folder = os.path.join(work, name.replace(" ", "_"))
        os.makedirs(folder)
        manifest = write_manifest(folder, files, copies)
        cache_dir = os.path.join(folder, "cache")
        results[name] = {"cold": measure(manifest, cache_dir), "warm": measure(manifest, cache_dir)}
    print("\n| dataset | training files | peak RSS, cold epoch | peak RSS, warm epoch |\n|---|---:|---:|---:|")
    for name, row in results.items():
        print(f"| {name} | {row['cold']['examples']:,} | {row['cold']['peak_rss_mb']:,.0f} MB | "
              f"{row['warm']['peak_rss_mb']:,.0f} MB |")
    small, large = results["fsdd train"], results[f"fsdd x{FLAGS.copies}"]
    ratios = {kind: large[kind]["peak_rss_mb"] / small[kind]["peak_rss_mb"] for kind in ("cold", "warm")}
    print(f"\nlarge / small: cold {ratios['cold']:.2f}x, warm {ratios['warm']:.2f}x (target <= 1.2)")
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        charts.grouped_bars(FLAGS.plot, "Peak resident memory of one epoch (MB; flat is the goal)", list(results),
                            {kind: [row[kind]["peak_rss_mb"] for row in results.values()] for kind in ("cold", "warm")},
                            ylabel="MB")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
