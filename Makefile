# The two set-up commands of README: `make demo` and `make test`. Both install everything first.
PYTHON ?= python3
PIP := $(PYTHON) -m pip install --disable-pip-version-check -q

.PHONY: install demo test bench

install:
	# torch first, pinned: on these machines it is a local CPU build; the package's own range admits it
	$(PIP) torch==2.13.0
	$(PIP) -e ".[all,dev]"

demo: install
	HF_HUB_OFFLINE=1 $(PYTHON) -m modelseek demo --out out

test: install
	HF_HUB_OFFLINE=1 $(PYTHON) -m pytest -q

bench: install
	HF_HUB_OFFLINE=1 $(PYTHON) benchmarks/run_all.py
