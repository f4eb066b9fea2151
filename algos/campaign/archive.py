"""A campaign packed into one file and unpacked elsewhere, so that `snakemake ablations` (and `snakemake coupling`)
resumes it there: its base model, its plans and look files, every finished run's own files (metrics, config,
provenance; the campaign's runs and those trained under keyed draws), and the regenerated final responses, without
the checkpoints a finished run no longer needs.

Files keep their modification times, so the workflow finds every finished run newer than the base it started from
and trains only what is missing. Unpacking never overwrites a file that was there before it. A campaign that goes on
over several sessions is packed in parts: each leaves out what the earlier parts hold unchanged, and holds again what
changed since, which replaces the earlier part's copy when the parts are unpacked in order.

Command line: ``python -m algos.campaign.archive pack --results results --out part2.tar.xz --earlier part1.tar.xz``
and ``python -m algos.campaign.archive unpack part1.tar.xz part2.tar.xz --results results``.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from algos.trainer import run_files

RUN_FILES = (
    run_files.FINAL_FILE,
    run_files.METRICS_FILE,
    run_files.CRITIC_METRICS_FILE,
    run_files.CONFIG_FILE,
    run_files.RUN_FILE,
    "row_config.yaml",
)
"""What a finished run keeps in a packed campaign: everything its reports read."""


def campaign_files(results: Path) -> Iterator[Path]:
    """The files of a campaign under ``results``, relative to it: the base, the plans, the coupling measurement's
    regenerated responses, and the finished runs' files (the campaign's, and those under keyed draws)."""
    for folder in ("base_model", "plans", "coupling"):
        yield from sorted(p.relative_to(results) for p in (results / folder).rglob("*") if p.is_file())
    for runs in ("runs", "coupled"):
        for final in sorted((results / runs).glob(f"*/*/seed*/{run_files.FINAL_FILE}")):
            run = final.parent
            yield from (p.relative_to(results) for p in (run / name for name in RUN_FILES) if p.is_file())


def pack(results: Path, out: Path, earlier: Sequence[Path] = ()) -> int:
    """Write the campaign under ``results`` to ``out`` (xz-compressed tar), leaving out the files the ``earlier``
    packs of it hold unchanged (a campaign packed in parts). Returns the number of finished runs packed."""
    if not (results / "base_model").is_dir() and not (results / "plans").is_dir():
        raise FileNotFoundError(f"{results} holds no campaign (no base_model/ or plans/ folder)")
    packed = {}
    for part in earlier:
        with tarfile.open(part, "r:xz") as archive:
            packed.update({member.name: int(member.mtime) for member in archive.getmembers() if member.isfile()})
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = 0
    with tarfile.open(out, "w:xz") as archive:
        for path in campaign_files(results):
            if packed.get(str(path)) == int((results / path).stat().st_mtime):
                continue
            archive.add(results / path, arcname=str(path))
            runs += path.name == run_files.FINAL_FILE
    return runs


def unpack(parts: Sequence[Path], results: Path) -> tuple[int, int]:
    """Restore a packed campaign (its parts in the order they were packed) into ``results``, keeping every file of
    one's own there; a file a later part holds again replaces an earlier part's copy, being the newer, also where the
    earlier copy was unpacked by an earlier call (an unpacking stopped part-way, or parts unpacked before the later
    ones came). A file counts as an earlier part's copy where its modification time and size are that part's. Returns
    (written, kept): the files restored, and those of one's own kept as they were."""
    restored: set[str] = set()
    earlier: dict[str, set[tuple[int, int]]] = {}  # name -> (mtime, size) of its copies in the parts before
    kept: set[str] = set()
    for part in parts:
        with tarfile.open(part, "r:xz") as archive:
            for member in archive.getmembers():
                if not member.isfile():
                    continue
                target = results / member.name
                copies = earlier.setdefault(member.name, set())
                copies.add((int(member.mtime), member.size))
                there = (int(target.stat().st_mtime), target.stat().st_size) if target.exists() else None
                if there is not None and member.name not in restored and there not in copies:
                    kept.add(member.name)  # one's own file, no copy of this archive's
                    continue
                target.unlink(missing_ok=True)  # an earlier part's copy, or this one's: this part's is the newest
                archive.extract(member, results, filter="data")
                restored.add(member.name)
    return len(restored), len(kept - restored)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.archive", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="pack the campaign under --results into --out")
    packing.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    packing.add_argument("--out", type=Path, required=True, help="the file to write (.tar.xz)")
    packing.add_argument(
        "--earlier", type=Path, nargs="*", default=[], help="parts packed before: their unchanged files are left out"
    )
    unpacking = commands.add_parser("unpack", help="restore a packed campaign into --results")
    unpacking.add_argument("parts", type=Path, nargs="+", help="files written by pack, in the order they were")
    unpacking.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            runs = pack(args.results, args.out, args.earlier)
            print(f"{args.out}: {runs} finished runs, with the base and plans where new")
        else:
            written, kept = unpack(args.parts, args.results)
            print(f"{args.results}: {written} files restored, {kept} already there and kept")
    except (FileNotFoundError, tarfile.TarError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
