"""Every code block of the documentation's pages runs when the HTML is built.

A page's fenced blocks are collected when it is read and run, in page order, in a fresh
scratch folder per page, by a Python process of their own (the interpreter that builds the
docs, so the package under test), before any page is written:

- ``python``: executed, all blocks of a page in one namespace (a block may use a name or a
  file an earlier block of the same page made);
- ``console``: each line starting with ``$ `` is a command, run with ``meanfield-pde`` and
  ``python`` of this interpreter first on the PATH (a trailing backslash continues a line,
  a ``# comment`` is dropped); lines without ``$`` are the output shown, not checked; a
  command that cannot run here (a batch cluster, a run of minutes) is listed in
  :data:`SKIPPED` with its reason, and an entry that matches no command fails the build;
- ``toml``: parsed, and every section and key must be one of the case schema
  (:data:`meanfield_pde.runs.config.SECTIONS`), so a renamed key fails the build;
- ``yaml``: parsed;
- ``{doctest}`` blocks (``>>>`` with their expected output) are run and compared by the
  doctest builder (``sphinx-build -b doctest``), not here;
- ``text``: shown only (a diagram, an output, a syntax summary).

A block with another language is an error: a block either runs or says it is text.
A failure is a Sphinx warning at the block's line (with ``-W``: the build fails). Pages are
run only when they are read, so an incremental build re-runs only the changed pages;
``.ci/docs`` builds from scratch. ``-D snippets_run=0`` skips them (a quick look at layout).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback

# Commands of the pages that are not run, by their words joined by spaces (prompt, comment and
# quotes dropped: skip_key), each with the reason. An entry that matches no command of the pages fails the build.
SKIPPED = {
    # The two commands of a fresh clone: the setup script installs system packages and a
    # virtualenv, the default run takes about a minute and the whole suite minutes (CI runs
    # `.ci/run`, which is these commands and the docs build).
    "bash .ci/setup && .venv/bin/meanfield-pde run sa_beta10_noisy --output runs/sa_beta10_noisy.nc":
        "setup script + a one-minute run",
    "bash .ci/setup && .venv/bin/python -m pytest -q && bash .ci/docs":
        "the whole test suite and this build (minutes; CI runs it)",
    "bash .ci/setup && bash .ci/docs": "this build itself",
    "pip install /path/to/clone":
        "an install from a clone (tests/project/test_install.py builds and installs one)",
    "pip install /path/to/clone[all]": "an install from a clone (tests/project/test_install.py)",
    "sudo apt-get install libfftw3-dev gcc python3-dev": "system packages (.ci/setup installs them)",
    # A batch cluster (tests/studies/test_sweep_jobqueue.py checks the job script and runs
    # --jobqueue local).
    "meanfield-pde sweep phase_noise_beta3 --jobqueue slurm --jobs 4 --cores 32 --memory 64GB "
    "--walltime 04:00:00 --queue compute --output /shared/runs/beta3": "needs a SLURM cluster",
    # Sweeps of a whole phase diagram: minutes of runs (the gallery runs shortened ones).
    "meanfield-pde sweep phase_noise_beta3 --workers 2 --output runs/beta3":
        "a whole phase diagram (25 continued points, minutes)",
    "meanfield-pde sweep sa_beta10_noisy --grid model.beta=5:20:4 --grid initial.seed=0:4:5 "
    "--set time.t_end=50": "20 runs to t = 50 (about 3 minutes on 2 cores)",
    # A cluster started by hand on other machines.
    "dask scheduler --host 10.0.0.1 --port 8786 --protocol tls --tls-ca-file ca.pem --tls-cert "
    "node.pem --tls-key node.key": "needs a cluster (head node, TLS files)",
    "dask worker tls://10.0.0.1:8786 --nthreads 1 --nworkers 4 --tls-ca-file ca.pem --tls-cert "
    "node.pem --tls-key node.key": "needs a cluster (compute nodes, TLS files)",
    "meanfield-pde sweep phase_noise_beta3 --scheduler tls://10.0.0.1:8786 --output /shared/runs/sweep":
        "needs that cluster",
    # The benchmarks take minutes; their smoke mode is run by tests/project/test_benchmarks_smoke.py.
    "python benchmarks/run.py": "the benchmarks (minutes)",
    "python benchmarks/run.py --rows 1,2": "benchmark rows (a minute)",
    "python benchmarks/run.py --smoke": "run by tests/project/test_benchmarks_smoke.py",
}

RUN = ("python", "console")
CHECK = ("toml", "yaml")
SHOWN = ("text", "none", "")


def commands(text: str) -> list[str]:
    """The commands of a console block: ``$ `` lines, continuations joined, comments dropped."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:].strip()
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            out.append(shlex.join(shlex.split(cmd, comments=True)))  # quoting kept
        i += 1
    return out


def skip_key(command: str) -> str:
    """The form of a command that :data:`SKIPPED` lists: its words joined by spaces."""
    return " ".join(shlex.split(command))


def check_toml(text: str) -> None:
    """A case-file fragment: valid TOML whose sections and keys the schema knows."""
    import dataclasses
    import tomllib

    from meanfield_pde.runs.config import INITIAL_TYPES, SECTIONS
    data = tomllib.loads(text)
    for name, table in data.items():
        if name == "description":
            continue
        if name not in SECTIONS:
            raise ValueError(f"[{name}] is not a section of a case file")
        classes = INITIAL_TYPES.values() if SECTIONS[name] is None else [SECTIONS[name]]
        keys = {f.name for c in classes for f in dataclasses.fields(c)}
        unknown = set(table) - keys
        if unknown:
            raise ValueError(f"[{name}] has no key {', '.join(sorted(unknown))}")


def _blocks(app, doctree):
    from docutils import nodes
    from sphinx.util import logging
    log = logging.getLogger(__name__)
    docname = app.env.docname
    if docname.startswith(("api/", "auto_examples/")):
        return
    found = []
    for node in doctree.findall(nodes.literal_block):
        if "testnodetype" in node:  # a {doctest}/{testcode} block: the doctest builder's
            continue
        lang = node.get("language", "")
        line = node.line or 0
        text = node.astext()
        if lang in RUN:
            found.append((line, lang, text))
        elif lang in CHECK:
            try:
                check_toml(text) if lang == "toml" else __import__("yaml").safe_load(text)
            except Exception as exc:  # noqa: BLE001 - any failure is the block's
                log.warning(f"{lang} block does not check: {exc}", location=(docname, line))
        elif lang not in SHOWN:
            log.warning(f"code block in {lang!r}: say python, console, toml, yaml (checked) or "
                        "text (shown only)", location=(docname, line))
    app.env.meanfield_snippets[docname] = found
    app.env.meanfield_snippets_new.add(docname)


def _init_env(app, env, docnames):
    if not hasattr(env, "meanfield_snippets"):
        env.meanfield_snippets = {}
    env.meanfield_snippets_new = set()


def _purge(app, env, docname):
    if hasattr(env, "meanfield_snippets"):
        env.meanfield_snippets.pop(docname, None)


def _merge(app, env, docnames, other):
    env.meanfield_snippets.update({d: other.meanfield_snippets[d] for d in docnames
                                   if d in other.meanfield_snippets})
    env.meanfield_snippets_new |= set(docnames) & other.meanfield_snippets_new


def _plan(blocks):
    """The page's steps: (line, 'python' | 'command', text), skipped commands left out."""
    steps = []
    for line, lang, text in blocks:
        if lang == "python":
            steps.append((line, "python", text))
        else:
            steps += [(line, "command", c) for c in commands(text) if skip_key(c) not in SKIPPED]
    return steps


def _run_page(docname, steps):
    """(docname, seconds, None or (line, message)) of one page's steps in a fresh folder."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.pop("MEANFIELD_PDE_CASES", None)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="meanfield-docs-") as cwd:
        proc = subprocess.run([sys.executable, __file__], input=json.dumps(steps), text=True,
                              capture_output=True, cwd=cwd, env=env, timeout=1800)
    seconds = time.perf_counter() - start
    if proc.returncode == 0:
        return docname, seconds, None
    index, _, message = proc.stdout.rpartition("SNIPPET-FAILED ")[2].partition("\n")
    line = steps[int(index)][0] if index.strip().isdigit() else 0
    return docname, seconds, (line, (message + proc.stderr)[-4000:])


def _run_all(app, env):
    from concurrent.futures import ThreadPoolExecutor

    from sphinx.util import logging
    log = logging.getLogger(__name__)
    pages = {d for d in env.found_docs if not d.startswith(("api/", "auto_examples/"))}
    if pages <= set(env.meanfield_snippets):  # every page's blocks known (not so after a reset)
        all_commands = {c for blocks in env.meanfield_snippets.values()
                        for _, lang, text in blocks if lang == "console"
                        for c in map(skip_key, commands(text))}
        for stale in set(SKIPPED) - all_commands:
            log.warning(f"snippets.SKIPPED names a command no page has: {stale!r}")
    if not app.config.snippets_run or app.builder.name not in ("html", "dirhtml"):
        return []
    pages = {d: _plan(env.meanfield_snippets[d]) for d in sorted(env.meanfield_snippets_new)
             if d in env.meanfield_snippets}
    pages = {d: steps for d, steps in pages.items() if steps}
    with ThreadPoolExecutor(max_workers=app.config.snippets_jobs) as pool:
        for docname, seconds, failure in pool.map(lambda item: _run_page(*item), pages.items()):
            log.info(f"snippets: {docname}: {len(pages[docname])} blocks in {seconds:.1f} s")
            if failure:
                line, message = failure
                log.warning(f"code block failed:\n{message}", location=(docname, line))
    return []


def setup(app):
    app.add_config_value("snippets_run", True, "env", types=(bool, int))
    app.add_config_value("snippets_jobs", 2, "", types=(int,))
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("doctree-read", _blocks)
    app.connect("env-updated", _run_all)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1",
            "env_version": 1}


def _main() -> int:
    """Run the steps given as JSON on stdin, in order, in the current folder."""
    steps = json.loads(sys.stdin.read())
    namespace = {"__name__": "__main__"}
    for i, (line, kind, text) in enumerate(steps):
        try:
            if kind == "python":
                exec(compile(text, f"<block at line {line}>", "exec"), namespace)  # noqa: S102
            else:
                proc = subprocess.run(shlex.split(text), capture_output=True, text=True, timeout=1200)
                if proc.returncode != 0:
                    print(f"SNIPPET-FAILED {i}\n$ {text}\nexit status {proc.returncode}\n"
                          f"--- stdout ---\n{proc.stdout[-2000:]}\n--- stderr ---\n{proc.stderr[-2000:]}")
                    return 1
        except BaseException:  # noqa: BLE001 - reported with the block's line
            print(f"SNIPPET-FAILED {i}\n{text}\n{traceback.format_exc()}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
