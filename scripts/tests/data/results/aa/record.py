#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""How the recorded A/A sets here were made: four back-to-back `QUICK=1 make
qualify` runs on one kernel (the development machine, shared with other
work, so noisier than a quiet host), four scenarios of each kept as
s0..s3. Victims' "outside" histograms and the kernel view's stall list are
dropped (ptwalk compare reads neither) to keep the files small.

  record.py QUALIFY_DIR... (each with runs/)"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

KEEP = ("clear_refs-anon", "cadvisor-shmem", "pagemap_scan-shmem", "smaps_rollup-thp")


def main() -> int:
    here = Path(__file__).resolve().parent
    for i, q in enumerate(sys.argv[1:]):
        out = here / f"s{i}"
        out.mkdir(exist_ok=True)
        for f in sorted(Path(q, "runs").glob("*.json")):
            if not f.name.startswith(KEEP):
                continue
            d = json.loads(f.read_text())
            for v in d.get("victims", {}).values():
                v.get("outside", {}).pop("buckets", None)
            kv = d.get("kernel_view", {})
            if isinstance(kv, dict):
                d["kernel_view"] = {k: v for k, v in kv.items() if not isinstance(v, list)}
            with gzip.open(out / (f.name + ".gz"), "wt", encoding="utf-8") as g:
                json.dump(d, g, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
