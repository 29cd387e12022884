"""The GPU libraries beside torch and the training frameworks, as a report names them: "cupy 14.2.0 (CUDA 13),
jax 0.11.2 (CPU only), lightning 2.6.6" (`python.gpu_libraries`, a run's `meta.system["gpu_libraries"]`)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping


def libraries_said(libraries: Mapping[str, Any], only: Iterable[str] | None = None) -> str:
    """Each library with its version and the CUDA it was built for ("CPU only" for a build without a GPU);
    `only`: those names, in that order (the ones a workload imported)."""
    names = list(only) if only is not None else list(libraries)
    out = []
    for name in names:
        row = libraries.get(name)
        if not isinstance(row, Mapping):
            out.append(name)
            continue
        cuda = row.get("cuda")
        build = " (CPU only)" if cuda == "none" else f" ({cuda})" if cuda else ""
        out.append(f"{name} {row.get('version', '?')}{build}")
    return ", ".join(out)


def used_said(imported: Mapping[str, str], installed: Mapping[str, Any]) -> str:
    """The GPU libraries and frameworks a workload imported, each with the version it said and the CUDA its install
    was built for (`installed`: the run's `meta.system["gpu_libraries"]`)."""
    out = []
    for name, version in imported.items():
        row = installed.get(name)
        cuda = row.get("cuda") if isinstance(row, Mapping) else None
        build = " (CPU only)" if cuda == "none" else f" ({cuda})" if cuda else ""
        out.append(f"{name} {version}{build}".replace("  ", " ").strip())
    return ", ".join(out)
