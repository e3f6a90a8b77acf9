# The two commands of the README:
#   make demo   set up .venv and run the gateway's main job: the four-role workflow on a scratch repo
#   make test   set up .venv and the real MCP peers the tests use, then lint, type-check (mypy: pyproject's
#               [tool.mypy]), run the doctests in gateway/ and the whole suite
PYTHON ?= python3
VENV   ?= .venv
NPM    := $(VENV)/npm
HERMES := $(VENV)/hermes

.PHONY: demo test lint serve clean postgresql

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

# the test peers from npm: an upstream, the Inspector CLI, and the conformance suite with a Node 22 (an npm
# package: the system node may be older) that tests/test_conformance.py runs it on
$(NPM)/.installed: tests/npm/package.json tests/npm/package-lock.json
	mkdir -p $(NPM)
	cp tests/npm/package.json tests/npm/package-lock.json $(NPM)/
	cd $(NPM) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Hermes Agent (PyPI), the real client tests/test_hermes.py drives, in a venv of its own: its top-level
# package is also named "gateway", and would shadow this project's in one environment.
$(HERMES)/.installed:
	$(PYTHON) -m venv $(HERMES)
	$(HERMES)/bin/pip install -q 'hermes-agent[mcp]==0.19.0'
	touch $@

# The real Open Policy Agent (v1.20.2's Go evaluator, from the opa-golib-python-bindings wheel, pinned and
# sha256-checked in tests/real_opa.py): the golden tests decide every input on it as on the embedded engine.
$(VENV)/real-opa/.installed: tests/real_opa.py | $(VENV)/.installed
	$(VENV)/bin/python tests/real_opa.py install $(VENV)/real-opa

demo: $(VENV)/.installed /usr/bin/bwrap
	$(VENV)/bin/gateway demo

serve: $(VENV)/.installed
	@test -f workspace/gateway.yaml || $(VENV)/bin/gateway init workspace
	cd workspace && ../$(VENV)/bin/gateway serve --http 127.0.0.1:8787

# The review page's browser test drives Debian's chromium (playwright's own browser download does not
# work here). Installed only when missing; without root the browser test skips and says why.
/usr/bin/chromium:
	if [ "$$(id -u)" = 0 ]; then apt-get install -y -q chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium); fi

# Every command the gateway runs for an agent runs in bubblewrap (docs/sandbox.md); no sandbox, no command.
/usr/bin/bwrap:
	if [ "$$(id -u)" = 0 ]; then apt-get install -y -q bubblewrap >/dev/null || (apt-get update -q && apt-get install -y -q bubblewrap); fi

# The PostgreSQL store's tests start Debian's server themselves (tests/pg.py); only the package is needed.
postgresql:
	if [ "$$(id -u)" = 0 ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt-get install -y -q postgresql >/dev/null || (apt-get update -q && apt-get install -y -q postgresql); fi

test: $(VENV)/.installed $(VENV)/real-opa/.installed $(NPM)/.installed $(HERMES)/.installed /usr/bin/chromium /usr/bin/bwrap postgresql
	$(VENV)/bin/ruff check gateway tests bench
	$(VENV)/bin/ruff format --check gateway tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -p no:xdist --doctest-modules gateway
	GATEWAY_TEST_NPM=$(CURDIR)/$(NPM)/node_modules GATEWAY_TEST_HERMES=$(CURDIR)/$(HERMES)/bin/hermes \
		$(VENV)/bin/pytest -q -n 2 --dist loadfile

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix gateway tests bench
	$(VENV)/bin/ruff format gateway tests bench

clean:
	rm -rf $(VENV) workspace
