"""Paper plugins (issue #41 item 3): a paper registers what it adds from one Python file.

A plugin is ``papers/<id>/plugin.py`` (the workflow names the selected papers' files in
``$DPMINIMAX_PLUGINS``, colon-separated) or an installed package's entry point in the group
``dpminimax.papers``. Either defines ``register(house)``; :class:`House` adds methods (with
their noiseless controls), problems, figures and tables to the library's registries, so that
nothing shared is edited. Every front door (the API, the CLI, the workflow's DAG build) calls
:func:`load_plugins` before it looks a name up; a paper's stages are its ``rules.smk``
(docs/plugins.md).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_VAR = "DPMINIMAX_PLUGINS"
ENTRY_POINT_GROUP = "dpminimax.papers"

#: The plugins registered in this process, by source (a file path or ``entry point <name>``).
_LOADED: dict[str, None] = {}
#: Whether this process has read the ``dpminimax.papers`` entry points (about 40 ms a scan).
_ENTRY_POINTS_READ: list[bool] = []


class PluginError(ValueError):
    """A plugin could not be loaded, or registered a name that exists already."""


def plugin_paths() -> tuple[Path, ...]:
    """The plugin files named in ``$DPMINIMAX_PLUGINS`` (colon-separated; empty: none)."""
    return tuple(Path(entry) for entry in os.environ.get(ENV_VAR, "").split(os.pathsep) if entry)


@dataclass(frozen=True)
class House:
    """What a plugin's ``register(house)`` may add; ``source`` names the plugin in errors."""

    source: str

    def _refuse(self, kind: str, name: str) -> PluginError:
        return PluginError(f"plugin {self.source}: {kind} {name!r} exists already; rename it")

    def method(self, cls: type, family: str) -> None:
        """Method class ``cls`` (its ``name``) in family ``family`` (new or existing), and its
        noiseless clipped control if it is private (:data:`dpminimax.algorithms.CONTROLS`)."""
        from dpminimax.algorithms import CONTROLS, DIAGNOSTICS, FAMILIES, METHODS, RENAMED
        from dpminimax.algorithms.base import noise_off_control

        if cls.name in {**METHODS, **DIAGNOSTICS, **CONTROLS, **RENAMED}:
            raise self._refuse("method", cls.name)
        METHODS[cls.name] = cls
        FAMILIES[family] = (*FAMILIES.get(family, ()), cls.name)
        if cls.private:
            control = noise_off_control(cls)
            CONTROLS[control.name] = control

    def problem(self, name: str, cls: type) -> None:
        """Problem class ``cls`` under ``name`` (a bilevel problem among the bilevel ones)."""
        from dpminimax.problems import BILEVEL_PROBLEMS, PROBLEMS, BilevelProblem

        if name in PROBLEMS or name in BILEVEL_PROBLEMS:
            raise self._refuse("problem", name)
        (BILEVEL_PROBLEMS if issubclass(cls, BilevelProblem) else PROBLEMS)[name] = cls

    def figure(self, name: str, drawer: Callable[..., Any]) -> None:
        """Figure kind ``name``: ``drawer(table, request)`` (:mod:`dpminimax.report.registry`)."""
        self._report_kind("figure", name, drawer)

    def table(self, name: str, make: Callable[..., Any]) -> None:
        """Table kind ``name``: ``make(table)`` returns the table (a frame)."""
        self._report_kind("table", name, make)

    def _report_kind(self, kind: str, name: str, make: Callable[..., Any]) -> None:
        """A figure or table kind: one namespace, as an experiment's lists are checked."""
        from dpminimax.report.registry import FIGURES, TABLES

        if name in FIGURES or name in TABLES:
            raise self._refuse(kind, name)
        (FIGURES if kind == "figure" else TABLES)[name] = make


def _register(source: str, register: Any) -> None:
    if not callable(register):
        raise PluginError(f"plugin {source}: no function register(house); define one")
    register(House(source))
    _LOADED[source] = None


def _module_of(path: Path) -> Any:
    if not path.is_file():
        raise PluginError(f"${ENV_VAR}: no plugin file {path}; remove it or create it")
    spec = importlib.util.spec_from_file_location(
        f"dpminimax_plugin_{path.resolve().parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_plugins(files: Sequence[str | Path] = ()) -> tuple[str, ...]:
    """Register every plugin of ``files``, of ``$DPMINIMAX_PLUGINS`` and of the
    ``dpminimax.papers`` entry points not registered yet in this process; the sources
    registered so far."""
    for path in dict.fromkeys([*map(Path, files), *plugin_paths()]):
        source = str(path)
        if source not in _LOADED:
            _register(source, getattr(_module_of(path), "register", None))
    if not _ENTRY_POINTS_READ:  # installed packages do not change within a process
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            source = f"entry point {entry.name}"
            if source not in _LOADED:
                _register(source, entry.load())
        _ENTRY_POINTS_READ.append(True)
    return tuple(_LOADED)
