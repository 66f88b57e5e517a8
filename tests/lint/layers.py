#!/usr/bin/env python3
"""The layering rules of src/ (ARCHITECTURE.md), checked file by file.

    tests/lint/layers.py [SRC_DIR]      (default: src)

Modules depend one way: cli may include store, lock, redis, proc and
util; store (the Redis-backed stores) lock, redis and util; lock (the
policy and the store interfaces) redis and util; redis and proc only util;
util nothing of rlock's. Besides:
  - no hiredis header outside src/rlock/redis/;
  - below cli/ (store, lock, redis, proc, util): no exit code (`exit_code::` or
    cli/exit_codes.hpp) and no command-line option's name anywhere in a
    string literal ("--ttl ...", "... set --restart-grace 0"): lower layers
    say what failed, cli/ chooses the code and names the option (it hands
    lower layers the names they print, as data);
  - no include circle between files: a file and its header (x.cpp, x.hpp)
    count as one, and none may reach itself through the includes of others
    (within a module too: a circle has no floor to stand on).
Prints `file:line: rule` for each violation; exits 1 if there is any.
"""
import pathlib
import re
import sys

ALLOWED = {
    "cli": {"cli", "store", "lock", "redis", "proc", "util"},
    "store": {"store", "lock", "redis", "util"},
    "lock": {"lock", "redis", "util"},
    "redis": {"redis", "util"},
    "proc": {"proc", "util"},
    "util": {"util"},
}
LOWER = {"store", "lock", "redis", "proc", "util"}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"')
OPTION_NAME = re.compile(r'(?<![\w-])--[a-z]')
EXIT_CODE = re.compile(r"\bexit_code::")


def strip_comment(line):
    """The line without a // comment (string literals holding // aside)."""
    in_string = False
    escaped = False
    for i, c in enumerate(line):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            return line[:i]
    return line


def module_of(path, src):
    parts = path.relative_to(src).parts
    if len(parts) >= 3 and parts[0] == "rlock":
        return parts[1]
    return None  # main.cpp and the like: the top, may include anything


def check_file(path, src):
    problems = []
    module = module_of(path, src)
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = strip_comment(raw)
        where = f"{path}:{number}"
        include = INCLUDE.match(line)
        if include:
            target = include.group(1)
            if target.startswith("hiredis/") and module != "redis":
                problems.append(f"{where}: hiredis header outside redis/: {target}")
            if target.startswith("rlock/") and module is not None:
                used = target.split("/")[1]
                if used in ALLOWED and used not in ALLOWED[module]:
                    problems.append(
                        f"{where}: {module}/ may not include {used}/ ({target}):"
                        " modules depend one way, down")
                if module in LOWER and target == "rlock/cli/exit_codes.hpp":
                    problems.append(f"{where}: exit code below cli/: {target}")
            continue
        if module not in LOWER:
            continue
        if EXIT_CODE.search(line):
            problems.append(f"{where}: exit code below cli/: {raw.strip()}")
        if any(OPTION_NAME.search(literal)
               for literal in STRING_LITERAL.findall(line)):
            problems.append(
                f"{where}: option name below cli/ (cli/ names options): "
                f"{raw.strip()}")
    return problems


def unit_of(path, src):
    """rlock/lock/waiter for src/rlock/lock/waiter.{cpp,hpp}."""
    return str(path.relative_to(src).with_suffix(""))


def include_circles(paths, src):
    """Each set of units that include one another in a circle, as a line."""
    edges = {}
    for path in paths:
        unit = unit_of(path, src)
        targets = edges.setdefault(unit, set())
        for raw in path.read_text(errors="replace").splitlines():
            include = INCLUDE.match(strip_comment(raw))
            if include and include.group(1).startswith("rlock/"):
                target = str(pathlib.PurePath(include.group(1)).with_suffix(""))
                if target != unit:
                    targets.add(target)
    # Tarjan's strongly connected components, without recursion.
    index, low, on_stack, stack, circles = {}, {}, set(), [], []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in edges:
                continue  # a generated header (version.hpp, scripts.hpp)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return [f"{src}: include circle: {' <-> '.join(c)}" for c in circles]


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    problems = []
    paths = [path for path in sorted(src.rglob("*"))
             if path.suffix in (".cpp", ".hpp", ".in", ".h") and path.is_file()]
    for path in paths:
        problems += check_file(path, src)
    problems += include_circles(paths, src)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
