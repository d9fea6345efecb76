# The two set-up commands of README: `make demo` and `make test`. Both install everything first.
PYTHON ?= python3
PIP := $(PYTHON) -m pip install --disable-pip-version-check -q

.PHONY: install demo test bench

install:
	# torch and torchvision first, pinned as a matching pair (torchvision's compiled ops need the torch they
	# were built for); on these machines both come from local disk. The package's own ranges admit them.
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e ".[all,dev]"

demo: install
	HF_HUB_OFFLINE=1 $(PYTHON) -m modelseek demo --out out

test: install
	HF_HUB_OFFLINE=1 $(PYTHON) -m pytest -q

bench: install
	HF_HUB_OFFLINE=1 $(PYTHON) benchmarks/run_all.py
