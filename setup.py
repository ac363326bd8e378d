"""The package list, computed: every package (and data folder) under a folder that `package-dir` maps
(pyproject.toml) installs under its `voice_audit.` name, so a new subpackage cannot miss the wheel."""

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).parent
PACKAGE_DIR: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"
]

setup(
    packages=[
        name
        for package, folder in PACKAGE_DIR.items()
        for name in [package, *(f"{package}.{sub}" for sub in find_namespace_packages(str(ROOT / folder)))]
    ]
)
