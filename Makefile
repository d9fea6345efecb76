# The two set-up commands of README: `make demo` and `make test`. Each makes the project's own virtual environment
# (.venv, with `python3 -m venv`) and installs into it what it needs: the interpreter that made it is never changed,
# so this works on a Debian/Ubuntu system Python (PEP 668's externally-managed-environment) as on any other.
# `make docs` builds the documentation site (docs/_build/html); CI runs it after `make lint`.
# PYTHON: the interpreter that makes the environment; VENV: where it lies. Use the environment afterwards with
# `. .venv/bin/activate` (or `.venv/bin/modelseek ...`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --disable-pip-version-check -q

.PHONY: venv install install-demo demo test test-fast bench lint docs

# the environment itself. Debian and Ubuntu ship venv's pip in a package of its own (python3-venv): when it is
# missing and we are root with apt, it is installed; otherwise the one line says which package to install.
$(PY):
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { rm -rf $(VENV); \
	  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends python3-venv >/dev/null 2>&1 \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }; } \
	    && $(PYTHON) -m venv $(VENV); \
	  else echo "make: '$(PYTHON) -m venv' failed: install your system's venv package (Debian/Ubuntu: apt-get install python3-venv) or set PYTHON=" >&2; exit 1; fi; }
	@echo "made the project's virtual environment $(VENV) with $$($(PY) --version)"

venv: $(PY)

# what the demo needs: modelseek with its text extra (torch and torchvision first, pinned as a matching pair:
# torchvision's compiled ops need the torch they were built for; on these machines both come from local disk)
install-demo: $(PY)
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e ".[text]"

# what the tests, lint and docs need: every extra (the stamp file says it was done, for test-fast)
INSTALLED := $(VENV)/.modelseek-installed
install: $(PY)
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e ".[all,dev,docs]"
	@touch $(INSTALLED)

demo: install-demo
	HF_HUB_OFFLINE=1 $(PY) -m modelseek demo --out out

# two pytest-xdist workers, one per core of the project's machine (tests/conftest.py gives each one compute thread
# and keeps the packages that start PostgreSQL or Ray on one worker); PYTEST_WORKERS= runs the suite in one process
PYTEST_WORKERS ?= -n 2 --dist loadgroup

test: install
	# the leaderboard's browser test drives Debian's chromium: installed here when we are root with apt
	# (otherwise the test is skipped and its reason names the command that enables it)
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
		  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; } \
		|| echo "chromium not installed (apt-get failed): the browser test will be skipped"; fi
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(PYTEST_WORKERS)

# the quick loop: every test package, without the tests marked slow (each mark says why). It installs what the
# tests need (`make install`) the first time, or when the environment lacks pytest (after `make demo` alone)
test-fast: $(PY)
	@if [ ! -f $(INSTALLED) ] || ! $(PY) -c "import pytest, xdist" >/dev/null 2>&1; then $(MAKE) --no-print-directory install; fi
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(PYTEST_WORKERS) -m "not slow"

# ruff (rules in pyproject's [tool.ruff]) and mypy (files and strictness in [tool.mypy]) over src/modelseek
lint: install
	$(PY) -m ruff check src
	$(PY) -m mypy

bench: install
	HF_HUB_OFFLINE=1 $(PY) benchmarks/run_all.py

# the documentation site (Sphinx + MyST, docs/conf.py) into docs/_build/html: offline, warnings as errors (a broken
# link, a missing page or reference, a docstring autodoc cannot read fail the build). `make docs` alone installs
# only the docs extra; -E reads every page each time, so no warning hides behind a cached page. Serve the result
# with `python -m http.server -d docs/_build/html 8000`.
DOCS_OUT ?= docs/_build/html
docs: $(PY)
	$(PIP) -e ".[docs]"
	HF_HUB_OFFLINE=1 $(PY) -m sphinx -E -W --keep-going -q -b html -d docs/_build/doctrees docs $(DOCS_OUT)
