# ovnk developer entry points.  Both main targets install what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

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

## make test-fast: the inner loop, the unit and ovsdb tiers only (CI still runs every tier).
test-fast:
	$(BIN)/pytest -q -m "unit or ovsdb" $(PYTEST_ARGS)

## make test-profile: every tier (or PYTEST_ARGS), then where the time went
## (ovnk_core.testing.profile; the raw numbers in .test-profile.json).
test-profile:
	$(BIN)/pytest -p ovnk_core.testing.profile --profile-json=.test-profile.json $(PYTEST_ARGS)

## make run: the main job (see README).
run: bootstrap
	@scripts/run-demo.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
