"""The import graph of bncbench (issue 24): modules and imports, the circles (modules importing each other
in a loop), and, between the top-level parts of the package (``bncbench.app``, ``bncbench.report``, ...),
which import which and how deep the layering goes. ``lint-imports`` checks the declared layers; this
prints the graph as it is, also for another revision::

    python benchmarks/import_graph.py                        # this checkout
    PYTHONPATH=/path/to/an/archive python benchmarks/import_graph.py   # e.g. a `git archive d7f2ac7`
"""

from functools import cache

import grimp


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def main() -> None:
    graph = grimp.build_graph("bncbench")
    modules = sorted(graph.modules)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in modules}
    loops = circles(edges)
    print(f"{len(modules)} modules, {sum(map(len, edges.values()))} imports, {len(loops)} circles"
          + "".join(f"\n  circle of {len(c)}: {', '.join(sorted(c))}" for c in loops))

    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    parts = {part(m) for m in modules if m != "bncbench"}
    between = {p: {part(i) for m in modules if part(m) == p for i in edges[m]} & parts - {p} for p in parts}
    part_loops = circles(between)
    print(f"{len(parts)} parts, {len(part_loops)} circles between them"
          + "".join(f"\n  circle: {', '.join(sorted(c))}" for c in part_loops))
    if not part_loops:

        @cache
        def depth(p: str) -> int:
            return 1 + max((depth(q) for q in between[p]), default=0)

        for p in sorted(parts, key=lambda p: (-depth(p), p)):
            print(f"  floor {depth(p):2d}  {p}  imports {', '.join(sorted(between[p])) or 'nothing of bncbench'}")


if __name__ == "__main__":
    main()
