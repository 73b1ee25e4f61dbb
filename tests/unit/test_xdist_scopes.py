"""``pytest -n 2 --dist loadscope`` (``make pytest``'s netns and e2e tiers) runs the modules
that share one ``ovnk local`` cluster in one worker (one per shared cluster), and each other
module in one worker (``ovnk_local.testing.xdist_scopes``): a real xdist run of stand-in
modules at the shared modules' paths, each test recording its worker."""

from __future__ import annotations

from collections import defaultdict

import pytest
from ovnk_local.testing.shared_cluster import SCOPE_GROUPS, SHARED_MODULES

pytest_plugins = ["pytester"]


def test_the_shared_cluster_modules_run_in_one_worker(pytester: pytest.Pytester) -> None:
    modules = [*sorted(SCOPE_GROUPS), "tests/e2e/test_other.py", "tests/e2e/test_more.py"]
    for path in modules:
        pytester.makepyfile(**{path.removesuffix(".py"): "".join(
            f"def test_{n}(worker_id):\n    open('runs.txt', 'a').write("
            f"worker_id + ' ' + {path!r} + '\\n')\n" for n in range(3))})
    # without the ovnk plugin: the stand-ins under tests/e2e/ are no e2e tests
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadscope", "-p",
                                           "no:cacheprovider", "-p", "no:ovnk")
    result.assert_outcomes(passed=3 * len(modules))
    workers = defaultdict(set)
    for line in (pytester.path / "runs.txt").read_text().splitlines():
        worker, path = line.split()
        workers[path].add(worker)
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers
    assert len({worker for path in SHARED_MODULES for worker in workers[path]}) == 1, workers
    for group in set(SCOPE_GROUPS.values()):
        assert len({worker for path, in_group in SCOPE_GROUPS.items() if in_group == group
                    for worker in workers[path]}) == 1, (group, workers)
    assert set(workers) == set(modules)
