"""Re-render the table and chart from a results.json without re-running:  python3 -m hsbench.render _out/bench"""
import json
import os
import shutil
import subprocess
import sys

from . import chart, report


def render(out_dir: str) -> str:
    with open(os.path.join(out_dir, "results.json")) as f:
        data = json.load(f)
    names = data["meta"].get("servers") or (list(data["summary"][0]["servers"]) if data["summary"] else list(data["idle"]))
    md = report.markdown(data["summary"], data["idle"], data["meta"], names)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    svg_path = os.path.join(out_dir, "ratios.svg")
    with open(svg_path, "w") as f:
        f.write(chart.svg(data["summary"], data["idle"], data["meta"], names))
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "-o", os.path.join(out_dir, "ratios.png"), svg_path], check=False)
    return md


if __name__ == "__main__":
    print(render(sys.argv[1] if len(sys.argv) > 1 else "_out/bench"))
