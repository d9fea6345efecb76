# The two set-up commands of README: `make demo` and `make test`. Both install everything first.
# `make docs` builds the documentation site (docs/_build/html); CI runs it after `make lint`.
PYTHON ?= python3
PIP := $(PYTHON) -m pip install --disable-pip-version-check -q

.PHONY: install demo test test-fast bench lint docs

install:
	# torch and torchvision first, pinned as a matching pair (torchvision's compiled ops need the torch they
	# were built for); on these machines both come from local disk. The package's own ranges admit them.
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e ".[all,dev,docs]"

demo: install
	HF_HUB_OFFLINE=1 $(PYTHON) -m modelseek demo --out out

test: install
	# the leaderboard's browser test drives Debian's chromium: installed here when we are root with apt
	# (otherwise the test is skipped and its reason names the command that enables it)
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
		export DEBIAN_FRONTEND=noninteractive; \
		{ apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
		  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; } \
		|| echo "chromium not installed (apt-get failed): the browser test will be skipped"; fi
	HF_HUB_OFFLINE=1 $(PYTHON) -m pytest -q

# the quick loop: every test package, without the tests marked slow (each mark says why); run `make install` once
test-fast:
	HF_HUB_OFFLINE=1 $(PYTHON) -m pytest -q -m "not slow"

# ruff (rules in pyproject's [tool.ruff]) and mypy (files and strictness in [tool.mypy]) over src/modelseek
lint: install
	$(PYTHON) -m ruff check src
	$(PYTHON) -m mypy

bench: install
	HF_HUB_OFFLINE=1 $(PYTHON) benchmarks/run_all.py

# the documentation site (Sphinx + MyST, docs/conf.py) into docs/_build/html: offline, warnings as errors (a broken
# link, a missing page or reference, a docstring autodoc cannot read fail the build). `make docs` alone installs
# only the docs extra; -E reads every page each time, so no warning hides behind a cached page. Serve the result
# with `python -m http.server -d docs/_build/html 8000`.
DOCS_OUT ?= docs/_build/html
docs:
	$(PIP) -e ".[docs]"
	HF_HUB_OFFLINE=1 $(PYTHON) -m sphinx -E -W --keep-going -q -b html -d docs/_build/doctrees docs $(DOCS_OUT)
