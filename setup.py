"""Package list for setuptools (the metadata is in pyproject.toml).

pyproject.toml cannot combine package discovery with an extra package, so it is done here: every
``bncbench*`` package, plus the Hydra configs of the top-level ``conf/`` installed as ``bncbench/conf``
(``bncbench.config_files.config_dir`` finds them there, or in a checkout's ``conf/``).
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["bncbench*"]), "bncbench.conf"])
