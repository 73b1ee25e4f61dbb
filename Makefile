# ovnk developer entry points.  Both main targets install what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: bootstrap test test-compat lint typecheck docs pytest run clean

bootstrap:
	@VENV=$(VENV) scripts/bootstrap.sh

## make test: lint, type-check, the docs site and every test tier (unit, ovsdb, netns, e2e).
test: bootstrap lint typecheck docs pytest

lint:
	$(BIN)/ruff check ovnk_core local plugins tests bench

typecheck:
	$(BIN)/mypy

## make docs: build the docs site into site/; a broken link, page or snippet fails it.
docs:
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

pytest:
	$(BIN)/pytest $(PYTEST_ARGS)

## make test-compat: what must keep working on the host's OVN (Debian 12: 23.03) too: the
## NB tier and the Layer3/Layer2 renders and dataplanes (make test runs OVN 26.03).
COMPAT_TESTS ?= tests/ovsdb plugins/layer2/tests plugins/layer3/tests \
	tests/e2e/test_isolation_ovn.py tests/e2e/test_dataplane.py tests/e2e/test_layer2_dataplane.py
test-compat: bootstrap
	OVNK_OVN=system $(BIN)/pytest $(PYTEST_ARGS) $(COMPAT_TESTS)

## make run: the main job (see README).
run: bootstrap
	@scripts/run-demo.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
