"""Browser check of the MLflow UI on a fresh ragtrack demo store: real sweep, real `mlflow ui`, real Chromium.

    .venv/bin/python bench/ui_check.py [--store DIR] [--port N] [--screenshots docs/img] [--keep]

1. Runs the demo sweep (`ragtrack run -m adapter=base,lora_a,lora_b prompt=v1,v2`) into a new SQLite store in
   a temporary directory (or `--store DIR`), with Hydra's folders there too, and checks that it left no new
   file in the work tree (new untracked or ignored entries of `git status`; edits to tracked files are not
   ours to judge). The console's last line is the compare-runs link of the six jobs.
2. Reads the store back with MLflow's Python API (the six LoggedModels and their metrics, the prompt's
   versions, the evaluation datasets, the child runs): the page checks below compare the UI against these, not
   against hard-coded values.
3. `ragtrack store init`, then `mlflow ui` on a free port (`--port N` to choose it); it is stopped (its
   process group) at exit, on failure and on Ctrl-C too.
4. Renders each page with headless Chromium (`--dump-dom`, retried with longer virtual-time budgets until the
   single-page app has drawn its content) and checks it, one line each, `ok   <what>` or `FAIL <what>: <why>`:
   Agent versions (one row per LoggedModel, its name, its `eval_json_v2/eval_score_avg` cell), Evaluation runs
   (the six child runs and their scores), Prompts (the prompt, latest version 2) and the prompt's page
   (versions 1 and 2), Datasets (every evaluation dataset of the experiment), and the console's compare-runs
   link ("Comparing 6 Runs", the six run names).
5. `--screenshots DIR`: one PNG per page (agent_versions, prompts = the prompt's page, datasets,
   evaluation_runs, compare_runs), 1600x1000 except Agent versions, 2800x1000 so that its first metric columns
   are in view; PNGs over 400 KB are re-encoded with a 256-colour palette. On 127.0.0.1 MLflow opens its
   Assistant panel on a browser's first visit, so the pictures show it (a quarter of the width), as a new user
   sees the pages.

The exit status is 1 if any check failed. `--keep` keeps the temporary directory (store, logs). Needs Debian's
`chromium`; Chinese text shows as boxes in the screenshots unless a CJK font is installed
(fonts-wqy-microhei).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
EXPERIMENT = "ragtrack-demo"
PROMPT = "ragtrack-demo-prompt"
HEADLINE = "eval_json_v2/eval_score_avg"
COMBOS = [(a, p) for a in ("base", "lora_a", "lora_b") for p in ("v1", "v2")]
BUDGETS_MS = (25_000, 40_000, 60_000)  # virtual time per attempt: the SPA fetches, then draws
PNG_LIMIT = 400 * 1024
NORMAL_WINDOW = (1600, 1000)
WIDE_WINDOW = (4000, 1000)  # ag-grid renders only the columns in view: the metric columns must be in view

Check = tuple[str, str | None]  # (what, None if ok else why)


class Report:
    def __init__(self) -> None:
        self.ok = self.failed = 0

    def add(self, what: str, why: str | None = None) -> bool:
        if why is None:
            self.ok += 1
            print(f"ok   {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {what}: {why}", flush=True)
        return why is None


class Processes:
    """Every child runs in its own process group, stopped (group-wide) by `stop` or at exit."""

    def __init__(self) -> None:
        self.live: list[subprocess.Popen[bytes]] = []

    def start(self, cmd: Sequence[str], *, cwd: Path, out: IO[bytes] | int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.live.append(proc)
        return proc

    def run(self, cmd: Sequence[str], *, cwd: Path, log: Path, timeout: float) -> int | None:
        """Exit code (None: timed out and stopped); output to `log`."""
        with log.open("wb") as out:
            proc = self.start(cmd, cwd=cwd, out=out)
            try:
                return proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
            finally:
                self.stop(proc)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)  # the group: mlflow ui's workers, Chromium's helpers
            try:
                proc.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # helpers that outlived their leader
        if proc in self.live:
            self.live.remove(proc)

    def stop_all(self) -> None:
        for proc in list(self.live):
            self.stop(proc)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "RAGTRACK_"))}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONDONTWRITEBYTECODE="1")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status) == 200
    except OSError:
        return False


def _new_paths() -> set[str] | None:
    """Untracked and ignored entries of the work tree (None: no git); read without taking git's index lock."""
    try:
        r = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain", "--ignored"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode:
        return None
    return {line[3:] for line in r.stdout.splitlines() if line[:2] in ("??", "!!")}


def _tail(path: Path, n: int = 3) -> str:
    lines = (
        [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()] if path.exists() else []
    )
    return " | ".join(lines[-n:])[-400:] or "(no output)"


def js_number(v: float) -> str:
    """How the UI prints a metric value (JavaScript's Number#toString, for values between 1e-6 and 1e21)."""
    return str(int(v)) if v == int(v) else repr(v)


# --- what the store holds -----------------------------------------------------------------------------------


@dataclass
class Model:
    name: str
    score: float | None  # HEADLINE
    run_id: str  # the run that logged it


@dataclass
class StoreFacts:
    experiment_id: str = ""
    models: dict[str, Model] = field(default_factory=dict)  # by model id
    prompt_versions: dict[int, str] = field(default_factory=dict)  # version -> ragtrack.prompt_version tag
    datasets: list[str] = field(default_factory=list)
    children: dict[str, tuple[str, float | None]] = field(
        default_factory=dict
    )  # run name -> (run id, headline)


def read_store(uri: str, report: Report) -> StoreFacts | None:
    import warnings

    warnings.filterwarnings("ignore")
    import mlflow
    from mlflow import MlflowClient
    from mlflow.genai.datasets import search_datasets

    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    facts = StoreFacts()
    exp = client.get_experiment_by_name(EXPERIMENT)
    if not report.add(f"store: experiment {EXPERIMENT}", None if exp else "not in the store"):
        return None
    assert exp is not None
    facts.experiment_id = exp.experiment_id

    for m in mlflow.search_logged_models(experiment_ids=[exp.experiment_id], output_format="list"):
        score = next((x.value for x in m.metrics or [] if x.key == HEADLINE), None)
        facts.models[m.model_id] = Model(m.name, score, m.source_run_id or "")
    names = [m.name for m in facts.models.values()]
    missing = [f"{a}/{p}" for a, p in COMBOS if not any(f"+ {a} · prompt {p} ·" in n for n in names)]
    unscored = [m.name for m in facts.models.values() if m.score is None]
    report.add(
        f"store: {len(COMBOS)} LoggedModels named '… + <adapter> · prompt <v> · …', each with {HEADLINE}",
        f"{len(names)} models, none for {missing}, without the metric: {unscored}"
        if len(names) != len(COMBOS) or missing or unscored
        else None,
    )

    versions = client.search_prompt_versions(PROMPT)
    facts.prompt_versions = {int(v.version): v.tags.get("ragtrack.prompt_version", "") for v in versions}
    report.add(
        f"store: prompt {PROMPT} has versions 1 and 2 (prompt v1, v2)",
        None if facts.prompt_versions == {1: "v1", 2: "v2"} else f"versions {facts.prompt_versions}",
    )

    facts.datasets = [d.name for d in search_datasets(experiment_ids=[exp.experiment_id], max_results=100)]
    report.add(
        f"store: evaluation datasets of the experiment: {', '.join(facts.datasets) or '-'}",
        None if facts.datasets else "none",
    )

    for run in client.search_runs([exp.experiment_id], max_results=1000):
        if "mlflow.parentRunId" in run.data.tags:
            facts.children[run.info.run_name] = (run.info.run_id, run.data.metrics.get(HEADLINE))
    want = [f"{a}-{p}" for a, p in COMBOS]
    report.add(
        f"store: child runs {', '.join(want)}",
        None if sorted(facts.children) == want else f"found {sorted(facts.children)}",
    )
    return facts


# --- Chromium -----------------------------------------------------------------------------------------------


class Browser:
    def __init__(self, chromium: str, work: Path, procs: Processes) -> None:
        self.chromium, self.work, self.procs, self.n = chromium, work, procs, 0

    def _run(
        self, url: str, window: tuple[int, int], budget: int, mode: list[str]
    ) -> tuple[int | None, Path]:
        self.n += 1
        profile = self.work / "chrome" / str(self.n)  # a fresh profile each time: no state between pages
        out = self.work / "chrome" / f"{self.n}.out"
        profile.mkdir(parents=True)
        cmd = [
            self.chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            f"--virtual-time-budget={budget}",
            *mode,
            url,
        ]
        code = self.procs.run(cmd, cwd=self.work, log=out, timeout=60 + budget / 1000 * 3)
        shutil.rmtree(profile, ignore_errors=True)
        return code, out

    def dom(self, url: str, window: tuple[int, int], budget: int) -> str:
        code, out = self._run(url, window, budget, ["--dump-dom"])
        text = out.read_text(errors="replace")
        return text if code == 0 else ""

    def screenshot(self, url: str, path: Path, window: tuple[int, int], budget: int) -> str | None:
        path.parent.mkdir(parents=True, exist_ok=True)
        code, out = self._run(url, window, budget, [f"--screenshot={path}", "--hide-scrollbars"])
        return None if code == 0 and path.exists() else f"chromium exit {code}: {_tail(out)}"


class GridParser(HTMLParser):
    """ag-grid's rows (`row-id`) and cells (`col-id`): row id -> col id -> text. A row is split over the
    pinned and the scrolling containers, so its cells are gathered by row id."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self._stack: list[tuple[str | None, str | None]] = []  # (row id, col id) opened by each open div
        self._skip = 0  # inside <style> or <script>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._skip += tag in ("style", "script")
        if tag != "div":
            return
        a = dict(attrs)
        self._stack.append((a.get("row-id"), a.get("col-id") if a.get("role") == "gridcell" else None))

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("style", "script") and self._skip > 0
        if tag == "div" and self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        row = next((r for r, _ in reversed(self._stack) if r), None)
        col = next((c for _, c in reversed(self._stack) if c), None)
        if row and col and not self._skip:
            cells = self.rows.setdefault(row, {})
            cells[col] = (cells.get(col, "") + data).strip()


def page_text(dom: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.DOTALL)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _has(text: str, token: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def _want(what: str, missing: Sequence[str]) -> Check:
    return what, f"not shown: {', '.join(missing)}" if missing else None


# --- the pages ----------------------------------------------------------------------------------------------


@dataclass
class Page:
    title: str
    url: str
    check: Callable[[str], list[Check]]
    shot: str | None = None  # screenshot file name
    dom_window: tuple[int, int] = NORMAL_WINDOW
    shot_window: tuple[int, int] = NORMAL_WINDOW


def agent_versions(facts: StoreFacts) -> Callable[[str], list[Check]]:
    def check(dom: str) -> list[Check]:
        parser = GridParser()
        parser.feed(dom)
        rows = parser.rows
        run_names = {rid: name for name, (rid, _) in facts.children.items()}
        named, runs, scores = [], [], []
        for mid, m in facts.models.items():
            cells = rows.get(mid, {})
            if not cells.get("name", "").endswith(
                m.name
            ):  # after the hidden text of the row's colour, '#9e102c'
                named.append(m.name)
            if cells.get("source_run_id") != run_names.get(m.run_id, m.run_id):
                runs.append(f"{m.name}: {cells.get('source_run_id')!r}")
            cell = next(
                (
                    t
                    for c, t in cells.items()
                    if c.startswith("metrics.") and f'"{HEADLINE}"' in html.unescape(c)
                ),
                None,
            )
            if m.score is None or cell != js_number(m.score):
                scores.append(f"{m.name}: {cell!r} (store: {m.score})")
        return [
            (
                f"agent versions: {len(facts.models)} rows, one per LoggedModel",
                None if set(rows) == set(facts.models) else f"{len(rows)} rows",
            ),
            _want("agent versions: model names (… + lora_b · prompt v2 · …)", named),
            ("agent versions: source run column names each model's run", "; ".join(runs) or None),
            (f"agent versions: {HEADLINE} column, each model's value", "; ".join(scores) or None),
        ]

    return check


def evaluation_runs(facts: StoreFacts) -> Callable[[str], list[Check]]:
    def check(dom: str) -> list[Check]:
        text = page_text(dom)
        values = [
            f"{n} {s}" for n, (_, s) in facts.children.items() if s is None or not _has(text, js_number(s))
        ]
        return [
            _want(
                f"evaluation runs: the {len(facts.children)} child runs",
                [n for n in facts.children if not _has(text, n)],
            ),
            (
                f"evaluation runs: {HEADLINE} column, each run's value",
                None
                if _has(text, HEADLINE) and not values
                else f"column {_has(text, HEADLINE)}, missing {values}",
            ),
        ]

    return check


def prompts(dom: str) -> list[Check]:
    text = page_text(dom)
    return [
        (
            f"prompts: {PROMPT} listed, latest version 2",
            None if re.search(rf"{re.escape(PROMPT)} Version 2\b", text) else "not in the list",
        )
    ]


def prompt_page(facts: StoreFacts) -> Callable[[str], list[Check]]:
    def check(dom: str) -> list[Check]:
        text = page_text(dom)
        missing = [
            f"Version {v}" for v in sorted(facts.prompt_versions) if not re.search(rf"Version {v}\b", text)
        ]
        return [
            _want(f"prompt page: {PROMPT} with versions {sorted(facts.prompt_versions)}", missing),
            (
                "prompt page: commit message of the latest version (prompt v2)",
                None if "prompt v2" in text else "not shown",
            ),
        ]

    return check


def datasets(facts: StoreFacts) -> Callable[[str], list[Check]]:
    def check(dom: str) -> list[Check]:
        text = page_text(dom)
        return [
            _want(
                f"datasets: {len(facts.datasets)} evaluation dataset(s) listed",
                [d for d in facts.datasets if d not in text],
            )
        ]

    return check


def compare_runs(run_names: Sequence[str]) -> Callable[[str], list[Check]]:
    def check(dom: str) -> list[Check]:
        text = page_text(dom)
        m = re.search(r"Comparing (\d+) Runs", text)
        return [
            (
                f"compare runs: 'Comparing {len(run_names)} Runs'",
                None if m and int(m[1]) == len(run_names) else f"heading {m[0] if m else None!r}",
            ),
            _want(
                f"compare runs: run names {', '.join(run_names)}", [n for n in run_names if not _has(text, n)]
            ),
        ]

    return check


def check_page(browser: Browser, page: Page, report: Report, shots: Path | None) -> None:
    results: list[Check] = []
    budget = BUDGETS_MS[-1]
    for budget in BUDGETS_MS:
        results = page.check(browser.dom(page.url, page.dom_window, budget))
        if all(why is None for _, why in results):
            break
    for what, why in results:
        report.add(what, why if why is None else f"{why} (after {len(BUDGETS_MS)} tries, {page.url})")
    if shots and page.shot:
        path = shots / page.shot
        why = browser.screenshot(page.url, path, page.shot_window, budget) or _check_png(
            path, page.shot_window
        )
        size = f"{path.stat().st_size // 1024} KB" if path.exists() else "-"
        report.add(f"screenshot {path} ({page.shot_window[0]}x{page.shot_window[1]}, {size})", why)


def _check_png(path: Path, window: tuple[int, int]) -> str | None:
    from PIL import Image

    if path.stat().st_size > PNG_LIMIT:  # a palette of 256 colours: plenty for a UI, a fraction of the bytes
        with Image.open(path) as im:
            small = im.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
        small.save(path, optimize=True)
    with Image.open(path) as im:
        size = im.size
    if size != window:
        return f"{size[0]}x{size[1]} pixels"
    return (
        None
        if path.stat().st_size <= PNG_LIMIT
        else f"{path.stat().st_size // 1024} KB > {PNG_LIMIT // 1024} KB"
    )


# --- main ---------------------------------------------------------------------------------------------------


def sweep(work: Path, uri: str, procs: Processes, report: Report) -> tuple[bool, str | None]:
    """Runs the demo sweep: (it succeeded, the compare-runs link of its console)."""
    before = _new_paths()
    log = work / "sweep.log"
    cmd = [
        str(BIN / "ragtrack"),
        "run",
        "-m",
        "adapter=base,lora_a,lora_b",
        "prompt=v1,v2",
        f"tracking.uri={uri}",
        f"hydra.run.dir={work}/hydra/run",
        f"hydra.sweep.dir={work}/hydra/multirun",
    ]
    code = procs.run(cmd, cwd=ROOT, log=log, timeout=600)
    if not report.add(
        "demo sweep: ragtrack run -m adapter=base,lora_a,lora_b prompt=v1,v2",
        None if code == 0 else f"exit {code}: {_tail(log)}",
    ):
        return False, None
    after = _new_paths()
    new = sorted(
        p for p in (after or set()) - (before or set()) if not (ROOT / p).resolve().is_relative_to(work)
    )
    report.add(
        "demo sweep: nothing new in the work tree (git status)",
        "git status failed" if before is None or after is None else (", ".join(new) or None),
    )
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    link = re.search(r"http://127\.0\.0\.1:\d+/#/compare-runs\?\S+", lines[-1] if lines else "")
    report.add(
        "demo sweep: its last line is a compare-runs link", None if link else f"last line {lines[-1:]}"
    )
    return True, link[0] if link else None


def start_ui(work: Path, uri: str, port: int, procs: Processes, report: Report) -> bool:
    code = procs.run(
        [str(BIN / "ragtrack"), "store", "init", "--tracking-uri", uri],
        cwd=work,
        log=work / "store_init.log",
        timeout=300,
    )
    if not report.add(
        "ragtrack store init", None if code == 0 else f"exit {code}: {_tail(work / 'store_init.log')}"
    ):
        return False
    log = (work / "mlflow_ui.log").open("wb")
    ui = procs.start(
        [str(BIN / "mlflow"), "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(port)],
        cwd=work,
        out=log,
    )  # cwd: anything it writes stays in the work dir
    log.close()
    deadline = time.monotonic() + 120
    while not (up := _answers(f"http://127.0.0.1:{port}/health")) and ui.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    why = None if up else f"exit {ui.poll()}" if ui.poll() is not None else "no answer in 120 s"
    return report.add(
        f"mlflow ui answers on http://127.0.0.1:{port}", why and f"{why}: {_tail(work / 'mlflow_ui.log')}"
    )


def run(args: argparse.Namespace, work: Path, procs: Processes, report: Report) -> None:
    chromium = shutil.which("chromium")
    if not report.add(
        "chromium installed", None if chromium else "no `chromium` on PATH (apt-get install chromium)"
    ):
        return
    assert chromium is not None
    db = work / "mlflow.db"
    if db.exists():
        report.add(f"fresh store in {work}", f"{db} exists already")
        return
    port = args.port or _free_port()
    if not report.add(f"port {port} free for mlflow ui", None if _port_free(port) else "taken"):
        return
    uri = f"sqlite:///{db}"
    swept, link = sweep(work, uri, procs, report)
    facts = read_store(uri, report) if swept else None
    if facts is None or not start_ui(work, uri, port, procs, report):
        return
    base = f"http://127.0.0.1:{port}"
    exp = f"{base}/#/experiments/{facts.experiment_id}"
    pages = [
        Page(
            "Agent versions",
            f"{exp}/models",
            agent_versions(facts),
            "agent_versions.png",
            dom_window=WIDE_WINDOW,
            shot_window=(2800, 1000),
        ),
        Page("Evaluation runs", f"{exp}/evaluation-runs", evaluation_runs(facts), "evaluation_runs.png"),
        Page("Prompts", f"{exp}/prompts", prompts),
        Page("Prompt", f"{exp}/prompts/{PROMPT}", prompt_page(facts), "prompts.png"),
        Page("Datasets", f"{exp}/datasets", datasets(facts), "datasets.png"),
    ]
    if link:
        compare = base + link[link.index("/#/") :]  # the console names MLflow's default port
        ids = json.loads(parse_qs(urlsplit(compare).fragment.split("?", 1)[1])["runs"][0])
        by_id = {rid: name for name, (rid, _) in facts.children.items()}
        report.add(
            f"compare-runs link: the {len(facts.children)} child runs",
            None if sorted(ids) == sorted(by_id) else f"run ids {ids}",
        )
        pages.append(
            Page("Compare runs", compare, compare_runs([by_id.get(i, i) for i in ids]), "compare_runs.png")
        )
    browser = Browser(chromium, work, procs)
    shots = args.screenshots.resolve() if args.screenshots else None
    for page in pages:
        print(f"-- {page.title}: {page.url}", flush=True)
        check_page(browser, page, report, shots)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM: the same clean-up as Ctrl-C


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--store", type=Path, help="directory for the new store (default: a temporary directory)")
    ap.add_argument("--port", type=int, default=0, help="port of mlflow ui (default: a free one)")
    ap.add_argument("--screenshots", type=Path, help="save one PNG per page in this directory")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (store, logs)")
    args = ap.parse_args()
    start = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupt)
    work = args.store.resolve() if args.store else Path(tempfile.mkdtemp(prefix="ragtrack-ui-check-"))
    work.mkdir(parents=True, exist_ok=True)
    procs, report = Processes(), Report()
    try:
        run(args, work, procs, report)
    except KeyboardInterrupt:
        report.add("run to the end", "interrupted")
    finally:
        procs.stop_all()
        shutil.rmtree(work / "chrome", ignore_errors=True)
        if args.store or args.keep:
            print(f"store and logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{report.ok} ok, {report.failed} failed in {time.monotonic() - start:.1f} s")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
