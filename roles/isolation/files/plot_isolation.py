"""Draw one heatmap per stressor from the isolation matrices (JSON on stdin).

The matrices are the isolation_matrix filter's output, itself computed from
results.json only. Usage: plot_isolation.py OUT.png < matrices.json
Exit 3 (with the reason on stderr) when matplotlib is not installed.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        print(f"matplotlib is not installed ({exc}); pip install -r requirements.txt", file=sys.stderr)
        return 3
    data = json.load(sys.stdin)
    nodes, stressors = data["nodes"], data["stressors"]
    fig, axes = plt.subplots(1, max(1, len(stressors)), figsize=(4.8 * max(1, len(stressors)), 4.0), squeeze=False,
                             layout="constrained")
    for ax, stressor in zip(axes[0], stressors, strict=False):
        rows = [row for row in nodes if row in data["matrix"][stressor]]
        grid = [[data["matrix"][stressor][row][col] for col in nodes] for row in rows]
        shown = [[v if v is not None else float("nan") for v in line] for line in grid]
        image = ax.imshow(shown, vmin=0, vmax=1, cmap="viridis")
        for i, line in enumerate(grid):
            for j, value in enumerate(line):
                text = "-" if value is None else f"{value:.2f}"
                ax.text(j, i, text, ha="center", va="center", color="white" if (value or 0) < 0.6 else "black")
        ax.set_xticks(range(len(nodes)), nodes, rotation=30, ha="right")
        # Worker names and the axis title once, on the left: beside a neighbour they would overlap it.
        first = ax is axes[0][0]
        ax.set_yticks(range(len(rows)), rows if first else [])
        ax.set_xlabel("worker observed")
        if first:
            ax.set_ylabel("worker stressed")
        ax.set_title(f"{stressor} stressor\n({stressor} pressure)", fontsize=10)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="probe pressure (0 idle .. 1)")
    fig.savefig(sys.argv[1], dpi=110, bbox_inches="tight")
    return 0


if __name__ == "__main__":
    sys.exit(main())
