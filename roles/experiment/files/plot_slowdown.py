"""Draw slowdown per placement policy from an experiment summary (JSON on stdin).

The summary is the experiment_summary filter's output, itself computed from
results.json only. Usage: plot_slowdown.py OUT.png < summary.json
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
    summary = json.load(sys.stdin)
    rows = [row for row in summary["rows"] if row["median"] is not None]
    policies = list(dict.fromkeys(row["policy"] for row in rows))
    apps = list(dict.fromkeys(row["app"] for row in rows))
    width = 0.8 / max(1, len(apps))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(policies)), 4.0))
    for a, app in enumerate(apps):
        xs, medians, low, high = [], [], [], []
        for p, policy in enumerate(policies):
            match = [r for r in rows if r["policy"] == policy and r["app"] == app]
            if not match:
                continue
            row = match[0]
            xs.append(p - 0.4 + width * (a + 0.5))
            medians.append(row["median"])
            low.append(row["median"] - row["min"])
            high.append(row["max"] - row["median"])
        ax.bar(xs, medians, width, yerr=[low, high], capsize=3, label=app)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(policies)), policies)
    ax.set_ylabel("slowdown (time with neighbours / time alone)")
    ax.set_title("Slowdown per placement policy (median, bars min-max)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
