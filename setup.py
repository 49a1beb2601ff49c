"""Packaging beyond pyproject.toml: the sample notes in digests/ ship inside the wheel as
bot/sample_digests, so `prdigest preview` has something to show outside a clone. digests/
stays the one copy in the repository."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["bot*"]), "bot.sample_digests"],
    package_dir={"bot.sample_digests": "digests"},
)
