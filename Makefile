# kiln: `make run` serves on http://127.0.0.1:8080; `make test` runs the linter and every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080
PYTEST_WORKERS ?= 3
# Bytecode caches are written even where the environment says not to: without them every
# pytest worker rewrites the tests' asserts again (about 13 s each) and every `kiln serve` a
# test starts compiles kiln again.
unexport PYTHONDONTWRITEBYTECODE
# Each pass's temporary files (about 100,000 directories: repositories, data dirs) go to one
# directory of this clone's. An earlier run's is moved aside and removed in the background:
# removing it in line (pytest's numbered directories, or its --basetemp) costs a pass 30-40 s.
TEST_TMP := $(or $(TMPDIR),/tmp)/kiln-tests-$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)
define fresh_test_tmp
	mkdir -p -m 700 $(TEST_TMP)
	if [ -e $(TEST_TMP)/$(1) ]; then mv $(TEST_TMP)/$(1) $(TEST_TMP)/old-$(1)-$$$$; fi
	nohup rm -rf $(TEST_TMP)/old-* >/dev/null 2>&1 &
endef

.PHONY: install install-dev run test lint test-sqlite test-postgres system-deps bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-dev: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'

run: install
	KILN_EXTERNAL_URL=$${KILN_EXTERNAL_URL:-http://$(HOST):$(PORT)} $(BIN)/kiln serve --host $(HOST) --port $(PORT)

# What the tests need from the system: git, gpg and gpgv (GPG keys and commit signatures),
# ssh-keygen (SSH signatures, and the key tests), and a PostgreSQL server the tests start themselves.
system-deps:
	@missing=""; \
	command -v git >/dev/null 2>&1 || missing="$$missing git"; \
	command -v gpg >/dev/null 2>&1 || missing="$$missing gnupg"; \
	command -v gpgv >/dev/null 2>&1 || missing="$$missing gpgv"; \
	command -v ssh-keygen >/dev/null 2>&1 || missing="$$missing openssh-client"; \
	{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi; \
	fi

lint: install-dev
	$(BIN)/ruff check kiln tests bench
	$(BIN)/ruff format --check kiln tests bench

test-sqlite: install-dev
	$(call fresh_test_tmp,sqlite)
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --db=sqlite --basetemp=$(TEST_TMP)/sqlite

# The fuzzer draws a third of its examples on the PostgreSQL pass (3 per operation and caller,
# unless KILN_FUZZ_EXAMPLES says otherwise): the SQLite pass has drawn 8 by then.
test-postgres: install-dev system-deps
	$(call fresh_test_tmp,postgres)
	KILN_FUZZ_EXAMPLES=$${KILN_FUZZ_EXAMPLES:-3} $(BIN)/pytest -q -n $(PYTEST_WORKERS) --db=postgres --basetemp=$(TEST_TMP)/postgres

test: install-dev system-deps lint test-sqlite test-postgres

bench: install-dev system-deps
	$(BIN)/python -m bench --postgres
	$(BIN)/python -m bench.ci --postgres

clean:
	rm -rf $(VENV) .kiln-data .pytest_cache .ruff_cache *.egg-info $(TEST_TMP)
