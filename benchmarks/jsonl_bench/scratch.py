"""How much disk the run's scratch files take, measured rather than estimated.

The README once said 3 GB where a full run used 5.1 GB (issue 9): the figure it quotes is
now the peak this module measures, printed at the end of every run.
"""

from __future__ import annotations

import os
import stat


def disk_usage(root: str) -> int:
    """Bytes allocated on disk under ``root`` (as ``du`` counts them: each inode once).

    Blocks, not sizes: a snapshot made by linking shares its inode, and what matters for
    a scratch disk is what it has to hold.
    """
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [root]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except FileNotFoundError:  # removed meanwhile
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def fmt_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,} B"
