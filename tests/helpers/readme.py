"""The README's snippets (its Python blocks and command lines), in order."""

import re
import shlex


# The first word of a command line in an indented (command) block.
COMMAND_START = ("meanfield-pde", "python", ".venv/bin/", "bash", "dask", "PYTHONPATH=")


def readme_snippets(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind 'python' | 'command', text) of the README's snippets, in order.

    Python: every ```python fenced block. Commands: every line of an indented
    code block (4 spaces, after a blank line, outside fences) that starts with
    one of COMMAND_START; backslash continuations are joined and a trailing
    ``# comment`` is dropped.
    """
    lines = text.splitlines()
    out, i, in_block = [], 0, False
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*```(\w*)", line)
        if fence:
            lang, start, body = fence.group(1), i + 1, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            if lang == "python":
                out.append((start, "python", "\n".join(body) + "\n"))
            i += 1
            in_block = False
            continue
        indented = line.startswith("    ") and (in_block or i == 0 or not lines[i - 1].strip())
        in_block = indented or (in_block and not line.strip())
        if indented and line.strip().startswith(COMMAND_START):
            start, cmd = i + 1, line.strip()
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            out.append((start, "command", " ".join(shlex.split(cmd, comments=True))))
        i += 1
    return out
