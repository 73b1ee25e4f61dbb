# ovnk developer entry points.  Both main targets install what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# A machine whose environment says PYTHONDONTWRITEBYTECODE=1 (this one's does) makes every
# Python process of a test run (each pytest worker, each process of every local cluster,
# each CLI call) compile the project's sources again, and pytest rewrite the asserts of
# every test module again: 2/3 of collecting the tests, ~1/3 of starting a component.
# Here byte code is written once (__pycache__/, ignored by git) and read from then on.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: bootstrap test test-fast test-profile lint typecheck pytest run clean

bootstrap:
	@VENV=$(VENV) scripts/bootstrap.sh

## make test: lint, type-check and every test tier (unit, ovsdb, netns, e2e).
test: bootstrap lint typecheck pytest

lint:
	$(BIN)/ruff check ovnk_core local plugins tests bench

typecheck:
	$(BIN)/mypy

pytest:
	$(BIN)/pytest $(PYTEST_ARGS)

## make test-fast: the inner loop, the unit and ovsdb tiers only, in FAST_WORKERS
## pytest-xdist workers (most of their time is waiting, so more workers than CPUs pay; the
## tests that install demo distributions stay together, see xdist_group); CI still runs
## every tier.
FAST_WORKERS ?= 4
test-fast:
	$(BIN)/pytest -q -n $(FAST_WORKERS) --dist loadgroup -m "(unit or ovsdb) and not netns and not e2e" $(PYTEST_ARGS)

## make test-profile: every tier (or PYTEST_ARGS), then where the time went
## (ovnk_core.testing.profile; the raw numbers in .test-profile.json).
test-profile:
	$(BIN)/pytest -p ovnk_core.testing.profile --profile-json=.test-profile.json $(PYTEST_ARGS)

## make run: the main job (see README).
run: bootstrap
	@scripts/run-demo.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
