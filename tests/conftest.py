"""Shared test policy: a test marked `root` runs only where root and network namespaces are
available, and is skipped with the reason everywhere else (one check, for every capture test file)."""

import pytest


def pytest_collection_modifyitems(config, items):
    needs_root = [item for item in items if item.get_closest_marker("root")]
    if not needs_root:
        return
    from stallscope.capture.netns import EnvironmentUnavailable, check_environment

    try:
        check_environment()
    except EnvironmentUnavailable as e:
        skip = pytest.mark.skip(reason=f"needs root and network namespaces: {e}")
        for item in needs_root:
            item.add_marker(skip)
