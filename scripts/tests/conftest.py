"""Fixtures the suite's Python tests share."""

import pytest

import container


@pytest.fixture(scope="session")
def image():
    """The gun's image's root (scripts/static-build.sh), built once for the session."""
    return container.build_image_root()
