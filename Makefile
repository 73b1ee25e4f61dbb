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

.PHONY: bootstrap test test-fast test-profile test-compat lint typecheck docs pytest run clean

bootstrap:
	@VENV=$(VENV) scripts/bootstrap.sh

## make test: lint, type-check, the docs site and every test tier (unit, ovsdb, netns, e2e).
test: bootstrap lint typecheck docs pytest

lint:
	$(BIN)/ruff check ovnk_core local plugins tests bench

## make typecheck: mypy, from the machine's last mypy cache when this checkout has none
## (scripts/typecheck.sh: a clean clone's mypy takes 155 s at load 8, from a cache 7 s).
typecheck:
	@BIN=$(BIN) scripts/typecheck.sh

## make docs: build the docs site into site/; a broken link, page or snippet fails it.
docs:
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

## make pytest: every tier; the unit and ovsdb tiers in FAST_WORKERS pytest-xdist workers
## (most of their time is waiting, so more workers than CPUs pay; the demo distributions
## the third-party tests pip-install are built once per run for all workers, once_per_run),
## then the netns and e2e tiers in
## E2E_WORKERS workers, each module (or class) with its clusters in one worker (their clusters
## are apart: own directory, netns prefix, ports), and the modules that share one cluster
## (ovnk_local/testing/shared_cluster.py: SCOPE_GROUPS) in one worker per shared cluster
## (E2E_WORKERS=0: in this process).
## Both parts run even when the first fails.  With PYTEST_ARGS: one plain pytest run of those.
FAST_WORKERS ?= 4
E2E_WORKERS ?= 2
FAST_TIERS := (unit or ovsdb) and not netns and not e2e
XDIST := -n $(FAST_WORKERS) --dist loadgroup
pytest:
ifeq ($(strip $(PYTEST_ARGS)),)
	@status=0; \
	$(BIN)/pytest $(XDIST) -m "$(FAST_TIERS)" || status=$$?; \
	$(BIN)/pytest -n $(E2E_WORKERS) --dist loadscope -m "not ($(FAST_TIERS))" || status=$$?; \
	exit $$status
else
	$(BIN)/pytest $(PYTEST_ARGS)
endif

## make test-fast: the inner loop, the unit and ovsdb tiers only (CI still runs every tier).
test-fast:
	$(BIN)/pytest -q $(XDIST) -m "$(FAST_TIERS)" $(PYTEST_ARGS)

## make test-profile: every tier (or PYTEST_ARGS), then where the time went
## (ovnk_core.testing.profile; the raw numbers in .test-profile.json).
test-profile:
	$(BIN)/pytest -p ovnk_core.testing.profile --profile-json=.test-profile.json $(PYTEST_ARGS)

## make test-compat: what must keep working on the host's OVN (Debian 12: 23.03) too: the
## NB tier and the Layer3/Layer2 renders and dataplanes (make test runs OVN 26.03).
COMPAT_TESTS ?= tests/ovsdb plugins/layer2/tests plugins/layer3/tests \
	tests/e2e/test_isolation_ovn.py tests/e2e/test_dataplane.py tests/e2e/test_layer2_dataplane.py \
	tests/e2e/test_dual_stack_dataplane.py
test-compat: bootstrap
	OVNK_OVN=system $(BIN)/pytest $(PYTEST_ARGS) $(COMPAT_TESTS)

## make run: the main job (see README).
run: bootstrap
	@scripts/run-demo.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
