"""The registries of estimators and structures: a class defined in any public module under a package is
registered once the package is discovered, with no list to edit."""

import sys

import pytest

from bncbench.core.registry import Registry
from bncbench.core.errors import ConfigError

PACKAGE = "bncbench_discovery_test"


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A package whose modules define ``Widget`` classes: one at the top, one in a subpackage, one in a
    private module."""
    root = tmp_path / PACKAGE
    (root / "nested").mkdir(parents=True)
    (root / "__init__.py").write_text(
        "from bncbench.core.registry import Registered, Registry\n"
        "WIDGETS = Registry('widget')\n"
        "class Widget(Registered):\n"
        "    registry = WIDGETS\n"
    )
    (root / "nested" / "__init__.py").write_text("")
    for path, name in [("round.py", "round"), ("nested/square.py", "square"), ("_private.py", "private")]:
        (root / path).write_text(f"from {PACKAGE} import Widget\nclass Made(Widget):\n    name = {name!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(PACKAGE)
    for module in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[module]


def test_discovery_registers_the_classes_of_every_public_module(plugins):
    assert plugins.WIDGETS == {}
    plugins.WIDGETS.discover(PACKAGE)
    assert sorted(plugins.WIDGETS) == ["round", "square"]
    assert plugins.WIDGETS.lookup("square").__module__ == f"{PACKAGE}.nested.square"


def test_an_unknown_name_lists_the_valid_ones_and_the_alternative():
    widgets = Registry("widget", alternative="a dict {part: [parts]}")
    widgets.update(wheel=object, gear=object)
    with pytest.raises(ConfigError, match=r"^unknown widget 'cog'; valid widgets: gear, wheel, or a dict \{part: \[parts\]\}\.$"):
        widgets.lookup("cog")
